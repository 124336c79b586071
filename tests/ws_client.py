"""A small blocking WebSocket client over a real socket (wsproto), for the live feed tests."""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass
from typing import Any

from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Message,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)


@dataclass
class Closed:
    """The server closed the connection (or refused the handshake: code None)."""

    code: int | None
    reason: str


class WsClient:
    """Connect to ``ws://host:port/path``; send and receive JSON text frames."""

    def __init__(self, port: int, path: str, *, host: str = "127.0.0.1",
                 origin: str | None = None, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.conn = WSConnection(ConnectionType.CLIENT)
        headers = [(b"origin", origin.encode())] if origin else []
        self.sock.sendall(self.conn.send(Request(host=f"{host}:{port}", target=path,
                                                 extra_headers=headers)))
        self.pending: list[Any] = []
        self.text = ""
        self.accepted: bool | None = None
        self.refused_status: int | None = None
        deadline = time.monotonic() + timeout
        while self.accepted is None and time.monotonic() < deadline:
            self._pump(deadline)

    def _pump(self, deadline: float) -> None:
        self.sock.settimeout(max(0.01, deadline - time.monotonic()))
        data = self.sock.recv(65536)
        self.conn.receive_data(data or None)
        for event in self.conn.events():
            if isinstance(event, AcceptConnection):
                self.accepted = True
            elif isinstance(event, RejectConnection):
                self.accepted = False
                self.refused_status = event.status_code
                self.pending.append(Closed(None, f"rejected {event.status_code}"))
            elif isinstance(event, TextMessage):
                self.text += event.data
                if event.message_finished:
                    self.pending.append(json.loads(self.text))
                    self.text = ""
            elif isinstance(event, CloseConnection):
                self.pending.append(Closed(event.code, event.reason or ""))
                try:
                    self.sock.sendall(self.conn.send(event.response()))
                except OSError:
                    pass
            elif isinstance(event, Ping):
                self.sock.sendall(self.conn.send(event.response()))
        if not data and not self.pending:
            self.pending.append(Closed(None, "connection lost"))

    def send(self, payload: Any) -> None:
        self.sock.sendall(self.conn.send(Message(data=json.dumps(payload))))

    def receive(self, timeout: float = 10.0) -> Any:
        """The next JSON frame, or a Closed; TimeoutError when nothing comes."""
        deadline = time.monotonic() + timeout
        while not self.pending:
            if time.monotonic() >= deadline:
                raise TimeoutError("no frame from the server")
            try:
                self._pump(deadline)
            except (TimeoutError, socket.timeout):
                continue
        return self.pending.pop(0)

    def close(self) -> None:
        try:
            self.sock.sendall(self.conn.send(CloseConnection(code=1000)))
        except Exception:
            pass
        self.sock.close()

    def __enter__(self) -> WsClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
