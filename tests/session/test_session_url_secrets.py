"""Log URLs never echo a password: `redact_url`, `url_secrets` and every `open_log` failure
(our messages and the database driver's, parseable URLs or not)."""

from __future__ import annotations

import secrets
import socket
import traceback
from pathlib import Path

import pytest
from session_helpers import PG_SKIP, pg_url

from modelwire.errors import ErrorCode, HarnessError, error_chain
from modelwire.session import open_log, redact_url, url_secrets
from modelwire.session.postgres import describe_postgres_url

PW = f"canaryPW{secrets.token_hex(8)}"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _shapes(tmp: Path) -> list[str]:
    """Every URL shape a password can hide in, each carrying the canary `PW`."""
    port = _closed_port()
    return [
        f"postgresql://alice:{PW}@[broken/db",  # unparseable: psycopg quotes the whole URI
        f"postgresql://alice:{PW}@[broken/db?password={PW}",
        f"postgresql://alice:{PW}@127.0.0.1:{port}/db",  # parseable, server unreachable
        f"postgres://alice:{PW}@127.0.0.1:{port}/db?sslmode=require",
        f"postgresql://127.0.0.1:{port}/db?password={PW}",
        f"postgresql://alice:{PW}@127.0.0.1:notaport/db",
        f"postgresql://alice:{PW.replace('PW', 'P%40W')}@127.0.0.1:{port}/db",  # percent-encoded
        f"postgresql://alice:{PW}@x@127.0.0.1:{port}/db",  # an unencoded @ in the password
        f"postgresql://alice:{PW}/x@127.0.0.1:{port}/db",  # an unencoded / in the password
        f"postgresql://alice:{PW}@127.0.0.1:{port}/db?sslmode=bogus",  # a driver URL complaint
        f"sqlite://admin:{PW}@h/x.db",
        f"sqlite:///{tmp}/x.db?password={PW}",
        f"sqlite:///{tmp}/x.db#{PW}",
        f"sqlite://:{PW}@/{tmp}/x.db",
        f"mysql://root:{PW}@db/x",  # an unknown scheme
        f"memory:?password={PW}",
    ]


def _assert_clean(text: str, where: str) -> None:
    assert PW.lower() not in text.lower(), f"the password leaked into {where}: {text}"
    assert PW.replace("PW", "P@W") not in text, f"the decoded password leaked into {where}"


async def test_open_log_never_echoes_a_password_in_any_url_shape(tmp_path: Path) -> None:
    for url in _shapes(tmp_path):
        with pytest.raises(HarnessError) as info:
            log = await open_log(url)
            await log.close()  # pragma: no cover (every shape must fail)
        err = info.value
        assert err.code == ErrorCode.LOG_UNAVAILABLE, (url, err)
        for text in (
            err.message,
            str(err),
            repr(err),
            error_chain(err),
            "".join(traceback.format_exception(err)),
        ):
            _assert_clean(text, f"the failure of open_log({redact_url(url)!r})")


def test_redact_url_removes_the_password_even_from_an_unparseable_url() -> None:
    assert redact_url(f"postgresql://alice:{PW}@[broken/db") == "postgresql://alice@[broken/db"
    assert redact_url(f"sqlite://admin:{PW}@h/x.db") == "sqlite://admin@h/x.db"
    assert redact_url(f"sqlite:///x.db?password={PW}") == "sqlite:///x.db?password=***"
    assert redact_url(f"postgresql://u:{PW}@h/db?sslpassword={PW}&sslmode=require") == (
        "postgresql://u@h/db?sslpassword=***&sslmode=require"
    )
    assert redact_url(f"postgresql://alice:{PW}/x@h/db") == "postgresql://alice@h/db"
    assert redact_url(f"postgresql://alice:a?{PW}@h/db") == "postgresql://alice@h/db"


def test_redact_url_keeps_a_url_without_secrets_as_written() -> None:
    for url in ("memory:", "sqlite:////abs/x.db", "sqlite:///rel.db?mode=ro", "postgresql://h/db"):
        assert redact_url(url) == url


def test_url_secrets_finds_the_password_parsed_or_by_position() -> None:
    assert PW in url_secrets(f"postgresql://alice:{PW}@[broken/db")
    assert PW in url_secrets(f"postgresql://h/db?password={PW}")
    assert "a@b" in url_secrets("postgresql://u:a%40b@h/db")  # the decoded form too
    assert url_secrets("postgresql://alice@h/db") == ()


def test_described_postgres_url_of_an_unparseable_url_keeps_host_not_password() -> None:
    described = describe_postgres_url(f"postgresql://alice:{PW}@[broken/db")
    assert described == "postgresql://alice@[broken/db"


@pytest.mark.postgres
@pytest.mark.skipif(pg_url() is None, reason=PG_SKIP)
async def test_a_real_server_refusing_the_login_never_hears_the_password_echoed() -> None:
    from urllib.parse import urlsplit

    server = urlsplit(pg_url() or "")
    where = f"{server.hostname}:{server.port or 5432}"
    for url in (
        f"postgresql://nobody:{PW}@{where}/postgres",  # an unknown role
        f"postgresql://postgres:{PW}@{where}/no_such_db?password={PW}",  # an unknown database
    ):
        with pytest.raises(HarnessError) as info:
            log = await open_log(url)
            await log.close()  # pragma: no cover
        assert info.value.code == ErrorCode.LOG_UNAVAILABLE
        _assert_clean(info.value.message, "the failure against a real server")
        _assert_clean("".join(traceback.format_exception(info.value)), "its traceback")
