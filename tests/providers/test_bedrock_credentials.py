"""Ambient AWS authentication of Bedrock routes: bearer token, environment keys, the shared
credentials file, the signing region, and failures that name what to set but never a value."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from modelwire.adapters.providers.aws_credentials import authorize, resolve_keys, resolve_region
from modelwire.adapters.providers.protocols.request import BuiltRequest
from modelwire.adapters.providers.protocols.spec import AuthContext
from modelwire.errors import LlmError
from modelwire.wire.sigv4 import sign

SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
URL = (
    "https://bedrock-runtime.us-west-2.amazonaws.com/model/us.amazon.nova-micro-v1%3A0"
    "/converse-stream"
)
REQUEST = BuiltRequest(url=URL, headers={}, body=b'{"messages":[]}')
EPOCH = 1440938160.0  # 2015-08-30T12:36:00Z


def _ctx(env: dict[str, str], region: str | None = "eu-west-1") -> AuthContext:
    return AuthContext(route="br", env=env, region=region, now=lambda: EPOCH)


def _failure(env: dict[str, str], region: str | None = "eu-west-1") -> LlmError:
    with pytest.raises(LlmError) as err:
        authorize(REQUEST, {"Content-Type": "application/json"}, _ctx(env, region))
    return err.value


def _write(home: Path, text: str, name: str = "credentials") -> Path:
    folder = home / ".aws"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_bearer_token_is_sent_as_authorization_bearer_without_a_region() -> None:
    env = {"AWS_BEARER_TOKEN_BEDROCK": "bedrock-api-key-123", "AWS_ACCESS_KEY_ID": "AKID"}
    assert authorize(REQUEST, {}, _ctx(env, region=None)) == {
        "Authorization": "Bearer bedrock-api-key-123"
    }


def test_environment_keys_sign_the_final_headers_with_sigv4() -> None:
    env = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": SECRET}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/vnd.amazon.eventstream",
        "User-Agent": "modelwire",
        "X-Amz-Target": "kept",
    }
    got = authorize(REQUEST, headers, _ctx(env))
    want = sign(
        "POST",
        URL,
        {"Content-Type": "application/json", "X-Amz-Target": "kept"},
        REQUEST.body,
        access_key="AKIDEXAMPLE",
        secret_key=SECRET,
        session_token=None,
        region="eu-west-1",
        service="bedrock",
        now=datetime(2015, 8, 30, 12, 36, tzinfo=UTC),
    )
    assert got == want
    assert (
        "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-target,"
        in (got["Authorization"])
    )
    assert "Credential=AKIDEXAMPLE/20150830/eu-west-1/bedrock/aws4_request" in got["Authorization"]
    assert got["X-Amz-Date"] == "20150830T123600Z"
    assert "X-Amz-Security-Token" not in got


def test_session_token_is_signed_and_sent() -> None:
    env = {
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_SESSION_TOKEN": "session-tok",
    }
    got = authorize(REQUEST, {"Content-Type": "application/json"}, _ctx(env))
    assert got["X-Amz-Security-Token"] == "session-tok"
    assert ";x-amz-security-token," in got["Authorization"]


def test_environment_keys_win_over_the_shared_credentials_file(tmp_path: Path) -> None:
    _write(tmp_path, "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = s\n")
    env = {"HOME": str(tmp_path), "AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "e"}
    assert resolve_keys("br", env).access_key == "ENVKEY"


def test_shared_credentials_file_default_profile_under_home(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n"
        "aws_session_token = filetoken\n\n[other]\naws_access_key_id = O\n"
        "aws_secret_access_key = o\n",
    )
    keys = resolve_keys("br", {"HOME": str(tmp_path)})
    assert (keys.access_key, keys.secret_key, keys.session_token) == (
        "FILEKEY",
        "filesecret",
        "filetoken",
    )
    assert keys.source == f"{path} [default]"
    assert "filesecret" not in repr(keys)
    got = authorize(REQUEST, {"Content-Type": "application/json"}, _ctx({"HOME": str(tmp_path)}))
    assert "Credential=FILEKEY/" in got["Authorization"]
    assert got["X-Amz-Security-Token"] == "filetoken"


def test_aws_profile_selects_the_section(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "[default]\naws_access_key_id = D\naws_secret_access_key = d\n"
        "[work]\naws_access_key_id = W\naws_secret_access_key = w\n",
    )
    assert resolve_keys("br", {"HOME": str(tmp_path), "AWS_PROFILE": "work"}).access_key == "W"


def test_aws_shared_credentials_file_names_the_file_and_tilde_is_the_env_home(
    tmp_path: Path,
) -> None:
    _write(tmp_path, "[default]\naws_access_key_id = ELSEWHERE\naws_secret_access_key = x\n", "c2")
    env = {"HOME": str(tmp_path), "AWS_SHARED_CREDENTIALS_FILE": "~/.aws/c2"}
    assert resolve_keys("br", env).access_key == "ELSEWHERE"


def test_missing_credentials_name_every_place_looked_and_no_value(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "AWS_PROFILE": "nope", "UNRELATED_SECRET": "hunter2"}
    error = _failure(env)
    assert error.code == "MISSING_CREDENTIAL"
    message = error.message
    assert 'route "br"' in message
    for name in (
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_PROFILE",
        "[nope]",
        str(tmp_path / ".aws" / "credentials"),
    ):
        assert name in message
    assert "hunter2" not in message


def test_half_a_key_pair_names_the_missing_variable_not_the_value() -> None:
    error = _failure({"AWS_ACCESS_KEY_ID": "AKIAVISIBLE"})
    assert error.code == "MISSING_CREDENTIAL"
    assert "AWS_SECRET_ACCESS_KEY is not" in error.message
    assert "AKIAVISIBLE" not in error.message


def test_profile_with_half_a_key_pair_names_the_missing_key(tmp_path: Path) -> None:
    _write(tmp_path, "[default]\naws_access_key_id = LONELYKEY\n")
    error = _failure({"HOME": str(tmp_path)})
    assert error.code == "MISSING_CREDENTIAL"
    assert "aws_secret_access_key" in error.message
    assert "LONELYKEY" not in error.message


def test_unparsable_credentials_file_is_invalid_credential_without_its_text(
    tmp_path: Path,
) -> None:
    _write(tmp_path, "aws_secret_access_key = topsecretvalue\n[default\n")
    error = _failure({"HOME": str(tmp_path)})
    assert error.code == "INVALID_CREDENTIAL"
    assert "topsecretvalue" not in error.message
    assert error.__cause__ is None


def test_region_order_route_then_aws_region_then_default_region_then_endpoint() -> None:
    env = {"AWS_REGION": "us-east-2", "AWS_DEFAULT_REGION": "ap-south-1"}
    assert resolve_region("br", "eu-central-1", env, URL) == "eu-central-1"
    assert resolve_region("br", None, env, URL) == "us-east-2"
    assert resolve_region("br", None, {"AWS_DEFAULT_REGION": "ap-south-1"}, URL) == "ap-south-1"
    assert resolve_region("br", None, {}, URL) == "us-west-2"  # bedrock-runtime.<region>


def test_missing_region_names_the_route_field_and_variables() -> None:
    env = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": SECRET}
    request = BuiltRequest(url="http://127.0.0.1:9/model/m/converse-stream", headers={}, body=b"")
    with pytest.raises(LlmError) as err:
        authorize(request, {}, _ctx(env, region=None))
    error = err.value
    assert error.code == "INVALID_CONFIG"
    assert 'route "br"' in error.message
    assert '"region" field' in error.message
    assert "AWS_REGION" in error.message and "AWS_DEFAULT_REGION" in error.message
    assert SECRET not in error.message
