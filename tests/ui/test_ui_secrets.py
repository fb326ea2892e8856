"""No secret on the page: the log holds none, and the one credential the inspector knows — the
log URL's password — never appears in a page, a payload or an error. And nothing is written."""

from __future__ import annotations

import aiohttp
import pytest
from ui_logs import PG_URL, FakeClock, build_sessions, pg_schema_url, rig_for
from ui_serving import Built

from modelwire.session import open_log
from modelwire.ui import serve

SECRET = "s3cret-Pa55word"


async def crawl(base: str, session_id: str) -> list[str]:
    paths = [
        ("/", {}),
        ("/session", {"id": session_id}),
        ("/api/sessions", {}),
        ("/api/sessions", {"sort": "tokens"}),
        ("/api/session", {"id": session_id}),
        ("/api/attempt", {"id": session_id, "turn": "1", "step": "1", "attempt": "1"}),
        ("/api/chunks", {"id": session_id, "turn": "1", "step": "1", "attempt": "1"}),
        ("/api/events", {"id": session_id}),
        ("/api/session", {"id": "no-such-session"}),
    ]
    bodies = []
    async with aiohttp.ClientSession() as http:
        for path, params in paths:
            async with http.get(base + path, params=params) as response:
                bodies.append(await response.text())
    return bodies


@pytest.mark.postgres
@pytest.mark.skipif(not PG_URL, reason="MODELWIRE_TEST_POSTGRES_URL is not set")
async def test_the_log_password_never_reaches_the_page() -> None:
    async with pg_schema_url() as url:
        clock = FakeClock()
        writer = await open_log(url)
        ids = await build_sessions(rig_for(writer, clock))
        await writer.close()
        assert url.startswith("postgresql://postgres@")
        with_password = url.replace("postgresql://postgres@", f"postgresql://postgres:{SECRET}@", 1)
        server = await serve(with_password)
        try:
            bodies = await crawl(server.url.rstrip("/"), ids.retries)
        finally:
            await server.close()
    assert all(SECRET not in body for body in bodies)
    assert any("postgresql://postgres@" in body for body in bodies)  # the log is named, without it


async def test_browsing_writes_nothing(built: Built) -> None:
    before = await built.log.sessions()
    base = str(built.client.make_url("")).rstrip("/")
    bodies = await crawl(base, built.ids.retries)
    assert all(body for body in bodies)
    assert await built.log.sessions() == before
