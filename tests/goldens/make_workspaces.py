#!/usr/bin/env python3
"""Regenerate the search-golden workspaces (stdlib only, exact bytes). fixture-ws/ is a verbatim copy of
shared/tools/openclaw-reference/fixtures/ws and is NOT produced by this script."""
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workspaces")


def write(ws, rel, text):
    p = os.path.join(HERE, ws, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w", encoding="utf-8", newline="") as f:
        f.write(text)


# ------------------------------------------------------------------ workspace "ops": mostly English
write("ops", "MEMORY.md", """# Memory

## Preferences
- Prefer short answers. Use metric units.
- The user's home router is a MikroTik hEX; the IoT devices live on VLAN-20, guests on VLAN-30.
- Editor: Neovim. Shell: fish. Never suggest Emacs.

## Projects
- billing-api: Go service, Postgres 16, deployed with Argo CD to namespace `billing`.
- crawler: Python 3.12, logs in to the partner portal with a session cookie; error COOKIE_EXPIRED means refresh the cookie.
- homelab: Proxmox cluster of three nodes (pve1, pve2, pve3), backups to the NAS every night at 01:30.

## Decisions
- 2026-05-02: Postgres backups use pgBackRest, retention 14 days.
- 2026-06-11: Switched alerting from email to the #ops channel.
""")

write("ops", "memory/2026-06-01.md", """# 2026-06-01

## Router
- Moved the printer to VLAN-20 because the guest network (VLAN-30) could not reach it.
- Router firewall rule 12 drops traffic from VLAN-20 to the LAN, except DNS and NTP.
- Note: the router admin page is only reachable from VLAN-10.

## Billing
- billing-api p99 latency spiked to 900 ms; cause was a missing index on invoices(customer_id).
""")

write("ops", "memory/2026-06-15.md", """# 2026-06-15

- Cookie cookie cookie: the crawler hit COOKIE_EXPIRED three times today. The cookie refresh job ran late.
- Increased the cookie refresh frequency from every 6 hours to every 2 hours.
- Added a metric crawler_cookie_age_seconds and an alert when it exceeds 5400.
""")

write("ops", "memory/2026-07-03.md", """# 2026-07-03 backup incident

## Timeline
- 01:30 nightly backup started on pve2.
- 01:52 NAS volume reached 98% and the backup failed with ENOSPC.
- 08:10 noticed the failed backup in the morning report.

## Fix
- Pruned old snapshots; NAS usage back to 61%.
- Changed retention from 30 to 14 daily snapshots.
- Open question: should we buy a second NAS or move cold backups to object storage?
""")

# a long file: several chunks at tokens=400 (about 1600 weighted chars per chunk)
long_lines = ["# Runbook: billing-api on-call", ""]
steps = [
    "Check the Argo CD application status for billing-api and note the current revision.",
    "Open the Grafana dashboard 'billing-api overview' and look at p99 latency and error rate.",
    "If error rate is above 2 percent, look at the Postgres connection pool saturation panel.",
    "If the pool is saturated, scale the deployment to 6 replicas and page the database owner.",
    "If latency is high but errors are low, check slow queries with pg_stat_statements.",
    "Never restart Postgres during business hours without approval from the incident commander.",
    "Record every action with a timestamp in the incident channel so the postmortem is easy.",
    "When the incident is over, write the postmortem within two business days.",
]
for section in range(1, 6):
    long_lines.append(f"## Phase {section}")
    for k, s in enumerate(steps):
        long_lines.append(f"- {section}.{k + 1} {s}")
    long_lines.append("")
write("ops", "memory/runbook-billing.md", "\n".join(long_lines))

write("ops", "memory/people.md", """# People

- Alice: owns billing-api. Prefers Slack over email.
- Bob: on call for the crawler in July. Knows the partner portal contacts.
- Carol: network admin; ask her before changing router VLAN settings.
""")

write("ops", "memory/notes/reading-list.md", """# Reading list

- Designing Data-Intensive Applications (re-read chapter on replication).
- The SRE book, chapter on alerting on SLOs.
- BM25 and probabilistic relevance framework; useful for memory search tuning.
""")

# ------------------------------------------------------------------ workspace "zh": mostly Chinese (+ja/ko)
write("zh", "MEMORY.md", """# 长期记忆

## 偏好
- 用户喜欢用中文交流，代码注释用英文。
- 回答要简短，先给结论再给原因。

## 项目
- 数据仓库：每天凌晨三点跑 ETL，负责人是张伟。
- 爬虫服务：Cookie 过期时返回 COOKIE_EXPIRED，需要从 Vault 重新读取。
- 监控：所有告警发到值班群，不再发邮件。
""")

write("zh", "memory/2026-06-20.md", """# 2026-06-20 数据仓库故障

- 凌晨三点的 ETL 任务失败，原因是上游表结构变更，新增了一个字段。
- 张伟修改了 ETL 脚本，重新跑了一次，早上八点数据恢复。
- 教训：上游表结构变更必须提前通知数据仓库负责人。
""")

write("zh", "memory/2026-07-01.md", """# 2026-07-01 爬虫

- 爬虫又遇到 COOKIE_EXPIRED，Cookie 过期，Cookie 注入模块没有刷新。
- 修复：收到 401 后自动刷新 Cookie，最多重试三次。
- 抓取任务改到凌晨三点半执行，避开对方维护窗口。
""")

write("zh", "memory/2026-07-05.md", """# 2026-07-05 会议记录

- 讨论了记忆搜索的中文分词问题：unicode61 分词器把整段中文当成一个词。
- 方案一：使用 trigram 分词器；方案二：在查询时做二元切分。
- 决定先试 trigram，下周评估召回率。
- 日本語：クッキーの有効期限が切れた場合は再ログインする。
- 한국어: 쿠키가 만료되면 다시 로그인합니다.
""")

zh_long = ["# 值班手册", ""]
zh_steps = [
    "先查看监控面板，确认告警是否仍在触发",
    "如果是数据仓库告警，先联系张伟确认 ETL 状态",
    "如果是爬虫告警，检查 Cookie 是否过期以及 Vault 中的密钥版本",
    "所有操作都要在值班群里记录时间和结果",
    "故障结束后两个工作日内完成复盘文档",
]
for sec in range(1, 5):
    zh_long.append(f"## 第{sec}部分")
    for k, s in enumerate(zh_steps):
        zh_long.append(f"- {sec}.{k + 1} {s}。")
    zh_long.append("")
write("zh", "memory/oncall.md", "\n".join(zh_long))

if __name__ == "__main__":
    for root, _, files in os.walk(HERE):
        for f in sorted(files):
            p = os.path.join(root, f)
            print(os.path.relpath(p, HERE), os.path.getsize(p))
