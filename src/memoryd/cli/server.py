"""The ``serve`` command: REST, gateway routes and MCP (Streamable HTTP at /mcp) in one process."""

from __future__ import annotations

import errno
import gc
import os
import socket
import threading
from typing import TYPE_CHECKING, Optional

import typer

from memoryd.cli.common import console
from memoryd.config import Settings

if TYPE_CHECKING:
    from memoryd.engine import Engine

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_ANY_ADDRESS = {"0.0.0.0", "::", ""}


def prefer_single_thread_inference() -> None:
    """One torch thread per inference unless OMP_NUM_THREADS says otherwise.

    A server embeds one short query per request. With two threads on a busy small machine
    each forward pass waits for its second thread at every layer: bench/results/throughput.md
    measured a search from one client at p50 531 ms with two threads and 31 ms with one (the
    throughput under 20 clients is about the same either way). Must run before torch loads.
    """
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def pause_garbage_collection() -> None:
    """Turn the cyclic garbage collector off until the app has started (run_listening_first
    turns it on again).

    Starting allocates a few hundred thousand objects that live as long as the process
    (modules, classes, pydantic schemas, routes) and almost no cycles; every collection
    meanwhile walks them all again for nothing: about 15% of the CPU time of importing the
    server's modules and building the app.
    """
    gc.disable()


def with_bound_host(settings: Settings, bind_host: str) -> Settings:
    """Settings that also accept the address the server was bound to as a Host.

    Binding to one address is an explicit choice of the name clients use; a wildcard
    address (0.0.0.0, ::) names no host, so nothing is added for it.
    """
    if bind_host in _ANY_ADDRESS or bind_host in _LOOPBACK:
        return settings
    entry = f"[{bind_host}]" if ":" in bind_host and not bind_host.startswith("[") else bind_host
    return settings.model_copy(update={"allowed_hosts": [*settings.allowed_hosts, entry]})


class CannotListen(Exception):
    """The address and port cannot be bound (in use, not this machine's, not allowed)."""


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (uvicorn listens on it), or CannotListen with a
    one-line reason. Binding before the model loads and uvicorn starts means a busy port is
    reported before anything runs in the background, and before the server claims to serve."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on accepted
    # sockets whose protocol says TCP. With it on, a response written as headers then body
    # waited for the client's delayed ACK: about 40 ms on every keep-alive request.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise CannotListen(_why_not(exc, host, port)) from None
    sock.set_inheritable(True)
    return sock


def _why_not(exc: OSError, host: str, port: int) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (f"port {port} on {host} is in use (is another memoryd running?); stop what "
                "listens there or choose another port with --port or MEMORYD_PORT")
    if exc.errno == errno.EACCES:
        return f"not allowed to listen on port {port} of {host}; choose a port above 1023"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this machine; choose another with --host"
    reason = exc.strerror or str(exc)
    return f"cannot listen on {host} port {port}: {reason}"


def warm_in_background(engine: Engine, loaded: threading.Event | None = None
                       ) -> threading.Thread:
    """Load the embedding model on a thread, so the first search need not wait ~1-6 s: the
    query side first, then what embeds memories; then set ``loaded`` (also when the load
    failed). Both load during the start, while the heap is still small, and the server's
    vector index waits for ``loaded``: a model session's load passes through about twice
    what it keeps, and on top of the loaded index that set the peak (at 100k: 627 against
    585 MB, and ready was no later; bench/results/serve_memory.md, cold_start.md).

    Not a daemon thread: the interpreter waits for it at exit. A daemon thread still inside
    the model runtime's native code when Python finalizes is stopped by force, and ONNX
    Runtime answers that with "terminate called without an active exception" (SIGABRT).
    Loading a model takes a bounded time, so waiting for it is the clean way out.
    """
    thread = threading.Thread(target=_warm, args=(engine, loaded), name="memoryd-warm")
    thread.start()
    return thread


def _warm(engine: Engine, loaded: threading.Event | None) -> None:
    try:
        engine.warm()
    except Exception:  # noqa: BLE001 - a failed warm-up resurfaces on the first search
        pass
    finally:
        if loaded is not None:
            loaded.set()


def serve(
    ctx: typer.Context,
    host: Optional[str] = typer.Option(None, help="Address to bind (default 127.0.0.1)."),
    port: Optional[int] = typer.Option(None, help="Port (default 8765)."),
    tools: Optional[str] = typer.Option(
        None, "--tools", help="MCP tool profiles and names at /mcp, comma-separated (default: "
        "memory; see `memoryd mcp --help`)."
    ),
    first_key: Optional[str] = typer.Option(
        None, "--first-key", metavar="LABEL", help="When the store has no active key yet, "
        "create one (scopes read,write,admin) with this label and print it once, instead of "
        "refusing to start (scripts/serve uses this on first run)."
    ),
) -> None:
    """Run the HTTP server: REST API, gateway recall/capture, and MCP at /mcp."""
    pause_garbage_collection()
    prefer_single_thread_inference()
    from memoryd.errors import NoKeysConfigured
    from memoryd.opening import open as open_memory
    from memoryd.serving.listening import check_hosts, run_listening_first

    settings = Settings(**({"mcp_tools": tools} if tools else {}))
    check_hosts(settings)  # a bad MEMORYD_ALLOWED_HOSTS entry: refused before anything runs
    bind_host = host or settings.host
    bind_port = settings.port if port is None else port
    # The in-memory keyword copy loads once the app has started: a ready server does not
    # need it (searches use SQL until it is there), and it would compete for the CPU.
    started, model_loaded = threading.Event(), threading.Event()
    engine = open_memory((ctx.obj or {}).get("store"), settings=settings,
                         keyword_index_until=started, vector_index_until=model_loaded)
    needs_key = not settings.allow_anonymous and not engine.admin.has_active_key()
    if needs_key and first_key is None:
        engine.close()
        raise NoKeysConfigured()
    # Now: anything that reads or writes the store's vectors (a first key's commit, too)
    # waits for model_loaded.
    warm_in_background(engine, model_loaded)
    if needs_key and first_key is not None:
        _print_first_key(engine, first_key)
    try:  # before anything starts, and before claiming to serve
        sock = listening_socket(bind_host, bind_port)
    except CannotListen as exc:
        engine.close()
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    settings = _warn_of_exposure(settings, bind_host)
    shown = f"[{bind_host}]" if ":" in bind_host and not bind_host.startswith("[") else bind_host
    console.print(f"memoryd serving on http://{shown}:{sock.getsockname()[1]} (MCP at /mcp)")

    def on_started() -> None:  # the collector back on; the keyword copy may load now
        gc.enable()
        started.set()

    try:
        failure = run_listening_first(engine, settings, sock, on_started=on_started)
    finally:
        started.set()  # a server that never started: the warm-up thread must still end
    if failure is not None:
        typer.echo(f"error: the server could not start: {failure}", err=True)
        raise typer.Exit(1)


def _warn_of_exposure(settings: Settings, bind_host: str) -> Settings:
    """Warn of a server other machines can reach, or one that takes requests without a key;
    the settings with the bound host allowed."""
    if bind_host not in _LOOPBACK:
        console.print(
            f"[yellow]warning:[/] listening on {bind_host}, reachable from other "
            "machines; requests must name an allowed host: add the names clients use "
            "to MEMORYD_ALLOWED_HOSTS"
        )
        settings = with_bound_host(settings, bind_host)
    if settings.allow_anonymous:
        console.print(
            "[yellow]warning:[/] MEMORYD_ALLOW_ANONYMOUS=true: requests without a key "
            "may read and write memories"
        )
    return settings


def _print_first_key(engine: Engine, label: str) -> None:
    made = engine.admin.create_key(label, scopes=["read", "write", "admin"])
    typer.echo(f"No API key yet: created one (label {label!r}, scopes read,write,admin). "
               "It is shown only this once; give it to your clients:", err=True)
    typer.echo(made.secret)


def register(app: typer.Typer) -> None:
    """Attach this command to the app."""
    app.command()(serve)
