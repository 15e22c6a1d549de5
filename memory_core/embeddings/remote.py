"""What every HTTP embedding provider shares: batching, a bounded thread pool, retries, errors.

A remote provider (OpenAI-compatible, Gemini, Voyage, Mistral) differs only in its wire format:
the URL, the JSON it sends for documents and for a query, where the key goes and where the
vectors are in the answer. :class:`RemoteEmbeddingProvider` holds everything else, using only the
standard library (``urllib``), and reproduces the reference behaviour (§7.4 of the spec: an
8000-byte budget per request, 3 retries with a 500 ms doubling delay capped at 8 s and 0-20 %
jitter, 2 min batch and 60 s query timeouts). It improves on it in three ways:

* ``Retry-After`` is honoured on 429/503 answers (the reference ignores it, its issue #108893);
* batches are bounded by item count *and* byte size, not by bytes alone;
* batches run on a small bounded thread pool, and input order is preserved whatever order they
  finish in.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
import urllib.parse
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from .base import (
    EmbeddingError,
    ProgressFn,
    ProviderStats,
    ProviderUnavailable,
    VectorWidthChanged,
    normalize_rows,
    provider_key_for,
)

if TYPE_CHECKING:
    import urllib.error

    import numpy as np
else:
    from ..base.lazy import numpy as np

#: What a text is embedded for: the documents of the index, or a search query.
InputKind = Literal["document", "query"]

#: Hosts that may be used without an API key (a local server usually needs none).
_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})

#: HTTP statuses worth retrying: rate limiting and server-side failures.
_RETRYABLE_STATUS = frozenset({429}) | frozenset(range(500, 600))

#: Statuses on which a ``Retry-After`` header is honoured.
_RETRY_AFTER_STATUS = frozenset({429, 503})

#: Error texts the reference retries whatever the status (its isRetryableEmbeddingError).
_RETRYABLE_TEXT = re.compile(
    r"rate[_ ]limit|too many requests|resource has been exhausted|cloudflare|tokens per day",
    re.IGNORECASE)

#: Header names that carry a secret: never sent to logs, never part of a cache key.
SECRET_HEADERS = frozenset({"authorization", "x-goog-api-key", "api-key", "x-api-key"})

#: The largest answer read from an embedding request (96 texts of 3,072 floats take ~7 MB):
#: a server whose body never ends is cut here instead of filling the memory.
MAX_ANSWER_BYTES = 64 * 1024 * 1024


class BadVectors(EmbeddingError):
    """An answer held vectors that are not vectors: a NaN, an infinity, or only zeros (a row
    that would be stored, cached and ranked as if it meant something)."""


class _Cancelled(EmbeddingError):
    """A batch gave up because another batch of the same call failed (not counted as failure)."""


class RetryableError(Exception):
    """One attempt failed in a way that a later attempt may not (429, 5xx, timeout, reset)."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def is_local_url(base_url: str) -> bool:
    """True when ``base_url`` points at this machine, where an API key is not required."""
    host = (urllib.parse.urlsplit(base_url).hostname or "").lower()
    return host in _LOCAL_HOSTS or host.endswith(".localhost")


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait according to a ``Retry-After`` header, or ``None`` if absent or invalid.

    The header is either a number of seconds or an HTTP date (RFC 9110 §10.2.3). A date in the past
    gives 0. ``now`` (a Unix time) is for tests.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        import email.utils  # the HTTP stack only when a request is made (a no-op index makes none)

        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        current = datetime.now(UTC).timestamp() if now is None else now
        return max(0.0, when.timestamp() - current)
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def make_batches(
    texts: Sequence[str], max_items: int, max_bytes: int
) -> list[tuple[int, list[str]]]:
    """Group ``texts`` in order into batches of at most ``max_items`` texts and ``max_bytes``.

    Sizes are UTF-8 byte lengths, as the reference's byte budget (§7.4). A text larger than
    ``max_bytes`` on its own goes alone in its batch. Returns ``(start_index, texts)`` pairs.
    """
    batches: list[tuple[int, list[str]]] = []
    current: list[str] = []
    current_bytes = 0
    start = 0
    for i, text in enumerate(texts):
        size = len(text.encode("utf-8"))
        if current and (len(current) >= max_items or current_bytes + size > max_bytes):
            batches.append((start, current))
            current, current_bytes, start = [], 0, i
        current.append(text)
        current_bytes += size
    if current:
        batches.append((start, current))
    return batches


def public_headers(headers: dict[str, str] | None) -> dict[str, str]:
    """``headers`` without the ones that carry a secret (for cache keys and requests' extras)."""
    return {k: v for k, v in (headers or {}).items() if k.lower() not in SECRET_HEADERS}


class RemoteEmbeddingProvider:
    """Embeddings from an HTTP endpoint; subclasses give the wire format.

    The API key is read from the environment variable named by ``api_key_env`` when the provider
    is built, so that the key never sits in configuration files and never enters the
    ``provider_key``. ``key_required`` is ``"always"`` (a cloud API) or ``"remote"`` (a base URL
    on this machine may be used without a key); a missing key raises :class:`ProviderUnavailable`
    with one line naming the variable.

    ``embed_documents`` splits its input into batches of at most ``max_batch_items`` texts and
    ``max_batch_bytes`` UTF-8 bytes, sends up to ``concurrency`` of them at once, retries each
    failed batch up to ``max_retries`` times and returns the vectors in input order. Only rate
    limiting (429), server errors (5xx), timeouts and connection failures are retried; another
    4xx answer fails at once with the server's message.

    Subclasses set ``id``, ``default_key_env``, ``key_required`` and ``normalize``, implement
    :meth:`_payload` and :meth:`cache_key_data`, and override :meth:`_url`, :meth:`_vectors`
    and :meth:`_auth_headers` where their API is not shaped like OpenAI's.
    """

    id = "remote"
    default_key_env = ""
    key_required: Literal["always", "remote"] = "always"
    #: L2-normalise answers (the reference does for gemini, ollama; not for voyage, mistral).
    normalize = True
    #: A query's embedding is a round trip: search overlaps it with its keyword leg.
    waits_on_network = True

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        dimensions: int | None = None,
        *,
        timeout_s: float = 120.0,
        query_timeout_s: float = 60.0,
        max_batch_items: int = 96,
        max_batch_bytes: int = 8000,
        concurrency: int = 2,
        max_retries: int = 3,
        base_delay_s: float = 0.5,
        max_delay_s: float = 8.0,
        max_retry_after_s: float = 60.0,
        max_input_tokens: int = 8192,
        headers: dict[str, str] | None = None,
    ) -> None:
        name = f"{self.id} embeddings"
        if not base_url:
            raise ProviderUnavailable(f"{name}: no base URL configured")
        if not model:
            raise ProviderUnavailable(f"{name}: no model configured")
        if dimensions is not None and dimensions <= 0:
            raise ValueError(f"dimensions must be positive, got {dimensions}")
        if max_batch_items < 1 or max_batch_bytes < 1 or concurrency < 1 or max_retries < 0:
            raise ValueError("batch limits and concurrency must be >= 1, max_retries >= 0")
        self.base_url = base_url.rstrip("/")
        scheme = urllib.parse.urlsplit(self.base_url).scheme
        if scheme not in ("http", "https"):
            raise ProviderUnavailable(f"{name}: base URL must be http(s), got {self.base_url!r}")
        self.model = model
        self.api_key_env = api_key_env or self.default_key_env
        self.dimensions = dimensions
        self.timeout_s = timeout_s
        self.query_timeout_s = query_timeout_s
        self.max_batch_items = max_batch_items
        self.max_batch_bytes = max_batch_bytes
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s
        self.max_retry_after_s = max_retry_after_s
        self._max_input_tokens = max_input_tokens
        self._extra_headers = public_headers(headers)
        self._api_key = os.environ.get(self.api_key_env, "").strip() if self.api_key_env else ""
        if not self._api_key and (self.key_required == "always"
                                  or not is_local_url(self.base_url)):
            raise ProviderUnavailable(
                f"{name}: missing API key: set the environment variable "
                f"{self.api_key_env} (required for {self.base_url})")
        self._dims = int(dimensions) if dimensions else 0
        self._lock = threading.Lock()
        self.stats = ProviderStats()

    # -- the wire format (subclasses) -------------------------------------------------------------

    def _url(self, kind: InputKind, n: int) -> str:
        """The URL to POST ``n`` texts of ``kind`` to (OpenAI's shape by default)."""
        return f"{self.base_url}/embeddings"

    def _payload(self, texts: list[str], kind: InputKind) -> dict[str, Any]:
        """The JSON body for ``texts``."""
        raise NotImplementedError

    def _auth_headers(self) -> dict[str, str]:
        """The headers that carry the key (none without a key)."""
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _vectors(self, data: Any, kind: InputKind) -> list[Any]:
        """The vectors of a decoded answer, in input order (raise KeyError/TypeError if absent);
        OpenAI's ``data`` list by default."""
        return data_vectors(data)

    def cache_key_data(self) -> dict[str, Any]:
        """What makes this provider's vectors comparable (spec §3.6); never a secret."""
        raise NotImplementedError

    # -- the Protocol ---------------------------------------------------------------------------

    @property
    def dims(self) -> int:
        """Vector width: ``dimensions`` if set, else learned from the first answer (0 before)."""
        return self._dims

    @property
    def max_input_tokens(self) -> int:
        """The model's input budget in tokens."""
        return self._max_input_tokens

    @property
    def provider_key(self) -> str:
        """SHA-256 of :meth:`cache_key_data` (the index identity and the cache key)."""
        return provider_key_for(self.cache_key_data())

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressFn | None = None
    ) -> np.ndarray:
        """Embed ``texts`` and return a float32 ``(len(texts), dims)`` array.

        Batches run on up to ``concurrency`` threads; ``progress(done, total)`` is called (on
        the calling thread) after each batch completes. The first batch that fails for good
        cancels those not yet started and raises :class:`EmbeddingError`, whose ``received``
        holds the vectors of the batches that did arrive (input position → vector), so that the
        caller can keep them (the index caches them: the next run does not ask for them again).
        """
        items = [str(t) for t in texts]
        total = len(items)
        if total == 0:
            return np.zeros((0, self._dims), dtype=np.float32)
        batches = make_batches(items, self.max_batch_items, self.max_batch_bytes)
        results: list[np.ndarray | None] = [None] * len(batches)
        try:
            self._run_batches(batches, results, total, progress)
        except EmbeddingError as e:
            e.received = {start + i: row for (start, _), got in zip(batches, results, strict=True)
                          if got is not None for i, row in enumerate(got)}
            raise
        return np.vstack([r for r in results if r is not None]).astype(np.float32)

    def _run_batches(self, batches: list[tuple[int, list[str]]],
                     results: list[np.ndarray | None], total: int,
                     progress: ProgressFn | None) -> None:
        """Embed ``batches`` into ``results`` (each batch's vectors at its position)."""
        done = 0
        if len(batches) == 1 or self.concurrency == 1:
            for n, (_, batch) in enumerate(batches):
                results[n] = self._embed_batch(batch, self.timeout_s)
                done += len(batch)
                if progress is not None:
                    progress(done, total)
        else:
            from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait

            workers = min(self.concurrency, len(batches))
            abort = threading.Event()
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="embed") as pool:
                pending: dict[Future[np.ndarray], int] = {
                    pool.submit(self._embed_batch, batch, self.timeout_s, abort): n
                    for n, (_, batch) in enumerate(batches)
                }
                try:
                    while pending:
                        finished, _ = wait(pending, return_when=FIRST_EXCEPTION)
                        for fut in finished:
                            n = pending.pop(fut)
                            error = fut.exception()
                            if error is not None:
                                raise error
                            results[n] = fut.result()
                            done += len(batches[n][1])
                            if progress is not None:
                                progress(done, total)
                except BaseException:
                    # Stop the other batches: those not started are cancelled, those sleeping
                    # before a retry wake up and give up, so the pool's exit waits at most for
                    # the requests already on the wire.
                    abort.set()
                    for fut in pending:
                        fut.cancel()
                    raise

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query (trimmed, as the reference does) as a 1-D vector."""
        return self._embed_batch([str(text).strip()], self.query_timeout_s, kind="query")[0]

    # -- internals --------------------------------------------------------------------------------

    def _embed_batch(
        self, texts: list[str], timeout_s: float, abort: threading.Event | None = None,
        kind: InputKind = "document",
    ) -> np.ndarray:
        """Embed one batch with retries; returns its vectors in input order.

        ``abort``, set when a sibling batch has failed, ends the retry loop early.
        """
        attempt = 0
        while True:
            if abort is not None and abort.is_set():
                raise _Cancelled("cancelled: another batch of the same call failed")
            try:
                vectors = self._request(texts, timeout_s, kind)
            except RetryableError as exc:
                if attempt >= self.max_retries:
                    self._record_failure(str(exc))
                    raise EmbeddingError(
                        f"{self.id} embeddings failed after {attempt + 1} attempts: {exc}"
                    ) from exc
                delay = self._retry_delay(attempt, exc.retry_after_s)
                with self._lock:
                    self.stats.retries += 1
                    self.stats.last_error = str(exc)
                attempt += 1
                if abort is not None:
                    abort.wait(delay)  # an interruptible sleep
                else:
                    time.sleep(delay)
                continue
            except EmbeddingError as exc:
                self._record_failure(str(exc))
                raise
            with self._lock:
                self.stats.texts += len(texts)
                self.stats.batch_sizes.append(len(texts))
            return vectors

    def _retry_delay(self, attempt: int, retry_after_s: float | None) -> float:
        """Seconds to wait before retry number ``attempt + 1``.

        Exponential backoff (``base_delay_s`` doubling, capped at ``max_delay_s``) times
        ``1 + 0.2·random``; a ``Retry-After`` from the server, capped at ``max_retry_after_s``,
        replaces the backoff (plus the same jitter, so parallel clients do not wake together).
        """
        import random  # only when a request is retried (not at a no-op ``index``'s open)

        jitter = 1.0 + 0.2 * random.random()
        if retry_after_s is not None:
            return min(retry_after_s, self.max_retry_after_s) * jitter
        return min(self.base_delay_s * (2**attempt), self.max_delay_s) * jitter

    def _record_failure(self, message: str) -> None:
        with self._lock:
            self.stats.failures += 1
            self.stats.last_error = message

    def _headers(self) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "memory-core-embeddings/1",
            **self._extra_headers,
            **self._auth_headers(),
        }

    def http(self, method: str, url: str, body: bytes | None, timeout_s: float,
             content_type: str | None = "application/json",
             max_bytes: int = MAX_ANSWER_BYTES, whole_s: float | None = None) -> bytes:
        """One HTTP exchange with this provider's headers; the answer's body.

        ``timeout_s`` bounds each wait and ``whole_s`` (default ``timeout_s``) the whole
        exchange, the body included (a server trickling a byte at a time is cut at that
        deadline, not after each byte); an answer of more than
        ``max_bytes`` is not read further. A redirect to another origin (scheme, host, port)
        is refused: the key would follow it.

        Raises :class:`RetryableError` (429, 5xx, timeout, connection) or
        :class:`EmbeddingError` (another error answer, with the server's message).
        """
        import http.client
        import urllib.error
        import urllib.request

        headers = self._headers()
        if content_type is None:
            headers.pop("Content-Type", None)
        else:
            headers["Content-Type"] = content_type
        req = urllib.request.Request(url, data=body, headers=headers, method=method)
        with self._lock:
            self.stats.requests += 1
        whole = timeout_s if whole_s is None else whole_s
        deadline = time.monotonic() + whole
        try:
            with _opener().open(req, timeout=timeout_s) as resp:
                return read_bounded(resp, deadline, whole, max_bytes, url)
        except urllib.error.HTTPError as exc:
            self._raise_http_error(exc, url)
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                raise RetryableError(f"request timed out after {timeout_s:g} s") from exc
            raise RetryableError(f"connection to {self.base_url} failed: {reason}") from exc
        except TimeoutError as exc:
            raise RetryableError(f"request timed out after {timeout_s:g} s") from exc
        except (ConnectionError, http.client.HTTPException, OSError) as exc:
            raise RetryableError(f"connection to {self.base_url} failed: {exc!r}") from exc

    def _request(self, texts: list[str], timeout_s: float, kind: InputKind) -> np.ndarray:
        """One HTTP attempt. Raises RetryableError or EmbeddingError on failure; an answer cut
        short (not JSON) or holding vectors that are not vectors is retried, as a 5xx is."""
        body = json.dumps(self._payload(texts, kind), ensure_ascii=False).encode("utf-8")
        raw = self.http("POST", self._url(kind, len(texts)), body, timeout_s)
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise RetryableError(f"{self.id} embeddings: answer from {self.base_url} is not "
                                 f"JSON (cut short?): {exc}") from exc
        try:
            return self._parse_data(data, len(texts), kind)
        except BadVectors as exc:
            raise RetryableError(str(exc)) from exc

    def _raise_http_error(self, exc: urllib.error.HTTPError, url: str) -> NoReturn:
        """Turn an HTTP error answer into a retryable or a final error with the server's text."""
        import http.client

        status = exc.code
        try:
            raw = exc.read()
        except (OSError, http.client.HTTPException):
            raw = b""
        finally:
            exc.close()
        message = error_message(raw) or exc.reason or "no message"
        text = f"HTTP {status} from {url}: {message}"
        if status in _RETRYABLE_STATUS or _RETRYABLE_TEXT.search(str(message)):
            retry_after = None
            if status in _RETRY_AFTER_STATUS and exc.headers is not None:
                retry_after = parse_retry_after(exc.headers.get("Retry-After"))
            raise RetryableError(text, retry_after) from exc
        raise EmbeddingError(text) from exc

    def _parse_data(self, data: Any, expected: int, kind: InputKind) -> np.ndarray:
        """The vectors of a decoded answer: shape and width checked, normalised if the
        provider does."""
        try:
            vectors = self._vectors(data, kind)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
            raise EmbeddingError(
                f"{self.id} embeddings: malformed answer from {self.base_url}: {exc!r}"
            ) from exc
        return self.finish(vectors, expected)

    def finish(self, vectors: Sequence[Any], expected: int) -> np.ndarray:
        """``vectors`` (one per input, however they arrived: an answer, a batch job's output)
        as a float32 matrix: shape and width checked, normalised if the provider does."""
        try:
            matrix = np.asarray(vectors, dtype=np.float32)
        except (ValueError, TypeError) as exc:
            raise EmbeddingError(
                f"{self.id} embeddings: malformed answer from {self.base_url}: {exc!r}"
            ) from exc
        if matrix.ndim != 2 or matrix.shape[0] != expected or matrix.shape[1] == 0:
            raise EmbeddingError(
                f"{self.id} embeddings: expected {expected} vectors, got shape {matrix.shape}"
            )
        bad = ~np.isfinite(matrix).all(axis=1)
        if bad.any():
            raise BadVectors(f"{self.id} embeddings: {int(bad.sum())} vector(s) from "
                             f"{self.base_url} are not finite (NaN or infinity): refused")
        zero = ~matrix.any(axis=1)
        if zero.any():
            raise BadVectors(f"{self.id} embeddings: {int(zero.sum())} vector(s) from "
                             f"{self.base_url} are all zeros: refused")
        width = int(matrix.shape[1])
        with self._lock:
            if self._dims == 0:
                self._dims = width
            elif width != self._dims:
                raise VectorWidthChanged(
                    f"{self.id} embeddings: model {self.model} returned {width}-d vectors, "
                    f"expected {self._dims}-d (its width changed under the same name)"
                )
        if self.normalize:
            return normalize_rows(matrix)
        return matrix.astype(np.float32)

    def expect_dims(self, dims: int) -> None:
        """The width the index holds for this provider's vectors: an answer of another width
        raises :class:`VectorWidthChanged` (a no-op when the width is already known)."""
        with self._lock:
            if self._dims == 0 and dims > 0:
                self._dims = int(dims)


def _opener() -> Any:
    """A ``urllib`` opener that follows redirects within one origin only (the key goes
    with every request: another origin is not to see it)."""
    import urllib.request

    class SameOrigin(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any,
                             newurl: str) -> Any:
            old = urllib.parse.urlsplit(req.full_url)
            new = urllib.parse.urlsplit(urllib.parse.urljoin(req.full_url, newurl))
            if (old.scheme, old.hostname, old.port) != (new.scheme, new.hostname, new.port):
                raise EmbeddingError(
                    f"{req.full_url} redirected ({code}) to another origin "
                    f"{new.scheme}://{new.netloc}: not followed (the API key would go with it)")
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    return urllib.request.build_opener(SameOrigin())


def read_bounded(resp: Any, deadline: float, timeout_s: float, max_bytes: int,
                 url: str) -> bytes:
    """The body of ``resp``, read by pieces as they arrive until ``deadline`` (monotonic)
    and up to ``max_bytes``: :class:`RetryableError` past the deadline, :class:`EmbeddingError`
    past the size."""
    cap = f"{max_bytes / 1048576:g} MiB"
    length = resp.headers.get("Content-Length") if resp.headers is not None else None
    if length and length.strip().isdigit() and int(length) > max_bytes:
        raise EmbeddingError(f"answer from {url} is {int(length)} bytes, over the {cap} cap")
    parts: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise RetryableError(f"request timed out after {timeout_s:g} s (the answer was "
                                 f"still arriving)")
        piece = resp.read1(65536)
        if not piece:
            return b"".join(parts)
        size += len(piece)
        if size > max_bytes:
            raise EmbeddingError(f"answer from {url} is over the {cap} cap: not read further")
        parts.append(piece)


def data_vectors(data: Any) -> list[Any]:
    """The vectors of an OpenAI-shaped answer (``{"data": [{"embedding", "index"}]}``), ordered
    by ``index`` when every item has one (OpenAI, Voyage and Mistral answer this way)."""
    items = data["data"]
    if not isinstance(items, list):
        raise TypeError(f"'data' is {type(items).__name__}, not a list")
    if all(isinstance(d, dict) and "index" in d for d in items):
        items = sorted(items, key=lambda d: int(d["index"]))
    return [d["embedding"] for d in items]


def error_message(raw: bytes) -> str:
    """The human message of an error body: ``{"error": {"message"}}`` (OpenAI, Gemini),
    ``{"detail": ...}`` (Voyage, a validation error), ``{"message": ...}`` (Mistral) or text."""
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            for key in ("message", "detail"):
                if err.get(key):
                    value = err[key]
                    return (value if isinstance(value, str) else json.dumps(value))[:500]
        if isinstance(err, str):
            return err[:500]
    return text[:500]
