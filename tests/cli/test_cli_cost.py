"""Cost in the CLI, from real `modelwire` processes against loopback servers: `chat --json`
(a decimal string, or null), `sessions usage` (per call and in total), `sessions list` (a cost
column) and `modelwire models ROUTE` (list prices per bucket, USD per 1M tokens).

Every expected amount is computed by hand from pi-ai's list prices (in the comments).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import make_runner, run_cli_async

from modelwire.cli.demo_script import InjectedFailure, ScriptedReply, ScriptedStep, WireUsage
from modelwire.cli.demo_server import DemoServer

KEYS = {"DEEPSEEK_API_KEY": "sk-test", "ACME_KEY": "sk-test"}
# turn 1: 1000 prompt tokens of which 400 cache hits, 200 output (50 of them reasoning)
FIRST = ScriptedStep(reply=ScriptedReply(("hm",), ("One.",), WireUsage(1000, 200, 400, 50)))
# turn 2: a 503 first (no tokens billed), then 2000 prompt tokens (1500 cached), 100 output
SECOND = ScriptedStep(
    reply=ScriptedReply((), ("Two.",), WireUsage(2000, 100, 1500, 0)),
    failures=(InjectedFailure(503, "busy", "server_error", "0"),),
)
OWN = ScriptedStep(reply=ScriptedReply((), ("Own.",), WireUsage(10, 5, 0, 0)))

# deepseek-v4-flash (pi-ai): input 0.14, output 0.28, cache read 0.0028 per 1M tokens
#   turn 1: 600×0.14 + 400×0.0028 + 200×0.28  = 84 + 1.12 + 56 = 141.12 → 0.00014112
#   turn 2: 500×0.14 + 1500×0.0028 + 100×0.28 = 70 + 4.2 + 28  = 102.2  → 0.0001022
#   session: 141.12 + 102.2 = 243.32 → 0.00024332
TURN_1, TURN_2, TOTAL = "0.00014112", "0.0001022", "0.00024332"


def _config(home: Path, base_url: str) -> str:
    path = home / "c.toml"
    path.write_text(
        f'[deepseek]\nbase_url = "{base_url}"\n\n'
        "[providers.acme]\n"  # a declared route without `cost`: its prices are unknown
        'api = "openai-completions"\n'
        f'base_url = "{base_url}"\n'
        'api_key_env = "ACME_KEY"\n'
        'models = [{ id = "acme-1" }]\n\n'
        "[providers.anthropic]\n"  # a profile's `cost` wins over the catalog's prices
        'api_key_env = "ACME_KEY"\n'
        'models = [{ id = "claude-opus-4-8", cost = { input = 1, output = 2.5 } }, '
        '{ id = "claude-sonnet-4-6" }]\n',
        encoding="utf-8",
    )
    return str(path)


@pytest.fixture(scope="module")
def chatted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str, list[dict]]:
    """Two priced turns (session `priced`, two processes) and one unpriced (`own`) on a SQLite
    log: (home, config, log path, the `chat --json` documents)."""
    import asyncio

    home = tmp_path_factory.mktemp("cost")
    db = str(home / "chat.db")
    documents: list[dict] = []

    async def make() -> str:
        async with DemoServer((FIRST, SECOND), api_key="sk-test") as server:
            config = _config(home, server.base_url)
            base = ["--config", config, "--log", db, "--json"]
            for argv in (
                ["chat", "first", "--session", "priced", "--new", *base],
                ["chat", "second", "--session", "priced", *base],  # a new process, same prices
            ):
                result = await run_cli_async(home, argv, KEYS)
                assert result.code == 0, result.err
                documents.append(json.loads(result.out))
        async with DemoServer((OWN,), api_key="sk-test") as server:
            config = _config(home, server.base_url)
            argv = ["chat", "mine", "--session", "own", "--new", "-m", "acme:acme-1"]
            result = await run_cli_async(
                home, [*argv, "--config", config, "--log", db, "--json"], KEYS
            )
            assert result.code == 0, result.err
            documents.append(json.loads(result.out))
        return config

    config = asyncio.run(make())
    return home, config, db, documents


def test_chat_json_gives_each_turns_cost_as_a_decimal_string(
    chatted: tuple[Path, str, str, list[dict]],
) -> None:
    first, second, own = chatted[3]
    assert (first["turn"], first["cost"]) == (1, TURN_1)
    assert (second["turn"], second["cost"]) == (2, TURN_2)  # priced by turn 1's logged context
    assert own["route"] == "acme" and own["usage"]["input_tokens"] == 10
    assert own["cost"] is None  # unpriced route: null, never 0


def test_sessions_usage_shows_cost_per_call_and_in_total(
    chatted: tuple[Path, str, str, list[dict]],
) -> None:
    home, _, db, _ = chatted
    run = make_runner(home)
    table = run("sessions", "usage", "priced", "--log", db)
    assert table.code == 0, table.err
    rows = {line.split()[0]: line.split() for line in table.out.splitlines() if line.split()}
    assert "cost" in table.out.splitlines()[1]  # the header line has a cost column
    assert rows["1.1.1"][-1] == TURN_1
    assert rows["2.1.2"][-1] == TURN_2  # attempt 1 of turn 2 was a 503 without tokens
    assert "2.1.1" not in rows
    assert rows["total"][-1] == TOTAL
    assert f"cost: ${TOTAL}" in table.out
    document = json.loads(run("sessions", "usage", "priced", "--log", db, "--json").out)
    assert document["cost"] == TOTAL
    assert [(c["turn"], c["attempt"], c["cost"]) for c in document["calls"]] == [
        (1, 1, TURN_1),
        (2, 2, TURN_2),
    ]
    own = run("sessions", "usage", "own", "--log", db)
    own_rows = {line.split()[0]: line.split() for line in own.out.splitlines() if line.split()}
    assert own_rows["1.1.1"][-1] == "—" and own_rows["total"][-1] == "—"
    assert "cost: —" in own.out
    own_json = json.loads(run("sessions", "usage", "own", "--log", db, "--json").out)
    assert own_json["cost"] is None and own_json["calls"][0]["cost"] is None


def test_sessions_list_has_a_cost_column(chatted: tuple[Path, str, str, list[dict]]) -> None:
    home, _, db, _ = chatted
    run = make_runner(home)
    listing = run("sessions", "list", "--log", db)
    assert listing.code == 0, listing.err
    header, *lines = listing.out.splitlines()
    rows = {line.split()[0]: line.split() for line in lines}
    at = header.split().index("COST") + 1  # STARTED spans two fields (date and time)
    assert rows["priced"][at] == f"${TOTAL}"
    assert rows["own"][at] == "—"
    listed = {
        s["session_id"]: s for s in json.loads(run("sessions", "list", "--log", db, "--json").out)
    }
    assert listed["priced"]["cost"] == TOTAL and listed["own"]["cost"] is None


def test_models_lists_prices_per_bucket(chatted: tuple[Path, str, str, list[dict]]) -> None:
    home, config, _, _ = chatted
    run = make_runner(home)
    deepseek = json.loads(run("models", "deepseek", "--config", config, "--json").out)
    flash = next(m for m in deepseek["models"] if m["id"] == "deepseek-v4-flash")
    assert flash["pricing"] == {
        "input": "0.14",
        "output": "0.28",
        "cache_read": "0.0028",
        "cache_write": "0",
        "tiers": [],
    }
    openai = run("models", "openai")  # a catalog provider not configured: catalog prices
    assert openai.code == 0, openai.err
    row = next(line.split("│") for line in openai.out.splitlines() if line.startswith(" gpt-5.5 "))
    assert [cell.strip() for cell in row[-4:]] == ["5", "30", "0.5", "0"]
    assert "gpt-5.5: above 272,000 input tokens: 10 / 45 / 1 / 0" in openai.out
    tiers = json.loads(run("models", "openai", "--json").out)
    gpt55 = next(m for m in tiers["models"] if m["id"] == "gpt-5.5")
    assert gpt55["pricing"]["tiers"] == [
        {
            "input_tokens_above": 272000,
            "input": "10",
            "output": "45",
            "cache_read": "1",
            "cache_write": "0",
        }
    ]
    acme = run("models", "acme", "--config", config)
    line = next(line for line in acme.out.splitlines() if line.startswith(" acme-1 "))
    assert [cell.strip() for cell in line.split("│")[-4:]] == ["—"] * 4
    acme_json = json.loads(run("models", "acme", "--config", config, "--json").out)
    assert acme_json["models"][0]["pricing"] is None
    anthropic = json.loads(run("models", "anthropic", "--config", config, "--json").out)
    prices = {m["id"]: m["pricing"] for m in anthropic["models"]}
    assert prices["claude-opus-4-8"] == {  # the profile's `cost` (unnamed buckets cost 0)
        "input": "1",
        "output": "2.5",
        "cache_read": "0",
        "cache_write": "0",
        "tiers": [],
    }
    assert prices["claude-sonnet-4-6"]["cache_write"] == "3.75"  # the catalog's
