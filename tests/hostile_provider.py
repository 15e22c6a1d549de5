"""An OpenAI-compatible embeddings server on 127.0.0.1 that misbehaves on request (tests only).

Each ``POST /v1/embeddings`` takes the next mode from a queue (``then`` when the queue is
empty) and answers accordingly:

* ``ok``: hashed bag-of-words vectors, ``dims`` wide (the width may be changed between runs);
* ``nan`` / ``inf`` / ``zero``: the first vector holds a NaN, an infinity, or only zeros;
* ``redirect``: ``302`` to the same path on ``redirect_to`` (another server: another origin);
* ``truncate``: half of a good answer's JSON, then the connection closes (no length given);
* ``trickle``: a good answer's headers, then one byte every 2 s;
* ``endless``: ``200`` and a body that never ends (whitespace, until ``endless_cap`` bytes);
* ``down``: ``503``.

Every request is logged: its path, its number of inputs, the ``Authorization`` it carried and
the mode it got; ``sent`` counts the bytes of endless bodies written.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from .provider_server import hashed_vector


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    timeout = 5

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        owner = self.server.owner
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            inputs = list(json.loads(raw or b"{}").get("input") or [])
        except (ValueError, AttributeError):
            inputs = []
        mode = owner.next_mode()
        with owner.lock:
            owner.log.append({"path": self.path, "n": len(inputs), "mode": mode,
                              "auth": self.headers.get("Authorization")})
        try:
            self._answer(owner, mode, inputs)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self) -> None:
        self.do_POST()

    def _answer(self, owner: HostileServer, mode: str, inputs: list[str]) -> None:
        if mode == "redirect":
            self.send_response(302)
            self.send_header("Location", f"{owner.redirect_to}{self.path}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "down":
            self._send(503, json.dumps({"error": {"message": "down"}}).encode())
            return
        vectors = [hashed_vector(t, owner.dims) for t in inputs]
        if vectors and mode in ("nan", "inf", "zero"):
            bad = {"nan": float("nan"), "inf": float("inf"), "zero": 0.0}[mode]
            first = list(vectors[0])  # the bad value where the vector weighs most
            first[max(range(owner.dims), key=lambda k: abs(first[k]))] = bad
            vectors[0] = [0.0] * owner.dims if mode == "zero" else first
        body = json.dumps({"object": "list", "model": "m", "data": [
            {"object": "embedding", "index": i, "embedding": v}
            for i, v in enumerate(vectors)]}).encode()
        if mode == "truncate":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.close_connection = True
        elif mode == "trickle":
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for i in range(min(len(body), 30)):
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                if owner.stopping.wait(2.0):
                    return
        elif mode == "endless":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            block = b" " * 65536
            while owner.sent < owner.endless_cap and not owner.stopping.is_set():
                self.wfile.write(block)
                owner.sent += len(block)
            self.close_connection = True
        else:
            self._send(200, body)

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: HostileServer


class HostileServer:
    """The server, in a thread; ``with HostileServer() as s:`` then ``s.base_url``."""

    def __init__(self, dims: int = 32) -> None:
        self.dims = dims
        self.modes: deque[str] = deque()
        self.then = "ok"
        self.redirect_to = ""
        self.endless_cap = 256 * 1024 * 1024
        self.sent = 0
        self.lock = threading.Lock()
        self.log: list[dict[str, Any]] = []
        self.stopping = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={
            "poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def play(self, *modes: str, then: str = "ok") -> None:
        """Answer the next requests with ``modes``, then with ``then``."""
        with self.lock:
            self.modes = deque(modes)
            self.then = then

    def next_mode(self) -> str:
        with self.lock:
            return self.modes.popleft() if self.modes else self.then

    def texts_embedded(self) -> int:
        """How many texts the server was asked to embed (every request, whatever its mode)."""
        with self.lock:
            return sum(r["n"] for r in self.log)


def wait_until(cond: Any, timeout_s: float = 5.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return False
