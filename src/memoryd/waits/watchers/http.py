"""HTTP watcher: a URL answers the wanted status, and optionally a body that matches.

Redirects are not followed (a 3xx is what was seen); at most ``MAX_BODY`` bytes of the
body are read; the host is checked against the wait policy at every request (see
:mod:`memoryd.waits.netguard`). Connection failures are observations, not errors: the
server a wait is waiting for is often not up yet.
"""

from __future__ import annotations

import hashlib
from typing import Any

import httpx

from memoryd.waits.criteria import Criteria
from memoryd.waits.errors import InvalidWait
from memoryd.waits.model import Observation
from memoryd.waits.netguard import check_url
from memoryd.waits.watchers.base import Timer, excerpt

MAX_BODY = 256 * 1024


class HttpWatcher:
    """Resolves when the URL answers as the criteria ask."""

    def __init__(self, url: str, criteria: Criteria, *, allow_link_local: bool = False,
                 public_only: bool = False, timeout_s: float = 5.0) -> None:
        self.url, self.criteria = url, criteria
        self.allow_link_local, self.public_only = allow_link_local, public_only
        self.want_status = criteria.status if criteria.status is not None else (
            None if criteria.wants_text else 200)
        self.client = httpx.Client(timeout=timeout_s, follow_redirects=False,
                                   headers={"user-agent": "memoryd-wait"})
        self._last: str | None = None

    def _fetch(self) -> tuple[int | None, str, str]:
        """(status, body text, what was seen) of one request."""
        try:
            check_url(self.url, allow_link_local=self.allow_link_local,
                      public_only=self.public_only)
        except InvalidWait as exc:
            return None, "", str(exc)
        try:
            with self.client.stream("GET", self.url) as resp:
                body = bytearray()
                for chunk in resp.iter_bytes():
                    body += chunk
                    if len(body) >= MAX_BODY:
                        break
                text = bytes(body[:MAX_BODY]).decode(resp.encoding or "utf-8", "replace")
                return resp.status_code, text, f"HTTP {resp.status_code}"
        except httpx.HTTPError as exc:
            return None, "", f"{type(exc).__name__}: {exc}"

    def check(self) -> Observation:
        """One GET request."""
        with Timer() as t:
            status, body, seen = self._fetch()
            status_ok = self.want_status is None or status == self.want_status
            hit = None
            if status is not None and self.criteria.wants_text:
                hit = self.criteria.first_match(body.splitlines() or [body])
            matched = status is not None and status_ok and (
                not self.criteria.wants_text or hit is not None)
        fingerprint = f"{seen}:{hashlib.blake2b(body.encode(), digest_size=8).hexdigest()}"
        changed, self._last = fingerprint != self._last, fingerprint
        if hit is not None:
            seen = f"{seen}: {hit}"
        return Observation(matched=matched, seen=excerpt(seen), changed=changed, cost_ms=t.ms,
                           detail={"status": status})

    def cursor(self) -> dict[str, Any]:
        """Stateless."""
        return {}

    def wake_fd(self) -> int | None:
        """Polled."""
        return None

    def close(self, final: bool = True) -> None:
        """Close the connection pool."""
        self.client.close()
