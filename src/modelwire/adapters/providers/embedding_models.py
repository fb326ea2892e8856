"""The embedding models modelwire knows by name: vector size, the sizes it takes, list price and
how much one request carries, per wire family.

The installed chat catalog (pi-ai) lists no embedding models, so this table is modelwire's own,
taken from the providers' model and pricing pages (OpenAI "Vector embeddings" and pricing;
Gemini API "Embeddings" and pricing; Mistral "Embeddings"; Amazon Bedrock "Amazon Titan Text
Embeddings" and "Cohere Embed" model parameters and Bedrock pricing). A model it does not list is
served when the route's config lists it (`models = [{id = ...}]`, price from its `cost.input`):
its dimensions are then the server's business.

Families: ``openai`` (OpenAI, Azure and every OpenAI-compatible server), ``gemini``,
``mistral``, ``titan`` and ``cohere`` (both on Bedrock).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Final, Literal, TypeAlias

import msgspec

__all__ = ["FAMILY_LIMITS", "EmbeddingModel", "Family", "known_embedding_model"]

Family: TypeAlias = Literal["openai", "gemini", "mistral", "titan", "cohere"]


class EmbeddingModel(msgspec.Struct, frozen=True, kw_only=True):
    """One known embedding model: default vector size, the sizes `dimensions` may ask for
    (`choices`, or any in `min_dimensions..dimensions`; neither = only the default), its price
    in USD per million input tokens, and its family."""

    id: str
    family: Family
    dimensions: int
    min_dimensions: int | None = None
    choices: tuple[int, ...] = ()
    price: Decimal | None = None

    def takes(self, size: int) -> bool:
        """Whether `dimensions=size` is a size this model answers."""
        if self.choices:
            return size in self.choices
        if self.min_dimensions is not None:
            return self.min_dimensions <= size <= self.dimensions
        return size == self.dimensions

    def sizes_text(self) -> str:
        """The sizes it takes, for an error message."""
        if self.choices:
            return ", ".join(map(str, self.choices))
        if self.min_dimensions is not None:
            return f"{self.min_dimensions} to {self.dimensions}"
        return f"only {self.dimensions}"


def _m(
    id: str,
    family: Family,
    dimensions: int,
    price: str,
    *,
    low: int | None = None,
    choices: tuple[int, ...] = (),
) -> EmbeddingModel:
    return EmbeddingModel(
        id=id,
        family=family,
        dimensions=dimensions,
        min_dimensions=low,
        choices=choices,
        price=Decimal(price),
    )


_MODELS: Final = {
    m.id: m
    for m in (
        _m("text-embedding-3-small", "openai", 1536, "0.02", low=1),
        _m("text-embedding-3-large", "openai", 3072, "0.13", low=1),
        _m("text-embedding-ada-002", "openai", 1536, "0.10"),
        _m("gemini-embedding-001", "gemini", 3072, "0.15", low=128),
        _m("text-embedding-004", "gemini", 768, "0", low=1),
        _m("mistral-embed", "mistral", 1024, "0.10"),
        _m("codestral-embed", "mistral", 1536, "0.15", low=1),
        _m("amazon.titan-embed-text-v2:0", "titan", 1024, "0.02", choices=(256, 512, 1024)),
        _m("amazon.titan-embed-text-v1", "titan", 1536, "0.10"),
        _m("cohere.embed-english-v3", "cohere", 1024, "0.10"),
        _m("cohere.embed-multilingual-v3", "cohere", 1024, "0.10"),
    )
}

FAMILY_LIMITS: Final[dict[str, tuple[int, int | None]]] = {
    "openai": (2048, 250_000),  # 2,048 inputs and 300,000 tokens a request (some headroom)
    "gemini": (100, None),  # batchEmbedContents: at most 100 requests a batch
    "mistral": (128, 12_000),  # the API caps a request's total tokens (16,384)
    "titan": (1, None),  # InvokeModel takes one inputText
    "cohere": (96, None),  # Cohere Embed: at most 96 texts a call
}
"""(inputs per request, about how many tokens per request) of each family."""


def known_embedding_model(model: str, family: Family | None = None) -> EmbeddingModel | None:
    """The table's entry for `model` (a Gemini ``models/`` prefix and a Bedrock region prefix
    such as ``us.`` are ignored), when its family is `family` (any when None)."""
    found = _MODELS.get(model.removeprefix("models/"))
    if found is None and "." in model:
        found = _MODELS.get(model.split(".", 1)[1])
    if found is None or (family is not None and found.family != family):
        return None
    return found
