"""Synthetic workspaces and a cheap OpenAI-compatible embeddings server for the scale benchmark.

``make_workspace(root, chunks)`` writes a deterministic diary-style workspace of about ``chunks``
chunks (default chunking: 400 tokens ≈ 1,600 characters, 80 tokens of overlap): realistic
English sentences about an engineering team's days, with identifiers (hosts, tickets, versions,
paths, error codes), a Zipf-like long tail of project words, and about one line in twelve in
Chinese. Same ``chunks`` and :data:`GEN_VERSION` → byte-identical files.

``HashEmbedServer`` answers ``POST /v1/embeddings`` on 127.0.0.1 like ``tests/embed_server.py``
does, but with *hashed bag-of-words* vectors: each token maps to a fixed pseudo-random unit
vector (seeded by its CRC32), a text's vector is their normalised sum. They are deterministic,
cost microseconds, and still put texts that share words near each other, so nearest-neighbour
structure (and hence ANN recall) is realistic rather than uniform noise. ``latency_ms`` adds a
per-request delay to imitate a remote GPU server, for the concurrency measurement.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

GEN_VERSION = 1
DIMS = 384
#: Characters per chunk step of the default chunking (1,600-character chunks, 320 overlap).
_STEP_CHARS = 1_400

_COMMON = """the a to of and in is for on that with we it was as at by this be from are not have
but or an they which one you all were there been has more when will would their if out so up
about can what no into than them some could time only other new then our its also after two how
first well way even because any these give day most us after before while still since again team
week night morning today yesterday tomorrow decided agreed noted checked fixed moved rolled back
deployed tested reviewed merged reverted upgraded migrated paged restarted rotated pinned bumped
because however instead although meanwhile therefore otherwise""".split()
_DOMAIN = """server database replica primary backup restore snapshot cluster node pod container
image registry pipeline build release deploy rollout canary rollback incident outage alert
pager oncall runbook dashboard metric latency throughput timeout retry queue worker scheduler
cron job batch stream cache index vacuum migration schema table column query plan lock deadlock
connection pool proxy router gateway firewall vlan subnet dns certificate token secret vault key
rotation login session cookie crawler scraper parser report invoice budget customer retailer
price discount export import csv json parquet bucket storage disk memory cpu thread process
kernel patch upgrade version dependency library package compiler test flaky coverage benchmark
profile trace log error warning exception stack heap leak garbage collector garbage throttle
captcha proxy pool timezone calendar meeting standup retro planning estimate sprint ticket
review approval merge conflict branch commit tag hotfix feature flag experiment cohort funnel
churn signup onboarding email newsletter campaign budget forecast contract vendor license
audit compliance gdpr retention encryption tls ssh bastion terraform ansible kubernetes helm
grafana prometheus loki sentry postgres pgbouncer redis kafka nginx envoy wireguard s3 glacier
""".split()
_PEOPLE = "Marco Ana Priya Tomasz Lena Kenji Sofia Omar Ines Wei Jonas Aisha Pedro Yuki".split()
_CHINESE = [
    "数据库连接池在高峰期耗尽，需要调大上限。", "今天的发布推迟到周四，因为回归测试没有通过。",
    "日志里出现了大量超时错误，怀疑是代理服务器的问题。", "我们决定把备份迁移到冷存储以节省成本。",
    "验证码服务的响应时间明显变长了。", "报表任务每天凌晨三点运行，耗时大约四十分钟。",
    "熔断器触发了两次，之后自动恢复。", "时区设置错误导致定时任务提前一小时执行。",
    "新同事下周一入职，需要准备账号和权限。", "客户反馈导出的表格里缺少价格字段。",
]
_SYLL = "ka lo mi ra ten vor zu pel qua dex nor fin gal sur tri bex".split()


def _rare_words(n: int, rng: random.Random) -> list[str]:
    """A long tail of project code names (``kamivor``, ``dexpelsur``...)."""
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rng.choice(_SYLL) for _ in range(rng.randint(2, 3))))
    return sorted(out)


class _Writer:
    """Sentence factory over a Zipf-weighted vocabulary (one per workspace, seeded)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        rare = _rare_words(4_000, random.Random(seed + 1))
        self.vocab = _DOMAIN + rare
        weights = [1.0 / (i + 8) ** 1.05 for i in range(len(self.vocab))]
        self.cum = list(np.cumsum(weights))

    def ident(self) -> str:
        r = self.rng
        kind = r.randrange(8)
        if kind == 0:
            return f"`db-{r.randint(1, 40):02d}`"
        if kind == 1:
            return f"PR #{r.randint(100, 9999)}"
        if kind == 2:
            return f"v{r.randint(1, 9)}.{r.randint(0, 30)}.{r.randint(0, 9)}"
        if kind == 3:
            return f"`ERR_{r.choice(['CONN', 'AUTH', 'TIMEOUT', 'QUOTA'])}_{r.randint(1, 99)}`"
        if kind == 4:
            return f"`{r.choice(self.vocab)}_{r.choice(self.vocab)}.py`"
        if kind == 5:
            return f"JIRA-{r.randint(1000, 30000)}"
        if kind == 6:
            return f"{r.randint(2, 990)} ms"
        return f"`10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}`"

    def sentence(self) -> str:
        r = self.rng
        if r.random() < 0.08:
            return r.choice(_CHINESE)
        words: list[str] = [r.choice(_PEOPLE)]
        for _ in range(r.randint(10, 24)):
            x = r.random()
            if x < 0.45:
                words.append(r.choice(_COMMON))
            elif x < 0.93:
                words.append(self.vocab[self._zipf()])
            else:
                words.append(self.ident())
        return " ".join(words) + "."

    def _zipf(self) -> int:
        import bisect

        return min(len(self.vocab) - 1,
                   bisect.bisect_left(self.cum, self.rng.random() * self.cum[-1]))

    def document(self, title: str, chars: int) -> str:
        lines = [f"# {title}", ""]
        size = 0
        while size < chars:
            lines.append(f"## {self.vocab[self._zipf()].title()} {self.ident()}")
            for _ in range(self.rng.randint(3, 7)):
                line = "- " + " ".join(self.sentence() for _ in range(self.rng.randint(1, 2)))
                lines.append(line)
                size += len(line) + 1
            lines.append("")
        return "\n".join(lines) + "\n"


def make_workspace(root: Path, chunks: int, chunks_per_file: int = 10) -> Path:
    """Write (once) a workspace of about ``chunks`` chunks under ``root``; return its path.

    Diaries ``memory/YYYY-MM-DD-<n>.md`` and topic notes ``memory/projects/<word>-<n>.md``.
    A ``.complete`` marker makes a re-run reuse the files (and their index in ``.memory/``).
    """
    ws = root
    marker = ws / ".complete"
    if marker.is_file():
        return ws
    w = _Writer(seed=1000 + chunks)
    n_files = max(1, chunks // chunks_per_file)
    (ws / "memory" / "projects").mkdir(parents=True, exist_ok=True)
    (ws / "MEMORY.md").write_text(w.document("Long-term memory", 3_000), encoding="utf-8")
    start = 738_000  # a proleptic ordinal in 2021
    for i in range(n_files):
        from datetime import date

        if i % 4:
            d = date.fromordinal(start + i // 3)
            rel = f"memory/{d.isoformat()}-{i}.md"
            title = d.isoformat()
        else:
            word = w.vocab[i % len(w.vocab)]
            rel = f"memory/projects/{word}-{i}.md"
            title = f"Project {word}"
        text = w.document(title, chunks_per_file * _STEP_CHARS)
        (ws / rel).write_text(text, encoding="utf-8")
    (ws / "memory-workbench.toml").write_text(
        '[sources]\nsources = ["memory"]\n', encoding="utf-8")
    marker.write_text(f"{GEN_VERSION}\n", encoding="utf-8")
    return ws


def bench_queries(n: int = 40, seed: int = 5) -> list[str]:
    """Natural-language questions over the synthetic vocabulary (some Chinese, some idents)."""
    w = _Writer(seed=1000 + 10_000)
    rng = random.Random(seed)
    stems = ["what did we decide about", "why did", "when was the", "who handled the",
             "how do we fix", "what happened with"]
    out: list[str] = []
    for i in range(n):
        if i % 10 == 9:
            out.append(rng.choice(_CHINESE)[:8] + "是什么原因？")
            continue
        words = [w.vocab[w._zipf()] for _ in range(rng.randint(2, 4))]
        q = f"{rng.choice(stems)} {' '.join(words)}"
        if i % 5 == 0:
            q += f" {w.ident().strip('`')}"
        out.append(q + "?")
    return out


# --------------------------------------------------------------------------- vectors

_TOKEN_RE = re.compile(r"[a-z0-9_]+|[\u4e00-\u9fff]")
_TOKEN_VECS: dict[tuple[str, int], np.ndarray] = {}
_TOKEN_LOCK = threading.Lock()


def _token_vec(tok: str, dims: int) -> np.ndarray:
    v = _TOKEN_VECS.get((tok, dims))
    if v is None:
        g = np.random.default_rng(zlib.crc32(tok.encode("utf-8")))
        v = g.standard_normal(dims).astype(np.float32)
        v /= np.linalg.norm(v)
        with _TOKEN_LOCK:
            _TOKEN_VECS[(tok, dims)] = v
    return v


def hash_embed(texts: list[str], dims: int = DIMS) -> np.ndarray:
    """Deterministic bag-of-words vectors, L2-normalised float32 (see the module docstring)."""
    out = np.zeros((len(texts), dims), dtype=np.float32)
    for i, t in enumerate(texts):
        toks = _TOKEN_RE.findall(t.lower())
        if not toks:
            out[i, 0] = 1.0
            continue
        m = np.stack([_token_vec(x, dims) for x in toks])
        s = m.sum(axis=0)
        out[i] = s / max(float(np.linalg.norm(s)), 1e-12)
    return out


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        data = json.loads(self.rfile.read(length) or b"{}")
        inputs = data.get("input")
        inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
        if self.server.latency_s:
            time.sleep(self.server.latency_s)
        vecs = hash_embed(inputs, self.server.dims)
        with self.server.lock:
            self.server.requests += 1
            self.server.texts += len(inputs)
        body = json.dumps({
            "object": "list", "model": data.get("model"),
            "data": [{"object": "embedding", "index": i, "embedding": v}
                     for i, v in enumerate(vecs.tolist())],
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    latency_s = 0.0
    dims = DIMS
    lock = threading.Lock()
    requests = 0
    texts = 0


class HashEmbedServer:
    """The cheap embeddings server on ``127.0.0.1:port`` (a fixed port keeps the provider key,
    and so the cached index, stable across runs). ``dims`` sets the vectors' width."""

    def __init__(self, port: int = 0, latency_ms: float = 0.0, dims: int = DIMS) -> None:
        self.httpd = _Server(("127.0.0.1", port), _Handler)
        self.httpd.latency_s = latency_ms / 1000
        self.httpd.dims = dims
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> HashEmbedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
