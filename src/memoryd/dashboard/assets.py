"""The dashboard's files: the page, its scripts and styles, and the vendored libraries, read
once from the package, and the headers every one of them is served with.

Only the files that ship in ``static/`` are ever served (a fixed table built at start, so
no request path reaches the file system). The Content-Security-Policy allows scripts, styles,
images and connections from this origin only, no inline script, no eval, and no inline
style except the exact ``<style>`` texts the vendored graph library injects (their hashes
are recorded in ``static/vendor/vendor.json`` by ``scripts/vendor-dashboard``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".json": "application/json",
    ".png": "image/png",
}
_TEXT_LICENCE = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class Asset:
    """One file to serve: its bytes, media type and strong ETag."""

    body: bytes
    media_type: str
    etag: str


def _walk(root: resources.abc.Traversable, prefix: str = "") -> dict[str, Asset]:
    out: dict[str, Asset] = {}
    for item in root.iterdir():
        name = f"{prefix}{item.name}"
        if item.is_dir():
            out.update(_walk(item, name + "/"))
            continue
        suffix = "." + item.name.rpartition(".")[2] if "." in item.name else ""
        media = _TYPES.get(suffix, _TEXT_LICENCE if item.name == "LICENSE" else None)
        if media is None:
            continue
        body = item.read_bytes()
        out[name] = Asset(body, media, '"' + hashlib.sha256(body).hexdigest()[:32] + '"')
    return out


@lru_cache(maxsize=1)
def assets() -> dict[str, Asset]:
    """Every servable file under ``static/``, by path relative to it."""
    return _walk(resources.files("memoryd.dashboard") / "static")


@lru_cache(maxsize=1)
def vendored() -> list[dict]:
    """The vendored libraries as recorded by scripts/vendor-dashboard."""
    manifest = assets().get("vendor/vendor.json")
    return json.loads(manifest.body)["packages"] if manifest is not None else []


@lru_cache(maxsize=1)
def content_security_policy() -> str:
    """The policy of every dashboard response (see the module docstring)."""
    styles = " ".join(f"'{h}'" for p in vendored() for h in p.get("style_hashes", []))
    return "; ".join([
        "default-src 'none'",
        "script-src 'self'",
        f"style-src 'self' {styles}".strip(),
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "manifest-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ])


def security_headers() -> dict[str, str]:
    """Headers sent with every dashboard file."""
    return {
        "Content-Security-Policy": content_security_policy(),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cross-Origin-Resource-Policy": "same-origin",
        "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    }
