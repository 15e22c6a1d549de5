#!/usr/bin/env python3
"""Regenerate the mixed identifier + Chinese search-golden workspaces (stdlib only, exact bytes).

Three small workspaces written for issue #13.16: identifiers such as PG_POOL_MAX or COOKIE_EXPIRED
next to Chinese sentences, sometimes separated by a space or punctuation, sometimes glued to the
Chinese text, so that the reference's FTS-only conversational fallback (keyword extraction,
per-keyword search, merge) is exercised. All text is our own.
"""
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workspaces")


def write(ws: str, rel: str, text: str) -> None:
    p = os.path.join(HERE, ws, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w", encoding="utf-8", newline="") as f:
        f.write(text)


# ------------------------------------------------------------------ "mixdb": database operations
write("mixdb", "MEMORY.md", """# 长期记忆

## 数据库
- 订单库用 Postgres 16，连接池是 pgbouncer，PG_POOL_MAX 默认 20。
- 生产环境 PG_POOL_MAX 调整 需要 DBA 审批，改完要观察 max_connections 的余量。
- STATEMENT_TIMEOUT 设为 30s；报表查询单独走只读副本。

## 约定
- 所有配置项都写在 `deploy/env/prod.env`，不要直接改容器里的环境变量。
- 回滚 用 `helm rollback orders`，回滚前先在值班群里说一声。
""")

write("mixdb", "memory/2026-08-03.md", """# 2026-08-03 连接池告警

- 上午十点 pgbouncer 报 no more connections allowed，连接池 满了。
- 临时把 PG_POOL_MAX调到40，告警消失；max_connections 还剩 60 个。
- 原因：新上线的报表任务没有复用连接，每个请求都新建连接。
- TODO: 给报表任务加 PG_POOL_MAX 单独的上限。
""")

write("mixdb", "memory/2026-08-10.md", """# 2026-08-10 复盘

- PG_POOL_MAX 最终定为 32，而不是 40：压测显示超过 32 之后延迟反而上升。
- STATEMENT_TIMEOUT 从 60s 改为 30s，慢查询 直接失败，避免拖垮 连接池。
- 张伟 负责 跟进 pg_stat_statements 里最慢的十条查询。
""")

write("mixdb", "memory/env-notes.md", """# 环境变量说明

| 变量 | 含义 | 默认值 |
|---|---|---|
| PG_POOL_MAX | 每个实例的最大连接数 | 20 |
| PG_POOL_MIN | 最小空闲连接 | 2 |
| STATEMENT_TIMEOUT | 单条语句超时 | 30s |
| DB_PASSWORD | 从 Vault 读取，不写进仓库 | - |

修改 PG_POOL_MAX 之前，先算一下：实例数 × PG_POOL_MAX 必须小于 max_connections。
""")

db_long = ["# 数据库值班手册", ""]
db_steps = [
    "先看监控面板上的连接数曲线，确认是不是 连接池 打满",
    "如果 pgbouncer 报错，检查 PG_POOL_MAX 和实例数的乘积",
    "慢查询 多的时候，先看 pg_stat_statements，再决定要不要调 STATEMENT_TIMEOUT",
    "需要 回滚 时，用 helm rollback，并在值班群里记录版本号",
    "处理完以后，把时间线写进当天的日记文件",
]
for sec in range(1, 6):
    db_long.append(f"## 第{sec}步")
    for k, s in enumerate(db_steps):
        db_long.append(f"- {sec}.{k + 1} {s}。")
    db_long.append("")
write("mixdb", "memory/runbook-db.md", "\n".join(db_long))

# ------------------------------------------------------------------ "mixweb": a web crawler service
write("mixweb", "MEMORY.md", """# Memory

## 爬虫服务
- 登录态保存在 Cookie 里；对方返回 COOKIE_EXPIRED 时，从 Vault 重新读取 Cookie。
- SESSION_TTL 是 3600 秒，比 Cookie 的有效期短，所以 COOKIE_EXPIRED 很少出现。
- RATE_LIMIT_RPS 默认 5，超过会被对方封 IP。

## 偏好
- 回答先给结论。Code comments in English.
""")

write("mixweb", "memory/2026-09-01.md", """# 2026-09-01 Cookie 过期

- 早上 COOKIE_EXPIRED 报警 连续出现 12 次，Bob 处理的。
- 原因：Vault 里的 Cookie 没有按时刷新，刷新任务 卡住了。
- 修复：刷新任务加超时；COOKIE_EXPIRED出现三次就自动重新登录。
""")

write("mixweb", "memory/2026-09-05.md", """# 2026-09-05 限流

- 对方把 RATE_LIMIT_RPS 降到 3，我们的抓取任务大量 429。
- 决定：RATE_LIMIT_RPS 改成可配置，默认 3；超过 阈值 时 指数退避。
- 限流 阈值 写进 `config/crawler.toml`，不要写死在代码里。
- SESSION_TTL 暂时不动。
""")

write("mixweb", "memory/2026-09-12.md", """# 2026-09-12 发布

- v2.3.1 发布后 OOMKilled 两次，回滚 到 v2.3.0。
- 原因：HTML 解析缓存没有上限。修复后 v2.3.2 重新发布。
- API_KEY 轮换 周期 定为 90 天，下一次是 12 月。
""")

write("mixweb", "memory/glossary.md", """# 术语表

- COOKIE_EXPIRED：对方接口的错误码，表示 Cookie 过期。
- SESSION_TTL：我们自己的会话有效期（秒）。
- RATE_LIMIT_RPS：每秒请求数上限。
- OOMKilled：容器因为内存超限被杀。
- クッキー：日本語のドキュメントでは Cookie をこう書く。
""")

# ------------------------------------------------------------------ "mixtiny": three files only
write("mixtiny", "MEMORY.md", """# 记忆

- PG_POOL_MAX 调整 记录见 memory/2026-10-02.md。
- COOKIE_EXPIRED 处理流程：先刷新，再重试。
""")

write("mixtiny", "memory/2026-10-02.md", """# 2026-10-02

- PG_POOL_MAX 从 20 调整到 32。
- 调整 原因：连接池 不够用。
""")

write("mixtiny", "memory/2026-10-03.md", """# 2026-10-03

- 今天 COOKIE_EXPIRED 又出现了，Cookie 刷新 成功。
- 调整到多少 合适，还要再观察。
""")

if __name__ == "__main__":
    for ws in ("mixdb", "mixweb", "mixtiny"):
        for root, _, files in os.walk(os.path.join(HERE, ws)):
            for f in sorted(files):
                p = os.path.join(root, f)
                print(os.path.relpath(p, HERE), os.path.getsize(p))
