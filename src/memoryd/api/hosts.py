"""Host and Origin checks against DNS rebinding, with the authority parsed, not prefix-matched.

A web page on ``evil.example`` can make a browser send requests to 127.0.0.1 by pointing its
own name at that address (DNS rebinding); the request then carries ``Host: evil.example``.
So every request must name one of the hosts this server answers to: the loopback names
(``127.0.0.1``, ``localhost``, ``[::1]``, any port) plus ``MEMORYD_ALLOWED_HOSTS``. A browser
request that carries an ``Origin`` must come from a loopback page or from
``MEMORYD_ALLOWED_ORIGINS``/``MEMORYD_CORS_ORIGINS``.

The header is parsed as RFC 3986 ``host [":" port]`` before it is compared: a userinfo part
(``localhost:80@evil.com``), whitespace (``127.0.0.1:1 evil``), a port outside 1-65535,
a malformed IP literal or a character outside DNS names makes it malformed, which a plain
prefix test (``value.startswith("localhost:")``) lets through.

Allowed entries: ``name`` or ``name:*`` (that host on any port) and ``name:8765`` (that
port only); IPv6 literals in brackets.

>>> policy = HostPolicy.loopback_and(["memoryd.lan:*"])
>>> policy.check_host("localhost:8765"), policy.check_host("memoryd.lan:9000")
(True, True)
>>> policy.check_host("localhost:80@evil.com")   # raises HostRejected (malformed)
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Iterable, Literal

from memoryd.config import Settings
from memoryd.errors import InvalidInput

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
_PORT = re.compile(r"[0-9]{1,5}")
_SCHEMES = ("http", "https")


class HostRejected(ValueError):
    """A refused header; ``reason`` is ``malformed`` (a Host that does not parse), ``host``
    (a Host not served here) or ``origin`` (an Origin not allowed)."""

    def __init__(self, message: str, *, reason: Literal["malformed", "host", "origin"]) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Authority:
    """A parsed ``host[:port]``: the host lower-cased (IPv6 in brackets), the port if given."""

    host: str
    port: int | None


def parse_authority(value: str) -> Authority:
    """Parse ``host[:port]`` strictly; raises ValueError naming what is wrong.

    >>> parse_authority("LocalHost:8765")
    Authority(host='localhost', port=8765)
    """
    if not value or len(value) > 300:
        raise ValueError("empty or over 300 characters")
    if value.startswith("["):
        end = value.find("]")
        if end == -1:
            raise ValueError("unclosed IPv6 literal")
        host, rest = value[: end + 1].lower(), value[end + 1 :]
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise ValueError(f"invalid IPv6 address {host!r}") from None
    else:
        host, colon, port_text = value.partition(":")
        rest = colon + port_text
        host = host.lower()
        _check_name(host)
    port = None
    if rest:
        if not rest.startswith(":") or not _PORT.fullmatch(rest[1:]):
            raise ValueError("the port must be 1-5 digits after one ':'")
        port = int(rest[1:])
        if not 1 <= port <= 65535:
            raise ValueError(f"port {port} is outside 1-65535")
    return Authority(host, port)


def _check_name(host: str) -> None:
    if re.fullmatch(r"[0-9.]+", host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise ValueError(f"invalid IPv4 address {host!r}") from None
        return
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    if not host or len(host) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise ValueError("not a DNS name or IP address")


@dataclass(frozen=True)
class HostPattern:
    """One allowed host: a name and a port (None = no port given, -1 = any port)."""

    host: str
    port: int | None

    @classmethod
    def parse(cls, entry: str) -> HostPattern:
        """``name`` and ``name:*`` match that name with any port or none (a browser omits a
        default port); ``name:8765`` only that port."""
        entry = entry.strip()
        if entry.endswith(":*"):
            return cls(parse_authority(entry[:-2]).host, -1)
        authority = parse_authority(entry)
        return cls(authority.host, -1 if authority.port is None else authority.port)

    def matches(self, authority: Authority) -> bool:
        return authority.host == self.host and self.port in (-1, authority.port)


class HostPolicy:
    """Which Host and Origin headers a server accepts."""

    def __init__(self, hosts: Iterable[str], origins: Iterable[str]) -> None:
        self.hosts = [HostPattern.parse(h) for h in hosts]
        self.origins: list[tuple[str, HostPattern]] = []
        for origin in origins:
            scheme, sep, rest = origin.strip().partition("://")
            if not sep or scheme.lower() not in _SCHEMES:
                raise ValueError(f"allowed origin {origin!r} must be http(s)://host[:port]")
            self.origins.append((scheme.lower(), HostPattern.parse(rest.rstrip("/"))))

    @classmethod
    def loopback_and(cls, hosts: Iterable[str] = (), origins: Iterable[str] = ()) -> HostPolicy:
        """The loopback names (any port, http or https) plus the configured ones."""
        loopback_origins = [f"{s}://{name}:*" for s in _SCHEMES for name in LOOPBACK_NAMES]
        return cls([*LOOPBACK_NAMES, *hosts], [*loopback_origins, *origins])

    def check_host(self, value: str | None) -> bool:
        """True if allowed; raises HostRejected (malformed or foreign) otherwise."""
        if value is None:
            raise HostRejected("missing Host header", reason="malformed")
        try:
            authority = parse_authority(value)
        except ValueError as exc:
            raise HostRejected(f"malformed Host header: {exc}", reason="malformed") from None
        if not any(p.matches(authority) for p in self.hosts):
            raise HostRejected(
                f"Host {authority.host!r} is not served here; add it to MEMORYD_ALLOWED_HOSTS",
                reason="host",
            )
        return True

    def check_origin(self, value: str | None) -> bool:
        """True if absent or allowed; raises HostRejected otherwise."""
        if value is None:
            return True
        scheme, sep, rest = value.partition("://")
        try:
            if not sep or scheme not in _SCHEMES:
                raise ValueError("not http(s)://host[:port]")
            authority = parse_authority(rest)
        except ValueError as exc:
            raise HostRejected(f"Origin not allowed: {exc}", reason="origin") from None
        if not any(s == scheme and p.matches(authority) for s, p in self.origins):
            raise HostRejected(
                "Origin not allowed; add it to MEMORYD_ALLOWED_ORIGINS", reason="origin"
            )
        return True


def host_policy(settings: Settings) -> HostPolicy:
    """Loopback names plus MEMORYD_ALLOWED_HOSTS; loopback pages plus the allowed and CORS
    origins. A malformed entry is InvalidInput (the server does not start)."""
    try:
        return HostPolicy.loopback_and(
            settings.allowed_hosts, [*settings.allowed_origins, *settings.cors_origins]
        )
    except ValueError as exc:
        raise InvalidInput(
            f"MEMORYD_ALLOWED_HOSTS / MEMORYD_ALLOWED_ORIGINS / MEMORYD_CORS_ORIGINS: {exc}"
        ) from None
