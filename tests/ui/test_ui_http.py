"""HTTP-level tests of every page and JSON endpoint of `modelwire ui`, on a log written by real
agent turns (a retried rate limit, a tool call, a tool error, a turn that fails after retries)."""

from __future__ import annotations

from typing import Any  # JSON decoded from the server: its shape is what these checks check

import pytest
from ui_logs import SPECIAL_ID, XSS_REPLY, XSS_USER
from ui_serving import Built

from modelwire.ui.assets import load_assets
from modelwire.ui.guard import CSP


def _attempts(view: Any) -> dict[str, Any]:
    return {
        f"{a['turn']}.{a['step']}.{a['attempt']}": a
        for turn in view["turns"]
        for step in turn["steps"]
        for a in step["attempts"]
    }


async def test_pages_and_static_files_are_served_with_a_strict_policy(built: Built) -> None:
    for path, marker in (("/", "list.js"), ("/session?id=retries", "session.js")):
        response = await built.client.get(path)
        assert response.status == 200
        assert response.content_type == "text/html"
        body = await response.text()
        assert f'<script type="module" src="/static/{marker}">' in body
        assert "http://" not in body and "https://" not in body  # nothing from a CDN
        assert response.headers["Content-Security-Policy"] == CSP
        assert response.headers["X-Content-Type-Options"] == "nosniff"
    for name in load_assets():
        response = await built.client.get(f"/static/{name}")
        assert response.status == 200, name
        assert response.headers["Content-Security-Policy"] == CSP
    script = await built.client.get("/static/session.js")
    assert script.content_type == "text/javascript"
    assert (await built.client.get("/static/nope.js")).status == 404
    assert (await built.client.get("/static/..%2Fapp.py")).status == 404


async def test_the_server_is_read_only(built: Built) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        response = await built.client.request(method, "/api/sessions")
        assert response.status == 405, method


async def test_a_foreign_host_header_is_refused(built: Built) -> None:
    # DNS rebinding: a page on another origin reaching 127.0.0.1 under its own host name
    response = await built.client.get("/api/sessions", headers={"Host": "evil.example:8765"})
    assert response.status == 421
    ok = await built.client.get("/api/sessions", headers={"Host": "localhost:8765"})
    assert ok.status == 200


async def test_the_sessions_list_shows_each_session(built: Built) -> None:
    page: Any = await built.json("/api/sessions")
    assert page["total"] == page["matched"] == 4
    rows = {row["session_id"]: row for row in page["items"]}
    assert set(rows) == set(built.ids.all())
    retries = rows["retries"]
    assert retries["route"] == "scripted/sim-1"
    assert retries["turns"] == 2
    assert retries["outcome"] == "error" and retries["outcome_code"] == "SERVER"
    # meter: the failed attempt's billed tokens count, each call once
    assert retries["tokens"] == (120 + 3) + (130 + 18) + (40 + 150 + 12)
    assert retries["cost"] is None  # the meter offers no price: blank, never invented
    assert rows["tools"]["outcome"] == "completed"
    # newest activity first by default
    lasts = [row["last_time"] for row in page["items"]]
    assert lasts == sorted(lasts, reverse=True)


@pytest.mark.parametrize(
    ("sort", "order", "first"),
    [
        ("id", "asc", "retries"),
        ("id", "desc", "xss"),
        ("tokens", "desc", "retries"),
        ("tokens", "asc", SPECIAL_ID),
        ("turns", "desc", "retries"),
        ("started", "asc", "retries"),
        ("events", "desc", "xss"),
        ("outcome", "desc", "retries"),
        ("outcome", "asc", SPECIAL_ID),
    ],
)
async def test_the_sessions_list_sorts_by_any_column(
    built: Built, sort: str, order: str, first: str
) -> None:
    page: Any = await built.json("/api/sessions", sort=sort, order=order)
    assert page["items"][0]["session_id"] == first
    assert page["sort"] == sort and page["order"] == order


async def test_the_sessions_list_searches_and_pages(built: Built) -> None:
    found: Any = await built.json("/api/sessions", q="XS")
    assert [r["session_id"] for r in found["items"]] == ["xss"]
    assert found["matched"] == 1 and found["total"] == 4
    by_outcome: Any = await built.json("/api/sessions", q="server")
    assert [r["session_id"] for r in by_outcome["items"]] == ["retries"]
    first: Any = await built.json("/api/sessions", sort="id", order="asc", limit=3)
    second: Any = await built.json("/api/sessions", sort="id", order="asc", limit=3, offset=3)
    ids = [r["session_id"] for r in first["items"] + second["items"]]
    assert ids == sorted(built.ids.all())
    assert len(first["items"]) == 3 and len(second["items"]) == 1


@pytest.mark.parametrize(
    "params",
    [
        {"sort": "nope"},
        {"order": "sideways"},
        {"limit": 0},
        {"limit": 501},
        {"offset": -1},
        {"offset": "x"},
    ],
)
async def test_bad_list_parameters_are_a_400_naming_them(
    built: Built, params: dict[str, Any]
) -> None:
    body: Any = await built.json("/api/sessions", status=400, **params)
    assert body["error"]["code"] == "INVALID_ARGS"
    assert next(iter(params)) in body["error"]["message"]


async def test_a_session_view_has_turns_steps_attempts_retries_and_tools(built: Built) -> None:
    view: Any = await built.json("/api/session", id="retries")
    assert view["full"] is True and view["running"] is False
    assert [t["turn"] for t in view["turns"]] == [1, 2]
    first, second = view["turns"]
    assert first["outcome"] == "completed"
    step = first["steps"][0]
    failed, retried = step["attempts"]
    assert failed["status"] == "failed"
    assert failed["failure"]["code"] == "RATE_LIMIT" and failed["failure"]["status"] == 429
    assert failed["usage"]["total"] == 123
    assert retried["status"] == "ok" and retried["finish"] == "tool-calls"
    (wait,) = step["retries"]
    assert (
        wait["retry"] == 1 and wait["max_retries"] == 2 and wait["failure"]["code"] == "RATE_LIMIT"
    )
    # drawn to scale: the wait sits between the failed attempt and the retry
    assert failed["end"] <= wait["start"] <= wait["end"] <= retried["start"]
    assert wait["end"] - wait["start"] >= wait["delay_ms"]  # the fake sleep advanced the clock
    (tool,) = step["tools"]
    assert tool["name"] == "add" and tool["end"] - tool["start"] >= 140
    assert second["outcome"] == "error" and second["failure"]["code"] == "SERVER"
    attempts = second["steps"][0]["attempts"]
    assert [a["status"] for a in attempts] == ["failed"] * 3
    assert len(second["steps"][0]["retries"]) == 2
    assert [(c["turn"], c["step"], c["attempt"]) for c in view["calls"]] == [
        (1, 1, 1),
        (1, 1, 2),
        (1, 2, 1),
    ]
    assert view["total"]["total"] == 473 and view["cost"] is None


async def test_the_transcript_pairs_tool_calls_with_results_and_notes_failures(
    built: Built,
) -> None:
    view: Any = await built.json("/api/session", id="retries")
    kinds = [item["kind"] for item in view["transcript"]]
    assert kinds[:2] == ["user", "system"]
    items = view["transcript"]
    call = next(
        b
        for i in items
        if i["kind"] == "assistant"
        for b in i["blocks"]
        if b["type"] == "tool-call"
    )
    result = next(i for i in items if i["kind"] == "tool")
    assert call["call_id"] == result["call_id"] == "call_add_1"
    assert result["blocks"][0]["text"] == "42"
    final = [i for i in items if i["kind"] == "assistant"][-1]
    assert [b["type"] for b in final["blocks"]] == ["reasoning", "text"]
    assert final["blocks"][1]["text"].startswith("The sum is **42**.")
    notes = [i["blocks"][0]["text"] for i in items if i["kind"] == "note"]
    assert notes[0] == "attempt 1.1.1 failed: RATE_LIMIT (HTTP 429): slow down"
    assert notes[1].startswith("retry 1/2 of step 1.1 in 500 ms")
    assert notes[-1] == "turn 2 ended: error — SERVER (HTTP 503): upstream overloaded"
    assert [i["seq"] for i in items] == sorted(i["seq"] for i in items)


async def test_hostile_text_reaches_the_page_verbatim_as_json_data(built: Built) -> None:
    response = await built.client.get("/api/session", params={"id": "xss"})
    assert response.content_type == "application/json"
    view: Any = await response.json()
    texts = [b["text"] for i in view["transcript"] for b in i["blocks"]]
    assert XSS_USER in texts and XSS_REPLY in texts  # unchanged: the page renders it as text


async def test_a_session_id_with_url_metacharacters_works(built: Built) -> None:
    view: Any = await built.json("/api/session", id=SPECIAL_ID)
    assert view["session_id"] == SPECIAL_ID
    assert (await built.client.get("/session", params={"id": SPECIAL_ID})).status == 200


async def test_an_attempt_shows_its_request_facts(built: Built) -> None:
    detail: Any = await built.json("/api/attempt", id="retries", turn=1, step=1, attempt=2)
    assert detail["attempt"]["status"] == "ok"
    header = detail["header"]
    assert header["reason"] == "initial"
    assert header["header"]["config"] == {"provider": "scripted", "model": "sim-1"}
    assert header["header"]["system"] == "You are terse. Use tools for arithmetic."
    assert [t["name"] for t in header["header"]["tools"]] == ["add", "lookup"]
    assert detail["context"]["context"]["context_window"] == 65_536
    assert detail["input_messages"] == 1
    step2: Any = await built.json("/api/attempt", id="retries", turn=1, step=2, attempt=1)
    assert step2["input_messages"] == 3  # the question, the tool call, its result


async def test_an_attempt_s_raw_chunks_come_in_pages(built: Built) -> None:
    params = {"id": "retries", "turn": 1, "step": 2, "attempt": 1}
    whole: Any = await built.json("/api/chunks", **params)
    assert whole["next_seq"] is None
    types = [row["chunk"]["type"] for row in whole["items"]]
    assert types[0] == "block-start" and types[-2:] == ["usage", "finish"]
    assert whole["total"] == len(whole["items"])
    seen: list[int] = []
    cursor: object = None
    while True:
        page: Any = await built.json(
            "/api/chunks", **params, limit=4, **({"from_seq": cursor} if cursor else {})
        )
        seen += [row["seq"] for row in page["items"]]
        cursor = page["next_seq"]
        if cursor is None:
            break
    assert seen == [row["seq"] for row in whole["items"]]
    failed: Any = await built.json("/api/chunks", id="retries", turn=1, step=1, attempt=1)
    assert failed["items"][-1]["chunk"]["reason"]["failure"]["code"] == "RATE_LIMIT"


async def test_the_raw_events_come_in_pages(built: Built) -> None:
    first: Any = await built.json("/api/events", id="tools", limit=10)
    assert [e["seq"] for e in first["items"]] == list(range(10))
    assert first["items"][0]["type"] == "turn/start" and first["items"][0]["data"] == {"turn": 1}
    rest: Any = await built.json("/api/events", id="tools", from_seq=first["next_seq"], limit=500)
    assert rest["next_seq"] is None
    assert rest["items"][-1]["type"] == "turn/end"


@pytest.mark.parametrize(
    ("path", "params", "status", "code"),
    [
        ("/api/session", {"id": "nobody"}, 404, "SESSION_NOT_FOUND"),
        ("/api/session", {}, 400, "INVALID_ARGS"),
        ("/api/session", {"id": "bad\nid"}, 400, "INVALID_SESSION_ID"),
        (
            "/api/attempt",
            {"id": "retries", "turn": 1, "step": 1, "attempt": 9},
            404,
            "SESSION_NOT_FOUND",
        ),
        ("/api/attempt", {"id": "retries", "turn": 1, "step": 1}, 400, "INVALID_ARGS"),
        ("/api/chunks", {"id": "retries", "turn": 0, "step": 1, "attempt": 1}, 400, "INVALID_ARGS"),
        ("/api/events", {"id": "nobody"}, 404, "SESSION_NOT_FOUND"),
        ("/api/live", {"id": "nobody"}, 404, "SESSION_NOT_FOUND"),
    ],
)
async def test_errors_are_json_with_a_stable_code(
    built: Built, path: str, params: dict[str, Any], status: int, code: str
) -> None:
    body: Any = await built.json(path, status=status, **params)
    assert body["error"]["code"] == code


NOT_ASCII_DIGITS = ("²", "٣", "1_000", " 5", "+5", "5\u00a0", "1e3", "0x10", "9" * 40)


async def test_numbers_in_queries_and_headers_are_ascii_digits_or_a_400(built: Built) -> None:
    where = {"id": "retries", "turn": "1", "step": "1", "attempt": "1"}
    for raw in NOT_ASCII_DIGITS:
        for path, name, params in (
            ("/api/sessions", "offset", {}),
            ("/api/sessions", "limit", {}),
            ("/api/events", "from_seq", {"id": "retries"}),
            ("/api/chunks", "limit", where),
            ("/api/attempt", "step", where),
            ("/api/live", "from_seq", {"id": "retries"}),
        ):
            body: Any = await built.json(path, status=400, **{**params, name: raw})
            assert body["error"]["code"] == "INVALID_ARGS", (path, raw)
            assert f"`{name}`" in body["error"]["message"], (path, raw)
        if raw.strip() != raw:
            continue  # a header value's surrounding spaces are not part of it (RFC 9110)
        response = await built.client.get(
            "/api/live", params={"id": "retries"}, headers={"Last-Event-ID": raw}
        )
        assert response.status == 400, raw
        assert "Last-Event-ID" in (await response.json())["error"]["message"]
    resumed = await built.client.get(
        "/api/live", params={"id": "retries"}, headers={"Last-Event-ID": "3"}
    )
    assert resumed.status == 200 and resumed.content_type == "text/event-stream"
    resumed.close()
