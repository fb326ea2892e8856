"""The keys over HTTP, for the admin key only (`$MODELWIRE_ADMIN_KEY`), as LiteLLM's master key:

- `POST /v1/keys` `{name, budget_usd?, rpm?, tpm?, routes?, expires_ms?}` → 201 with the new
  `key` (shown this once) and its record;
- `GET /v1/keys` → `{"data": [record, …]}` (never a key: its first 8 characters);
- `DELETE /v1/keys/{name}` → the revoked record's name, 404 when no live key has it.

Errors are in OpenAI's shape; another key is a 403, none a 401.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from aiohttp import web

from ..errors import HarnessError
from .fields import bad, decode_body, get_int, get_list, get_str, require_str
from .gateway import ADMIN, Gateway, authenticate
from .handlers import GATEWAY, error_response
from .keystore import KeyRecord, create_key, list_keys, revoke_key
from .problems import GatewayError

__all__ = ["add_admin_routes"]


def _shown(record: KeyRecord) -> dict[str, object]:
    return {
        "name": record.name,
        "key_start": record.key_start,
        "budget_usd": None if record.budget_usd is None else str(record.budget_usd),
        "spent_usd": str(record.spent_usd),
        "reserved_usd": str(record.reserved_usd),
        "rpm": record.rpm,
        "tpm": record.tpm,
        "routes": None if record.routes is None else list(record.routes),
        "expires_ms": record.expires_ms,
        "created_ms": record.created_ms,
        "revoked_ms": record.revoked_ms,
    }


async def _admin(request: web.Request) -> Gateway:
    gateway = request.app[GATEWAY]
    caller = await authenticate(gateway, request.headers, x_api_key=False)
    if caller.name != ADMIN or caller.record is not None:
        raise GatewayError(403, "AUTH", "managing keys takes the admin key ($MODELWIRE_ADMIN_KEY)")
    if gateway.driver is None:
        raise GatewayError(501, "UNSUPPORTED_OPTION", "keys need a SQLite or PostgreSQL log")
    return gateway


def _budget(text: str | None) -> Decimal | None:
    if text is None:
        return None
    try:
        amount = Decimal(text)
    except InvalidOperation:
        raise bad("budget_usd", 'must be a decimal string such as "12.50"') from None
    if not amount.is_finite() or amount < 0:
        raise bad("budget_usd", "must be a non-negative amount")
    return amount


async def _create(request: web.Request) -> web.StreamResponse:
    try:
        gateway = await _admin(request)
        body = decode_body(await request.read())
        routes = get_list(body, "routes", "")
        if routes is not None and not all(isinstance(r, str) and r for r in routes):
            raise bad("routes", "must be an array of route names")
        raw_budget = body.get("budget_usd")
        budget = _budget(
            str(raw_budget)
            if isinstance(raw_budget, (int, float))
            else get_str(body, "budget_usd", "")
        )
        name = require_str(body, "name", "")
        assert gateway.driver is not None
        try:
            key = await create_key(
                gateway.driver,
                name,
                gateway.clock(),
                budget_usd=budget,
                rpm=get_int(body, "rpm", ""),
                tpm=get_int(body, "tpm", ""),
                routes=None if routes is None else tuple(str(r) for r in routes),
                expires_ms=get_int(body, "expires_ms", ""),
            )
        except HarnessError as exc:
            raise GatewayError(400, exc.code, exc.message) from None
        record = next(r for r in await list_keys(gateway.driver) if r.name == name)
        return web.json_response({"key": key, **_shown(record)}, status=201)
    except GatewayError as error:
        return error_response("openai", error)


async def _list(request: web.Request) -> web.StreamResponse:
    try:
        gateway = await _admin(request)
        assert gateway.driver is not None
        return web.json_response({"data": [_shown(r) for r in await list_keys(gateway.driver)]})
    except GatewayError as error:
        return error_response("openai", error)


async def _revoke(request: web.Request) -> web.StreamResponse:
    try:
        gateway = await _admin(request)
        assert gateway.driver is not None
        name = request.match_info["name"]
        if not await revoke_key(gateway.driver, name, gateway.clock()):
            raise GatewayError(404, "INVALID_ARGS", f"no live key named {name!r}")
        return web.json_response({"name": name, "revoked": True})
    except GatewayError as error:
        return error_response("openai", error)


def add_admin_routes(app: web.Application) -> None:
    """Add the key management routes (module docstring)."""
    app.router.add_post("/v1/keys", _create)
    app.router.add_get("/v1/keys", _list)
    app.router.add_delete("/v1/keys/{name}", _revoke)
