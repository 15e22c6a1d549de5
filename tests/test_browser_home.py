"""The rich demo's OpenClaw home (``examples/demo-home``) in Debian's chromium (issue #23).

A server of its own, opened as ``make run`` opens it (``MEMORY_WORKBENCH_OPENCLAW_HOME``) on a
private copy of the home, keyword-only (the page under test compares rankings, not the model):
the sidebar starts on the home, Real queries lists the agent's own ``memory_search`` calls with
what each got then and gets now, and Evaluate's metric table has every column in view at
1440 px (no horizontal scroll).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.apptesting import APP, streamlit_server, workbench_env

from .test_browser import _choose, _go, _no_exception, _page, _settle, _shot

pytestmark = pytest.mark.browser
playwright_sync = pytest.importorskip("playwright.sync_api")

HOME = APP.parent / "examples" / "demo-home"


@pytest.fixture(scope="module")
def home_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp = tmp_path_factory.mktemp("browser-home")
    home = tmp / "demo-home"
    shutil.copytree(HOME, home, ignore=shutil.ignore_patterns(".memory"))
    env = {**os.environ, **workbench_env(home / "workspace", tmp / "cache", "none"),
           "MEMORY_WORKBENCH_OPENCLAW_HOME": str(home),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    with streamlit_server(APP, env, tmp / "streamlit.log") as url:
        yield url, home


def _calls(home: Path) -> list[str]:
    """The agent's memory_search queries, read straight from its transcripts."""
    out = []
    for f in sorted((home / "agents" / "main" / "sessions").glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            try:
                msg = json.loads(line).get("message") or {}
            except json.JSONDecodeError:  # the demo keeps one cut-off record on purpose
                continue
            for block in msg.get("content") or []:
                if isinstance(block, dict) and block.get("name") == "memory_search":
                    out.append(block["arguments"]["query"])
    return out


def _grid_after(page, title: str) -> tuple[int, int, list[str]]:  # type: ignore[no-untyped-def]
    """(scroll width, visible width, header cells) of the first data grid below the subheader
    starting with ``title``. The grid draws on a canvas inside a scroller; its accessible
    table holds a header cell per column drawn."""
    out = page.evaluate(
        "(t) => { const h = [...document.querySelectorAll('h3')]"
        ".find(e => e.innerText.startsWith(t)); if (!h) return [-1, -1, []];"
        " const el = [...document.querySelectorAll('[data-testid=stDataFrame]')]"
        ".find(d => h.compareDocumentPosition(d) & Node.DOCUMENT_POSITION_FOLLOWING);"
        " const sc = el && el.querySelector('.dvn-scroller'); if (!sc) return [-1, -1, []];"
        " return [sc.scrollWidth, sc.clientWidth,"
        " [...el.querySelectorAll('th')].map(c => c.innerText)]; }", title)
    return int(out[0]), int(out[1]), list(out[2])


def test_real_queries_then_and_now_on_the_demo_home(home_server: tuple[str, Path]) -> None:
    url, home = home_server
    calls = _calls(home)
    assert len(calls) >= 10
    with _page(url) as page:
        sidebar = page.locator('[data-testid="stSidebar"]')
        assert sidebar.get_by_role("radio", name="OpenClaw home").is_checked()
        assert sidebar.get_by_role("textbox", name="OpenClaw home").input_value() == str(home)
        _no_exception(page, "home")

        _go(page, "Real queries")
        page.wait_for_selector("text=Zero results then", timeout=600_000)
        _settle(page)
        _no_exception(page, "real queries")
        main = page.locator('[data-testid="stMain"]')
        assert f"{len(list((home / 'agents/main/sessions').glob('*.jsonl')))} transcripts" in (
            main.inner_text())
        # every metric is a figure: the calls were paired with their results and rerun
        for label in ("Zero results then", "Zero results now", "Overlap@6"):
            value = page.locator('[data-testid="stMetric"]', has_text=label).locator(
                '[data-testid="stMetricValue"]').inner_text()
            assert value.endswith("%"), (label, value)
        _choose(page, "Query", "proxy vendor")
        then = page.locator('[data-testid="stColumn"]', has_text="Then (what the agent got)")
        now = page.locator('[data-testid="stColumn"]', has_text="Now (tuned settings)")
        # then: the reference keyword-only results the agent got on 2026-11-25, as recorded
        assert then.locator("code", has_text="memory/2026-10-21.md").count() >= 1
        assert now.locator("code", has_text="memory/").count() >= 1
        assert "No result." not in now.inner_text()
        _shot(page, "7-real-queries-home")

        _go(page, "Evaluate")
        assert page.get_by_role("combobox", name="Query set").input_value() == "demo-home"
        page.get_by_role("button", name="Run evaluation").click()
        page.wait_for_selector("text=Wins and losses", timeout=600_000)
        _settle(page)
        _no_exception(page, "evaluate")
        # the metric table at 1440 px with the sidebar open: every column drawn, none scrolled
        scroll, visible, headers = _grid_after(page, "Metrics (")
        assert 0 < visible and scroll <= visible + 1, (scroll, visible, headers)
        assert len(headers) == 13 and headers[-1] == "p50 ms", headers
        _shot(page, "8-evaluate-home")


def test_no_request_leaves_the_machine(home_server: tuple[str, Path]) -> None:
    """Every request the pages make goes to the workbench itself (issue #35: the page icon came
    from a font CDN); the first visit shows its progress figure within seconds."""
    from urllib.parse import urlsplit

    url, _ = home_server
    hosts: dict[str, str] = {}
    with playwright_sync.sync_playwright() as pw:
        from .test_browser import ARGS, CHROMIUM

        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.on("request", lambda r: hosts.setdefault(urlsplit(r.url).hostname or "",
                                                          r.url))
            page.goto(url, wait_until="domcontentloaded")
            _settle(page)
            for title in ("Search & tune", "Chunks", "Embedding map", "Evaluate", "Promotion",
                          "Real queries"):
                _go(page, title)
                _no_exception(page, title)
        finally:
            browser.close()
    away = {h: u for h, u in hosts.items() if h not in ("127.0.0.1", "localhost", "")}
    assert not away, away
