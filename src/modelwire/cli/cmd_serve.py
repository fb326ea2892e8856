"""The `modelwire serve` command line (typer): the gateway, and `serve keys` for its virtual keys.

The work is in `modelwire.serve` (imported in the command bodies, so `--help` stays fast).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Annotated

import typer

from .errors import run_async
from .options import ConfigOption, DebugOption, JsonOption, LogOption, examples

__all__ = ["serve_app"]

SERVE_HELP = """Serve every configured route to OpenAI and Anthropic clients in any language:
POST /v1/chat/completions, /v1/responses and /v1/messages, GET /v1/models, /healthz and
/metrics. `model` is "route:model" or an alias of the config's [gateway.models]; fallbacks come
from [gateway.fallbacks]. Clients authenticate with a key from `modelwire serve keys create`
(Authorization: Bearer mwk_…, or x-api-key on /v1/messages) or the admin key
$MODELWIRE_ADMIN_KEY. Every request is a session in --log; keys, budgets and rate limits live
in the same database, so several `serve` processes on one SQLite file or PostgreSQL database
share them. SIGTERM stops accepting and lets running streams finish ([gateway] grace_ms).
"""

serve_app = typer.Typer(
    name="serve",
    help=SERVE_HELP,
    invoke_without_command=True,
    no_args_is_help=False,
    add_completion=False,
    rich_markup_mode=None,
)
keys_app = typer.Typer(
    name="keys", help="Create, list and revoke the gateway's virtual keys.", no_args_is_help=True
)
serve_app.add_typer(keys_app)


@serve_app.callback(
    epilog=examples(
        "MODELWIRE_ADMIN_KEY=… modelwire serve --config gateway.toml --log gateway.db",
        "modelwire serve --log postgresql://db/modelwire --host 0.0.0.0 --port 8080",
    )
)
def serve(
    ctx: typer.Context,
    config: ConfigOption = None,
    log: LogOption = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port to listen on (0: any free one).")
    ] = 4000,
    agent: Annotated[
        list[str] | None,
        typer.Option(
            "--agent",
            metavar="NAME=MODULE:FACTORY",
            help="Serve an agent at /v1/agents/NAME/… (the AI SDK's chat protocol and AG-UI); "
            "FACTORY(log) -> Agent as for `modelwire worker`. Repeatable.",
        ),
    ] = None,
    debug: DebugOption = False,
) -> None:
    if ctx.invoked_subcommand is not None:
        return

    async def go() -> int:
        from ..serve.run import serve as run
        from .config import resolve_log_url

        agents = _agents(agent or [])

        return await run(config, resolve_log_url(log), host=host, port=port, agents=agents)

    run_async(go, debug=debug)


def _agents(specs: list[str]) -> dict[str, object]:
    """`--agent NAME=MODULE:FACTORY` options as `create_app`'s `agents`."""
    from .errors import fail
    from .worker import load_factory

    out: dict[str, object] = {}
    for spec in specs:
        name, sep, factory = spec.partition("=")
        if not sep or not name.strip() or "/" in name or not factory.strip():
            fail(
                f"--agent {spec!r}: expected NAME=MODULE:FACTORY, e.g. support=myapp.agents:make_agent"
            )
        if name.strip() in out:
            fail(f"--agent {spec!r}: the agent {name.strip()!r} is given twice")
        out[name.strip()] = load_factory(factory.strip())
    return out


def _money(value: str | None) -> Decimal | None:
    if value is None:
        return None
    try:
        amount = Decimal(value)
    except InvalidOperation:
        raise typer.BadParameter(
            f"{value!r} is not an amount in USD", param_hint="--budget-usd"
        ) from None
    if not amount.is_finite() or amount < 0:
        raise typer.BadParameter(
            f"{value!r} must be a non-negative amount", param_hint="--budget-usd"
        )
    return amount


def _expiry(value: str | None, now_ms: int) -> int | None:
    """`--expires`: an ISO date-time (UTC when no zone) or a duration like 30d, 12h, 15m."""
    if value is None:
        return None
    units = {"d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000}
    if value[:-1].isdigit() and value[-1:] in units:
        return now_ms + int(value[:-1]) * units[value[-1]]
    from datetime import UTC, datetime

    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(
            f"{value!r}: give an ISO date-time (2027-01-31T00:00) or a duration (30d, 12h, 15m)",
            param_hint="--expires",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


@keys_app.command(
    "create",
    epilog=examples(
        "modelwire serve keys create --name ci --budget-usd 5 --rpm 60 --routes openai,anthropic",
        "modelwire serve keys create --name trial --expires 7d --log postgresql://db/modelwire",
    ),
)
def keys_create(
    name: Annotated[
        str, typer.Option("--name", help="The key's name (unique; logged with its requests).")
    ],
    budget_usd: Annotated[
        str | None,
        typer.Option(
            "--budget-usd", metavar="USD", help="Total spend allowed.", show_default=False
        ),
    ] = None,
    rpm: Annotated[
        int | None, typer.Option("--rpm", min=1, help="Requests per minute.", show_default=False)
    ] = None,
    tpm: Annotated[
        int | None, typer.Option("--tpm", min=1, help="Tokens per minute.", show_default=False)
    ] = None,
    routes: Annotated[
        str | None,
        typer.Option(
            "--routes", metavar="A,B", help="The only routes it may use.", show_default=False
        ),
    ] = None,
    expires: Annotated[
        str | None,
        typer.Option(
            "--expires",
            metavar="WHEN",
            help="ISO date-time or duration (30d, 12h).",
            show_default=False,
        ),
    ] = None,
    log: LogOption = None,
    debug: DebugOption = False,
) -> None:
    """Create a key and print it once (only its hash is stored)."""
    import time

    now = time.time_ns() // 1_000_000
    budget = _money(budget_usd)
    expires_ms = _expiry(expires, now)
    chosen = None if routes is None else tuple(r.strip() for r in routes.split(",") if r.strip())

    async def go() -> int:
        from ..serve.keystore import create_key, open_keys
        from .config import resolve_log_url

        driver = await open_keys(resolve_log_url(log))
        try:
            key = await create_key(
                driver,
                name,
                now,
                budget_usd=budget,
                rpm=rpm,
                tpm=tpm,
                routes=chosen,
                expires_ms=expires_ms,
            )
        finally:
            await driver.close()
        typer.echo(key)
        return 0

    run_async(go, debug=debug)


@keys_app.command("list")
def keys_list(
    log: LogOption = None, json_out: JsonOption = False, debug: DebugOption = False
) -> None:
    """List the keys: name, start of the key, limits, spend, state."""
    import json
    import time

    async def go() -> int:
        from ..serve.keystore import list_keys, open_keys
        from .config import resolve_log_url

        driver = await open_keys(resolve_log_url(log))
        try:
            records = await list_keys(driver)
        finally:
            await driver.close()
        now = time.time_ns() // 1_000_000
        rows = [
            {
                "name": r.name,
                "key": r.key_start + "…",
                "budget_usd": None if r.budget_usd is None else str(r.budget_usd),
                "spent_usd": str(r.spent_usd),
                "rpm": r.rpm,
                "tpm": r.tpm,
                "routes": None if r.routes is None else list(r.routes),
                "state": "live" if r.live(now) else ("revoked" if r.revoked_ms else "expired"),
            }
            for r in records
        ]
        if json_out:
            typer.echo(json.dumps(rows))
            return 0
        for row in rows:
            limits = " ".join(
                f"{k}={row[k]}" for k in ("budget_usd", "rpm", "tpm") if row[k] is not None
            )
            routes = ",".join(row["routes"]) if isinstance(row["routes"], list) else "all routes"
            typer.echo(
                f"{row['name']}\t{row['key']}\t{row['state']}\tspent {row['spent_usd']}\t{limits or 'no limits'}\t{routes}"
            )
        return 0

    run_async(go, debug=debug)


@keys_app.command("revoke")
def keys_revoke(
    name: Annotated[str, typer.Argument(help="The key's name.")],
    log: LogOption = None,
    debug: DebugOption = False,
) -> None:
    """Revoke a key: every serve process refuses it from its next request."""
    import time

    async def go() -> int:
        from ..serve.keystore import open_keys, revoke_key
        from .config import resolve_log_url
        from .errors import fail

        driver = await open_keys(resolve_log_url(log))
        try:
            done = await revoke_key(driver, name, time.time_ns() // 1_000_000)
        finally:
            await driver.close()
        if not done:
            fail(f"no live key named {name!r}")
        typer.echo(f"revoked {name}")
        return 0

    run_async(go, debug=debug)
