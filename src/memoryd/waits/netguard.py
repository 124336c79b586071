"""Which addresses an http wait may reach.

Link-local addresses (169.254.0.0/16, fe80::/10) and cloud metadata endpoints
(169.254.169.254, fd00:ec2::254, metadata.google.internal) are refused unless the policy
allows them: a wait must not become a way to read instance credentials. Loopback and
private addresses stay allowed (waiting for a local dev server is the common case), except
for ``public_only`` checks (requests of keys bound to a scope or agent: such a key must not
probe the host's or the network's private services).
The host is resolved at every request, so a name that later resolves to a refused
address (DNS rebinding) is caught too.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from memoryd.waits.errors import InvalidWait, TargetNotAllowed

METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata", "instance-data"})
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)


def split_http_url(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL; raises :class:`InvalidWait` otherwise."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidWait("target", f"URL does not parse: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise TargetNotAllowed("target", "URL scheme refused; only http and https")
    if not parts.hostname:
        raise InvalidWait("target", "URL has no host")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80)


def refused_reason(address: str) -> str | None:
    """Why an IP address may not be reached, or None when it may."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    if ip in METADATA_ADDRESSES:
        return f"{ip} is a cloud metadata address"
    if ip.is_link_local:
        return f"{ip} is link-local"
    return None


def public_reason(address: str) -> str | None:
    """Why an IP address is not a public one, or None when it is."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return None if ip.is_global and not ip.is_multicast else f"{ip} is not a public address"


def check_url(url: str, *, allow_link_local: bool = False, public_only: bool = False) -> None:
    """Raise :class:`TargetNotAllowed` when the URL's host is (or resolves to) a refused
    address (with ``public_only``: any address that is not public); :class:`InvalidWait`
    when it is not an http(s) URL or does not resolve."""
    _, host, port = split_http_url(url)
    if allow_link_local and not public_only:
        return
    if host.lower().rstrip(".") in METADATA_HOSTS:
        raise TargetNotAllowed("target", f"{host} is a cloud metadata host")
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise InvalidWait("target", f"host {host!r} does not resolve: {exc.strerror}") from None
    for info in infos:
        address = str(info[4][0])
        reason = (public_reason(address) if public_only else None) or (
            None if allow_link_local else refused_reason(address))
        if reason:
            raise TargetNotAllowed(
                "target", f"{host} resolves to a refused address: {reason} "
                "(allow_link_local permits it)")
