"""The dreaming failures OpenClaw's users report (issue 25 item 2): each reproduced in the
``reference`` profile, and the ``default`` profile shown immune.

The replay is a real workspace of 60 diaries run through the real engine (keyword-only, no
model): every day the agent searches for one fact it keeps needing (once every five days, in
different words), and every night dreaming ingests the last two diaries as the Light phase
does (limit 100, so up to 400 snippets a night).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_core import MemoryIndex
from memory_core import promotion as pr
from memory_core.base.dates import DAY_MS
from memory_core.promotion.phases import DreamingConfig
from memory_core.promotion.policy import RETENTION_CAP, is_artifact

START = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
DAYS = 60
FACT_DAY = 0
FACT = "The billing gateway listens on port 8443 behind the hetzner load balancer."
QUESTIONS = ["billing gateway port", "which port does the billing gateway use",
             "load balancer in front of billing", "hetzner load balancer port",
             "billing gateway listens", "gateway port 8443", "port of billing service",
             "what listens on 8443", "billing behind load balancer", "billing gateway hetzner",
             "billing port number", "load balancer billing gateway port"]
_WORDS = ("amber basil cedar dune ember fjord grove harbor iris jade kelp lotus meadow nectar "
          "orchid pebble quartz reef sage tundra umber violet willow yarrow zephyr").split()


def _diary(day: int) -> str:
    """A day's diary: 220 one-line paragraphs (220 daily snippets), plus the fact on day 0."""
    d = (START + timedelta(days=day)).date().isoformat()
    lines = [f"# {d}", ""]
    if day == FACT_DAY:
        lines += ["## Billing", "", FACT, ""]
    for i in range(220):
        w = [_WORDS[(day * 7 + i * k) % len(_WORDS)] for k in (1, 3, 5)]
        lines += [f"Garden log {day}-{i}: {w[0]} {w[1]} {w[2]} watered and noted.", ""]
    return "\n".join(lines)


def _replay(tmp_path: Path, profile: str) -> dict[str, Any]:
    ws = tmp_path / profile
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Long-Term Memory\n\n- Sam prefers short answers.\n")
    for day in range(DAYS):
        d = (START + timedelta(days=day)).date().isoformat()
        (ws / "memory" / f"{d}.md").write_text(_diary(day), encoding="utf-8")
    idx = MemoryIndex.open(ws, provider="none", profile=profile)
    idx.sync()
    light = DreamingConfig().light_limit
    fact_key_seen: set[str] = set()
    asked = 0
    for day in range(DAYS):
        noon = START + timedelta(days=day)
        if day > FACT_DAY and day % 5 == 0:
            q = QUESTIONS[asked % len(QUESTIONS)]
            asked += 1
            hits = idx.search(q).hits
            fact_hits = [h for h in hits if FACT[:30] in h.snippet]
            assert fact_hits, q
            fact_key_seen.update(f"memory:{h.path}:{h.start_line}:{h.end_line}"
                                 for h in fact_hits)
            pr.record_search(idx, q, hits, now=noon)
        pr.ingest_daily(idx, now=noon + timedelta(hours=15), limit=light)  # 03:00 the next day
    end = START + timedelta(days=DAYS - 1, hours=15)
    with pr.state_of(idx) as st:
        entries = st.recall_entries()
    passed = [c for c in pr.list_candidates(idx, now=end, check_duplicates_of="none")
              if c.passed]
    plan = pr.preview_apply(idx, passed, now=end)
    out = {"entries": entries, "fact_keys": fact_key_seen, "passed": passed,
           "plan": plan, "idx": idx}
    return out


@pytest.fixture(scope="module")
def replays(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    base = tmp_path_factory.mktemp("replay60")
    return {p: _replay(base, p) for p in ("reference", "default")}


def _fact_entries(r: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in r["entries"] if e["key"] in r["fact_keys"]]


def test_store_cap_evicts_recalled_entries_in_reference_only(replays: dict) -> None:
    """openclaw#150635: at the 512-entry cap, a night's ingestion evicts the entry the agent
    recalled, so its recalls never add up. The default keeps recalled entries."""
    ref, dflt = replays["reference"], replays["default"]
    assert len(ref["entries"]) == RETENTION_CAP
    assert len(dflt["entries"]) <= RETENTION_CAP
    # the reference lost each recall to the next nights' ingestion: never more than one
    assert all(e["recall_count"] <= 1 for e in _fact_entries(ref))
    kept = _fact_entries(dflt)
    assert kept and max(e["recall_count"] for e in kept) == sum(
        1 for d in range(1, DAYS) if d % 5 == 0)


def test_store_is_not_made_of_dreamings_own_ingestion(replays: dict) -> None:
    """#75842: the reference's store ends up almost only dreaming's own ingestion (entries no
    search returned); the default bounds those to half the cap and never counts them as
    recalls."""
    def share(r: dict[str, Any]) -> float:
        es = [pr.RecallEntry.from_row(e) for e in r["entries"]]
        return sum(is_artifact(e) for e in es) / len(es)

    assert share(replays["reference"]) >= 0.85
    dflt = [pr.RecallEntry.from_row(e) for e in replays["default"]["entries"]]
    assert sum(is_artifact(e) for e in dflt) <= RETENTION_CAP // 2
    assert all(e.recall_count == 0 for e in dflt if is_artifact(e))


def test_sixty_days_promote_in_the_default_only(replays: dict) -> None:
    """#96118: "promoted 0 candidates" night after night. The reference's 60-day replay
    promotes nothing; the default's promotes the fact the agent kept needing."""
    assert replays["reference"]["passed"] == []
    plan = replays["default"]["plan"]
    assert plan.entries, [c.reasons for c in replays["default"]["passed"]]
    assert any(FACT in e.bullet for e in plan.entries)


def _rem_ws(tmp_path: Path, profile: str) -> MemoryIndex:
    ws = tmp_path / profile
    (ws / "memory").mkdir(parents=True)
    now = int(START.timestamp() * 1000)
    lines = {"A1": "Deploy window moved to Thursday evenings for the storefront.",
             "A2": "The storefront cache TTL is now 120 seconds after the outage.",
             "B1": "Backups of the ledger database run at 02:00 to the s3 bucket.",
             "B2": "Ledger backup retention is 35 days in the s3 bucket policy."}
    text = "# 2026-09-01\n\n" + "\n\n".join(lines.values()) + "\n"
    (ws / "memory" / "2026-09-01.md").write_text(text, encoding="utf-8")
    idx = MemoryIndex.open(ws, provider="none", profile=profile)
    idx.sync()
    for i, (name, snippet) in enumerate(lines.items()):
        line = 3 + 2 * i
        # B*: recalled often, a day ago; A*: once, just now (what Light stages first)
        times = [now] if name.startswith("A") else [now - DAY_MS - k * 3_600_000
                                                    for k in range(5)]
        for k, t in enumerate(times):
            pr.record_tool_results(idx, f"{name} question {k}", [
                {"path": "memory/2026-09-01.md", "startLine": line, "endLine": line,
                 "score": 0.9, "snippet": snippet, "source": "memory"}], now=t)
    return idx


def test_rem_reads_what_light_staged(tmp_path: Path) -> None:
    """#86249: REM ignores what Light staged. With Light limited to two entries, the
    reference's REM picks its truths from the whole store; the default's from Light's."""
    cfg = DreamingConfig(light_limit=2)
    at = int(START.timestamp() * 1000) + 60_000
    picked = {}
    for profile in ("reference", "default"):
        idx = _rem_ws(tmp_path, profile)
        light = pr.phases.run_light(idx, cfg, now=at, ingest=False)
        rem = pr.phases.run_rem(idx, cfg, now=at, ingest=False)
        assert len(light.keys) == 2 and rem.keys
        picked[profile] = (set(light.keys), set(rem.keys))
    ref_light, ref_rem = picked["reference"]
    assert not ref_rem <= ref_light
    dflt_light, dflt_rem = picked["default"]
    assert dflt_rem <= dflt_light


JUNK_DIARY = """# 2026-11-20

## Payments rollout
- The payments service moved to the eu-central cluster on Tuesday after the latency review.
- Stripe webhooks are retried five times with exponential backoff before alerting on-call.
- Refunds above 500 EUR need a second approver from the finance team from now on.
- Candidate: payments moved to eu-central
- $ kubectl rollout restart deploy/payments -n prod
- exit status 1: permission denied (publickey) while pushing the payments hotfix
"""
JUNK_QUERIES = ["payments eu-central cluster", "stripe webhook retries", "refund approver",
                "payments latency review"]


def _promote_junk(tmp_path: Path, profile: str) -> str:
    ws = tmp_path / profile
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-11-20.md").write_text(JUNK_DIARY, encoding="utf-8")
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    with MemoryIndex.open(ws, provider="none", profile=profile) as idx:
        idx.sync()
        for i, q in enumerate(JUNK_QUERIES):
            pr.record_search(idx, q, idx.search(q).hits, now=now - timedelta(days=3 - i))
        # keyword-only scores are low in the reference: the gates are not what is tested here
        cands = pr.list_candidates(idx, now=now, min_score=0.5, check_duplicates_of="none")
        res = pr.apply(idx, [c for c in cands if c.passed], now=now)
        assert res.applied, pr.preview_apply(idx, now=now).skipped
    return (ws / "MEMORY.md").read_text(encoding="utf-8")


def test_no_raw_candidates_commands_tool_output_or_scores_in_memory_md(tmp_path: Path) -> None:
    """#67580 / #89444: staged ``Candidate:`` lines, shell commands and score metadata end
    up in MEMORY.md. The reference writes them; the default writes only the facts."""
    junk = ("Candidate:", "kubectl rollout", "exit status 1", "[score=")
    ref = _promote_junk(tmp_path, "reference")
    assert all(j in ref for j in junk), ref
    assert re.search(r"^- .+ \[score=\d\.\d{3} recalls=\d+ avg=\d\.\d{3} "
                     r"source=memory/2026-11-20\.md:\d+-\d+\]$", ref, re.M)
    dflt = _promote_junk(tmp_path, "default")
    assert not any(j in dflt for j in junk), dflt
    assert "second approver from the finance team" in dflt


def test_junk_lines() -> None:
    from memory_core.promotion.policy import junk_line

    for line in ("- Candidate: x", "  - confidence: 0.62", "$ git push --force",
                 "`docker compose up -d`", "sudo systemctl restart nginx",
                 "git rebase -i HEAD~3", '{"ok": true, "rows": 3}', "stderr: boom",
                 "2026-11-20T10:00:01Z ERROR pool exhausted",
                 "- kept it [score=0.900 recalls=3 avg=0.900 source=memory/x.md:1-2]"):
        assert junk_line(line), line
    for line in ("- We use git for the wiki now.", "The cat sat on the mat.",
                 "- Sam prefers short answers.", "Make the crawler polite: 2 requests/s.",
                 "- Status of the migration: done on Friday.", "Status: done.",
                 "Note: the VPN is flaky on Mondays."):
        assert not junk_line(line), line


def test_default_bullet_keeps_the_lines_the_queries_were_after() -> None:
    from memory_core.promotion.policy import ITEM_SEPARATOR, memory_lines

    chunk = ["[D1:1] Ann: Hi Bob, how was the week?",
             "[D1:2] Bob: Busy. Ann, the boat is now moored at pier 9 in Kiel.",
             "[D1:3] Ann: Nice. I started pottery classes on Tuesdays.",
             "$ git push --force",
             "[D1:5] Ann: Bob, see you soon."]
    # "Ann" and "Bob" are on every line: they do not choose a line
    assert memory_lines(chunk, ["Where did Bob moor the boat?"])[0] == chunk[1]
    assert memory_lines(chunk, ["When are Ann's pottery classes?",
                                "Where is the boat moored?"])[0] == ITEM_SEPARATOR.join(chunk[1:3])
    # a range no line of which shares a word with its queries came back as padding: nothing
    assert memory_lines(chunk, ["nothing in common"]) == (
        "", "no line of it shares a word with the queries that recalled it")
    assert memory_lines(chunk)[0] == ITEM_SEPARATOR.join(chunk[:3] + chunk[4:])
    assert "$ git push" not in memory_lines(chunk)[0]
