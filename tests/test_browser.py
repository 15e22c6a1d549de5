"""The workbench in a real browser: `streamlit run app.py` driven through Debian's chromium.

Starts the server on a free port against a private copy of the demo workspace, visits every
page through the sidebar (one browser session), does one thing on each, asserts that no
exception box is shown, and saves a full-page screenshot of each page under
``test-artifacts/screenshots/``. A second test saves two runs on Evaluate, compares them and
opens a loss. No browser is downloaded: Playwright drives /usr/bin/chromium.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.apptesting import APP, copy_demo, streamlit_server, workbench_env

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
SHOTS = APP.parent / "test-artifacts" / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

playwright_sync = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():  # pragma: no cover - CI installs it (scripts/install-system-deps)
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("browser")
    ws = copy_demo(tmp)
    env = {**os.environ, **workbench_env(ws, tmp / "cache", "local", umap=True),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    with streamlit_server(APP, env, tmp / "streamlit.log") as url:
        yield url


def _settle(page, timeout: float = 240.0) -> None:  # type: ignore[no-untyped-def]
    """Wait until the script run is over: Streamlit's status widget (with its Stop button)
    shows while a run lasts, and is gone for two checks in a row."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout * 1000)
    running = '[data-testid="stStatusWidget"]:has-text("Stop")'
    time.sleep(1.0)
    deadline = time.monotonic() + timeout
    quiet = 0
    while time.monotonic() < deadline:
        quiet = quiet + 1 if page.locator(running).count() == 0 else 0
        if quiet >= 2:
            return
        time.sleep(0.5)
    raise TimeoutError("the page kept running")


def _no_exception(page, name: str) -> None:  # type: ignore[no-untyped-def]
    boxes = page.locator('[data-testid="stException"]')
    assert boxes.count() == 0, f"{name}: {boxes.first.inner_text()[:2000]}"


def _shot(page, name: str) -> Path:  # type: ignore[no-untyped-def]
    """Screenshot the whole page: Streamlit scrolls inside its main block, so the viewport is
    stretched to the content's height first."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    size = page.viewport_size
    height = page.evaluate(
        "() => { const m = document.querySelector('[data-testid=\"stMain\"]');"
        " return m ? m.scrollHeight : document.body.scrollHeight; }")
    page.set_viewport_size({"width": size["width"], "height": min(8000, max(size["height"],
                                                                             int(height)))})
    time.sleep(1.0)  # let plotly re-layout
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)
    return path


def _go(page, title: str) -> None:  # type: ignore[no-untyped-def]
    """Open a page through the sidebar; a click the live indicator's rerun swallowed is
    repeated (the page's title says whether it arrived)."""
    for _ in range(3):
        page.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()
        _settle(page)
        if page.locator("h1", has_text=title).count():
            return


def _click_for(page, button: str, result: str, timeout_s: float = 600.0) -> None:  # type: ignore[no-untyped-def]
    """Click ``button`` and wait for ``result``. The sidebar's live indicator reruns every 2 s
    (``st.fragment(run_every=2)``); a click that lands while that rerun is in flight can be
    dropped, leaving the app idle with nothing to wait for. So: wait until the button is
    visible, click, and if the app is idle again without the result, click once more."""
    btn = page.get_by_role("button", name=button)
    btn.wait_for(state="visible", timeout=60_000)
    btn.click()
    try:
        page.wait_for_selector(result, timeout=120_000)
        return
    except playwright_sync.TimeoutError:
        _settle(page)
    if page.locator(result).count() == 0:
        btn.click()
        page.wait_for_selector(result, timeout=timeout_s * 1000)


@contextlib.contextmanager
def _page(server: str) -> Iterator[Any]:
    """A chromium page on the app, its first script run over; the browser closes after."""
    with playwright_sync.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.goto(server, wait_until="domcontentloaded")
            _settle(page)
            yield page
        finally:
            browser.close()


def test_every_page_in_chromium(server: str) -> None:
    for old in SHOTS.glob("*.png") if SHOTS.is_dir() else []:
        old.unlink()
    with _page(server) as page:
        page.get_by_role("button", name="Index now").click()
        page.wait_for_selector("text=files indexed", timeout=600_000)
        _settle(page)
        _no_exception(page, "home")
        assert page.locator("text=Chunks the model truncates").count() == 1
        _shot(page, "1-home")

        _go(page, "Search & tune")
        box = page.get_by_label("Query")
        box.fill("PgBouncer port")
        box.press("Enter")
        page.wait_for_selector("text=Re-ranked in", timeout=120_000)
        _settle(page)
        # move the minScore slider with the keyboard: the page re-ranks, the gate greys hits
        thumb = page.locator('.st-key-t_min_score input[type="range"]')
        thumb.focus()
        for _ in range(60):
            thumb.press("ArrowRight")
        _settle(page)
        _no_exception(page, "search")
        assert page.locator("text=Below minScore").count() >= 1
        _shot(page, "2-search")
        page.get_by_role("tab", name="A/B compare").click()
        page.get_by_text("B = reference profile").click()
        _settle(page)
        _no_exception(page, "search A/B")
        _shot(page, "2b-search-ab")

        _go(page, "Chunks")
        page.get_by_label("Filter chunks by text").fill("连接池")
        page.get_by_label("Filter chunks by text").press("Enter")
        _settle(page)
        _no_exception(page, "chunks")
        assert page.locator("mark", has_text="连接池").count() >= 1
        _shot(page, "3-chunks")

        _go(page, "Embedding map")
        # the UMAP worker started with the home page; wait for it (PCA is shown meanwhile)
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline and page.locator(
                "text=/UMAP of \\d+ chunk embeddings/").count() == 0:
            time.sleep(2)
        _settle(page)
        _no_exception(page, "map")
        assert page.locator('[data-testid="stPlotlyChart"]').count() >= 1
        _shot(page, "4-embedding-map")

        _go(page, "Evaluate")
        page.get_by_role("button", name="Run evaluation").click()
        page.wait_for_selector("text=Wins and losses", timeout=600_000)
        _settle(page)
        page.get_by_role("button", name="Run sweep").click()
        page.wait_for_selector("text=/Best success@5/", timeout=600_000)
        _settle(page)
        _no_exception(page, "evaluate")
        _shot(page, "5-evaluate")

        _go(page, "Promotion")
        page.get_by_text("Seed recall signals").click()
        _click_for(page, "Replay", "text=searches over")
        _settle(page)
        _no_exception(page, "promotion")
        _shot(page, "6-promotion")
    assert len(list(SHOTS.glob("*.png"))) == 7


def _choose(page, label: str, option: str, exact: bool = False) -> None:  # type: ignore[no-untyped-def]
    """Pick ``option`` (a part of its text, or all of it with ``exact``) in the selectbox
    ``label``. The sidebar's live fragment reruns every 2 s and can close or detach the open
    list; so retry until the box shows the option."""
    box = page.get_by_role("combobox", name=label)
    for _ in range(5):
        try:
            box.click(timeout=10_000)
            page.get_by_role("option", name=option, exact=exact).first.click(timeout=10_000)
        except playwright_sync.Error:
            page.keyboard.press("Escape")
        _settle(page)
        value = box.input_value()
        if (value == option) if exact else (option.lower() in value.lower()):
            return
    raise AssertionError(f"could not choose {option!r} in {label!r}")


def test_saved_runs_compared_and_a_loss_opened_in_chromium(server: str) -> None:
    """Evaluate: save two runs, compare them (intervals, p-values), open a loss side by side."""
    with _page(server) as page:
        index_now = page.get_by_role("button", name="Index now")
        if index_now.count():
            index_now.click()
            page.wait_for_selector("text=files indexed", timeout=600_000)
            _settle(page)
        _go(page, "Evaluate")
        _click_for(page, "Run evaluation", "text=Wins and losses")
        _settle(page)
        # A (the tuned default settings) first, the reference profile (B) second
        _click_for(page, "Save run", "text=/Saved run .*A-tuned/")
        _settle(page)
        _choose(page, "Run to save", "B: reference profile")
        _click_for(page, "Save run", "text=/Saved run .*reference/")
        _settle(page)
        _click_for(page, "Compare runs", "text=/paired-bootstrap interval/")
        _settle(page)
        _no_exception(page, "saved runs compared")
        assert page.locator("text=/p-value/").count() >= 1
        try:
            _choose(page, "Open a win or a loss", "loss ·")
        except playwright_sync.TimeoutError:
            _shot(page, "5b-evaluate-runs-failed")  # what the page showed instead
            raise
        page.wait_for_selector("text=/gold: the hit holds/", timeout=120_000)
        _settle(page)
        _no_exception(page, "a loss opened")
        assert page.locator("text=/^A: demo A: tuned/").count() >= 1
        assert page.locator("text=/^B: demo B: reference profile/").count() >= 1
        _shot(page, "5b-evaluate-runs")
