"""API-key rules R-KEY-1..3 (spec/core.md §11.6 KEY-01..10, 17 expanded) and `resolve_api_key`."""

from __future__ import annotations

import pytest

from modelwire import ErrorCode, LlmError
from modelwire.wire.credentials import (
    ApiKeyAccepted,
    ApiKeyRejected,
    assert_usable_api_key,
    normalize_api_key,
    resolve_api_key,
)


def test_key_01_plain_key_accepted() -> None:
    assert normalize_api_key("sk-0123456789abcdef") == ApiKeyAccepted("sk-0123456789abcdef")
    assert normalize_api_key("sk-0123456789abcdef").ok is True


def test_key_02_surrounding_whitespace_is_trimmed() -> None:
    assert normalize_api_key("  sk-abc\t\n") == ApiKeyAccepted("sk-abc")
    assert normalize_api_key("\u3000\ufeffsk-abc\u00a0\u2028") == ApiKeyAccepted("sk-abc")


@pytest.mark.parametrize("raw", ["", "   ", "\t"], ids=["empty", "spaces", "tab"])
def test_key_03_blank_is_empty(raw: str) -> None:
    check = normalize_api_key(raw)
    assert check == ApiKeyRejected("empty")
    assert check.ok is False


@pytest.mark.parametrize(
    "raw",
    ["sk-\U0001f600abc", "sk-你好", "sk-abc，", "sk-abc def", "sk-abc\x01", "sk-café"],
    ids=["emoji", "cjk", "full-width-comma", "interior-space", "c0-control", "latin-1"],
)
def test_key_04_illegal_characters(raw: str) -> None:
    assert normalize_api_key(raw) == ApiKeyRejected("illegal_characters")


def test_key_04_python_only_whitespace_is_not_trimmed() -> None:
    # str.strip() would remove U+0085 and U+001F; JS trim keeps them, and they are illegal.
    assert normalize_api_key("sk-abc\x85") == ApiKeyRejected("illegal_characters")
    assert normalize_api_key("\x1fsk-abc") == ApiKeyRejected("illegal_characters")


def test_key_05_boundary_characters_accepted() -> None:
    assert normalize_api_key("!~") == ApiKeyAccepted("!~")


def test_key_06_invalid_credential_code() -> None:
    assert ErrorCode.INVALID_CREDENTIAL == "INVALID_CREDENTIAL"
    assert ErrorCode.MISSING_CREDENTIAL.value == "MISSING_CREDENTIAL"


def test_key_07_assert_usable_returns_trimmed_key() -> None:
    assert assert_usable_api_key("  sk-abc  ", "llm-deepseek", "DEEPSEEK_API_KEY") == "sk-abc"


def test_key_08_blank_key_message() -> None:
    with pytest.raises(LlmError) as info:
        assert_usable_api_key("  ", "llm-deepseek", "DEEPSEEK_API_KEY")
    assert info.value.code == "INVALID_CREDENTIAL"
    assert str(info.value).startswith(
        "llm-deepseek: the API key resolved from DEEPSEEK_API_KEY is blank"
    )


def test_key_09_illegal_key_names_package_and_reference() -> None:
    with pytest.raises(LlmError) as info:
        assert_usable_api_key("sk-\U0001f600", "llm-pi-ai", "ACME_API_KEY")
    assert info.value.code == ErrorCode.INVALID_CREDENTIAL
    assert info.value.failure.code == "INVALID_CREDENTIAL"
    assert "llm-pi-ai" in info.value.message
    assert "ACME_API_KEY" in info.value.message
    assert "contains characters no HTTP header can carry" in info.value.message


def test_key_10_message_never_contains_the_key() -> None:
    with pytest.raises(LlmError) as info:
        assert_usable_api_key("supersecret\U0001f600", "llm-pi-ai", "ACME_API_KEY")
    assert "supersecret" not in str(info.value)
    assert "supersecret" not in repr(info.value.failure)


def test_key_11_resolve_prefers_the_explicit_key() -> None:
    env = {"ACME_API_KEY": "sk-env"}
    assert resolve_api_key(api_key=" sk-direct ", api_key_env="ACME_API_KEY", env=env, pkg="p") == (
        "sk-direct"
    )
    assert resolve_api_key(api_key=None, api_key_env="ACME_API_KEY", env=env, pkg="p") == "sk-env"


def test_key_12_resolve_missing_variable_names_it_not_its_value() -> None:
    with pytest.raises(LlmError) as info:
        resolve_api_key(api_key=None, api_key_env="ACME_API_KEY", env={"OTHER": "sk-x"}, pkg="acme")
    assert info.value.code == "MISSING_CREDENTIAL"
    assert "ACME_API_KEY" in info.value.message
    assert info.value.message.startswith("acme: ")
    with pytest.raises(LlmError) as empty:
        resolve_api_key(api_key=None, api_key_env="ACME_API_KEY", env={"ACME_API_KEY": ""}, pkg="a")
    assert empty.value.code == "MISSING_CREDENTIAL"
    with pytest.raises(LlmError) as spaces:
        resolve_api_key(
            api_key=None, api_key_env="ACME_API_KEY", env={"ACME_API_KEY": " "}, pkg="a"
        )
    assert spaces.value.code == "INVALID_CREDENTIAL"
    assert "blank" in spaces.value.message
    with pytest.raises(LlmError) as nothing:
        resolve_api_key(api_key=None, api_key_env=None, env={}, pkg="acme")
    assert nothing.value.code == "MISSING_CREDENTIAL"


def test_key_13_resolve_present_but_unusable_is_invalid() -> None:
    env = {"ACME_API_KEY": "sk-top secret"}
    with pytest.raises(LlmError) as info:
        resolve_api_key(api_key=None, api_key_env="ACME_API_KEY", env=env, pkg="acme")
    assert info.value.code == "INVALID_CREDENTIAL"
    assert "secret" not in info.value.message
    with pytest.raises(LlmError) as blank:
        resolve_api_key(api_key="", api_key_env=None, env=None, pkg="acme")
    assert blank.value.code == "INVALID_CREDENTIAL"
    assert "api_key" in blank.value.message


def test_key_14_resolve_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODELWIRE_TEST_KEY_VAR", "sk-from-os")
    assert (
        resolve_api_key(api_key=None, api_key_env="MODELWIRE_TEST_KEY_VAR", env=None, pkg="p")
        == "sk-from-os"
    )
