"""Ambient AWS authentication for Bedrock routes: which credential, which region, the signature.

Resolution, first match wins, read from the launch environment the adapter was given (never
`os.environ` behind its back):

1. ``AWS_BEARER_TOKEN_BEDROCK`` — a Bedrock API key, sent as ``Authorization: Bearer`` (no
   signature, no region needed);
2. ``AWS_ACCESS_KEY_ID`` + ``AWS_SECRET_ACCESS_KEY`` (+ ``AWS_SESSION_TOKEN``);
3. the shared credentials file (``AWS_SHARED_CREDENTIALS_FILE``, else ``~/.aws/credentials``
   with ``~`` from the environment's ``HOME``), section ``AWS_PROFILE`` or ``default``.

The signing region is the route's ``region``, else ``AWS_REGION``, else ``AWS_DEFAULT_REGION``,
else the region of a standard ``bedrock-runtime.<region>.amazonaws.com`` endpoint. Failures
name the route and what to set, never a value: ``MISSING_CREDENTIAL`` (nothing found, or half a
key pair), ``INVALID_CONFIG`` (no region), ``INVALID_CREDENTIAL`` (an unreadable credentials
file).
"""

from __future__ import annotations

import configparser
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, NamedTuple
from urllib.parse import urlsplit

from ...errors import ErrorCode, LlmError
from ...wire.sigv4 import sign
from .protocols.request import BuiltRequest
from .protocols.spec import AuthContext

__all__ = [
    "AMBIENT_ENV",
    "BEARER_ENV",
    "AwsKeys",
    "authorize",
    "aws_ambient_ready",
    "bedrock_bearer",
    "resolve_keys",
    "resolve_region",
]

BEARER_ENV: Final = "AWS_BEARER_TOKEN_BEDROCK"
AMBIENT_ENV: Final = (BEARER_ENV, "AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE")
"""Variables any one of which means ambient AWS credentials may exist."""
SERVICE: Final = "bedrock"
_ENDPOINT: Final = re.compile(
    r"^bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$", re.IGNORECASE
)
_SIGNED_NAMES: Final = frozenset({"host", "content-type"})
_AMZ_OWN: Final = frozenset({"x-amz-date", "x-amz-security-token", "x-amz-content-sha256"})


class AwsKeys(NamedTuple):
    """An access key pair (with its session token for temporary credentials) and where it came
    from (for messages: a variable or file name, never a value)."""

    access_key: str
    secret_key: str
    session_token: str | None
    source: str

    def __repr__(self) -> str:
        return f"AwsKeys(source={self.source!r})"


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    return value.strip() if value is not None and value.strip() else None


def bedrock_bearer(env: Mapping[str, str]) -> str | None:
    """The Bedrock API key of ``AWS_BEARER_TOKEN_BEDROCK``, when set and non-blank."""
    return _get(env, BEARER_ENV)


def _credentials_file(env: Mapping[str, str]) -> Path | None:
    named = _get(env, "AWS_SHARED_CREDENTIALS_FILE")
    home = _get(env, "HOME") or _get(env, "USERPROFILE")
    if named is not None:
        if named.startswith("~"):
            if home is None:
                return None
            return Path(home + named[1:])
        return Path(named)
    return None if home is None else Path(home) / ".aws" / "credentials"


def _from_file(route: str, env: Mapping[str, str]) -> AwsKeys | None:
    path = _credentials_file(env)
    if path is None or not path.is_file():
        return None
    profile = _get(env, "AWS_PROFILE") or "default"
    parser = configparser.RawConfigParser(default_section="\x00none", interpolation=None)
    try:
        with path.open(encoding="utf-8") as handle:
            parser.read_file(handle)
    except (OSError, UnicodeDecodeError, configparser.Error):
        # the parser's own text may quote a line of the file, and so a secret: say where only
        raise LlmError(
            f'route "{route}": the AWS shared credentials file {path} cannot be read as an INI '
            "file",
            ErrorCode.INVALID_CREDENTIAL,
        ) from None
    if not parser.has_section(profile):
        return None
    section = parser[profile]
    access = (section.get("aws_access_key_id") or "").strip()
    secret = (section.get("aws_secret_access_key") or "").strip()
    token = (section.get("aws_session_token") or section.get("aws_security_token") or "").strip()
    if not access and not secret:
        return None
    if not access or not secret:
        missing = "aws_access_key_id" if not access else "aws_secret_access_key"
        raise LlmError(
            f'route "{route}": profile [{profile}] of {path} has no {missing} (it needs both '
            "aws_access_key_id and aws_secret_access_key)",
            ErrorCode.MISSING_CREDENTIAL,
        )
    return AwsKeys(access, secret, token or None, f"{path} [{profile}]")


def resolve_keys(route: str, env: Mapping[str, str]) -> AwsKeys:
    """The access keys of `route` from the environment, else the shared credentials file.

    Raises `LlmError` ``MISSING_CREDENTIAL`` naming every place it looked (no value ever)."""
    access = _get(env, "AWS_ACCESS_KEY_ID")
    secret = _get(env, "AWS_SECRET_ACCESS_KEY")
    if access is not None and secret is not None:
        return AwsKeys(access, secret, _get(env, "AWS_SESSION_TOKEN"), "environment")
    if access is not None or secret is not None:
        have, missing = (
            ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
            if access is not None
            else ("AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID")
        )
        raise LlmError(
            f'route "{route}": {have} is set but {missing} is not; bedrock-converse-stream '
            "needs both (and AWS_SESSION_TOKEN for temporary credentials)",
            ErrorCode.MISSING_CREDENTIAL,
        )
    found = _from_file(route, env)
    if found is not None:
        return found
    path = _credentials_file(env)
    where = str(path) if path is not None else "~/.aws/credentials (HOME is not set)"
    profile = _get(env, "AWS_PROFILE") or "default"
    raise LlmError(
        f'route "{route}": no AWS credentials for bedrock-converse-stream; set '
        f"{BEARER_ENV}, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN "
        f"for temporary credentials), or profile [{profile}] in the shared credentials file "
        f"{where} (AWS_SHARED_CREDENTIALS_FILE and AWS_PROFILE choose file and profile)",
        ErrorCode.MISSING_CREDENTIAL,
    )


def aws_ambient_ready(env: Mapping[str, str]) -> bool:
    """A bearer token, or access keys from the environment or the shared credentials file."""
    if bedrock_bearer(env) is not None:
        return True
    try:
        resolve_keys("amazon-bedrock", env)
    except LlmError:
        return False
    return True


def resolve_region(route: str, region: str | None, env: Mapping[str, str], url: str) -> str:
    """The signing region of `route`: its own, ``AWS_REGION``, ``AWS_DEFAULT_REGION``, else the
    region of a standard Bedrock runtime endpoint `url`; raises ``INVALID_CONFIG`` if none."""
    if region is not None and region.strip():
        return region.strip()
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        value = _get(env, name)
        if value is not None:
            return value
    match = _ENDPOINT.match(urlsplit(url).hostname or "")
    if match is not None:
        return match.group(1).lower()
    raise LlmError(
        f'route "{route}": bedrock-converse-stream needs an AWS region to sign requests; set '
        'the route\'s "region" field, or AWS_REGION / AWS_DEFAULT_REGION',
        ErrorCode.INVALID_CONFIG,
    )


def authorize(
    request: BuiltRequest, headers: Mapping[str, str], ctx: AuthContext
) -> dict[str, str]:
    """The auth headers of one finished Bedrock request (`spec.Authorize`).

    A Bedrock API key gives ``Authorization: Bearer``; access keys give a SigV4 signature over
    ``host``, ``content-type`` and the ``x-amz-*`` headers among the final `headers` (plus the
    date, payload hash and session token it adds), for ``POST request.url`` byte for byte."""
    token = bedrock_bearer(ctx.env)
    if token is not None:
        return {"Authorization": f"Bearer {token}"}
    keys = resolve_keys(ctx.route, ctx.env)
    region = resolve_region(ctx.route, ctx.region, ctx.env, request.url)
    signed = {
        name: value
        for name, value in headers.items()
        if (low := name.lower()) in _SIGNED_NAMES
        or (low.startswith("x-amz-") and low not in _AMZ_OWN)
    }
    return sign(
        "POST",
        request.url,
        signed,
        request.body,
        access_key=keys.access_key,
        secret_key=keys.secret_key,
        session_token=keys.session_token,
        region=region,
        service=SERVICE,
        now=datetime.fromtimestamp(ctx.now(), tz=UTC),
    )
