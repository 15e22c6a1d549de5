"""A realistic OpenClaw home, built by the tests (issue #12).

``build_home(root)`` writes, under ``root``:

* ``openclaw.json``: JSON5 with comments, trailing commas and unquoted keys;
  ``agents.defaults.memorySearch`` (sessions on, an extra path, maxResults 3, minScore 0.2,
  weights 0.6/0.4) and two agents: ``main`` (default) and ``ops`` (its own workspace and
  ``maxResults`` 2);
* ``workspace/``: ``MEMORY.md``, three diaries and ``notes/``;
* ``workspace-ops/``: one diary;
* ``agents/main/sessions/``: two primary transcripts with user text, thinking blocks, text,
  ``memory_search`` tool calls and their tool results (one with citations appended), a
  ``memory_get`` call, a ``.reset.`` archive with a call, and files the reference does not list
  (``sessions.json``, a ``.bak.`` archive, a trajectory, a symlink);
* ``agents/ops/sessions/``: one transcript with a call of its own.

``MAIN_CALLS`` lists main's calls in time order: ``(query, args, results)``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

CONFIG = """// OpenClaw configuration (hand-edited)
{
  // where the agents live
  agents: {
    defaults: {
      workspace: "WORKSPACE",
      memorySearch: {
        sources: ["memory", "sessions"],
        experimental: { sessionMemory: true },   // transcripts too
        extraPaths: ["notes"],
        query: {
          maxResults: 3,
          minScore: 0.2,
          hybrid: { vectorWeight: 0.6, textWeight: 0.4, },
        },
      },
    },
    list: [
      { id: "main", default: true },
      /* the operations agent */
      { id: "ops", workspace: "OPS_WORKSPACE", memorySearch: { query: { maxResults: 2 } } },
    ],
  },
}
"""

DIARY_20 = """# 2026-11-20

## Crawler
- Switched the crawler to a connection pool of 8 (crawler/db.py).
- COOKIE_EXPIRED errors came from the login cookie expiring after 12 hours.

## Hosting
- Hosting costs went up because the database moved to a bigger instance.
"""

DIARY_21 = """# 2026-11-21

- The nightly export now runs at 02:00 UTC.
- Cookie refresh job added: it renews the login cookie every 6 hours.
"""

DIARY_22 = """# 2026-11-22

- Deployed crawler v2 with retry backoff.
"""

MEMORY = """# Long-Term Memory

- The agent runs a scraping pipeline for price data.
"""

#: (query, extra args, results) of main's calls, in time order.
MAIN_CALLS: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = [
    ("why COOKIE_EXPIRED", {}, [
        {"path": "memory/2026-11-20.md", "startLine": 1, "endLine": 9, "score": 0.81,
         "snippet": DIARY_20.strip(), "source": "memory"},
        {"path": "memory/2026-11-21.md", "startLine": 1, "endLine": 4, "score": 0.42,
         "snippet": DIARY_21.strip(), "source": "memory"},
    ]),
    ("hosting costs", {"maxResults": 2, "minScore": 0.1}, [
        {"path": "memory/2026-11-20.md", "startLine": 1, "endLine": 9, "score": 0.66,
         "snippet": DIARY_20.strip(), "source": "memory"},
        {"path": "MEMORY.md", "startLine": 1, "endLine": 3, "score": 0.3,
         "snippet": MEMORY.strip(), "source": "memory"},
    ]),
    ("something never written down", {"corpus": "memory"}, []),
    ("cookie refresh", {}, [
        {"path": "memory/2026-11-21.md", "startLine": 1, "endLine": 4, "score": 0.77,
         "snippet": DIARY_21.strip(), "source": "memory"},
        {"path": "sessions/main/s1.jsonl", "startLine": 2, "endLine": 2, "score": 0.5,
         "snippet": "User: when does the cookie expire?", "source": "sessions"},
    ]),
    ("Why COOKIE_EXPIRED ", {}, [
        {"path": "memory/2026-11-20.md", "startLine": 1, "endLine": 9, "score": 0.9,
         "snippet": DIARY_20.strip(), "source": "memory"},
    ]),
]

#: When each of main's calls happened (epoch ms; 2026-11-20 … 2026-11-23 UTC).
MAIN_TIMES = [1_795_168_800_000, 1_795_172_400_000, 1_795_255_200_000,
              1_795_341_600_000, 1_795_428_000_000]


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False)


def _msg(role: str, content: Any, ts: int, **extra: Any) -> str:
    return _line({"type": "message", "id": f"m{ts}", "timestamp": ts,
                  "message": {"role": role, "content": content, "timestamp": ts, **extra}})


def _call(call_id: str, query: str, args: dict[str, Any], ts: int) -> str:
    return _msg("assistant", [
        {"type": "thinking", "thinking": "I should check memory first."},
        {"type": "text", "text": "Let me look that up."},
        {"type": "toolCall", "id": call_id, "name": "memory_search",
         "arguments": {"query": query, **args}},
    ], ts)


def _result(call_id: str, results: list[dict[str, Any]], ts: int, *,
            cite: bool = False) -> str:
    shown = []
    for r in results:
        r = dict(r, corpus=r["source"])
        if cite:
            a, b = r["startLine"], r["endLine"]
            r["citation"] = f"{r['path']}#L{a}" + (f"-L{b}" if a != b else "")
            r["snippet"] = f"{r['snippet'].strip()}\n\nSource: {r['citation']}"
        shown.append(r)
    payload = {"results": shown, "provider": "openai", "model": "text-embedding-3-small",
               "citations": "on" if cite else "off", "mode": "hybrid"}
    return _msg("toolResult", [{"type": "text", "text": json.dumps(payload, indent=2)}], ts,
                toolCallId=call_id, toolName="memory_search", isError=False)


def build_home(root: Path) -> Path:
    """Write the home under ``root`` and return it."""
    home = root / "oc-home"
    ws = home / "workspace"
    ops = home / "workspace-ops"
    for d in (ws / "memory", ws / "notes", ops / "memory", home / "agents" / "main" / "sessions",
              home / "agents" / "ops" / "sessions"):
        d.mkdir(parents=True, exist_ok=True)
    (home / "openclaw.json").write_text(
        CONFIG.replace("OPS_WORKSPACE", str(ops)).replace("WORKSPACE", str(ws)),
        encoding="utf-8")
    (ws / "MEMORY.md").write_text(MEMORY, encoding="utf-8")
    (ws / "memory" / "2026-11-20.md").write_text(DIARY_20, encoding="utf-8")
    (ws / "memory" / "2026-11-21.md").write_text(DIARY_21, encoding="utf-8")
    (ws / "memory" / "2026-11-22.md").write_text(DIARY_22, encoding="utf-8")
    (ws / "notes" / "runbook.md").write_text("# Runbook\n\nRestart the crawler with "
                                             "`make crawl`.\n", encoding="utf-8")
    (ops / "memory" / "2026-11-21.md").write_text("- Ops rotated the TLS certificate.\n",
                                                  encoding="utf-8")
    sess = home / "agents" / "main" / "sessions"
    t = MAIN_TIMES
    # the archive: the first call, in a session that was reset
    archive = [
        _line({"type": "session", "version": 3, "id": "s0", "timestamp": t[0] - 1000}),
        _msg("user", "why do we get COOKIE_EXPIRED?", t[0] - 500),
        _call("call_a", MAIN_CALLS[0][0], MAIN_CALLS[0][1], t[0]),
        _result("call_a", MAIN_CALLS[0][2], t[0] + 300),
        _msg("assistant", [{"type": "text", "text": "The login cookie expires after 12 h."}],
             t[0] + 900),
    ]
    (sess / "s0.jsonl.reset.2026-11-20T10-00-00.000Z").write_text("\n".join(archive) + "\n",
                                                                  encoding="utf-8")
    s1 = [
        _line({"type": "session", "version": 3, "id": "s1", "timestamp": t[1] - 1000}),
        _msg("user", "when does the cookie expire? and why did hosting get pricier?", t[1] - 500),
        _call("call_b", MAIN_CALLS[1][0], MAIN_CALLS[1][1], t[1]),
        "{not json",
        _result("call_b", MAIN_CALLS[1][2], t[1] + 200, cite=True),
        _msg("assistant", [{"type": "toolCall", "id": "call_g", "name": "memory_get",
                            "arguments": {"path": "memory/2026-11-20.md", "from": 1}}], t[1] + 300),
        _msg("toolResult", [{"type": "text", "text": "{\"path\": \"memory/2026-11-20.md\"}"}],
             t[1] + 400, toolCallId="call_g", toolName="memory_get"),
        _call("call_c", MAIN_CALLS[2][0], MAIN_CALLS[2][1], t[2]),
        _result("call_c", MAIN_CALLS[2][2], t[2] + 100),
    ]
    (sess / "s1.jsonl").write_text("\n".join(s1) + "\n", encoding="utf-8")
    s2 = [
        _line({"type": "session", "version": 3, "id": "s2", "timestamp": t[3] - 1000}),
        _msg("user", "is the cookie refresh job running?", t[3] - 500),
        # two calls in one assistant turn; results come back in the other order
        _msg("assistant", [
            {"type": "thinking", "thinking": "Two searches."},
            {"type": "toolCall", "id": "call_d", "name": "memory_search",
             "arguments": {"query": MAIN_CALLS[3][0]}},
            {"type": "toolCall", "id": "call_e", "name": "memory_search",
             "arguments": {"query": MAIN_CALLS[4][0]}},
        ], t[3]),
        _result("call_e", MAIN_CALLS[4][2], t[4]),
        _result("call_d", MAIN_CALLS[3][2], t[3] + 100),
    ]
    (sess / "s2.jsonl").write_text("\n".join(s2) + "\n", encoding="utf-8")
    # not listed by the reference
    (sess / "sessions.json").write_text("{}", encoding="utf-8")
    (sess / "s9.jsonl.bak.2026-11-19T10-00-00.000Z").write_text(
        "\n".join([_call("call_x", "from a backup", {}, t[0])]) + "\n", encoding="utf-8")
    (sess / "s1.trajectory.jsonl").write_text(
        _call("call_y", "from a trajectory", {}, t[0]) + "\n", encoding="utf-8")
    os.symlink(sess / "s1.jsonl", sess / "link.jsonl")
    ops_s = home / "agents" / "ops" / "sessions"
    (ops_s / "o1.jsonl").write_text("\n".join([
        _call("call_o", "tls certificate", {}, t[1]),
        _result("call_o", [{"path": "memory/2026-11-21.md", "startLine": 1, "endLine": 1,
                            "score": 0.7, "snippet": "- Ops rotated the TLS certificate.",
                            "source": "memory"}], t[1] + 100),
    ]) + "\n", encoding="utf-8")
    return home


def main_call_times() -> list[int]:
    """Each of main's calls' time as the transcripts give it (call_e's own time is that of
    its assistant turn, t[3], since both calls share it)."""
    t = MAIN_TIMES
    return [t[0], t[1], t[2], t[3], t[3]]
