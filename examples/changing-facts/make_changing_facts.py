"""Write the changing-facts dev set: a workspace of diaries over six months whose facts change
two to four times, and its labelled questions (issue #34).

    python examples/changing-facts/make_changing_facts.py

writes ``examples/changing-facts/workspace/`` (diaries ``memory/2026-MM-DD.md``, a ``MEMORY.md``
written before the changes), ``queries.jsonl`` (``qid``, ``query``, ``category`` now | past |
stable, ``relevant`` path/line, the format of ``examples/demo-home-queries.jsonl``) and
``statements.jsonl`` (every labelled statement of a changing fact: path, line, fact, value,
``current`` true for the newest). The same bytes every time. The team, the facts and their
wording were written for this set (a small web shop's engineering diary), as a person would
note them, not in the detector's patterns; a few lines that look alike but are about other
things (a staging rate limit beside the partners' one) are there on purpose.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
WS = HERE / "workspace"

#: Each changing fact: (id, [(day, line), ...]) in time order; the last is current.
CHANGING: list[tuple[str, list[tuple[str, str]]]] = [
    ("ci", [
        ("2026-01-08", "- CI runs on GitHub Actions; the monorepo workflow takes about 14 "
                       "minutes."),
        ("2026-03-11", "- Moved CI from GitHub Actions to Buildkite: the self-hosted agents cut "
                       "the build to 6 minutes."),
        ("2026-05-19", "- We're on Woodpecker CI now. Buildkite's new per-seat pricing was "
                       "three times what we paid."),
    ]),
    ("pg_conn", [
        ("2026-01-21", "- Staging Postgres `max_connections` is 100."),
        ("2026-04-07", "- Bumped `max_connections` on staging to 200; the load tests were "
                       "hitting the limit."),
    ]),
    ("standup", [
        ("2026-01-12", "- Daily standup is at 9:30 in the small meeting room."),
        ("2026-02-16", "- Standup moved to 10:00 so that Rui in Lisbon can join without "
                       "getting up at dawn."),
        ("2026-05-04", "- Standup is now at 09:45: ten minutes less of waiting for the coffee "
                       "machine."),
    ]),
    ("node", [
        ("2026-01-15", "- Frontend builds use Node 18.19 (pinned in `.nvmrc`)."),
        ("2026-03-02", "- Upgraded Node 18.19 → 20.11 in the frontend Dockerfile; no test "
                       "changes needed."),
        ("2026-06-08", "- The frontend image runs Node 22.2 since today, after the Vite 6 "
                       "upgrade."),
    ]),
    ("backups", [
        ("2026-01-27", "- Database backups are kept for 14 days in the cold bucket."),
        ("2026-04-21", "- Backup retention raised from 14 to 30 days: legal wants a month for "
                       "disputes."),
    ]),
    ("slo", [
        ("2026-02-03", "- Our public API SLO is 99.5% monthly availability."),
        ("2026-05-12", "- API SLO tightened to 99.9% as part of the Harbor Foods enterprise "
                       "contract."),
    ]),
    ("mobile_lead", [
        ("2026-01-19", "- Jonas leads the mobile team (iOS and Android)."),
        ("2026-03-23", "- Aiko is now the mobile team lead; Jonas moved over to the platform "
                       "team."),
    ]),
    ("meeting_zh", [
        ("2026-01-13", "- 每周例会定在周二下午三点，大概四十分钟。"),
        ("2026-04-14", "- 例会改到周四上午十点，周二下午总和客户电话冲突。"),
    ]),
    ("test_domain_zh", [
        ("2026-02-10", "- 测试环境的域名是 `test.shopline.dev`。"),
        ("2026-05-26", "- 测试环境换成 `staging.shopline.dev` 了，旧域名月底停用。"),
    ]),
    ("log_zh", [
        ("2026-01-29", "- 应用日志保留 7 天，超过就自动删除。"),
        ("2026-03-17", "- 日志保留时间从 7 天改为 15 天，排查上个月的退款问题时日志不够用。"),
        ("2026-06-02", "- 现在日志保留 30 天，存储成本每月多 40 欧元，可以接受。"),
    ]),
    ("sms_zh", [
        ("2026-02-24", "- 短信验证码用的是阿里云短信服务。"),
        ("2026-05-06", "- 短信服务从阿里云切换到腾讯云，价格低一些，到达率差不多。"),
    ]),
]

#: Facts stated once and never changed: (id, day, line).
STABLE: list[tuple[str, str, str]] = [
    ("vpn", "2026-01-09", "- The office VPN is WireGuard, endpoint `vpn.shopline.dev:51820`."),
    ("invoices", "2026-02-02", "- Customer invoices go out on the 1st of each month from Xero."),
    ("figma", "2026-02-19", "- Design reviews happen in Figma, in the file \"Checkout v3\"."),
    ("partner_limit", "2026-03-05", "- The partner API rate limit is 600 requests per minute "
                                    "per key."),
    ("staging_limit", "2026-04-28", "- Staging API rate limit is 100 requests per minute, to "
                                    "keep the load tests honest."),
    ("pager", "2026-03-30", "- Pages go through Opsgenie; the escalation after 15 minutes is "
                            "the team lead."),
    ("review_zh", "2026-02-12", "- 代码评审至少需要两个人批准才能合并。"),
    ("dc_zh", "2026-04-02", "- 生产数据库在法兰克福机房，备库在阿姆斯特丹。"),
]

#: Questions: (qid, query, category, fact id, which statement: an index into the fact's
#: statements for changing facts (-1: current), None for stable facts).
QUESTIONS: list[tuple[str, str, str, str, int | None]] = [
    ("cf-now-01", "Which CI system do we use now?", "now", "ci", -1),
    ("cf-now-02", "What is max_connections on staging currently?", "now", "pg_conn", -1),
    ("cf-now-03", "What time is standup these days?", "now", "standup", -1),
    ("cf-now-04", "Which Node version does the frontend build use?", "now", "node", -1),
    ("cf-now-05", "How long do we keep database backups?", "now", "backups", -1),
    ("cf-now-06", "What is our API SLO?", "now", "slo", -1),
    ("cf-now-07", "Who leads the mobile team now?", "now", "mobile_lead", -1),
    ("cf-now-08", "现在每周例会是什么时候？", "now", "meeting_zh", -1),
    ("cf-now-09", "测试环境现在的域名是什么？", "now", "test_domain_zh", -1),
    ("cf-now-10", "日志现在保留多少天？", "now", "log_zh", -1),
    ("cf-now-11", "短信服务目前用的是哪家？", "now", "sms_zh", -1),
    ("cf-past-01", "Which CI did we use before Buildkite?", "past", "ci", 0),
    ("cf-past-02", "What was max_connections on staging before we bumped it?", "past",
     "pg_conn", 0),
    ("cf-past-03", "When was standup back in January?", "past", "standup", 0),
    ("cf-past-04", "Which Node version did the frontend use in February?", "past", "node", 0),
    ("cf-past-05", "How long were backups kept before legal asked for more?", "past",
     "backups", 0),
    ("cf-past-06", "What was the API SLO before the enterprise contract?", "past", "slo", 0),
    ("cf-past-07", "Who led the mobile team previously?", "past", "mobile_lead", 0),
    ("cf-past-08", "例会以前是什么时候开？", "past", "meeting_zh", 0),
    ("cf-past-09", "测试环境原来的域名是什么？", "past", "test_domain_zh", 0),
    ("cf-past-10", "日志之前保留几天？", "past", "log_zh", 0),
    ("cf-past-11", "短信服务原来用的是哪家？", "past", "sms_zh", 0),
    ("cf-stable-01", "What VPN does the office use?", "stable", "vpn", None),
    ("cf-stable-02", "When do customer invoices go out?", "stable", "invoices", None),
    ("cf-stable-03", "Where do design reviews happen?", "stable", "figma", None),
    ("cf-stable-04", "What is the partner API rate limit?", "stable", "partner_limit", None),
    ("cf-stable-05", "What is the rate limit on the staging API?", "stable", "staging_limit",
     None),
    ("cf-stable-06", "Which tool do pages go through?", "stable", "pager", None),
    ("cf-stable-07", "代码评审需要几个人批准？", "stable", "review_zh", None),
    ("cf-stable-08", "生产数据库在哪个机房？", "stable", "dc_zh", None),
]

#: The everyday lines around the facts (a diary is mostly these), chosen by the day's number.
FILLER = [
    "- Fixed the flaky checkout test: it depended on the order of two promises.",
    "- Paired with Rui on the cart refactor; the discount code path is next.",
    "- Customer support flagged two orders stuck in `pending_payment`; retried by hand.",
    "- Reviewed Aiko's PR for the push notification settings screen.",
    "- 午饭后和产品一起过了一遍下个迭代的需求，优先做退款流程。",
    "- Deployed the search ranking tweak behind a feature flag (10% of traffic).",
    "- 修了购物车页面在小屏幕上按钮被遮住的问题。",
    "- Wrote the postmortem draft for Tuesday's 12-minute checkout outage.",
    "- Dependency updates: three minor bumps, all green.",
    "- 给新同事开通了代码仓库和监控面板的权限。",
    "- Cleaned up old feature flags: removed seven that were fully rolled out.",
    "- The image resizer ran out of memory on a 40 MB upload; capped uploads at 20 MB.",
]

MEMORY = """# MEMORY.md

## Team and tools
- Jonas leads the mobile team (iOS and Android).
- CI runs on GitHub Actions.
- Database backups are kept for 14 days.
- 代码评审至少需要两个人批准。
"""


def _days() -> list[str]:
    days = {d for _, sts in CHANGING for d, _ in sts} | {d for _, d, _ in STABLE}
    # plus an ordinary diary every few days, so the facts sit among everyday notes
    for month in range(1, 7):
        for day in (5, 18, 25):
            days.add(f"2026-{month:02d}-{day:02d}")
    return sorted(days)


def build() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Write the workspace; return the queries and the labelled statements."""
    where: dict[tuple[str, int | None], tuple[str, int]] = {}
    by_day: dict[str, list[tuple[str, int | None, str]]] = {}
    for fid, sts in CHANGING:
        for i, (day, line) in enumerate(sts):
            by_day.setdefault(day, []).append((fid, i, line))
    for fid, day, line in STABLE:
        by_day.setdefault(day, []).append((fid, None, line))
    (WS / "memory").mkdir(parents=True, exist_ok=True)
    for n, day in enumerate(_days()):
        rows = [f"# {day}", "", "## Notes"]
        rows += [FILLER[(n * 5 + k) % len(FILLER)] for k in range(2)]
        for fid, i, line in by_day.get(day, []):
            rows.append(line)
            where[(fid, i)] = (f"memory/{day}.md", len(rows))
        rows += [FILLER[(n * 7 + 3) % len(FILLER)], ""]
        (WS / "memory" / f"{day}.md").write_text("\n".join(rows), encoding="utf-8")
    mem = WS / "MEMORY.md"
    mem.write_text(MEMORY, encoding="utf-8")
    stamp = 1767225600  # 2026-01-01: long-term memory written before any change
    os.utime(mem, (stamp, stamp))
    statements = []
    for fid, sts in CHANGING:
        for i, (_, line) in enumerate(sts):
            path, ln = where[(fid, i)]
            statements.append({"fact": fid, "path": path, "line": ln,
                               "current": i == len(sts) - 1, "text": line[2:]})
    queries = []
    n_of = {fid: len(sts) for fid, sts in CHANGING}
    for qid, query, cat, fid, i in QUESTIONS:
        key = (fid, None) if i is None else (fid, i % n_of[fid])
        path, ln = where[key]
        queries.append({"qid": qid, "query": query, "category": cat,
                        "relevant": [{"path": path, "line": ln}]})
    return queries, statements


def main() -> None:
    queries, statements = build()
    for name, rows in (("queries.jsonl", queries), ("statements.jsonl", statements)):
        with (HERE / name).open("w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
