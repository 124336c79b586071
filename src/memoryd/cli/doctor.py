"""``memoryd doctor``: is this machine ready for agents, and the exact lines to connect them."""

from __future__ import annotations

import json
import shutil
import socket
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import typer

from memoryd.cli.common import console
from memoryd.config import Settings


@dataclass
class Check:
    """One line of the report."""

    name: str
    ok: bool
    detail: str


def _on_path() -> Check:
    found = shutil.which("memoryd")
    here = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    if not found:
        return Check("memoryd on PATH", False, "not found: run scripts/install (links "
                     "~/.local/bin/memoryd) or add this installation's bin directory to PATH")
    same = here is not None and Path(found).resolve() == here
    return Check("memoryd on PATH", True, found + ("" if same else f" (this run: {here})"))


def _store_and_model(store_url: str | None, load_model: bool) -> list[Check]:
    from memoryd.opening import open as open_memory

    try:
        engine = open_memory(store_url)
    except Exception as exc:  # noqa: BLE001 - reported, not raised: that is the point
        return [Check("store", False, str(exc))]
    try:
        stats = engine.stats()
        checks = [Check("store", True, f"{stats['url']} ({stats['memories']} memories, schema "
                        f"{stats['schema_version']})")]
        keys = sum(1 for k in engine.admin.list_keys() if k.revoked_at is None)
        checks.append(Check("API keys", keys > 0 or Settings().allow_anonymous,
                            f"{keys} active" if keys else "none: `memoryd keys create --label "
                            "<name>` before `memoryd serve`"))
        if load_model:
            started = time.perf_counter()
            engine.warm()
            checks.append(Check("embedding model", True, f"{engine.embedder.model_id} loaded "
                                f"offline in {time.perf_counter() - started:.1f} s"))
        return checks
    except Exception as exc:  # noqa: BLE001
        return [Check("store or model", False, str(exc))]
    finally:
        engine.close()


def _port(host: str, port: int) -> Check:
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/readyz", timeout=2) as response:
            ready = json.loads(response.read()).get("ready")
        return Check("server", True, f"memoryd serve answers on {host}:{port} (ready={ready})")
    except (OSError, ValueError):
        pass
    with socket.socket() as probe:
        busy = probe.connect_ex((host, port)) == 0
    if busy:
        return Check("server", False, f"{host}:{port} is taken by something that is not "
                     "memoryd; choose another port (--port or MEMORYD_PORT)")
    return Check("server", True, f"{host}:{port} is free (`memoryd serve` not running)")


def _connection_lines(settings: Settings, command: str) -> str:
    url = f"http://{settings.host}:{settings.port}/mcp"
    desktop = {"mcpServers": {"memoryd": {"command": command, "args": ["mcp"]}}}
    openclaw = {"mcp": {"servers": {"memoryd": {"transport": "streamable-http", "url": url,
                                                "headers": {"Authorization": "Bearer mk_..."}}}}}
    return "\n".join([
        "Claude Code (stdio):",
        f"  claude mcp add memoryd -- {command} mcp",
        "Claude Code (HTTP, with `memoryd serve` running):",
        f"  claude mcp add --transport http memoryd-http {url} "
        '--header "Authorization: Bearer $MEMORYD_TOKEN"',
        "Claude Desktop (claude_desktop_config.json):",
        "  " + json.dumps(desktop),
        "OpenClaw (openclaw.json; the memory plugin is in integrations/openclaw):",
        "  " + json.dumps(openclaw),
    ])


def doctor(
    ctx: typer.Context,
    skip_model: bool = typer.Option(False, "--skip-model", help="Do not load the model."),
) -> None:
    """Check PATH, store, model, keys and port, and print the lines that connect agents."""
    settings = Settings()
    checks = [_on_path(), *_store_and_model((ctx.obj or {}).get("store"), not skip_model),
              _port(settings.host, settings.port)]
    for check in checks:
        mark = "[green]ok[/]" if check.ok else "[red]!![/]"
        console.print(f"{mark} {check.name}: {check.detail}", highlight=False)
    command = shutil.which("memoryd") or "memoryd"
    console.print("\n" + _connection_lines(settings, command), highlight=False, markup=False)
    if not all(c.ok for c in checks):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Attach this command to the app."""
    app.command()(doctor)
