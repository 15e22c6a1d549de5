"""The workbench's first visit and its Embedding map, in Debian's chromium (issue #23).

A server of its own (the ``server`` fixture of :mod:`tests.test_browser`, started again for this
module): the first visit says what it is doing before the home page can draw; on the map, a
labelled query colours its gold chunks, and a click on one opens it with its neighbours.
"""

from __future__ import annotations

import time

import pytest

from .test_browser import (
    ARGS,
    CHROMIUM,
    _choose,
    _go,
    _no_exception,
    _settle,
    _shot,
    server,
)

pytestmark = pytest.mark.browser
playwright_sync = pytest.importorskip("playwright.sync_api")
__all__ = ["server"]  # the fixture, imported so that pytest finds it here

BOOT_TEXTS = ("Starting Memory Workbench", "Getting the workbench ready")


def _main_text(page) -> str:  # type: ignore[no-untyped-def]
    main = page.locator('[data-testid="stMain"]')
    return main.inner_text() if main.count() else ""


def test_first_visit_says_what_it_does_then_the_map_answers(server: str) -> None:
    with playwright_sync.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.goto(server, wait_until="domcontentloaded")
            # the first words the page shows are the start-up message, not a blank page
            first = ""
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not first.strip():
                first = _main_text(page)
                time.sleep(0.1)
            assert any(t in first for t in BOOT_TEXTS), first[:300]
            _settle(page)
            assert "Memory Workbench" in _main_text(page)
            assert not any(t in _main_text(page) for t in BOOT_TEXTS[:1])
            _no_exception(page, "home")

            _go(page, "Embedding map")
            page.get_by_text("PCA", exact=True).click()
            _settle(page)
            _choose(page, "…or a labelled query", "COOKIE_EXPIRED")
            _choose(page, "Colour by", "gold", exact=True)
            _no_exception(page, "map gold")
            _shot(page, "map-gold")
            # plotly draws after Streamlit's run is over: wait for the gold trace itself
            page.wait_for_function(
                "() => { const gd = document.querySelector('.js-plotly-plot');"
                " return gd && gd.data && gd.data.some(t => t.name === 'gold, found'); }",
                timeout=60_000)
            _shot(page, "map-gold")
            # click one gold point: its chunk and nearest neighbours open below the map
            box = page.evaluate("""() => {
                const gd = document.querySelector('.js-plotly-plot');
                const i = gd.data.findIndex(t => t.name === 'gold, found');
                const trace = gd.querySelectorAll('.scatterlayer .trace')[i];
                const r = trace.querySelector('path.point').getBoundingClientRect();
                return {x: r.x + r.width / 2, y: r.y + r.height / 2};
            }""")
            # plotly picks the clicked point from its hover state: hover first, then click
            page.mouse.move(box["x"] - 3, box["y"] - 3)
            page.mouse.move(box["x"], box["y"])
            time.sleep(0.5)
            page.mouse.click(box["x"], box["y"])
            page.wait_for_selector("text=Nearest neighbours", timeout=60_000)
            _settle(page)
            _no_exception(page, "map click")
            assert page.get_by_text("memory/2026-11-03.md#L", exact=False).count() >= 1
            _shot(page, "map-clicked")
        finally:
            browser.close()
