"""The text of the rich demo (``examples/demo-home``), as data: written for this project, fictional.

:mod:`make_demo_home` turns it into files. Three kinds of text:

* ``EN_SECTIONS`` / ``ZH_SECTIONS``: everyday diary sections with ``{slots}`` the generator fills
  from ``SLOTS`` with a seeded random choice (the bulk of the demo: its map has structure because
  the same topics recur with different details). They never touch the facts the labelled
  queries ask about.
* ``PLANTED``: dated diary sections that carry a labelled fact. The line marked ``@`` is the
  evidence; its query and kind go into the labelled set.
* ``NOTES`` and ``SESSIONS``: notes under ``notes/`` and the agent's transcripts (with real
  ``memory_search`` calls, whose results the generator computes).
"""

from __future__ import annotations

SLOTS: dict[str, list[str]] = {
    "retailer": ["Brightline", "Orchard", "Fernhill Market", "Kestrel Outdoor", "Lumo Home",
                 "Vantage Tools", "Corvid Books", "Pebble Pets", "Northgate Pharmacy",
                 "Saltmarsh Wines"],
    "person": ["Priya", "Marco", "Wen", "Dana", "Sam"],
    "module": ["crawler/parse.py", "crawler/fetch.py", "crawler/worker.py", "report/render.py",
               "report/csv_writer.py", "scheduler/jobs.py", "scheduler/lease.py",
               "dashboard/src/charts.ts", "dashboard/src/filters.ts", "deploy/cron.yaml"],
    "field": ["unit price", "pack size", "promo end date", "stock flag", "brand name",
              "GTIN", "shipping cost", "loyalty price"],
    "n_small": ["2", "3", "4", "5", "7", "9", "11", "12"],
    "pct": ["0.4", "0.7", "1.2", "1.8", "2.5", "3.1", "4.6"],
    "minutes": ["6", "9", "14", "18", "23", "35", "41"],
    "weekday": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
    "version": ["1.4.2", "2.0.1", "2.3.0", "3.1.4", "0.9.7"],
    "lib": ["httpx", "Playwright", "selectolax", "pydantic", "SQLAlchemy", "orjson", "structlog"],
    "chart": ["price-history", "coverage", "error-rate", "freshness", "promo-calendar"],
    "zh_person": ["Priya", "Marco", "Wen", "Dana", "Sam"],
    "zh_retailer": ["Brightline", "Orchard", "Fernhill Market", "Kestrel Outdoor", "Lumo Home"],
    "zh_field": ["单价", "包装规格", "促销截止日期", "库存标记", "品牌名", "运费"],
}

#: Everyday English diary sections (a heading line first).
EN_SECTIONS: list[str] = [
    """## Parser fix for {retailer}
- {retailer} moved the {field} into a new `data-*` attribute; `{module}` now reads both.
- {n_small} product pages in the sample set failed before the fix, none after.
- Added the old and the new page to the parser fixtures so this stays covered.""",
    """## Data quality
- Wen's daily check flagged {pct}% of {retailer} rows with an empty {field}.
- Root cause: the category pages lazy-load that block; the product page has it, so those SKUs
  are now fetched from the product page instead.
- Re-ran the check: back under 0.2%.""",
    """## Dashboard
- {person} shipped the new {chart} chart; it reads from the materialized view, not the raw table.
- Page load for the Orchard account dropped from {n_small} s to under a second.
- Follow-up: the legend overlaps the axis on narrow screens.""",
    """## Dependency updates
- Bumped {lib} to {version}; the changelog lists nothing that touches our usage.
- Ran the parser fixtures and the report snapshot tests: all green.
- Lockfile committed in the same PR, as usual.""",
    """## Scheduler
- `{module}` got a clearer log line when a job's lease is taken over by another worker.
- The weekly cleanup job took {minutes} minutes; most of it is the vacuum of the job history.
- {person} wants per-job timeouts shown on the dashboard; noted for next week.""",
    """## Customer call: {retailer}
- {person} joined the monthly call; they asked for the {field} in the CSV as its own column.
- Agreed to add it behind a per-customer flag so other customers' files do not change.
- They were happy with the coverage numbers for the last month.""",
    """## Small fixes
- `{module}`: removed a retry loop that retried on 404, which never helps.
- The {chart} chart now uses the customer's time zone for its x axis labels.
- Cleaned up {n_small} stale feature flags in the crawler config.""",
    """## Code review notes
- Reviewed {person}'s PR for `{module}`: fine, asked for one more test on the empty page case.
- Agreed the rule: parsers return `None` for a missing field, never an empty string.
- Merged after CI passed (about {minutes} minutes end to end).""",
    """## Crawl summary
- Last night's crawl finished in {minutes} minutes over the usual time; {retailer} was slow.
- {retailer}'s pages got heavier (a new recommendations widget); no change needed on our side.
- Error rate {pct}%, mostly timeouts on image-heavy pages.""",
    """## Monitoring
- New alert: crawl coverage under 95% for any customer for two nights in a row.
- Tested it by pausing {retailer} on staging; it fired as expected and auto-resolved.
- {person} added the runbook link to the alert text.""",
    """## Planning
- Sprint goals for the next two weeks: {retailer} parser rewrite, report footer changes, and
  the dashboard export button.
- {person} owns the parser rewrite; Wen owns the report part.
- Keep {weekday} afternoon free for the customer demo prep.""",
    """## Security housekeeping
- Rotated the deploy key for the `deploy/` repo mirror; old key removed from the hosts.
- Ran the dependency audit: {n_small} advisories, none reachable from our code paths.
- {person} reviewed who still has access to the staging database; two old accounts removed.""",
    """## Report snapshot tests
- The HTML report's snapshot changed because the footer date format changed; accepted it.
- `{module}` now sorts customers by name so the snapshot does not flap.
- Test suite time: {minutes} s locally.""",
    """## Retailer onboarding: {retailer}
- Wrote the first version of the {retailer} parser; it covers listing pages and product pages.
- Sample of 200 SKUs matched the manual check except {n_small} with a bundle price.
- The retailer's robots.txt allows our paths; rate limit set to the default.""",
    """## Ops notes
- Disk on the crawler host at 71%; the screenshot cache is the biggest folder, pruned to 14 days.
- Restarted the metrics exporter after it stopped reporting for {minutes} minutes.
- {person} updated the host inventory sheet.""",
    """## Pairing session
- Paired with {person} on `{module}` for an hour; simplified the error handling to one place.
- The change removed about 60 lines and kept the behaviour the tests describe.
- Next time: the same for the fetch timeouts.""",
    """## Learned today
- {lib} {version} changed a default that made one test slow; pinned the option explicitly.
- Writing down the reason in the code comment so nobody "cleans it up" later.""",
    """## Team
- {person} is out on {weekday}; handover notes are in the team channel.
- Retro on Tuesday: keep the shorter stand-up, try written updates on Fridays.
- Lunch-and-learn next week: {person} on reading Postgres query plans.""",
]

#: Everyday Chinese diary sections.
ZH_SECTIONS: list[str] = [
    """## {zh_retailer} 解析修复
- {zh_retailer} 把{zh_field}挪到了新的标签里，`{module}` 现在两种写法都能读。
- 样本里有 {n_small} 个商品页修复前解析失败，修复后全部正常。
- 新旧两种页面都加进了解析器的测试样例。""",
    """## 数据质量检查
- Wen 的每日检查发现 {zh_retailer} 有 {pct}% 的记录{zh_field}为空。
- 原因是分类页懒加载了那一块，商品详情页里有完整信息，所以这些商品改成从详情页抓。
- 复查之后降到 0.2% 以下。""",
    """## 看板更新
- {zh_person} 上线了新的 {chart} 图表，数据来自物化视图，不再直接查原始表。
- Orchard 账户的页面加载时间从 {n_small} 秒降到一秒以内。
- 待改进：窄屏下图例会挡住坐标轴。""",
    """## 依赖升级
- 把 {lib} 升到 {version}，变更日志里没有影响我们用法的改动。
- 跑了解析器测试和报表快照测试，全部通过。
- 锁文件和代码在同一个 PR 里提交。""",
    """## 调度器
- `{module}` 在任务租约被其他 worker 接管时会打印更清楚的日志。
- 每周清理任务用了 {minutes} 分钟，大部分时间花在清理任务历史表上。
- {zh_person} 希望在看板上显示每个任务的超时时间，记下来下周做。""",
    """## 客户周会：{zh_retailer}
- {zh_person} 参加了月度电话会，客户希望 CSV 里单独加一列{zh_field}。
- 约定用每个客户单独的开关控制，不影响其他客户的文件。
- 客户对上个月的覆盖率很满意。""",
    """## 抓取总结
- 昨晚的抓取比平时多用了 {minutes} 分钟，主要是 {zh_retailer} 变慢了。
- {zh_retailer} 的页面多了一个推荐商品的组件，页面变重了，我们这边不用改。
- 错误率 {pct}%，大部分是图片很多的页面超时。""",
    """## 监控告警
- 新增告警：任何客户连续两晚覆盖率低于 95% 就报警。
- 在预发环境暂停 {zh_retailer} 测试了一下，告警按预期触发并自动恢复。
- {zh_person} 在告警内容里加上了处理手册的链接。""",
    """## 代码评审
- 评审了 {zh_person} 关于 `{module}` 的 PR，整体没问题，要求补一个空页面的测试。
- 统一约定：解析器缺字段时返回 `None`，不要返回空字符串。
- CI 通过后合并，全程大约 {minutes} 分钟。""",
    """## 运维记录
- 抓取主机磁盘用到 71%，截图缓存占得最多，清理到只保留 14 天。
- 指标导出程序停了 {minutes} 分钟没上报，重启后恢复。
- {zh_person} 更新了主机清单。""",
    """## 团队
- {zh_person} {weekday} 请假，交接记录发在团队频道里。
- 周二复盘：继续保持更短的站会，周五试试书面同步。
- 下周午间分享：{zh_person} 讲怎么看 Postgres 执行计划。""",
    """## 新零售商接入：{zh_retailer}
- 写好了 {zh_retailer} 解析器的第一版，覆盖列表页和商品详情页。
- 抽查 200 个商品，除了 {n_small} 个捆绑价格之外都和人工核对一致。
- 对方的 robots.txt 允许我们抓取的路径，限速用默认值。""",
]

#: Facts the labelled queries ask about: (date, language, section with the evidence line marked
#: ``@``, [(query, kind), …]). A date that is also an everyday diary gets the section appended.
PLANTED: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    ("2026-08-05", "en", """## Proxies
@- Proxy vendor for the account-free retailers: Lumen, residential pool, billed per request.
- Their dashboard shows about 4% of requests retried on a second exit node.""", []),
    ("2026-08-10", "en", """## Scope
@- We now track 31 retailers for the four customers (listing and product pages).
- Next ones in the queue: Fernhill Market and Kestrel Outdoor.""", []),
    ("2026-08-12", "en", """## Sitemap errors
@- `ERR_SITEMAP_GZIP` from Fernhill Market's sitemap: they serve `sitemap.xml.gz` with a text
  Content-Type, so the decoder choked. The fetcher now sniffs the gzip magic bytes instead.
- Same fix applied to the two other sitemap readers.""", [("ERR_SITEMAP_GZIP", "keyword")]),
    ("2026-08-14", "en", """## Redis
@- Redis `maxmemory` is 4gb on the frontier host, policy `noeviction` (losing URLs is worse
  than failing loudly).""", []),
    ("2026-08-19", "zh", """## 价格突变检测
@- 新增价格突变检测：同一商品单日涨跌超过 40% 就标记为可疑，进入人工复核队列，不直接进报表。
- 第一天就拦下了 37 条，其中 30 条是零售商页面把会员价当成了原价。""",
     [("价格突变", "chinese")]),
    ("2026-08-26", "en", """## Negative prices
@- `PRICE_PARSE_NEGATIVE` showed up for Kestrel Outdoor: their sale badge `-15%` sits in the
  price slot, and the parser read it as the price. It now takes the struck-through price and
  the badge separately.""", [("PRICE_PARSE_NEGATIVE", "keyword")]),
    ("2026-08-28", "en", """## Costs
@- Cancelled the old uptime-monitoring SaaS: Grafana's synthetic checks already probe the same
  twelve endpoints, so we were paying twice for one answer.""",
     [("which subscription did we drop to cut spending?", "paraphrase")]),
    ("2026-09-02", "en", """## OPS-2291
@- Ticket OPS-2291: the scheduler's `job_leases` table grew to 4 GB because expired leases were
  never deleted. Added a nightly delete of leases expired more than two days ago, then VACUUM.
- Lease lookups went from 300 ms back to 2 ms.""", [("OPS-2291", "keyword")]),
    ("2026-09-04", "en", """## Cover
@- Sam was home sick Thursday and Friday, so Priya ran the Orchard monthly call on her own.
- She said it went fine; notes are in the customer folder.""",
     [("who covered the Orchard meeting while the boss was ill?", "paraphrase")]),
    ("2026-09-10", "en", """## Proxies, again
@- Switched the account-free crawl from Lumen to Netloom after two retailers banned most of
  Lumen's exit nodes in one week.""", []),
    ("2026-09-14", "en", """## Scope update
@- Now 38 retailers tracked: Fernhill Market (three regional sites), Kestrel Outdoor, Lumo Home
  and Vantage Tools went live this week.""", []),
    ("2026-09-16", "en", """## Frontier de-duplication
@- Moved the frontier's seen-URL check to a Bloom filter in `redis-bloom`: capacity 40 M URLs,
  error rate 0.1%. A false positive only delays a URL to the next crawl, which is acceptable.""",
     [("bloom filter error rate for the frontier", "keyword")]),
    ("2026-09-18", "en", """## Renewal
@- Brightline signed for another year and added two more store regions to the contract, starting
  in January.""", [("did our biggest grocery client extend their deal?", "paraphrase")]),
    ("2026-09-23", "zh", """## 办公室断电
@- 周二凌晨 03:10 办公室断电 47 分钟，UPS 只撑了 22 分钟，db-02 掉线，副本重新同步花了一个小时。
- Marco 已经下单换 UPS 电池，并把 db-02 的自动启动打开。""",
     [("办公室断电", "chinese")]),
    ("2026-09-24", "en", """## Redis memory
@- Raised Redis `maxmemory` from 4gb to 6gb: the frontier peaks at 4.7 GB during the Sunday full
  recrawl.""", []),
    ("2026-09-30", "zh", """## 商品去重规则
@- 商品去重改成 GTIN 优先，没有 GTIN 时再比较标题相似度，阈值 0.92。
- 旧规则只看标题，Orchard 的电子产品里有很多同名不同型号的商品被错误合并。""",
     [("商品去重 阈值", "chinese")]),
    ("2026-10-02", "en", """## Orchard support
@- Wen spent the afternoon on the phone with Orchard: their analysts could not open the September
  export because Excel guessed the wrong encoding. We now write a UTF-8 BOM for them.""",
     [("why couldn't a client open last month's spreadsheet?", "paraphrase")]),
    ("2026-10-07", "en", """## Dashboard SSO
@- Dashboard login now goes through Authentik (SSO); local passwords were switched off today,
  except the break-glass account `dash-admin`, whose password is in the safe.""",
     [("break-glass account for the dashboard", "keyword")]),
    ("2026-10-09", "en", """## Meetup
@- Dana's laptop screen cracked in her bag on the train to the Porto meetup; she gave the
  dashboard demo from Marco's machine.""",
     [("whose computer got damaged on the trip?", "paraphrase")]),
    ("2026-10-14", "zh", """## 代理供应商合同
@- 和新的代理供应商 Sable 签了一年合同，按流量计费，每 GB 2.1 美元，比 Netloom 便宜三成。
- 先把一半的免登录零售商切过去，观察两周。""",
     [("代理供应商合同", "chinese")]),
    ("2026-10-21", "en", """## Proxies: done
@- Sable is now our only proxy vendor: the rest of the account-free retailers moved over and
  the Netloom plan was cancelled at the end of its month.""",
     [("Which proxy vendor do we use now?", "temporal")]),
    ("2026-11-05", "en", """## Scope
@- 44 retailers tracked now, after adding Fernhill's regional sites in Porto and Braga and four
  pharmacy chains for Orchard's new health category.""",
     [("How many retailers are we tracking at the moment?", "temporal")]),
    ("2026-11-18", "en", """## Redis memory, again
@- Redis `maxmemory` is now 8gb: with 44 retailers the frontier reached 5.9 GB on Sunday.""",
     [("What is Redis maxmemory set to currently?", "temporal")]),
    ("2026-11-19", "zh", """## 新同事入职
@- 新同事 Lin（数据工程）下周一入职，先负责把报表迁到 dbt，Wen 带她熟悉客户数据。
- 笔记本和账号 Marco 这周准备好。""", [("新同事入职", "chinese")]),
    ("2026-11-26", "en", """## Storage
@- Marco found that the NAS in the closet had been failing its weekly disk scrub since August
  without telling anyone; one disk is replaced and the scrub result now goes to the alerts.""",
     [("what hardware problem went unnoticed for months?", "paraphrase")]),
]

#: Notes under ``notes/`` (path, text, [(query, kind, evidence line marked ``@``)]).
NOTES: list[tuple[str, str, list[tuple[str, str]]]] = [
    ("notes/retailers/fernhill-market.md", """# Fernhill Market

Grocery chain, three regional sites (Lisbon, Porto, Braga). Customer: Brightline.

## Crawling
@- robots.txt asks for `Crawl-delay: 10`; we honour it (one request per 10 s per site).
- Listing pages are server-rendered; product pages need Playwright for the price block.
- Their API has cursor pagination (see the session of 2026-09-08 for the details).

## Quirks
- Prices per kilo are shown only on the product page.
- The sitemap is gzip-compressed with a wrong Content-Type (see 2026-08-12).
""", [("Fernhill crawl-delay", "keyword")]),
    ("notes/retailers/kestrel-outdoor.md", """# Kestrel Outdoor

Outdoor gear, one site. Customer: Orchard (sports category).

- Sale badges sit in the price slot; the parser takes the struck-through price.
- Product variants (sizes) share one URL with a `?v=` parameter; each variant is its own SKU.
- Busy season is October to December; their pages get slower in the evenings.
""", []),
    ("notes/retailers/lumo-home.md", """# Lumo Home

Furniture and home goods. Customer: Orchard.

- Prices include delivery for items over 30 kg; the delivery part is shown separately.
- Their search API returns 48 items per page; we use the category listing instead.
- Contact on their side for crawl questions: none (we never asked; stay polite).
""", []),
    ("notes/adr/0001-postgres-partitioning.md", """# ADR 0001: partition price observations by month

Status: accepted (2026-08).

## Context
`price_observations` reached 900 M rows; the nightly report's scans got slow.

## Decision
Range-partition by `observed_at`, one partition per month, created ahead by the scheduler.

## Consequences
- Old partitions can be detached and archived.
- Every query must carry a time range, or it scans all partitions.
""", []),
    ("notes/adr/0002-weekly-parquet-export.md", """# ADR 0002: the weekly export is Parquet

Status: accepted (2026-09).

## Context
Two customers load our weekly export into their own warehouse; the CSV lost types and took long.

## Decision
@- Weekly exports are Parquet, zstd level 3, one file per customer and week, because the
  customers' warehouses load it natively with the types intact and the files are a tenth of
  the CSV's size.
- The nightly report stays CSV: people open it in Excel.
""", [("Why did we pick Parquet for the weekly export?", "keyword")]),
    ("notes/adr/0003-no-captcha-solvers.md", """# ADR 0003: no CAPTCHA-solving services

Status: accepted (2026-11).

Sites that show a CAPTCHA are paused, not solved: the legal risk and the cost are not worth the
few percent of data. See the diary of 2026-11-06.
""", []),
    ("notes/people.md", """# People and roles

- Sam: team lead, customers, priorities.
- Priya: backend, database, schema changes.
- Marco: infrastructure, network, backups, hardware.
- Wen: data quality, reports, the customers' day-to-day questions.
- Dana: dashboard and scheduler.
- Lin: data engineering (joins in late November), dbt migration of the report.
""", []),
    ("notes/runbooks/proxy-rotation.md", """# Runbook: a proxy vendor is blocked

1. Check the per-domain error counters (`err:*`) in Redis: is it one retailer or all?
2. One retailer: lower its rate in `crawler/domains.yaml` and move it to the sticky pool.
3. All retailers: switch the pool in `crawler/proxies.yaml` and redeploy the workers.
4. Tell Wen, so that the customers hear it from us before the report shows the gap.
""", []),
    ("notes/runbooks/report-rerun.md", """# Runbook: re-running a nightly report

1. Find the day and the customer in the report log (`report/logs/`).
2. Run `make report CUSTOMER=<name> DAY=<YYYY-MM-DD>` on the report host.
3. Compare row counts with the previous day; more than 5% apart needs a look before sending.
4. Send it with the "corrected" note template.
""", []),
    ("notes/zh/术语补充.md", """# 术语补充

- **覆盖率**：某个客户当天抓到价格的商品数除以应抓商品数。
- **价格突变**：同一商品单日涨跌超过 40%，进入人工复核。
- **免登录零售商**：不需要账号就能抓取的网站，走代理池。
- **粘性会话**：同一个出口 IP 保持 10 分钟，用于需要登录的网站。
""", []),
    ("notes/zh/客户沟通原则.md", """# 客户沟通原则

- 数据有缺口时，先告诉客户，再发报表，不要让客户自己发现。
- 周报用客户的语言写，英文客户用英文，中文客户用中文。
- 承诺的修复时间宁可保守，说"周五前"，不要说"今天"。
""", []),
]

#: The agent's transcripts: (session id, start time ISO, [turn, …]). A turn is
#: ``("user", text)``, ``("assistant", text)``, ``("search", query, {args})`` (a memory_search call
#: and its result, computed) or ``("bash", command, output)``. A text containing ``@`` at its
#: start is the evidence of the session query given in ``SESSION_QUERIES``.
SESSIONS: list[tuple[str, str, list[tuple[str, ...]]]] = [
    ("5b1e7a20-4c9d-4f3e-8a61-0d2c9e7b1f40", "2026-09-08T10:02:00.000Z", [
        ("user", "Fernhill's product API keeps returning 'cursor invalid' halfway through a "
                 "category. What do we know about it?"),
        ("search", "Fernhill Market API", {}),
        ("assistant", "Memory has the sitemap fix from August but nothing on the API. Let me "
                      "reproduce it."),
        ("bash", "python -m crawler.probe fernhill --category dairy --slow",
         "page 1 ok\npage 2 ok\n(sleep 120)\npage 3: 410 cursor invalid"),
        ("assistant", "@Found it: Fernhill's pagination cursor is only valid for 90 seconds. "
                      "Our worker sleeps between pages for the crawl-delay, and a slow category "
                      "crosses the limit. Fix: fetch the whole category's cursor chain first, "
                      "then the product pages."),
        ("user", "Do it, and write it down in the retailer note."),
        ("assistant", "Done: `crawler/sites/fernhill.py` walks the cursors first; the note "
                      "links this session."),
    ]),
    ("9d3f6b12-7e8a-4b5c-9f01-3a4e5d6c7b82", "2026-09-24T15:40:00.000Z", [
        ("user", "The frontier host is close to its memory limit again. What is it set to?"),
        ("search", "Redis maxmemory", {}),
        ("assistant", "It was set to 4gb in August with `noeviction`. The Sunday recrawl now "
                      "peaks at 4.7 GB, so I suggest 6gb."),
        ("user", "OK, 6gb."),
        ("bash", "redis-cli CONFIG SET maxmemory 6gb && redis-cli CONFIG REWRITE", "OK\nOK"),
        ("assistant", "Set and persisted. I wrote it in today's diary."),
    ]),
    ("2e8c4a91-5f6b-4d7e-b3a2-1c9d0e8f7a63", "2026-10-05T09:15:00.000Z", [
        ("user", "Wen says the report build fails on her machine with a dbt profile error."),
        ("search", "dbt report build", {}),
        ("assistant", "Nothing about dbt in memory yet; the migration has not started. Let me "
                      "look at the repo."),
        ("bash", "cat report/dbt/profiles.example.yml", "report:\n  target: prod_ro\n  outputs:"
                 "\n    prod_ro:\n      host: db-02\n      user: report_ro"),
        ("assistant", "@The report's dbt project lives in `report/dbt/` and builds with "
                      "`make dbt-build`; its profile target is `prod_ro`, which reads the "
                      "replica db-02 as `report_ro`. Wen's profile names the target `dev`, "
                      "which does not exist."),
        ("user", "Thanks, I'll tell her."),
    ]),
    ("7f4a2c85-1b3e-4a9d-8c6f-5e2d1b0a9c74", "2026-10-16T13:20:00.000Z", [
        ("user", "价格突变的复核队列现在有多少条？上次为什么会误报那么多？"),
        ("search", "价格突变", {}),
        ("assistant", "记忆里写着：8 月 19 日上线价格突变检测，第一天拦下 37 条，"
                      "其中 30 条是把会员价当成了原价。我查一下现在的队列。"),
        ("bash", "psql -c \"select count(*) from review_queue where status = 'open'\"", " 12"),
        ("assistant", "@现在队列里还有 12 条待复核。误报多的原因是会员价：之后解析器"
                      "把会员价单独存到 `loyalty_price` 字段，复核队列只看原价。"),
    ]),
    ("c41d9e6a-8b2f-4e7c-a5d3-6f0e9b8a7d15", "2026-11-02T11:05:00.000Z", [
        ("user", "Lin starts soon and needs dashboard admin rights. How does that work now "
                 "with SSO?"),
        ("search", "dashboard SSO admin", {}),
        ("assistant", "Since October 7 the dashboard logs in through Authentik; local passwords "
                      "are off except the break-glass account."),
        ("bash", "authentik groups list | grep dash", "dash-admins\ndash-viewers"),
        ("assistant", "@Admin rights come from the Authentik group `dash-admins`; everyone else "
                      "is in `dash-viewers`. Adding Lin to `dash-admins` on her first day is "
                      "enough; nothing to change in the dashboard itself."),
        ("user", "Great. Also, what's the wifi password for the guest network? She'll ask."),
        ("search", "guest wifi password", {}),
        ("assistant", "That is not in memory, and I would not store it there. Marco keeps it."),
    ]),
    ("e6b0f3d7-2a9c-4d1e-9b8f-4c7a6e5d3b29", "2026-11-25T16:45:00.000Z", [
        ("user", "Which proxy vendor are we on, and how do I point a test crawl at it?"),
        ("search", "proxy vendor", {}),
        ("assistant", "Memory has the vendor history in the diaries (three vendors since "
                      "August); the latest entry is from October. Let me check the config."),
        ("bash", "grep -A3 sable crawler/proxies.yaml", "sable:\n  gateway: "
                 "gw.sable-proxy.example:7000\n  sticky_minutes: 10"),
        ("assistant", "@Point the test crawl at Sable's gateway `gw.sable-proxy.example` on port "
                      "7000; sticky sessions last 10 minutes, so a login-protected retailer "
                      "keeps one exit IP for that long."),
        ("user", "And OPS-2291, is that the lease table thing? Did it come back?"),
        ("search", "OPS-2291", {"maxResults": 3}),
        ("assistant", "Yes, the `job_leases` table growth from September; the nightly delete "
                      "still runs and the table is 40 MB."),
    ]),
    ("a8d2e5f1-6c4b-4a3e-8d9f-2b1c0e7a6f58", "2026-11-27T09:30:00.000Z", [
        ("user", "Before the board call: how many retailers do we track, and did Brightline "
                 "renew?"),
        ("search", "how many retailers are tracked", {}),
        ("search", "Brightline renewal contract", {"minScore": 0.2}),
        ("assistant", "Both are in the diaries (November and September); I put the figures in "
                      "your briefing note."),
        ("user", "And what's the weekly export format again?"),
        ("search", "weekly export format", {}),
        ("assistant", "Parquet with zstd level 3, one file per customer and week (ADR 0002)."),
    ]),
]

#: Session-only facts: (session id, query). The evidence is the session's ``@`` turn.
SESSION_QUERIES: list[tuple[str, str]] = [
    ("5b1e7a20-4c9d-4f3e-8a61-0d2c9e7b1f40", "How long is Fernhill's pagination cursor valid?"),
    ("2e8c4a91-5f6b-4d7e-b3a2-1c9d0e8f7a63", "Which dbt target does the report build use?"),
    ("7f4a2c85-1b3e-4a9d-8c6f-5e2d1b0a9c74", "价格突变复核队列里还有多少条？"),
    ("c41d9e6a-8b2f-4e7c-a5d3-6f0e9b8a7d15", "Which SSO group grants dashboard admin rights?"),
    ("e6b0f3d7-2a9c-4d1e-9b8f-4c7a6e5d3b29", "What port is the Sable proxy gateway on?"),
]

#: Questions the memory does not answer (the right result is none).
NO_ANSWER: list[str] = [
    "Who is the landlord of the office building?",
    "What is the name of Sam's dog?",
    "Which restaurant hosts the 2027 summer party?",
    "Who won the team chess tournament?",
    "What is our company's stock ticker?",
    "我们公司的年会在哪个城市举办？",
    "Marco 最喜欢哪支足球队？",
    "Which font does the invoice template use?",
]
