"""`azure-openai-responses` and `azure-openai-completions`: the Responses and Chat Completions
builders and translators, addressed the Azure way.

URLs. The v1 API (no ``api_version``, or ``v1``/``preview``) lives under
``https://<resource>.openai.azure.com/openai/v1`` — a base URL on an Azure host whose path is
empty, ``/openai`` or an endpoint path is normalized to that (pi-ai's `normalizeAzureBaseUrl`):
``/openai/v1/responses``, ``/openai/v1/chat/completions``. A dated ``api_version`` (e.g.
``2024-02-01``) addresses the deployment instead:
``{resource}/openai/deployments/{deployment}/chat/completions?api-version=<v>``, and Responses
``{resource}/openai/responses?api-version=<v>`` (the deployment rides in the body's ``model``).
A base URL that already names a deployment (``.../openai/deployments/<name>``) needs a dated
``api_version``; without one the build fails with INVALID_CONFIG naming
``providers.<route>.api_version``. The deployment name is the model id (the body's ``model``).

Auth: ``api-key: <key>``; a profile header ``api-key`` or ``Authorization`` (an Entra ID Bearer
token) carries the credential instead.

Bodies are the wrapped builders' own. Dated chat versions get the compat defaults of what they
predate (before 2024-09-01: no ``stream_options``, ``store``, ``developer`` role or strict tools,
and ``max_tokens``; before 2024-12-01: no ``store`` or ``developer`` role); Responses send no
long cache retention. Configured compat still wins. Content filtering: `azure_filter`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final
from urllib.parse import quote, urlsplit, urlunsplit

import msgspec

from ....errors import ErrorCode, LlmError
from ....vocab import StructuredOutputSupport
from ..compat import CompatSwitches, overlay
from ..context import NContext
from ..materialize import ModelDescriptor
from .azure_filter import (
    AzureCompletionsTranslator,
    AzureResponsesTranslator,
    refine_azure_http_error,
)
from .openai_completions import build_completions_request, completions_compat
from .openai_responses import build_responses_request
from .request import BuiltRequest, RequestOptions
from .spec import WireProtocol

__all__ = [
    "PROTOCOLS",
    "azure_url",
    "build_azure_completions_request",
    "build_azure_responses_request",
    "normalize_azure_base_url",
]

AZURE_HOSTS: Final = (".openai.azure.com", ".cognitiveservices.azure.com", ".ai.azure.com")
"""Host suffixes whose base URL is normalized to the v1 API path."""
V1_VERSIONS: Final = frozenset({"v1", "preview"})
"""`api_version` values that select the v1 API (``preview`` is sent as the query)."""

_CHAT: Final = "/chat/completions"
_RESPONSES: Final = "/responses"
_ROOT_PATHS: Final = frozenset({"", "/openai", "/openai/v1", "/openai/v1" + _RESPONSES})
_OLD_CHAT: Final = CompatSwitches(  # dated versions before 2024-09-01
    supports_usage_in_streaming=False,
    max_tokens_field="max_tokens",
    supports_store=False,
    supports_developer_role=False,
    supports_strict_mode=False,
)
_PRE_DEVELOPER: Final = CompatSwitches(supports_store=False, supports_developer_role=False)
_RESPONSES_DEFAULTS: Final = CompatSwitches(supports_long_cache_retention=False)


def normalize_azure_base_url(base_url: str) -> str:
    """`base_url` without trailing slashes; on an Azure host an empty, ``/openai`` or endpoint
    path becomes ``/openai/v1`` (other paths, e.g. an API Management prefix, are kept)."""
    trimmed = base_url.strip().rstrip("/")
    parts = urlsplit(trimmed)
    host = (parts.hostname or "").lower()
    path = parts.path.rstrip("/")
    if host.endswith(AZURE_HOSTS) and (path in _ROOT_PATHS or path == "/openai/v1" + _CHAT):
        return urlunsplit((parts.scheme, parts.netloc, "/openai/v1", "", ""))
    return trimmed


def _resource_root(base: str) -> str:
    """The base without its ``/openai`` or ``/openai/v1`` suffix."""
    for suffix in ("/openai/v1", "/openai"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def _no_query(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _config_error(model: ModelDescriptor, why: str, fix: str) -> LlmError:
    return LlmError(
        f'route "{model.provider}" ({model.api}): {why}; {fix}', ErrorCode.INVALID_CONFIG
    )


def azure_url(model: ModelDescriptor, endpoint: str) -> str:
    """The URL of `endpoint` (``/chat/completions`` or ``/responses``) for `model`'s route."""
    version = model.api_version
    dated = version is not None and version not in V1_VERSIONS
    base = normalize_azure_base_url(model.base_url)
    if "/openai/deployments/" in urlsplit(base).path + "/":
        if endpoint == _RESPONSES:
            raise _config_error(
                model,
                f"base_url {_no_query(base)} names a deployment, but the Responses API is "
                "addressed at the resource (the deployment is the model id)",
                f"set providers.{model.provider}.base_url to the resource URL",
            )
        if not dated:
            raise _config_error(
                model,
                f"the deployment URL {_no_query(base)} needs an api-version",
                f"set providers.{model.provider}.api_version to a dated Azure OpenAI API "
                'version (e.g. "2024-10-21")',
            )
        return f"{base}{endpoint}?api-version={quote(str(version), safe='')}"
    if dated:
        query = f"?api-version={quote(str(version), safe='')}"
        root = _resource_root(base)
        if endpoint == _CHAT:
            deployment = quote(model.id, safe="")
            return f"{root}/openai/deployments/{deployment}{_CHAT}{query}"
        return f"{root}/openai{_RESPONSES}{query}"
    return base + endpoint + ("?api-version=preview" if version == "preview" else "")


def _chat_model(model: ModelDescriptor) -> ModelDescriptor:
    """`model` with the compat defaults its chat API version implies (configured compat wins)."""
    version = model.api_version
    if version is None or version in V1_VERSIONS:
        return model
    day = version[:10]
    defaults = _OLD_CHAT if day < "2024-09-01" else _PRE_DEVELOPER if day < "2024-12-01" else None
    if defaults is None:
        return model
    return msgspec.structs.replace(model, compat=overlay(defaults, model.compat))


def _responses_model(model: ModelDescriptor) -> ModelDescriptor:
    return msgspec.structs.replace(model, compat=overlay(_RESPONSES_DEFAULTS, model.compat))


def _rewritten(
    build: Callable[[ModelDescriptor, NContext, RequestOptions], BuiltRequest],
    model: ModelDescriptor,
    ctx: NContext,
    options: RequestOptions,
    url: str,
) -> BuiltRequest:
    built = build(model, ctx, options)  # body `model` = model.id = the deployment name
    return msgspec.structs.replace(built, url=url)


def build_azure_completions_request(
    model: ModelDescriptor, ctx: NContext, options: RequestOptions
) -> BuiltRequest:
    """The Chat Completions request at the route's Azure URL (no credentials)."""
    url = azure_url(model, _CHAT)  # configuration errors before anything is built
    return _rewritten(build_completions_request, _chat_model(model), ctx, options, url)


def build_azure_responses_request(
    model: ModelDescriptor, ctx: NContext, options: RequestOptions
) -> BuiltRequest:
    """The Responses request at the route's Azure URL (no credentials)."""
    url = azure_url(model, _RESPONSES)
    return _rewritten(build_responses_request, _responses_model(model), ctx, options, url)


def _api_key(key: str) -> dict[str, str]:
    return {"api-key": key}


def _chat_output(model: ModelDescriptor) -> StructuredOutputSupport:
    strict = completions_compat(_chat_model(model)).supports_strict_mode
    return "native-strict" if strict else "native-json"


def _strict(model: ModelDescriptor) -> StructuredOutputSupport:
    return "native-strict"


_KEY_HEADERS: Final = ("api-key", "authorization")

PROTOCOLS: Final = {
    "azure-openai-responses": WireProtocol(
        "azure-openai-responses",
        build_azure_responses_request,
        AzureResponsesTranslator,
        _strict,
        key_headers=_api_key,
        key_header_names=_KEY_HEADERS,
        http_error=refine_azure_http_error,
        free_text_tools=True,
    ),
    "azure-openai-completions": WireProtocol(
        "azure-openai-completions",
        build_azure_completions_request,
        AzureCompletionsTranslator,
        _chat_output,
        key_headers=_api_key,
        key_header_names=_KEY_HEADERS,
        http_error=refine_azure_http_error,
        free_text_tools=True,
    ),
}
"""The two Azure OpenAI protocols (``api-key`` auth, Server-Sent Events)."""
