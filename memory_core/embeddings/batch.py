"""Provider batch APIs for a large index: OpenAI's and Voyage's Files + Batches, Gemini's
``asyncBatchEmbedContent`` (spec §7.4).

Off by default, as in the reference (``[provider.batch] enabled``). The documents of one
``embed_documents`` call become one JSONL upload (``POST {base}/files``, purpose ``batch``; at
most 50,000 requests a job, groups beyond that run ``concurrency`` at a time), one job (``POST
{base}/batches``, endpoint ``/v1/embeddings``), polled every ``poll_interval_ms`` (``GET
{base}/batches/{id}``) until it completes, fails or outlives ``timeout_minutes``; the vectors
come from its output file (``GET {base}/files/{output_file_id}/content``), matched back by
``custom_id``.

The reference's failure policy (``runBatchWithFallback``): a timed-out job is retried once; a
failed call counts one failure (two when its retry timed out too) and its documents are embedded
inline at once; at 2 failures batch mode is disabled and inline embedding takes over; a success
resets the count. :class:`BatchState` is what ``status --json`` shows as ``batch``.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..base.config import BatchConfig
from .base import EmbeddingError, EmbeddingProvider, ProgressFn, WrappedProvider

if TYPE_CHECKING:  # numpy in annotations only
    import numpy as np

    from .remote import RemoteEmbeddingProvider

#: After this many failures batch mode is disabled (the reference's MEMORY_BATCH_FAILURE_LIMIT).
FAILURE_LIMIT = 2
#: The most requests one job carries (OpenAI's and Voyage's documented limit).
MAX_REQUESTS = 50_000
#: Job states after which a job will never complete.
_TERMINAL = frozenset({"failed", "expired", "cancelled", "cancelling", "canceled"})
#: The providers whose batch API is implemented, and the completion window each is asked for
#: (Gemini's API takes none).
FLAVOURS: dict[str, str | None] = {"openai": "24h", "voyage": "12h", "gemini": None}

#: Called with (seconds waited, seconds allowed, the job's state) while a job runs.
WaitFn = Callable[[int, int, str], None]


#: A batch job's output file is one answer for every text of the job (50,000 texts of 3,072
#: floats: ~3 GB as JSON): its download is capped and bounded in time far above one request's.
BATCH_MAX_BYTES = 4 * 1024**3
BATCH_WHOLE_S = 3600.0


class BatchJobError(EmbeddingError):
    """A batch job could not give the vectors (failed, expired, malformed output)."""


class BatchTimeout(BatchJobError):
    """A batch job was still running when ``timeout_minutes`` ran out."""


@dataclass
class BatchState:
    """Batch mode's state for one index: on or off, failures so far and the last one."""

    enabled: bool
    failures: int = 0
    last_error: str | None = None
    last_provider: str | None = None

    def record_failure(self, provider: str, message: str, attempts: int = 1) -> bool:
        """Count a failed call (``attempts`` jobs); True when batch mode is now disabled."""
        self.failures += attempts
        self.last_error = message
        self.last_provider = provider
        if self.failures >= FAILURE_LIMIT:
            self.enabled = False
        return not self.enabled

    def reset(self) -> None:
        self.failures = 0
        self.last_error = None
        self.last_provider = None

    def to_meta(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "failures": self.failures,
                "lastError": self.last_error, "lastProvider": self.last_provider}

    @classmethod
    def from_meta(cls, data: Any, configured: bool) -> BatchState:
        """The state a previous sync left in the index meta (when batch is still wanted)."""
        if not configured:
            return cls(False)
        if not isinstance(data, dict):
            return cls(True)
        failures = data.get("failures")
        n = failures if isinstance(failures, int) and failures >= 0 else 0
        return cls(n < FAILURE_LIMIT, n, _text(data.get("lastError")),
                   _text(data.get("lastProvider")))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def status_json(cfg: BatchConfig, state: BatchState | None) -> dict[str, Any]:
    """The reference's ``status().batch`` object."""
    st = state or BatchState(cfg.enabled)
    return {"enabled": st.enabled, "failures": st.failures, "limit": FAILURE_LIMIT,
            "wait": cfg.wait, "concurrency": cfg.concurrency,
            "pollIntervalMs": cfg.poll_interval_ms,
            "timeoutMs": int(cfg.timeout_minutes * 60_000),
            "lastError": st.last_error, "lastProvider": st.last_provider}


class BatchJobRunner:
    """Runs the documents of one call as batch jobs on ``provider``'s API (OpenAI, Voyage;
    Gemini's is :class:`GeminiBatchRunner`)."""

    def __init__(self, provider: RemoteEmbeddingProvider, cfg: BatchConfig,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.provider = provider
        self.cfg = cfg
        self._sleep = sleep
        self.waiting: WaitFn | None = None

    def run(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts`` from batch jobs, in input order; raises :class:`BatchJobError`."""
        ids = [f"mc-{i}" for i in range(len(texts))]
        groups = [list(range(i, min(i + MAX_REQUESTS, len(texts))))
                  for i in range(0, len(texts), MAX_REQUESTS)]
        found: dict[str, Any] = {}
        lock = threading.Lock()

        def one(group: list[int]) -> None:
            got = self._job([(ids[i], texts[i]) for i in group])
            with lock:
                found.update(got)

        if len(groups) == 1:
            one(groups[0])
        else:
            from concurrent.futures import ThreadPoolExecutor  # with a batch job only

            with ThreadPoolExecutor(max_workers=max(1, self.cfg.concurrency)) as pool:
                for fut in [pool.submit(one, g) for g in groups]:
                    fut.result()
        return self.provider.finish([found[i] for i in ids], len(texts))

    # -- one job ----------------------------------------------------------------------------

    def _line(self, custom_id: str, text: str) -> dict[str, Any]:
        p = self.provider
        if p.id == "voyage":
            return {"custom_id": custom_id, "body": {"input": text}}
        body: dict[str, Any] = {"model": p.model, "input": text or " "}
        if p.dimensions is not None:
            body["dimensions"] = p.dimensions
        return {"custom_id": custom_id, "method": "POST", "url": "/v1/embeddings", "body": body}

    def _call(self, method: str, path: str, body: bytes | None = None,
              content_type: str | None = "application/json") -> bytes:
        """One request to the batch API (``path`` under the base URL, or a whole URL), retried
        like an embedding request on 429/5xx."""
        from .remote import RetryableError  # the HTTP stack: loaded with a remote provider

        p = self.provider
        url = path if path.startswith(("http://", "https://")) else f"{p.base_url}{path}"
        for attempt in range(p.max_retries + 1):
            try:
                return p.http(method, url, body, p.timeout_s, content_type,
                              max_bytes=BATCH_MAX_BYTES, whole_s=BATCH_WHOLE_S)
            except RetryableError as e:
                if attempt >= p.max_retries:
                    raise BatchJobError(f"{p.id} batch: {path}: {e}") from e
                self._sleep(min(0.5 * 2 ** attempt, 8.0))
        raise AssertionError("unreachable")

    def _json(self, method: str, path: str, payload: Any = None) -> dict[str, Any]:
        body = None if payload is None else json.dumps(payload).encode("utf-8")
        raw = self._call(method, path, body)
        try:
            data = json.loads(raw)
        except ValueError as e:
            raise BatchJobError(f"{self.provider.id} batch: {path}: not JSON ({e})") from e
        if not isinstance(data, dict):
            raise BatchJobError(f"{self.provider.id} batch: {path}: not a JSON object")
        return data

    def _upload(self, lines: list[dict[str, Any]]) -> str:
        boundary = f"mc-{os.urandom(16).hex()}"  # uuid4's 32 hex digits, without uuid's import
        jsonl = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n"
                f"batch\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
                f"filename=\"memory-embeddings.jsonl\"\r\nContent-Type: application/jsonl\r\n\r\n"
                ).encode() + jsonl.encode("utf-8") + f"\r\n--{boundary}--\r\n".encode()
        raw = self._call("POST", "/files", body, f"multipart/form-data; boundary={boundary}")
        try:
            file_id = json.loads(raw)["id"]
        except (ValueError, KeyError, TypeError) as e:
            raise BatchJobError(f"{self.provider.id} batch file upload: no file id ({e})") from e
        return str(file_id)

    def _job(self, items: list[tuple[str, str]]) -> dict[str, Any]:
        p = self.provider
        file_id = self._upload([self._line(cid, text) for cid, text in items])
        create: dict[str, Any] = {"input_file_id": file_id, "endpoint": "/v1/embeddings",
                                  "completion_window": FLAVOURS[p.id],
                                  "metadata": {"source": "memory-workbench"}}
        if p.id == "voyage":
            create["request_params"] = {"model": p.model, "input_type": "document"}
        job = self._json("POST", "/batches", create)
        job_id = job.get("id")
        if not isinstance(job_id, str) or not re.fullmatch(r"[\w.-]+", job_id):
            raise BatchJobError(f"{p.id} batch create: no usable batch id in {job!r:.200}")
        job = self._wait(job_id, job)
        out_id = job.get("output_file_id")
        if not isinstance(out_id, str) or not re.fullmatch(r"[\w.-]+", out_id):
            raise BatchJobError(f"{p.id} batch {job_id}: completed without an output file")
        return self._results(job_id, self._call("GET", f"/files/{out_id}/content"),
                             {cid for cid, _ in items})

    def _wait(self, job_id: str, job: dict[str, Any]) -> dict[str, Any]:
        timeout_s = self.cfg.timeout_minutes * 60.0
        start = time.monotonic()
        while True:
            state = self._state(job)
            if state == "completed":
                return job
            if state in _TERMINAL:
                raise BatchJobError(f"{self.provider.id} batch {job_id} {state}: "
                                    f"{self._error_text(job)}")
            if not self.cfg.wait:
                raise BatchJobError(f"{self.provider.id} batch {job_id} still {state}; "
                                    "wait disabled")
            waited = time.monotonic() - start
            if waited > timeout_s:
                raise BatchTimeout(f"{self.provider.id} batch {job_id} timed out after "
                                   f"{timeout_s:g} s ({state})")
            if self.waiting is not None:
                self.waiting(int(waited), int(timeout_s), state)
            self._sleep(self.cfg.poll_interval_ms / 1000.0)
            job = self._json("GET", self._poll_path(job_id))

    def _state(self, job: dict[str, Any]) -> str:
        """The job's state: ``completed``, one of :data:`_TERMINAL`, or a state to wait on."""
        return str(job.get("status") or "unknown")

    def _error_text(self, job: dict[str, Any]) -> str:
        errors = job.get("errors")
        data = errors.get("data") if isinstance(errors, dict) else None
        return "; ".join(str(e.get("message")) for e in data or []
                         if isinstance(e, dict)) or "no error given"

    def _poll_path(self, job_id: str) -> str:
        return f"/batches/{job_id}"

    def _results(self, job_id: str, raw: bytes, wanted: set[str]) -> dict[str, Any]:
        """The vectors of an output file by request id; raises on any error line or gap."""
        out: dict[str, Any] = {}
        errors: list[str] = []
        try:
            for line in raw.decode("utf-8").splitlines():
                if not line.strip():
                    continue
                cid, vector, error = self._output_line(json.loads(line))
                if error is not None:
                    errors.append(error)
                else:
                    out[cid] = vector
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
            raise BatchJobError(f"{self.provider.id} batch {job_id}: malformed output "
                                f"({e!r})") from e
        if errors:
            raise BatchJobError(f"{self.provider.id} batch {job_id} failed: "
                                + "; ".join(errors[:3]))
        missing = wanted - out.keys()
        if missing:
            raise BatchJobError(f"{self.provider.id} batch {job_id}: {len(missing)} embedding "
                                "responses missing")
        return out

    def _output_line(self, item: dict[str, Any]) -> tuple[str, Any, str | None]:
        """(request id, vector, error) of one output line (OpenAI's and Voyage's shape)."""
        resp = item.get("response") or {}
        if item.get("error") or resp.get("status_code") != 200:
            return str(item.get("custom_id")), None, str(item.get("error") or resp.get("body"))
        return str(item["custom_id"]), resp["body"]["data"][0]["embedding"], None


class GeminiBatchRunner(BatchJobRunner):
    """Gemini's batch API (``asyncBatchEmbedContent``), documented as: a JSONL of ``{key,
    request: EmbedContentRequest}`` uploaded (``POST {root}/upload/v1beta/files``, multipart),
    a batch created on the model (``{batch: {displayName, inputConfig: {fileName}}}``), an
    operation polled at ``GET {base}/batches/{id}`` until its ``metadata.state`` is
    ``BATCH_STATE_SUCCEEDED``, and the responses file (``metadata.output.responsesFile``)
    downloaded (``GET {root}/download/v1beta/files/{id}:download?alt=media``) as lines of
    ``{key, response: {embedding: {values}}}``. The reference waits for states named
    ``SUCCEEDED``/``DONE``, which the API does not send; ours reads the documented names."""

    def _root(self, kind: str) -> str:
        base = self.provider.base_url
        if base.endswith("/v1beta"):
            return f"{base[: -len('/v1beta')]}/{kind}/v1beta"
        return f"{base}/{kind}"

    def _upload(self, lines: list[dict[str, Any]]) -> str:
        boundary = f"mc-{os.urandom(16).hex()}"  # uuid4's 32 hex digits, without uuid's import
        meta = json.dumps({"file": {"displayName": "memory-embeddings",
                                    "mimeType": "application/jsonl"}})
        jsonl = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        body = (f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{meta}"
                f"\r\n--{boundary}\r\nContent-Type: application/jsonl\r\n\r\n").encode() + \
            jsonl.encode("utf-8") + f"\r\n--{boundary}--\r\n".encode()
        raw = self._call("POST", f"{self._root('upload')}/files?uploadType=multipart", body,
                         f"multipart/related; boundary={boundary}")
        try:
            data = json.loads(raw)
            name = (data.get("file") or data)["name"]
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise BatchJobError(f"gemini batch file upload: no file name ({e})") from e
        if not isinstance(name, str) or not re.fullmatch(r"files/[\w.-]+", name):
            raise BatchJobError(f"gemini batch file upload: unusable file name {name!r:.80}")
        return name

    def _job(self, items: list[tuple[str, str]]) -> dict[str, Any]:
        p = self.provider
        request_for = getattr(p, "request_for")  # noqa: B009  # GeminiEmbeddingProvider's
        file_name = self._upload([{"key": cid, "request": request_for(text, "document")}
                                  for cid, text in items])
        job = self._json("POST", f"/models/{p.model}:asyncBatchEmbedContent",
                         {"batch": {"displayName": "memory-embeddings",
                                    "inputConfig": {"fileName": file_name}}})
        name = job.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"batches/[\w.-]+", name):
            raise BatchJobError(f"gemini batch create: no usable batch name in {job!r:.200}")
        job = self._wait(name, job)
        meta: dict[str, Any] = job["metadata"] if isinstance(job.get("metadata"), dict) else {}
        output = meta.get("output") or (job.get("response") or {})
        out = output.get("responsesFile") if isinstance(output, dict) else None
        if not isinstance(out, str) or not re.fullmatch(r"files/[\w.-]+", out):
            raise BatchJobError(f"gemini batch {name}: succeeded without a responses file")
        raw = self._call("GET", f"{self._root('download')}/{out}:download?alt=media")
        return self._results(name, raw, {cid for cid, _ in items})

    def _state(self, job: dict[str, Any]) -> str:
        meta: dict[str, Any] = job["metadata"] if isinstance(job.get("metadata"), dict) else job
        raw = str(meta.get("state") or job.get("state") or "")
        state = raw.upper().removeprefix("BATCH_STATE_").removeprefix("JOB_STATE_").lower()
        if state == "succeeded" or (job.get("done") and not state and not job.get("error")):
            return "completed"
        if job.get("done") and job.get("error"):
            return "failed"
        return state or "unknown"

    def _error_text(self, job: dict[str, Any]) -> str:
        err = job.get("error")
        return str(err.get("message")) if isinstance(err, dict) and err.get("message") \
            else "no error given"

    def _poll_path(self, job_id: str) -> str:
        return f"/{job_id}"

    def _output_line(self, item: dict[str, Any]) -> tuple[str, Any, str | None]:
        resp = item.get("response") or {}
        err = item.get("error") or resp.get("error")
        if err:
            message = err.get("message", err) if isinstance(err, dict) else err
            return str(item.get("key")), None, f"{item.get('key')}: {message}"
        return str(item["key"]), resp["embedding"]["values"], None


class BatchingProvider(WrappedProvider):
    """``inner`` with its documents sent through the batch API while batch mode holds.

    Queries always go inline. A failed batch call is embedded inline at once (the reference's
    fallback); :attr:`state` counts failures and turns batch mode off at the limit.
    """

    #: One job per call: a caller that slices its documents (the live layer) must not.
    whole_calls = True
    #: Queries go to ``inner`` over the network (see ``RemoteEmbeddingProvider``).
    waits_on_network = True

    def __init__(self, inner: RemoteEmbeddingProvider, cfg: BatchConfig,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(inner)
        self.inner: RemoteEmbeddingProvider = inner
        self.cfg = cfg
        self.runner = (GeminiBatchRunner if inner.id == "gemini" else BatchJobRunner)(
            inner, cfg, sleep)
        self.state = BatchState(cfg.enabled)
        self.notes: list[str] = []

    @property
    def stats(self) -> Any:
        return self.inner.stats

    def set_waiting(self, fn: WaitFn | None) -> None:
        """Where to report a running job's wait (the CLI's progress)."""
        self.runner.waiting = fn

    def embed_documents(self, texts: Sequence[str], progress: ProgressFn | None = None
                        ) -> np.ndarray:
        items = [str(t) for t in texts]
        if not items or not self.state.enabled:
            return self.inner.embed_documents(items, progress)
        attempts = 1
        try:
            try:
                vectors = self.runner.run(items)
            except BatchTimeout:
                attempts = 2  # the reference retries a timed-out job once
                vectors = self.runner.run(items)
        except EmbeddingError as e:
            disabled = self.state.record_failure(self.id, str(e), attempts)
            self.notes.append(f"{self.id} batch failed ({self.state.failures}/{FAILURE_LIMIT}"
                              f"); {'batch disabled' if disabled else 'batch kept'}; "
                              f"embedded inline: {e}")
            return self.inner.embed_documents(items, progress)
        self.state.reset()
        if progress is not None:
            progress(len(items), len(items))
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def with_batch(provider: EmbeddingProvider | None, cfg: BatchConfig) -> EmbeddingProvider | None:
    """``provider`` wrapped for batch mode when it is on and the provider has a batch API."""
    from .remote import RemoteEmbeddingProvider  # here, not at import: index.py reads this module

    if (cfg.enabled and isinstance(provider, RemoteEmbeddingProvider)
            and provider.id in FLAVOURS):
        return BatchingProvider(provider, cfg)
    return provider
