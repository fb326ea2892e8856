"""`GET /v1/models`: the aliases and the models of the config file's routes a key may use, in a
list both SDKs read (OpenAI's `{object: list, data: [{id, object: model, owned_by}]}` and
Anthropic's page `{data: [{id, type: model, display_name, created_at}], has_more, first_id,
last_id}`: the fields of both on each entry)."""

from __future__ import annotations

from ..errors import LlmError
from .gateway import Caller, Gateway

__all__ = ["model_list"]


def _entry(model_id: str, route: str, name: str) -> dict[str, object]:
    return {
        "id": model_id,
        "object": "model",
        "created": 0,
        "owned_by": route,
        "type": "model",
        "display_name": name,
        "created_at": "1970-01-01T00:00:00Z",
    }


async def model_list(gateway: Gateway, caller: Caller) -> dict[str, object]:
    """The model list `caller` sees."""
    record = caller.record
    entries: list[dict[str, object]] = []
    for alias, target in sorted(gateway.config.aliases.items()):
        if record is None or record.may_use(target.route):
            entries.append(_entry(alias, target.route, str(target)))
    for route in gateway.declared:
        if record is not None and not record.may_use(route):
            continue
        try:
            models = await gateway.runtime.list_models(route)
        except LlmError:
            continue
        entries.extend(_entry(f"{route}:{m.id}", route, m.name) for m in models)
    ids = [str(e["id"]) for e in entries]
    return {
        "object": "list",
        "data": entries,
        "has_more": False,
        "first_id": ids[0] if ids else None,
        "last_id": ids[-1] if ids else None,
    }
