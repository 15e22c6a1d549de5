"""Opening an OpenClaw home (issue #12): settings, sessions, real queries, replay, export.

Everything runs on the home :mod:`tests.openclaw_fixture` builds (JSON5 config with comments,
two agents, transcripts with tool calls, results, thinking blocks and archives); keyword-only
(``--provider none``) so that no model is loaded.
"""

from __future__ import annotations

import inspect
import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memory_core import promotion as pr
from memory_core.cli import main
from memory_core.openclaw import (
    apply_export,
    mine_queries,
    open_home,
    overlap_at_k,
    plan_export,
    transcripts_of_home,
)
from memory_core.openclaw.home import OpenClawHomeError
from memory_core.promotion.model import is_short_term_path
from memory_core.write.sources import is_agent_transcript_name, list_files

from .conftest import GOLDENS, ROOT
from .openclaw_fixture import MAIN_CALLS, build_home, main_call_times


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return build_home(tmp_path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_home_resolves_workspace_sessions_and_settings(home: Path) -> None:
    oc = open_home(home)  # default agent: main
    assert oc.agent == "main" and oc.agents == ["main", "ops"]
    assert oc.workspace == (home / "workspace").resolve()
    assert oc.sessions_dir == home / "agents" / "main" / "sessions"
    cfg = oc.load_config()
    s = cfg.settings()
    assert cfg.profile == "reference" and cfg.chunking.mode == "reference"
    assert (s.max_results, s.min_score, s.vector_weight, s.text_weight) == (3, 0.2, 0.6, 0.4)
    assert cfg.sources.sources == ["memory", "sessions"]
    assert [e.path for e in cfg.sources.extra_paths] == ["notes"]
    rows = {r.key: r for r in oc.settings(cfg)}
    assert rows["search.max_results"].source == "openclaw.json"
    assert rows["search.max_results"].where == "agents.defaults.memorySearch.query.maxResults"
    assert rows["search.candidate_multiplier"].source == "reference default"
    ops = open_home(home, "ops")
    assert ops.workspace == (home / "workspace-ops").resolve()
    assert ops.load_config().settings().max_results == 2
    assert {r.key: r for r in ops.settings()}["search.max_results"].where == (
        "agents.list[1].memorySearch.query.maxResults")


def test_settings_provenance_layers(home: Path) -> None:
    """Workspace TOML above openclaw.json, overrides (the sliders) above both."""
    oc = open_home(home)
    (oc.workspace / "memory-workbench.toml").write_text("[search]\nmin_score = 0.25\n")
    rows = {r.key: r for r in oc.settings(overrides={"search": {"max_results": 9}})}
    assert (rows["search.min_score"].value, rows["search.min_score"].source) == (
        0.25, "workspace TOML")
    assert (rows["search.max_results"].value, rows["search.max_results"].source) == (
        9, "override")
    assert rows["search.vector_weight"].source == "openclaw.json"


def test_sessions_need_the_experimental_flag(home: Path) -> None:
    cfg_path = home / "openclaw.json"
    cfg_path.write_text(cfg_path.read_text().replace("experimental: { sessionMemory: true },",
                                                     ""))
    oc = open_home(home)
    assert oc.load_config().sources.sources == ["memory"]
    assert any("sessionMemory" in n for n in oc.mapped.notes)


def test_sessions_listed_as_the_reference_lists_them(home: Path) -> None:
    oc = open_home(home)
    files = list_files(oc.workspace, oc.load_config()).files
    sessions = [f.path for f in files if f.source == "sessions"]
    assert sessions == ["sessions/main/s0.jsonl.reset.2026-11-20T10-00-00.000Z",
                        "sessions/main/s1.jsonl", "sessions/main/s2.jsonl"]
    assert {f.path for f in files if f.source == "memory"} == {
        "MEMORY.md", "memory/2026-11-20.md", "memory/2026-11-21.md", "memory/2026-11-22.md",
        "notes/runbook.md"}
    # the name rule itself (artifacts.ts)
    assert is_agent_transcript_name("a.jsonl.deleted.2026-01-02T03-04-05Z")
    assert not is_agent_transcript_name("a.jsonl.reset.yesterday")
    assert not is_agent_transcript_name("a.checkpoint.12345678-1234-4234-8234-123456789abc.jsonl")


def test_queries_returns_exactly_the_agents_calls_in_order(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "queries", "--openclaw-home", str(home), "--agent", "main",
                       "--json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["query"] for r in rows] == [q for q, _, _ in MAIN_CALLS]
    assert [r["args"] for r in rows] == [a for _, a, _ in MAIN_CALLS]
    for r, (_, _, results) in zip(rows, MAIN_CALLS, strict=True):
        got = [{k: x[k] for k in ("path", "startLine", "endLine", "score", "snippet", "source")}
               for x in r["results_then"]]
        assert got == results  # citations ("\n\nSource: …") taken off the snippets
        assert set(r) >= {"qid", "query", "at", "session", "line", "args", "results_then"}
    assert rows[0]["session"].startswith("sessions/main/s0.jsonl.reset.")
    assert [r["session"] for r in rows[1:]] == ["sessions/main/s1.jsonl"] * 2 + [
        "sessions/main/s2.jsonl"] * 2
    code, out, _ = run(capsys, "queries", "--openclaw-home", str(home), "--agent", "ops",
                       "--json")
    assert [json.loads(x)["query"] for x in out.splitlines()] == ["tls certificate"]


def test_search_uses_the_homes_workspace_and_settings(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "search", "cookie", "--openclaw-home", str(home), "--agent",
                       "main", "--json", "--provider", "none")
    assert code == 0
    res = json.loads(out)["results"]
    assert len(res) == 3  # maxResults 3 from openclaw.json (more than 3 chunks match)
    assert all(r["score"] >= 0.2 for r in res)
    assert all(r["path"].startswith(("sessions/main/", "memory/", "MEMORY.md", "notes/"))
               for r in res)
    code, out, _ = run(capsys, "search", "cookie", "--openclaw-home", str(home), "--agent",
                       "ops", "--json", "--provider", "none")
    assert code == 0 and len(json.loads(out)["results"]) <= 2
    # minScore is the configured one: raise it between the best and the third score in
    # openclaw.json, and the weaker hits go
    assert res[0]["score"] > res[-1]["score"]
    threshold = round((res[0]["score"] + res[-1]["score"]) / 2, 6)
    cfg = home / "openclaw.json"
    cfg.write_text(cfg.read_text().replace("minScore: 0.2", f"minScore: {threshold}"))
    code, out, _ = run(capsys, "search", "cookie", "--openclaw-home", str(home), "--json",
                       "--provider", "none")
    again = json.loads(out)["results"]
    assert code == 0 and 1 <= len(again) < 3 and all(r["score"] >= threshold for r in again)


def test_replay_from_sessions_counts_each_returned_chunk(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "replay", "--from-sessions", "--openclaw-home", str(home),
                       "--json", "--provider", "none", "--now", "2026-11-24T00:00:00Z")
    assert code == 0 and json.loads(out)["answered"] == 5
    returned = Counter(f"memory:{r['path']}:{r['startLine']}:{r['endLine']}"
                       for _, _, results in MAIN_CALLS for r in results
                       if r["source"] == "memory" and is_short_term_path(r["path"]))
    with pr.open_state(open_home(home).workspace) as st:
        entries = {e["key"]: e for e in st.recall_entries()}
    assert {k: e["recall_count"] for k, e in entries.items()} == dict(returned)
    # the recall store OpenClaw 2026.5.20's own recorder wrote for the same calls
    golden = json.loads((GOLDENS / "openclaw" / "recall-store-main.json").read_text())
    assert set(golden["entries"]) == set(entries)
    for key, g in golden["entries"].items():
        e = pr.RecallEntry.from_row(entries[key]).to_dict()
        for field in ("recallCount", "totalScore", "maxScore", "queryHashes", "recallDays",
                      "snippet", "startLine", "endLine", "firstRecalledAt", "lastRecalledAt"):
            want, got = g[field], e[field]
            if field.endswith("At"):
                want, got = (datetime.fromisoformat(x.replace("Z", "+00:00"))
                             for x in (want, got))
            assert got == pytest.approx(want) if isinstance(want, float) else got == want, field
    assert main_call_times()[0] < main_call_times()[-1]


def test_mined_calls_keep_result_times_and_citations(home: Path) -> None:
    oc = open_home(home)
    qs = mine_queries(transcripts_of_home(oc.sessions_dir, oc.agent))
    assert [q.tool_call_id for q in qs] == ["call_a", "call_b", "call_c", "call_d", "call_e"]
    b = qs[1]
    assert b.results_then and b.results_then[0]["citation"] == "memory/2026-11-20.md#L1-L9"
    assert not b.results_then[0]["snippet"].endswith("L1-L9")
    assert qs[2].results_then == [] and qs[2].zero_results
    assert qs[4].result_at and qs[4].result_at > qs[3].result_at  # call_e answered last


def test_bad_home_is_one_line(tmp_path: Path, home: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    (home / "openclaw.json").write_text("{ agents: { defaults: ")
    code, _, err = run(capsys, "search", "x", "--openclaw-home", str(home))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "JSON5" in err
    code, _, err = run(capsys, "queries", "--openclaw-home", str(tmp_path))
    assert code == 2 and "not an OpenClaw home" in err
    with pytest.raises(OpenClawHomeError, match="nobody"):
        open_home(build_home(tmp_path / "second"), "nobody")


def test_export_edits_in_place_keeps_comments_and_backs_up(home: Path) -> None:
    oc = open_home(home)
    path = home / "openclaw.json"
    before = path.read_text()
    s = oc.load_config().settings()
    s.max_results, s.mmr_enabled = 5, True
    plan = plan_export(path, s)
    assert plan.ok and len(plan.changes) == 2, plan.refused
    backup = apply_export(plan)
    assert backup is not None and backup.read_text() == before
    after = path.read_text()
    assert "// where the agents live" in after and "/* the operations agent */" in after
    assert "maxResults: 5," in after and "minScore: 0.2," in after
    changed = [line for line in after.splitlines() if line not in before.splitlines()]
    assert [c.strip() for c in changed] == [
        "maxResults: 5,",
        "hybrid: { mmr: { enabled: true }, vectorWeight: 0.6, textWeight: 0.4, },"]
    again = open_home(home).load_config().settings()
    assert (again.max_results, again.mmr_enabled) == (5, True)
    assert plan_export(path, again).changes == []  # nothing left to change


def test_each_openclaw_key_is_declared_once_on_its_setting(tmp_path: Path) -> None:
    """Issue #32: an OpenClaw setting's key is written once, on the setting
    (``setting(openclaw=...)``); reading ``openclaw.json``, writing it back and the workbench's
    export block all follow that declaration instead of spelling the key again."""
    from dataclasses import replace

    from memory_core.base.config import BatchConfig, SearchSettings, openclaw_keys
    from memory_core.openclaw.config import memory_search_settings
    from workbench.tuning import openclaw_query_block

    declared = {**openclaw_keys(SearchSettings), **openclaw_keys(BatchConfig)}
    assert len(declared) == 15 and declared["vector_weight"] == (
        "query", "hybrid", "vectorWeight")
    for cls in (SearchSettings, BatchConfig):
        defaults = cls()
        for name, keys in openclaw_keys(cls).items():
            old = getattr(defaults, name)  # another valid value of the setting's type
            value = not old if isinstance(old, bool) else old + 1 if isinstance(old, int) \
                else old / 2
            block: dict[str, Any] = {}
            node = block
            for k in keys[:-1]:
                node = node.setdefault(k, {})
            node[keys[-1]] = value
            m = memory_search_settings({"memory": {"search": block}}, "main")
            ours = "provider.batch" if cls is BatchConfig else f"search.{name}"
            assert m.provenance[ours] == "memory.search." + ".".join(keys), (name, m.notes)
            if cls is SearchSettings:  # written back at the same key, and shown there
                changed = replace(defaults, **{name: value})
                plan = plan_export(tmp_path / f"{name}.json", changed)
                where = "agents.defaults.memorySearch." + ".".join(keys)
                assert plan.changes[0].startswith(where + " = "), plan.changes
                shown: Any = openclaw_query_block(changed)
                for k in keys[1:]:
                    shown = shown[k]
                assert shown == value
    camel = {keys[-1] for keys in declared.values() if keys[-1] != keys[-1].lower()}
    texts = {name: (ROOT / name).read_text(encoding="utf-8") for name in (
        "memory_core/openclaw/config.py", "memory_core/openclaw/export.py")}  # import, export
    texts["openclaw_query_block"] = inspect.getsource(openclaw_query_block)
    for name, text in texts.items():
        assert not [k for k in camel if f'"{k}"' in text], name


def test_export_refuses_what_it_cannot_place(home: Path) -> None:
    path = home / "openclaw.json"
    path.write_text('{ agents: { defaults: { memorySearch: "off" } } }  // odd\n')
    s = open_home(home).load_config().settings()
    s.max_results = 4
    plan = plan_export(path, s)
    assert not plan.ok and plan.refused
    assert json.loads(plan.manual_patch) == {
        "agents": {"defaults": {"memorySearch": {"query": {"maxResults": 4}}}}}
    before = path.read_bytes()
    with pytest.raises(ValueError, match="not rewriting"):
        apply_export(plan)
    assert path.read_bytes() == before


def test_real_queries_then_and_now_label_free(home: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    then = [{"path": "memory/a.md", "startLine": 1, "endLine": 10},
            {"path": "memory/b.md", "startLine": 5, "endLine": 6}]
    now = [{"path": "memory/a.md", "startLine": 8, "endLine": 20},  # overlaps a.md 1-10
           {"path": "memory/b.md", "startLine": 7, "endLine": 9}]   # same file, no overlap
    assert overlap_at_k(then, now, 2) == 0.5
    assert overlap_at_k([], now, 2) is None
    code, out, _ = run(capsys, "queries", "--openclaw-home", str(home), "--rerun", "--json",
                       "--provider", "none")
    assert code == 0
    data = json.loads(out)
    m = data["metrics"]
    assert m["queries"] == 5 and m["k"] == 3 and m["zeroRateThen"] == pytest.approx(0.2)
    rows = data["queries"]
    assert [r["query"] for r in rows] == [q for q, _, _ in MAIN_CALLS]
    assert all(len(r["results_now"]) <= (r["args"].get("maxResults") or 3) for r in rows)
    assert m["zeroRateNow"] == pytest.approx(sum(r["zero_now"] for r in rows) / 5)
    overlaps = [r["overlap"] for r in rows if r["overlap"] is not None]
    assert m["overlapAtK"] == pytest.approx(sum(overlaps) / len(overlaps))
    # the call made with corpus=memory is run on memory files only
    assert all(r["source"] == "memory" for r in rows[2]["results_now"])


def test_2026_8_memory_search_block_and_agent_override(tmp_path: Path) -> None:
    """``memory.search`` (2026.8+) read like ``agents.defaults.memorySearch``; an agent's own
    ``memory.search`` wins key by key; extraPaths concatenated, objects with patterns kept."""
    home = tmp_path / "h"
    (home / "workspace").mkdir(parents=True)
    (home / "openclaw.json").write_text("""{
      // 2026.9 layout
      memory: { search: {
        provider: 'none', fallback: "none",
        extraPaths: ["notes", { path: "docs", pattern: "**/*.md" }],
        query: { maxResults: 4, minScore: 1.7, hybrid: { candidateMultiplier: 50 } },
      } },
      agents: { list: [ { id: "Main", memory: { search: {
        query: { maxResults: 9 }, extraPaths: ["notes"] } } } ] },
    }""")
    oc = open_home(home)
    assert oc.agent == "main"
    s = oc.load_config().settings()
    assert (s.max_results, s.min_score, s.candidate_multiplier) == (9, 1.0, 20)
    cfg = oc.load_config()
    assert cfg.provider.provider == "none"
    assert [(e.path, e.pattern) for e in cfg.sources.extra_paths] == [
        ("notes", "**/*.md"), ("docs", "**/*.md")]
    rows = {r.key: r for r in oc.settings(cfg)}
    assert rows["search.max_results"].where == "agents.list[0].memory.search.query.maxResults"
    assert rows["search.min_score"].where == "memory.search.query.minScore"


@pytest.mark.parametrize("text", ['{"agents": []}', '{"agents": {"list": 5}}', "[1, 2]"])
def test_export_of_an_oddly_shaped_file_refuses_instead_of_crashing(tmp_path: Path,
                                                                   text: str) -> None:
    from memory_core.base.config import SearchSettings
    from memory_core.openclaw.config import OpenClawConfigError
    from memory_core.openclaw.export import plan_export

    p = tmp_path / "openclaw.json"
    p.write_text(text)
    try:
        plan = plan_export(p, SearchSettings(min_score=0.2), agent_index=0)
    except OpenClawConfigError as e:
        assert "top level must be an object" in str(e)
        return
    assert text.startswith("{") and p.read_text() == text
    assert plan is not None
