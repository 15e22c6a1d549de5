"""The supersession detector: which memory line a later one replaced (issue #34, item 1)."""

from __future__ import annotations

import re
from pathlib import Path

from memory_core.base.supersession import Statement, detect, statements_of_chunks

from .conftest import ROOT


def _pairs(lines: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """``(day, text)`` lines, one diary each → ``{(old day, new day)}`` it finds."""
    sts = [Statement(f"memory/{day}.md", 3, day, text) for day, text in lines]
    return {(s.old_path[7:17], s.new_path[7:17]) for s in detect(sts)}


def test_explicit_changes_in_english() -> None:
    got = _pairs([
        ("2026-08-14", "- Redis `maxmemory` is 4gb on the frontier host."),
        ("2026-09-24", "- Raised Redis `maxmemory` from 4gb to 6gb: the frontier peaks at 4.7 GB."),
        ("2026-11-18", "- Redis `maxmemory` is now 8gb."),
    ])
    assert got == {("2026-08-14", "2026-09-24"), ("2026-09-24", "2026-11-18")}


def test_a_chain_whose_subject_changes_words() -> None:
    got = _pairs([
        ("2026-08-05", "- Proxy vendor for the account-free retailers: Lumen, residential pool."),
        ("2026-09-10", "- Switched the account-free crawl from Lumen to Netloom after the bans."),
        ("2026-10-21", "- Sable is now our only proxy vendor: the rest moved over."),
    ])
    assert got == {("2026-08-05", "2026-09-10"), ("2026-09-10", "2026-10-21")}


def test_restated_attribute_with_a_new_value() -> None:
    got = _pairs([
        ("2026-03-02", "- Redis maxmemory is 2gb"),
        ("2026-05-11", "- Redis maxmemory set to 4gb"),
    ])
    assert got == {("2026-03-02", "2026-05-11")}


def test_chinese_changes() -> None:
    got = _pairs([
        ("2026-10-20", "- 值班人是 Priya，到 11 月 5 日。"),
        ("2026-11-06", "- 从今天起值班人换成 Marco（到 11 月 23 日），Priya 的值班周期结束。"),
        ("2026-11-24", "- Marco 的值班周期昨天结束。从今天起值班人是 Wen，到 12 月 7 日。"),
        ("2026-10-21", "- Nightly report runs at 02:00 server time, cron `0 2 * * *`."),
        ("2026-11-17", "- 夜间报表的表达式从 `0 2 * * *` 改成 `30 3 * * *`。"),
    ])
    assert {("2026-11-06", "2026-11-24"), ("2026-10-21", "2026-11-17")} <= got
    assert ("2026-11-24", "2026-11-06") not in got


def test_events_and_explanations_are_not_facts() -> None:
    """Recurring events and accounts of work change "values" without replacing anything."""
    got = _pairs([
        ("2026-09-18", "- Sam is out on Monday; handover notes are in the team channel."),
        ("2026-10-16", "- Sam is out on Thursday; handover notes are in the team channel."),
        ("2026-09-25", "- Ran the dependency audit: 7 advisories, none reachable."),
        ("2026-10-05", "- Ran the dependency audit: 3 advisories, none reachable."),
        ("2026-10-01", "- Reason: the replica lagged."),
        ("2026-10-09", "- Reason: the disk filled up."),
        ("2026-10-02", "- `crawler/fetch.py`: removed a retry loop that retried on 404."),
        ("2026-11-02", "- Reviewed the PR for `crawler/fetch.py`: fine, one more test."),
        ("2026-09-23", "- 错误率 1.2%，大部分是图片很多的页面超时。"),
        ("2026-10-01", "- 错误率 1.8%，大部分是图片很多的页面超时。"),
    ])
    assert got == set()


def test_the_same_value_again_supersedes_nothing() -> None:
    got = _pairs([
        ("2026-01-02", "- Redis maxmemory is 4gb"),
        ("2026-02-02", "- Redis maxmemory is now 4gb"),
    ])
    assert got == set()


def test_an_undated_file_replaces_a_diary_only_explicitly() -> None:
    sts = [Statement("memory/2026-05-01.md", 4, "2026-05-01", "- Redis maxmemory is 2gb"),
           Statement("notes/redis.md", 2, "2026-06-01", "- Redis maxmemory is 3gb", False)]
    assert detect(sts) == []
    sts.append(Statement("notes/ops.md", 7, "2026-06-02",
                         "- Raised Redis maxmemory from 2gb to 6gb", False))
    assert [(s.old_path, s.new_path) for s in detect(sts)] == [
        ("memory/2026-05-01.md", "notes/ops.md"), ("notes/redis.md", "notes/ops.md")]


def test_demo_home_changing_facts_found_and_nothing_else() -> None:
    """The demo home's diaries: each of its changing facts' old statements; besides them only
    the everyday dependency bumps ("Bumped httpx to 2.0.1" … "把 httpx 升到 3.1.4"), which the
    text does change, and no other line."""
    ws = ROOT / "examples" / "demo-home" / "workspace"
    rows = [(p.relative_to(ws).as_posix(), "memory", 1, p.read_text(encoding="utf-8"), 0)
            for p in sorted((ws / "memory").glob("*.md"))]
    sts = statements_of_chunks(rows)
    text = {(s.path, s.line): s.text for s in sts}
    found = {(s.old_path, s.old_line): s.new_citation for s in detect(sts)}
    facts = {
        ("memory/2026-08-05.md", 34): "memory/2026-09-10.md#L34",
        ("memory/2026-09-10.md", 34): "memory/2026-10-21.md#L43",
        ("memory/2026-08-10.md", 39): "memory/2026-09-14.md#L40",
        ("memory/2026-09-14.md", 40): "memory/2026-11-05.md#L40",
        ("memory/2026-08-14.md", 41): "memory/2026-09-24.md#L39",
        ("memory/2026-09-24.md", 39): "memory/2026-11-18.md#L33",
        ("memory/2026-10-20.md", 10): "memory/2026-10-23.md#L11",
        ("memory/2026-10-23.md", 11): "memory/2026-11-20.md#L4",
        ("memory/2026-10-20.md", 11): "memory/2026-11-14.md#L7",
        ("memory/2026-11-10.md", 4): "memory/2026-11-14.md#L7",
        ("memory/2026-10-20.md", 13): "memory/2026-11-17.md#L4",
        # "On-call this rotation: Priya" and "从今天起值班人换成 Marco": one attribute
        ("memory/2026-10-20.md", 16): "memory/2026-11-06.md#L4",
        ("memory/2026-11-06.md", 4): "memory/2026-11-24.md#L4",
    }
    assert {k: found.get(k) for k in facts} == facts
    bump = re.compile(r"^- (?:(?:Bumped|Upgraded) \S+ (?:\S+ )?(?:to |\S+ → )|把 \S+ 升到 )")
    for key in set(found) - set(facts):
        path, line = found[key].split("#L")
        assert bump.match(text[key]) and bump.match(text[(path, int(line))]), text[key]


def _diaries(root: Path, days: dict[str, str]) -> None:
    mem = root / "memory"
    mem.mkdir(exist_ok=True)
    for day, text in days.items():
        (mem / f"{day}.md").write_text(f"# {day}\n\n{text}\n", encoding="utf-8")


def test_sync_stores_the_relation_and_status_counts_it(tmp_path: Path) -> None:
    from memory_core import MemoryIndex

    _diaries(tmp_path, {"2026-03-02": "- Redis maxmemory is 2gb on the frontier host.",
                        "2026-05-11": "- Redis maxmemory set to 4gb after the Sunday peak."})
    (tmp_path / "MEMORY.md").write_text("# Memory\n\n- Redis maxmemory is 2gb.\n")
    import os
    os.utime(tmp_path / "MEMORY.md", (1772409600, 1772409600))  # 2026-03-02
    with MemoryIndex.open(tmp_path, provider="none") as idx:
        idx.sync()
        st = idx.status()
        assert st.superseded == 2
        assert st.stale_memory == {3: "memory/2026-05-11.md#L3"}
        assert st.to_json()["staleMemory"] == [{"line": 3,
                                                "supersededBy": "memory/2026-05-11.md#L3"}]
        # an edit that gives the current value again: nothing superseded any more in it
        (tmp_path / "memory" / "2026-05-11.md").write_text("# x\n\n- Redis maxmemory is 2gb.\n")
        idx.sync()
        assert idx.status().superseded == 0


def test_an_english_question_finds_a_chinese_attribute() -> None:
    """"on call" and "值班" name one attribute (a bilingual synonym table), in the detector and
    in :func:`asks_about`; an English line and a Chinese change of it are linked."""
    from memory_core.base.supersession import asks_about

    sts = [Statement("memory/2026-10-20.md", 15, "2026-10-20",
                     "- On-call this rotation: Priya (through Nov 5)."),
           Statement("memory/2026-11-06.md", 4, "2026-11-06",
                     "- 从今天起值班人换成 Marco（到 11 月 23 日），Priya 的值班周期结束。"),
           Statement("memory/2026-11-24.md", 4, "2026-11-24",
                     "- Marco 的值班周期昨天结束。从今天起值班人是 Wen，到 12 月 7 日。")]
    rows = detect(sts)
    assert [(r.old_path, r.new_path) for r in rows] == [
        ("memory/2026-10-20.md", "memory/2026-11-06.md"),
        ("memory/2026-11-06.md", "memory/2026-11-24.md")]
    subjects = [frozenset(rows[1].subject.split())]  # the current line's attribute
    assert asks_about("Who is on call right now?", subjects)
    assert asks_about("Who is on-call at the moment?", subjects)
    assert asks_about("现在谁值班？", subjects)
    assert not asks_about("Who took the customer call on Monday?", subjects)


def test_the_attribute_inside_the_value() -> None:
    """"We're on Woodpecker CI now": the value is the name, the attribute the word after it."""
    got = _pairs([
        ("2026-01-08", "- CI runs on GitHub Actions; the monorepo workflow takes 14 minutes."),
        ("2026-03-11", "- Moved CI from GitHub Actions to Buildkite: the build takes 6 minutes."),
        ("2026-05-19", "- We're on Woodpecker CI now. Buildkite's per-seat pricing tripled."),
    ])
    assert got == {("2026-01-08", "2026-03-11"), ("2026-03-11", "2026-05-19")}


def test_the_attribute_inside_the_value_without_now_replaces_nothing() -> None:
    got = _pairs([
        ("2026-03-11", "- Moved CI from GitHub Actions to Buildkite."),
        ("2026-05-19", "- We're on Woodpecker CI for the docs site."),
        ("2026-05-20", "- We use Grafana dashboards for the shop."),
    ])
    assert got == set()


def test_a_plain_shi_with_a_chinese_value_is_replaced_only_by_a_change() -> None:
    """"短信验证码用的是阿里云短信服务": a plain 是 and a Chinese value is a fact that a later
    explicit change supersedes, but it never replaces anything itself (是 is everywhere)."""
    got = _pairs([
        ("2026-02-24", "- 短信验证码用的是阿里云短信服务。"),
        ("2026-05-06", "- 短信服务从阿里云切换到腾讯云，价格低一些，到达率差不多。"),
    ])
    assert got == {("2026-02-24", "2026-05-06")}
    assert _pairs([
        ("2026-02-24", "- 短信验证码用的是阿里云短信服务。"),
        ("2026-03-01", "- 短信验证码用的是腾讯云短信服务。"),
        ("2026-03-02", "- 我们用的是 WireGuard。"),
        ("2026-03-03", "- 我们用的是 Tailscale。"),
    ]) == set()


def test_a_short_name_asks_about_its_long_one() -> None:
    """"Postgres" is PostgreSQL: a question about the Postgres version asks about the attribute
    that "PostgreSQL 15.4" … "PostgreSQL 16.4" states."""
    from memory_core.base.supersession import asks_about

    rows = detect([Statement("memory/2026-10-20.md", 11, "2026-10-20",
                             "- Database: PostgreSQL 15.4 on `db-01`, port 5432."),
                   Statement("memory/2026-11-14.md", 7, "2026-11-14",
                             "- Upgraded PostgreSQL 15.4 → 16.4 on `db-01` tonight.")])
    assert len(rows) == 1
    subjects = [frozenset(rows[0].subject.split())]
    assert asks_about("Which Postgres version is the database running currently?", subjects)
    assert not asks_about("Which Redis version is the cache running currently?", subjects)
