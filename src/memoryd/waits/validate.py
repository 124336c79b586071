"""Check a wait request before anything is started: the target's syntax and policy, the
criteria, and that the two fit together. Existence (a window, a pane, a pid) is checked
when the watcher is built, still before the job is recorded."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memoryd.waits.criteria import Criteria, parse_criteria
from memoryd.waits.errors import InvalidWait, TargetNotAllowed
from memoryd.waits.netguard import check_url
from memoryd.waits.policy import WaitPolicy
from memoryd.waits.targets import Target, parse_target

# Which criteria each kind of target can satisfy.
_TEXT_KINDS = {"file", "tmux", "pty", "http", "window", "screen"}
_EXIT_KINDS = {"pid", "command", "pty"}
_SCREEN_KINDS = {"window", "screen"}


def check_timeout(timeout_s: Any, policy: WaitPolicy) -> float:
    """The timeout as a float within the policy's range."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)):
        raise InvalidWait("timeout_s", "must be a number of seconds")
    if not math.isfinite(timeout_s) or not policy.min_timeout_s <= timeout_s <= policy.max_timeout_s:
        raise InvalidWait("timeout_s", f"{timeout_s} is outside {policy.min_timeout_s:g}.."
                          f"{policy.max_timeout_s:g} seconds")
    return float(timeout_s)


def _denied(resolved: Path, denied: Path) -> bool:
    denied = denied.resolve()
    return resolved.is_relative_to(denied) or (
        resolved.parent == denied.parent and resolved.name.startswith(denied.name))


def check_file_root(path: Path, policy: WaitPolicy, *, confined: bool = False) -> None:
    """Refuse a denied path or a path in a denied directory (memoryd's own files) and a
    path outside every allowed root (for a confined request: outside every confined root);
    symlinks resolved."""
    resolved = path.resolve()
    if any(_denied(resolved, d) for d in policy.denied_paths) or \
            set(resolved.parts) & set(policy.denied_dirs):
        raise TargetNotAllowed("target", "the path is one of memoryd's own files")
    allowed = policy.confined_roots if confined else policy.allowed_roots
    if not allowed:
        raise TargetNotAllowed("target", "file waits are not available to a key bound to a "
                               "scope or agent (no confined roots are configured)")
    for root in allowed:
        if resolved.is_relative_to(Path(root).resolve()):
            return
    roots = ", ".join(str(r) for r in allowed)
    raise TargetNotAllowed("target", f"the path is outside the allowed roots ({roots})")


def _check_fit(target: Target, criteria: Criteria, policy: WaitPolicy) -> None:
    kind = target.kind
    if criteria.wants_text and kind not in _TEXT_KINDS:
        raise InvalidWait("criteria", f"a {kind} target has no text; use exit / exit:N")
    if criteria.exits and kind not in _EXIT_KINDS:
        raise InvalidWait("criteria", f"a {kind} target does not exit; exit needs pid/command/pty")
    if criteria.status is not None and kind != "http":
        raise InvalidWait("criteria", "status applies to http targets only")
    if criteria.condition and kind not in _SCREEN_KINDS:
        raise InvalidWait("criteria", "condition (judged by the vision model) needs a "
                          "window or screen target")
    if kind in _SCREEN_KINDS and criteria.condition and not criteria.wants_text and not policy.vision:
        raise InvalidWait("criteria", "condition needs a vision endpoint, and none is configured")
    if kind in ("pid", "command") and not criteria.exits:
        raise InvalidWait("criteria", f"a {kind} target can only be waited on to exit")


# What a confined request (a key bound to a scope or agent) may watch.
_CONFINED_KINDS = {"file", "pid", "http"}


def _check_policy(target: Target, policy: WaitPolicy, confined: bool) -> None:
    if confined and target.kind not in _CONFINED_KINDS:
        raise TargetNotAllowed("target", f"{target.kind} targets are not available to a key "
                               "bound to a scope or agent (files, pids and public URLs are)")
    if target.kind == "file":
        check_file_root(target.path, policy, confined=confined)
    elif target.kind == "http":
        check_url(target.url, allow_link_local=policy.allow_link_local, public_only=confined)
    elif target.kind in ("pty", "command") and not policy.allow_spawn:
        raise TargetNotAllowed("target", f"{target.kind}: targets start commands, and starting "
                               "commands is disabled (policy allow_spawn)")
    elif target.kind in _SCREEN_KINDS and not policy.display:
        raise InvalidWait("target", f"{target.kind} targets need an X display; none is set")


def check_request(target: str, criteria: str | Mapping[str, Any], timeout_s: Any,
                  policy: WaitPolicy, *, confined: bool = False) -> tuple[Target, Criteria, float]:
    """Parse and check a request; raises :class:`InvalidWait` (or a subclass) naming the
    field at fault. Plain strings on screens are also the vision condition. A ``confined``
    request (from a key bound to a scope or agent) gets the narrower policy."""
    parsed_target = parse_target(target)
    parsed = parse_criteria(_default_criteria(parsed_target, criteria))
    if parsed_target.kind in _SCREEN_KINDS and isinstance(criteria, str) and parsed.contains \
            and policy.vision:
        parsed = parse_criteria({"contains": parsed.contains, "condition": parsed.contains})
    timeout = check_timeout(timeout_s, policy)
    _check_fit(parsed_target, parsed, policy)
    _check_policy(parsed_target, policy, confined)
    return parsed_target, parsed, timeout


def _default_criteria(target: Target, criteria: Any) -> Any:
    """pid/command targets accept an empty criteria as "exit"."""
    if target.kind in ("pid", "command") and criteria in (None, "", {}):
        return "exit"
    if criteria is None:
        raise InvalidWait("criteria", "is required")
    return criteria


def check_wake(wake: Mapping[str, Any] | None, routes: tuple[str, ...]) -> dict[str, Any] | None:
    """A wake request naming one of the configured ``routes`` (and an optional
    ``session_key``), as a plain dict; None when no wake is asked for."""
    if wake is None:
        return None
    if not isinstance(wake, Mapping):
        raise InvalidWait("wake", 'must be an object such as {"to": "openclaw"}')
    route = wake.get("to")
    if route not in routes:
        raise InvalidWait("wake", f"route {route!r} is not configured (configured: "
                          f"{', '.join(routes) or 'none'})")
    unknown = set(wake) - {"to", "session_key"}
    if unknown:
        raise InvalidWait("wake", f"unknown key(s) {sorted(unknown)}")
    session = wake.get("session_key")
    if session is not None and (not isinstance(session, str) or not 0 < len(session) <= 200):
        raise InvalidWait("wake", "session_key must be a string of 1 to 200 characters")
    return dict(wake)
