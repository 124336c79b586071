"""Wake dispatch: tell the agent that a wait ended, by POSTing a short message.

Two routes, both configured in settings (a caller names a route, never a URL):

* OpenClaw gateway: ``POST {url}/api/agent`` with ``{"sessionKey", "message",
  "source": "system"}`` and ``Authorization: Bearer <token>``.
* Generic webhook: ``POST {url}`` with a JSON body (``event``, ``job``, ``message``) and
  ``X-Memoryd-Signature: sha256=<hex HMAC-SHA256 of the raw body with the shared secret>``.

Deliveries run on a worker thread, are retried with exponential backoff on connection
errors, 408, 429 and 5xx (not on other 4xx: the request would not change), and each
attempt is reported back to be recorded on the job.

>>> wake_message(WaitJob("w_1", "file:/tmp/b.log", {"contains": "OK"}, 60, 0, 60,
...     status=WaitStatus.RESOLVED, resolved_at=42, result="BUILD OK"))
'[smart_wait] w_1 resolved after 42s: file:/tmp/b.log showed "BUILD OK"'
"""

from __future__ import annotations

import hashlib
import hmac
import json
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from memoryd.waits.model import WaitJob, WaitStatus, WakeAttempt

SIGNATURE_HEADER = "X-Memoryd-Signature"
MAX_MESSAGE = 400


@dataclass(frozen=True)
class WakeSettings:
    """Where wakes go. Unset routes are refused when a wait names them."""

    openclaw_url: str | None = None
    openclaw_token: str | None = None
    openclaw_session_key: str = "agent:main:main"
    webhook_url: str | None = None
    webhook_secret: str | None = None
    attempts: int = 5
    backoff_s: float = 0.5
    timeout_s: float = 10.0
    routes: tuple[str, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        routes = tuple(r for r, url in (("openclaw", self.openclaw_url),
                                        ("webhook", self.webhook_url)) if url)
        object.__setattr__(self, "routes", routes)


def _target_short(target: str) -> str:
    return target if len(target) <= 80 else target[:79] + "…"


def wake_message(job: WaitJob) -> str:
    """The one-line message an agent reads: which job, how it ended, what was seen."""
    elapsed = int(round((job.resolved_at or time.time()) - job.created_at))
    target = _target_short(job.target)
    seen = (job.result or "").strip()
    if job.status is WaitStatus.RESOLVED:
        text = f'[smart_wait] {job.id} resolved after {elapsed}s: {target} showed "{seen}"'
    elif job.status is WaitStatus.TIMEOUT:
        text = f"[smart_wait] {job.id} timed out after {elapsed}s watching {target}"
        if seen:
            text += f'; last seen "{seen}"'
    else:
        text = f"[smart_wait] {job.id} {job.status.value} after {elapsed}s on {target}: {seen}"
    if job.task_id:
        text += f" (task {job.task_id})"
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def sign(body: bytes, secret: str) -> str:
    """The signature header value of a webhook body."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def build_request(job: WaitJob, settings: WakeSettings) -> tuple[str, str, dict[str, str], bytes]:
    """(route, url, headers, body) of the wake for ``job``."""
    route = (job.wake or {}).get("to", "openclaw")
    message = wake_message(job)
    headers = {"content-type": "application/json"}
    if route == "openclaw":
        session = (job.wake or {}).get("session_key") or settings.openclaw_session_key
        body = json.dumps({"sessionKey": session, "message": message, "source": "system"})
        if settings.openclaw_token:
            headers["authorization"] = f"Bearer {settings.openclaw_token}"
        url = str(settings.openclaw_url).rstrip("/") + "/api/agent"
    else:
        body = json.dumps({"event": f"wait.{job.status.value}", "message": message,
                           "job": {"id": job.id, "status": job.status.value,
                                   "target": job.target, "result": job.result,
                                   "task_id": job.task_id}, "sent_at": time.time()})
        if settings.webhook_secret:
            headers[SIGNATURE_HEADER] = sign(body.encode(), settings.webhook_secret)
        url = str(settings.webhook_url)
    return route, url, headers, body.encode()


def _retryable(status: int) -> bool:
    return status in (408, 429) or status >= 500


class WakeDispatcher:
    """Delivers wakes on one worker thread, with retries; see the module docstring."""

    def __init__(self, settings: WakeSettings) -> None:
        self.settings = settings
        self.http = httpx.Client(timeout=settings.timeout_s)
        self._queue: queue.Queue[tuple[WaitJob, Callable[[WakeAttempt], None]] | None] = (
            queue.Queue())
        self._thread = threading.Thread(target=self._run, name="memoryd-wait-wake", daemon=True)
        self._thread.start()

    def send(self, job: WaitJob, record: Callable[[WakeAttempt], None]) -> None:
        """Queue the wake of a finished job; ``record`` gets every attempt."""
        self._queue.put((job, record))

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            self.deliver(*item)

    def deliver(self, job: WaitJob, record: Callable[[WakeAttempt], None]) -> bool:
        """Try until delivered or out of attempts; True when delivered."""
        route, url, headers, body = build_request(job, self.settings)
        for attempt in range(self.settings.attempts):
            if attempt:
                time.sleep(self.settings.backoff_s * 2 ** (attempt - 1))
            try:
                resp = self.http.post(url, content=body, headers=headers)
            except httpx.HTTPError as exc:
                record(WakeAttempt(time.time(), route, False, None, f"{type(exc).__name__}: {exc}"))
                continue
            ok = resp.is_success
            record(WakeAttempt(time.time(), route, ok, resp.status_code,
                               None if ok else resp.text[:200]))
            if ok or not _retryable(resp.status_code):
                return ok
        return False

    def close(self) -> None:
        """Finish queued deliveries, then stop."""
        self._queue.put(None)
        self._thread.join(timeout=60)
        self.http.close()
