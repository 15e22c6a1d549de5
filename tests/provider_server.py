"""Embedding APIs of Gemini, Voyage, Mistral and OpenAI (with its Files + Batches API), served
by a real process on 127.0.0.1 for tests.

Written from each provider's public API documentation, not from our client: the routes, the
request fields that are required or checked, the answer shapes and the error bodies are those
the providers document.

* gemini: ``POST /v1beta/models/{model}:embedContent`` (``{content: {parts: [{text}]},
  taskType?, outputDimensionality?}`` → ``{embedding: {values}}``) and ``:batchEmbedContents``
  (``{requests: [EmbedContentRequest with model "models/{model}"]}``, at most 100 →
  ``{embeddings: [{values}]}``); the key in ``x-goog-api-key`` (or ``?key=``); errors
  ``{error: {code, message, status}}``.
* voyage: ``POST /v1/embeddings`` (``{input: str | [str] (≤ 1000), model, input_type?: null |
  "query" | "document", output_dimension?}`` → ``{object: "list", data: [{object:
  "embedding", embedding, index}], model, usage: {total_tokens}}``); bearer key; errors
  ``{detail}``.
* mistral: ``POST /v1/embeddings`` (``{model, input: str | [str], output_dimension?}`` →
  ``{id, object: "list", data: [...], model, usage}``); bearer key; errors ``{object: "error",
  message, type, param, code}``, a missing field 422 ``{detail: [{loc, msg, type}]}``.
* gemini's batch API: ``POST /upload/v1beta/files?uploadType=multipart`` (multipart/related:
  a JSON ``{file: {displayName, mimeType}}`` part, then the JSONL of ``{key, request}``) →
  ``{file: {name: "files/…"}}``; ``POST /v1beta/models/{model}:asyncBatchEmbedContent``
  (``{batch: {displayName, inputConfig: {fileName}}}``) → an operation ``{name: "batches/…",
  metadata: EmbedContentBatch {state: BATCH_STATE_PENDING …}, done}``; ``GET
  /v1beta/batches/{id}`` (RUNNING → SUCCEEDED with ``metadata.output.responsesFile``, or
  FAILED with ``error``); ``GET /download/v1beta/files/{id}:download?alt=media`` (JSONL of
  ``{key, response: {embedding: {values}}}``).
* openai: ``POST /v1/embeddings``, and the batch API (Voyage's is the same, with lines of
  ``{custom_id, body: {input}}``, ``completion_window`` 12h and ``request_params: {model,
  input_type}``): ``POST /v1/files`` (multipart, ``purpose``
  = ``batch``, a JSONL ``file`` of ``{custom_id, method, url, body}``), ``POST /v1/batches``
  (``{input_file_id, endpoint: "/v1/embeddings", completion_window: "24h"}``), ``GET
  /v1/batches/{id}`` (validating → in_progress → completed, or failed / expired), ``GET
  /v1/files/{id}/content`` (JSONL of ``{id, custom_id, response: {status_code, body}, error}``).

Vectors are real feature-hashed bags of words and character trigrams (``--dims`` wide, 64 by
default), so a query shares direction with the documents that share its words; the document and
the query task types give the same space (as the providers' do, by design). Gemini's come back
scaled by 3 (``embedContent`` does not promise unit length at reduced widths) so a client that
must normalise is seen to.

Test-only routes: ``POST /_control`` queues faults, ``GET /_log`` returns every request
received (path, JSON body or the upload's lines, headers without secrets), ``POST /_reset``.

Run: ``python tests/provider_server.py --api gemini`` prints ``{"port": N}`` once listening.
"""

from __future__ import annotations

import argparse
import email.parser
import email.policy
import hashlib
import itertools
import json
import math
import re
import sys
import threading
import time
import urllib.parse
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_WORD = re.compile(r"\w+", re.UNICODE)
_SECRET = {"authorization", "x-goog-api-key"}
#: The APIs with a Files + Batches API served here (Voyage's mirrors OpenAI's).
BATCH_APIS = ("openai", "voyage")


def hashed_vector(text: str, dims: int) -> list[float]:
    """A unit bag-of-words + trigram vector; the same text always gives the same vector."""
    vec = [0.0] * dims
    lowered = text.lower()
    feats = _WORD.findall(lowered)
    feats += [lowered[i:i + 3] for i in range(max(0, len(lowered) - 2))]
    for f in feats:
        h = hashlib.blake2b(f.encode("utf-8"), digest_size=8).digest()
        idx = int.from_bytes(h[:4], "little") % dims
        vec[idx] += 1.0 if h[4] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    return [x / norm for x in vec]


class State:
    """What the server remembers: faults to play, the request log, uploaded files, batches."""

    def __init__(self, api: str, dims: int, key: str | None) -> None:
        self.api = api
        self.dims = dims
        self.key = key
        self.lock = threading.Lock()
        self.faults: deque[dict[str, Any]] = deque()
        self.log: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_mode = "ok"  # ok | fail | hang
        self.polls_to_complete = 2
        self.ids = itertools.count(1)

    def take(self, kinds: tuple[str, ...] = ("status", "malformed", "dims", "hang")
             ) -> dict[str, Any] | None:
        with self.lock:
            if self.faults and self.faults[0]["action"] in kinds:
                return self.faults.popleft()
        return None


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"
    timeout = 5

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    # -- plumbing ---------------------------------------------------------------------------

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None,
              raw: bytes | None = None, ctype: str = "application/json") -> None:
        body = raw if raw is not None else json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _record(self, body: Any) -> None:
        st = self.server.state
        with st.lock:
            st.log.append({"method": self.command, "path": self.path, "body": body,
                           "headers": {k.lower(): v for k, v in self.headers.items()
                                       if k.lower() not in _SECRET},
                           "auth": self._key() is not None, "at": time.time()})

    def _key(self) -> str | None:
        if self.server.state.api == "gemini":
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            return self.headers.get("x-goog-api-key") or (q.get("key") or [None])[0]
        auth = self.headers.get("Authorization") or ""
        return auth[7:] if auth.startswith("Bearer ") else None

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        """An error body in the provider's documented shape."""
        api = self.server.state.api
        if api == "gemini":
            names = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                     429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
            payload: Any = {"error": {"code": status, "message": message,
                                      "status": names.get(status, "UNKNOWN")}}
        elif api == "voyage":
            payload = {"detail": message}
        elif api == "mistral":
            payload = {"object": "error", "message": message, "type": "invalid_request_error"
                       if status < 500 else "internal_error", "param": None, "code": str(status)}
        else:
            payload = {"error": {"message": message, "type": "invalid_request_error",
                                 "param": None, "code": None}}
        self._send(status, payload, headers)

    # -- routes -----------------------------------------------------------------------------

    def do_GET(self) -> None:
        st = self.server.state
        path = urllib.parse.urlsplit(self.path).path
        if path == "/_log":
            with st.lock:
                self._send(200, list(st.log))
            return
        self._record(None)
        if self._key() != st.key:
            self._error(401, "Incorrect API key provided")
            return
        if st.api == "gemini":
            self._gemini_get(path)
            return
        m = re.fullmatch(r"/v1/batches/([\w-]+)", path)
        if m and st.api in BATCH_APIS:
            self._batch_status(m.group(1))
            return
        m = re.fullmatch(r"/v1/files/([\w-]+)/content", path)
        if m and st.api in BATCH_APIS:
            data = st.files.get(m.group(1))
            if data is None:
                self._error(404, f"No such File object: {m.group(1)}")
            else:
                self._send(200, None, raw=data, ctype="application/octet-stream")
            return
        self._error(404, f"no route {path}")

    def do_POST(self) -> None:
        st = self.server.state
        path = urllib.parse.urlsplit(self.path).path
        raw = self._body()
        if path == "/_control":
            command = json.loads(raw or b"{}")
            with st.lock:
                if command.get("action") == "batch_mode":
                    st.batch_mode = command["mode"]
                    st.polls_to_complete = int(command.get("polls", st.polls_to_complete))
                else:
                    for _ in range(int(command.get("count", 1))):
                        st.faults.append(dict(command))
            self._send(200, {"ok": True})
            return
        if path == "/_reset":
            with st.lock:
                st.faults.clear()
                st.log.clear()
                st.batch_mode = "ok"
            self._send(200, {"ok": True})
            return
        if st.api in BATCH_APIS and path == "/v1/files":
            self._upload(raw)
            return
        if st.api == "gemini" and path == "/upload/v1beta/files":
            self._gemini_upload(raw)
            return
        try:
            data = json.loads(raw) if raw else None
        except ValueError:
            self._record(raw.decode("utf-8", "replace"))
            self._error(400, "We could not parse the JSON body of your request.")
            return
        self._record(data)
        if self._key() != st.key:
            if st.api == "gemini":
                self._error(400, "API key not valid. Please pass a valid API key.")
            else:
                self._error(401, "Unauthorized: invalid or missing API key")
            return
        if st.api in BATCH_APIS and path == "/v1/batches":
            self._create_batch(data)
            return
        fault = st.take()
        if fault is not None and fault["action"] == "status":
            ra = fault.get("retry_after")
            self._error(int(fault["status"]), fault.get("message", "injected failure"),
                        {"Retry-After": str(ra)} if ra is not None else None)
            return
        if fault is not None and fault["action"] == "hang":
            time.sleep(float(fault.get("seconds", 2)))
        if fault is not None and fault["action"] == "malformed":
            self._send(200, None, raw=b'{"data": [{"embedding": [0.1, ')
            return
        dims = st.dims + 1 if fault is not None and fault["action"] == "dims" else st.dims
        if st.api == "gemini":
            self._gemini(path, data, dims)
        elif path == "/v1/embeddings":
            self._openai_like(data, dims)
        else:
            self._error(404, f"no route {path}")

    # -- gemini -------------------------------------------------------------------------------

    def _gemini_content(self, req: Any) -> str | None:
        try:
            parts = req["content"]["parts"]
            text = "".join(p["text"] for p in parts)
        except (KeyError, TypeError):
            return None
        return text if parts else None

    def _gemini(self, path: str, data: Any, dims: int) -> None:
        m = re.fullmatch(r"/v1beta/models/([\w.-]+):(embedContent|batchEmbedContents|"
                         r"asyncBatchEmbedContent)", path)
        if not m:
            self._error(404, f"no route {path}")
            return
        model, verb = m.group(1), m.group(2)
        if verb == "asyncBatchEmbedContent":
            self._gemini_create_batch(model, data)
            return
        tasks = {"TASK_TYPE_UNSPECIFIED", "RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT",
                 "SEMANTIC_SIMILARITY", "CLASSIFICATION", "CLUSTERING", "QUESTION_ANSWERING",
                 "FACT_VERIFICATION", "CODE_RETRIEVAL_QUERY"}
        reqs = [data] if verb == "embedContent" else (data or {}).get("requests")
        if not isinstance(reqs, list) or not reqs:
            self._error(400, "* BatchEmbedContentsRequest.requests: field is required")
            return
        if len(reqs) > 100:
            self._error(400, "* BatchEmbedContentsRequest.requests: at most 100 requests "
                             "can be in one batch")
            return
        out = []
        for i, req in enumerate(reqs):
            if verb == "batchEmbedContents" and req.get("model") != f"models/{model}":
                self._error(400, f"* BatchEmbedContentsRequest.requests[{i}].model: the model "
                                 "must match the parent model")
                return
            text = self._gemini_content(req)
            if text is None:
                self._error(400, f"* requests[{i}].content: contents is not specified")
                return
            if req.get("taskType", "TASK_TYPE_UNSPECIFIED") not in tasks:
                self._error(400, f"Invalid value at 'requests[{i}].task_type'")
                return
            width = req.get("outputDimensionality") or dims
            out.append({"values": [3.0 * x for x in hashed_vector(text, dims)][:width]})
        if verb == "embedContent":
            self._send(200, {"embedding": out[0]})
        else:
            self._send(200, {"embeddings": out})

    # -- gemini's batch API ----------------------------------------------------------------

    def _multipart(self, raw: bytes) -> list[tuple[str, bytes, Any]]:
        """The parts of a multipart body: (content type, payload, the part)."""
        ctype = self.headers.get("Content-Type") or ""
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + ctype.encode("latin-1") + b"\r\n\r\n" + raw)
        if not msg.is_multipart():
            return []
        return [(part.get_content_type(), part.get_payload(decode=True) or b"", part)
                for part in msg.iter_parts()]

    def _gemini_upload(self, raw: bytes) -> None:
        st = self.server.state
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        parts = self._multipart(raw)
        self._record({"uploadType": (q.get("uploadType") or [None])[0],
                      "parts": [ct for ct, _, _ in parts],
                      "lines": [json.loads(x) for x in parts[1][1].splitlines() if x.strip()]
                      if len(parts) == 2 else None})
        if self._key() != st.key:
            self._error(400, "API key not valid. Please pass a valid API key.")
            return
        if (q.get("uploadType") or [None])[0] != "multipart" or len(parts) != 2 or \
                parts[0][0] != "application/json":
            self._error(400, "multipart upload: a JSON metadata part then the media part")
            return
        fid = f"files/{next(st.ids)}x"
        st.files[fid] = parts[1][1]
        meta = json.loads(parts[0][1]).get("file", {})
        self._send(200, {"file": {"name": fid, "displayName": meta.get("displayName"),
                                  "mimeType": meta.get("mimeType", "application/jsonl"),
                                  "sizeBytes": str(len(parts[1][1])), "state": "ACTIVE"}})

    def _gemini_create_batch(self, model: str, data: Any) -> None:
        st = self.server.state
        batch = (data or {}).get("batch") if isinstance(data, dict) else None
        cfg = (batch or {}).get("inputConfig") or (batch or {}).get("input_config") or {}
        fid = cfg.get("fileName") or cfg.get("file_name")
        if not isinstance(batch, dict) or fid not in st.files:
            self._error(400, "* batch.input_config.file_name: the file does not exist")
            return
        name = f"batches/{next(st.ids)}b"
        st.batches[name] = {"name": name, "model": f"models/{model}", "file": fid,
                            "displayName": batch.get("displayName"), "polls": 0,
                            "mode": st.batch_mode, "state": "BATCH_STATE_PENDING"}
        self._send(200, self._operation(st.batches[name]))

    @staticmethod
    def _operation(b: dict[str, Any]) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.EmbedContentBatch",
            "model": b["model"], "displayName": b["displayName"], "state": b["state"],
            "inputConfig": {"fileName": b["file"]}}
        op: dict[str, Any] = {"name": b["name"], "metadata": meta,
                              "done": b["state"] in ("BATCH_STATE_SUCCEEDED",
                                                     "BATCH_STATE_FAILED")}
        if b.get("output"):
            meta["output"] = {"responsesFile": b["output"]}
            op["response"] = {"@type": "type.googleapis.com/google.ai.generativelanguage."
                              "v1beta.EmbedContentBatchOutput", "responsesFile": b["output"]}
        if b["state"] == "BATCH_STATE_FAILED":
            op["error"] = {"code": 3, "message": "injected batch failure"}
        return op

    def _gemini_get(self, path: str) -> None:
        st = self.server.state
        m = re.fullmatch(r"/v1beta/(batches/[\w-]+)", path)
        if m and m.group(1) in st.batches:
            b = st.batches[m.group(1)]
            b["polls"] += 1
            if b["state"] in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING"):
                if b["mode"] == "hang" or b["polls"] < st.polls_to_complete:
                    b["state"] = "BATCH_STATE_RUNNING"
                elif b["mode"] == "fail":
                    b["state"] = "BATCH_STATE_FAILED"
                else:
                    self._gemini_complete(b)
            self._send(200, self._operation(b))
            return
        m = re.fullmatch(r"/download/v1beta/(files/[\w-]+):download", path)
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        if m and m.group(1) in st.files and (q.get("alt") or [None])[0] == "media":
            self._send(200, None, raw=st.files[m.group(1)], ctype="application/octet-stream")
            return
        self._error(404, f"no route {path}")

    def _gemini_complete(self, b: dict[str, Any]) -> None:
        st = self.server.state
        out = []
        for line in st.files[b["file"]].splitlines():
            if line.strip():
                req = json.loads(line)
                text = self._gemini_content(req["request"]) or ""
                out.append({"key": req["key"], "response": {"embedding": {
                    "values": [3.0 * x for x in hashed_vector(text, st.dims)]}}})
        fid = f"files/{next(st.ids)}x"
        st.files[fid] = "\n".join(json.dumps(o) for o in out).encode("utf-8") + b"\n"
        b["state"] = "BATCH_STATE_SUCCEEDED"
        b["output"] = fid

    # -- voyage, mistral, openai --------------------------------------------------------------

    def _openai_like(self, data: Any, dims: int) -> None:
        api = self.server.state.api
        if not isinstance(data, dict) or "input" not in data or "model" not in data:
            missing = "input" if not isinstance(data, dict) or "input" not in data else "model"
            if api == "mistral":
                self._send(422, {"detail": [{"loc": ["body", missing], "msg": "Field required",
                                             "type": "missing"}]})
            else:
                self._error(400, f"'{missing}' is a required property")
            return
        inputs = data["input"]
        inputs = [inputs] if isinstance(inputs, str) else inputs
        if not isinstance(inputs, list) or not inputs or not all(
                isinstance(t, str) for t in inputs):
            self._error(400, "'input' must be a string or a non-empty list of strings")
            return
        if api == "voyage":
            if data.get("input_type") not in (None, "query", "document"):
                self._error(400, "input_type must be one of None, 'query', 'document'")
                return
            if len(inputs) > 1000:
                self._error(400, "The batch size limit is 1000.")
                return
        if api == "openai" and any(t == "" for t in inputs):
            self._error(400, "'$.input' is invalid: empty strings are not allowed")
            return
        width = data.get("output_dimension") if api != "openai" else data.get("dimensions")
        vectors = [hashed_vector(t, dims)[:width or dims] for t in inputs]
        items = [{"object": "embedding", "embedding": v, "index": i}
                 for i, v in enumerate(vectors)]
        tokens = sum(len(_WORD.findall(t)) for t in inputs)
        usage: dict[str, int] = ({"total_tokens": tokens} if api == "voyage" else
                                 {"prompt_tokens": tokens, "total_tokens": tokens})
        payload: dict[str, Any] = {"object": "list", "data": items, "model": data["model"],
                                   "usage": usage}
        if api == "mistral":
            payload["id"] = f"emb-{next(self.server.state.ids)}"
        self._send(200, payload)

    # -- openai batch API ---------------------------------------------------------------------

    def _upload(self, raw: bytes) -> None:
        st = self.server.state
        fields: dict[str, bytes] = {}
        for _, payload, part in self._multipart(raw):
            name = part.get_param("name", header="content-disposition")
            if isinstance(name, str):
                fields[name] = payload
        lines = [json.loads(line) for line in fields.get("file", b"").splitlines()
                 if line.strip()] if "file" in fields else None
        self._record({"purpose": fields.get("purpose", b"").decode(), "lines": lines})
        if self._key() != st.key:
            self._error(401, "Incorrect API key provided")
            return
        if fields.get("purpose") != b"batch" or lines is None:
            self._error(400, "purpose and file are required (multipart/form-data)")
            return
        fid = f"file-{next(st.ids)}"
        st.files[fid] = fields["file"]
        self._send(200, {"id": fid, "object": "file", "bytes": len(fields["file"]),
                         "created_at": int(time.time()), "filename": "input.jsonl",
                         "purpose": "batch"})

    def _create_batch(self, data: Any) -> None:
        st = self.server.state
        if not isinstance(data, dict) or data.get("input_file_id") not in st.files:
            self._error(400, "input_file_id does not name an uploaded file")
            return
        window = "24h" if st.api == "openai" else "12h"
        if data.get("endpoint") != "/v1/embeddings" or data.get("completion_window") != window:
            self._error(400, f"endpoint must be /v1/embeddings, completion_window {window}")
            return
        params = data.get("request_params") or {}
        if st.api == "voyage" and (not params.get("model") or params.get("input_type") not in (
                None, "query", "document")):
            self._error(400, "request_params.model is required")
            return
        bid = f"batch_{next(st.ids)}"
        st.batches[bid] = {"id": bid, "object": "batch", "endpoint": data["endpoint"],
                           "input_file_id": data["input_file_id"], "status": "validating",
                           "output_file_id": None, "error_file_id": None, "errors": None,
                           "polls": 0, "mode": st.batch_mode, "params": params,
                           "created_at": int(time.time())}
        self._send(200, self._public(st.batches[bid]))

    @staticmethod
    def _public(batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if k not in ("polls", "mode", "params")}

    def _batch_status(self, bid: str) -> None:
        st = self.server.state
        batch = st.batches.get(bid)
        if batch is None:
            self._error(404, f"No batch found with id '{bid}'.")
            return
        batch["polls"] += 1
        if batch["status"] in ("validating", "in_progress"):
            if batch["mode"] == "hang" or batch["polls"] < st.polls_to_complete:
                batch["status"] = "in_progress"
            elif batch["mode"] == "fail":
                batch["status"] = "failed"
                batch["errors"] = {"object": "list", "data": [
                    {"code": "invalid_request", "message": "injected batch failure",
                     "param": None, "line": 1}]}
            else:
                self._complete(batch)
        self._send(200, self._public(batch))

    def _complete(self, batch: dict[str, Any]) -> None:
        st = self.server.state
        out = []
        for line in st.files[batch["input_file_id"]].splitlines():
            if not line.strip():
                continue
            req = json.loads(line)
            text = req["body"]["input"]
            texts = [text] if isinstance(text, str) else text
            model = req["body"].get("model") or batch["params"].get("model")
            body = {"object": "list", "model": model,
                    "data": [{"object": "embedding", "index": i,
                              "embedding": hashed_vector(t, st.dims)}
                             for i, t in enumerate(texts)]}
            out.append({"id": f"batch_req_{next(st.ids)}", "custom_id": req["custom_id"],
                        "response": {"status_code": 200, "request_id": "r", "body": body},
                        "error": None})
        out.reverse()  # the output file's order is not the input's (OpenAI says so)
        fid = f"file-{next(st.ids)}"
        st.files[fid] = "\n".join(json.dumps(o) for o in out).encode("utf-8") + b"\n"
        batch["status"] = "completed"
        batch["output_file_id"] = fid


class ProviderProcess:
    """The server above as a child process, for tests: ``with ProviderProcess("gemini") as s``.

    ``base_url`` is the provider's base (``/v1beta`` for gemini, ``/v1`` for the others);
    ``control(**fault)`` queues a fault (``action`` = ``status`` with ``status``,
    ``retry_after``, ``count``; ``malformed``; ``dims``; ``hang`` with ``seconds``;
    ``batch_mode`` with ``mode`` ok | fail | hang); ``log()`` lists the requests received.
    """

    def __init__(self, api: str, dims: int = 64, key: str = "test-key") -> None:
        self.api = api
        self.dims = dims
        self.key = key
        self.proc: Any = None
        self.port = 0

    def __enter__(self) -> ProviderProcess:
        import subprocess

        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--api", self.api, "--dims", str(self.dims),
             "--key", self.key], stdout=subprocess.PIPE, text=True)
        self.port = int(json.loads(self.proc.stdout.readline())["port"])
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.url + ("/v1beta" if self.api == "gemini" else "/v1")

    def _post(self, path: str, payload: Any) -> Any:
        import urllib.request

        req = urllib.request.Request(self.url + path, data=json.dumps(payload).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def control(self, **fault: Any) -> None:
        self._post("/_control", fault)

    def reset(self) -> None:
        self._post("/_reset", {})

    def log(self) -> list[dict[str, Any]]:
        import urllib.request

        with urllib.request.urlopen(self.url + "/_log", timeout=10) as resp:
            return list(json.loads(resp.read()))


def two_note_workspace(root: Any, toml: str) -> Any:
    """A workspace of two notes (the train to Lyon, Bob's dark mode) and ``toml`` as its
    ``memory-workbench.toml``; returns its path."""
    from pathlib import Path

    ws = Path(root) / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Long-term\n- Bob prefers dark mode in every editor.\n")
    (ws / "memory" / "2026-11-02.md").write_text("# Diary\n- The train to Lyon leaves from "
                                                 "platform 9 at noon.\n")
    (ws / "memory-workbench.toml").write_text(toml)
    return ws


def run_cli(ws: Any, env: dict[str, str], *args: str) -> Any:
    """``memory-core <args> -w ws`` as a subprocess, with no API key but those in ``env``."""
    import os
    import subprocess
    from pathlib import Path

    full = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    full.update(env)
    full["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    return subprocess.run([sys.executable, "-m", "memory_core", *args, "-w", str(ws)],
                          capture_output=True, text=True, env=full, timeout=120)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    state: State


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--api", choices=["gemini", "voyage", "mistral", "openai"], required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--dims", type=int, default=64)
    ap.add_argument("--key", default="test-key")
    args = ap.parse_args(argv)
    httpd = Server(("127.0.0.1", args.port), Handler)
    httpd.state = State(args.api, args.dims, args.key)
    print(json.dumps({"port": httpd.server_address[1]}), flush=True)
    try:
        httpd.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
        sys.stdout.flush()


if __name__ == "__main__":
    main()
