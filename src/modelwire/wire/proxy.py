"""Which proxy a request goes through, as curl and httpx decide it.

`proxy_for(scheme, host, port, setting, env)`: a route's ``proxy`` setting wins (``"none"``:
direct); unset, the environment's ``https_proxy`` / ``http_proxy`` (by the request's scheme),
then ``all_proxy``, each in lower or upper case (the lower-case one first, as curl and urllib),
unless ``no_proxy`` (either case) names the host. `NO_PROXY` entries are comma- or space-
separated: ``*`` (every host), a name (itself and its subdomains; a leading dot is ignored), an
IP address, a CIDR block, each optionally with ``:port``. Loopback is proxied like any host
unless `NO_PROXY` names it, as with httpx.

A proxy URL without a scheme is taken as ``http://`` (as curl does); userinfo becomes a Basic
``Proxy-Authorization``. An environment proxy that is not ``http://`` is refused when used
(`ProxyError`), naming the variable and never the password.
"""

from __future__ import annotations

import base64
import ipaddress
import os
from collections.abc import Mapping
from typing import Final
from urllib.parse import unquote, urlsplit

from .h1 import WireError
from .settings import proxy_problem, redacted_proxy

__all__ = [
    "Proxy",
    "ProxyError",
    "no_proxy_matches",
    "proxy_for",
    "proxy_refused_credentials",
    "proxy_secrets",
]

_DEFAULT_PORT: Final = 80
_VARIABLES: Final = ("https_proxy", "http_proxy", "all_proxy")


class ProxyError(WireError):
    """The proxy could not be used: unreachable, refused, 407, or a bad environment value.
    `reason` already names the proxy (password hidden)."""


class Proxy:
    """One proxy to go through: where it is, its credentials as a header, how to name it."""

    __slots__ = ("authorization", "host", "port", "shown")

    def __init__(self, host: str, port: int, authorization: str | None, shown: str) -> None:
        self.host = host
        self.port = port
        self.authorization = authorization  # "Basic …", a secret
        self.shown = shown  # the URL without its password

    @property
    def key(self) -> tuple[str, int, str | None]:
        """What tells two proxies apart for connection reuse."""
        return (self.host, self.port, self.authorization)


def proxy_refused_credentials(proxy: Proxy, status: int = 407) -> ProxyError:
    """The failure of a proxy's 407 (or a 401 to a CONNECT, as tinyproxy answers wrong
    credentials): it asked for credentials, or refused the ones sent."""
    if proxy.authorization is None:
        return ProxyError(
            f"the proxy {proxy.shown} asked for credentials ({status} Proxy Authentication "
            "Required)"
        )
    return ProxyError(f"the proxy {proxy.shown} refused its credentials ({status})")


def parse_proxy(url: str, origin: str) -> Proxy:
    """The `Proxy` of a URL (``origin`` names where it came from, for the error text)."""
    if "://" not in url:
        url = "http://" + url
    problem = proxy_problem(url)
    shown = redacted_proxy(url)
    if problem is not None:
        raise ProxyError(f"the proxy {shown} ({origin}) {problem}")
    parts = urlsplit(url)
    host = parts.hostname or ""
    authorization = None
    if parts.username is not None or parts.password is not None:
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    return Proxy(host, parts.port or _DEFAULT_PORT, authorization, shown)


def _env(env: Mapping[str, str], name: str) -> tuple[str, str] | None:
    for key in (name.lower(), name.upper()):
        value = env.get(key)
        if value and value.strip():
            return value.strip(), key
    return None


def _entry_matches(entry: str, host: str, port: int) -> bool:
    if entry == "*":
        return True
    want_port: int | None = None
    if entry.startswith("["):  # [v6] or [v6]:port
        inner, _, rest = entry[1:].partition("]")
        entry = inner
        if rest.startswith(":") and rest[1:].isdigit():
            want_port = int(rest[1:])
    elif entry.count(":") == 1:
        name, _, tail = entry.partition(":")
        if tail.isdigit():
            entry, want_port = name, int(tail)
    if want_port is not None and want_port != port:
        return False
    try:
        network = ipaddress.ip_network(entry, strict=False)
    except ValueError:
        network = None
    if network is not None:
        try:
            return ipaddress.ip_address(host) in network
        except ValueError:
            return False
    name = entry.lstrip(".").lower().rstrip(".")
    host = host.lower().rstrip(".")
    return bool(name) and (host == name or host.endswith("." + name))


def no_proxy_matches(no_proxy: str, host: str, port: int) -> bool:
    """True when the `NO_PROXY` value names `host` (and `port`, where an entry gives one)."""
    host = host.strip("[]")
    entries = no_proxy.replace(" ", ",").split(",")
    return any(_entry_matches(e.strip(), host, port) for e in entries if e.strip())


def proxy_for(
    tls: bool, host: str, port: int, setting: str | None, env: Mapping[str, str] | None = None
) -> Proxy | None:
    """The proxy a request to `host`:`port` goes through (None: direct). `setting` is the
    route's ``proxy`` (None: the environment decides; ``"none"``: direct)."""
    if setting is not None:
        return None if setting == "none" else parse_proxy(setting, "the route's proxy setting")
    environ = os.environ if env is None else env
    found = _env(environ, "https_proxy" if tls else "http_proxy") or _env(environ, "all_proxy")
    if found is None:
        return None
    no_proxy = _env(environ, "no_proxy")
    if no_proxy is not None and no_proxy_matches(no_proxy[0], host, port):
        return None
    return parse_proxy(*found)


def _password(url: str) -> tuple[str, ...]:
    try:
        password = urlsplit(url if "://" in url else "http://" + url).password
    except ValueError:
        return ()
    return tuple(dict.fromkeys((password, unquote(password)))) if password else ()


def proxy_secrets(setting: str | None, env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The proxy passwords a request may carry (the setting's, else every proxy variable's),
    raw and percent-decoded, for redaction."""
    if setting is not None:
        return () if setting == "none" else _password(setting)
    environ = os.environ if env is None else env
    found: list[str] = []
    for name in _VARIABLES:
        for key in (name, name.upper()):
            value = environ.get(key)
            if value and "@" in value:
                found.extend(_password(value.strip()))
    return tuple(found)
