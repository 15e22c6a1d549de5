"""An explicit ``--profile`` keeps the user's own ``[search]`` settings (issue #36).

A workspace's ``memory-workbench.toml`` with ``[search] abstain_below = 0`` was obeyed by
``memory-core search`` but ignored by ``memory-core search --profile default``: switching to a
profile (even the one already in force) dropped every ``[search]`` key. The precedence is now one
rule for every profile: the profile gives the base, the workspace's ``[search]`` keys override
it, per-call flags override both. An OpenClaw home's ``openclaw.json`` settings are the
reference's and stay behind when another profile is asked for (but ``maxResults``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.base.config import CONFIG_FILE, load_config, profile_settings
from memory_core.cli import main as cli_main
from memory_core.openclaw import open_home

from .conftest import ROOT


def _ws(tmp_path: Path, toml: str) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- PG_POOL_MAX is 32.\n", encoding="utf-8")
    for day, fact in (("01", "PG pool timeouts are 30 s."), ("02", "The PG pool minimum is 4.")):
        (ws / "memory" / f"2026-01-{day}.md").write_text(f"# Diary\n\n- {fact}\n",
                                                        encoding="utf-8")
    (ws / CONFIG_FILE).write_text(toml, encoding="utf-8")
    return ws


@pytest.mark.parametrize("profile", [None, "default"])
def test_abstain_below_zero_survives_an_explicit_default_profile(tmp_path: Path,
                                                                 profile: str | None) -> None:
    """The case as reported: the gate the default profile sets (with the local model) is off
    when the workspace says so, with or without ``--profile default``."""
    assert profile_settings("default", "local").abstain_below > 0  # the profile's own gate
    ws = _ws(tmp_path, "[search]\nabstain_below = 0\n")
    cfg = load_config(ws)
    cfg = cfg.with_profile(profile) if profile else cfg
    s = cfg.settings("local")
    assert s.abstain_below == 0.0
    # the keys the user did not write are still the profile's, for the model in use
    assert s.calibration == profile_settings("default", "local").calibration
    assert s.vector_weight == profile_settings("default", "local").vector_weight
    with MemoryIndex.open(ws, profile=profile, provider="none") as idx:
        assert idx.config.settings("local").abstain_below == 0.0


def test_reference_profile_takes_the_same_precedence(tmp_path: Path) -> None:
    """``--profile reference``: the reference's constants are the base, the workspace's keys
    win over them (as OpenClaw's own ``memorySearch.query`` settings do), the rest untouched;
    and a workspace that says ``profile = "reference"`` switched to ``default`` keeps them."""
    ws = _ws(tmp_path, 'profile = "reference"\n\n[search]\nmax_results = 3\nmin_score = 0.2\n')
    ref = load_config(ws).with_profile("reference").settings("local")
    assert (ref.max_results, ref.min_score) == (3, 0.2)
    assert ref.fusion == "reference" and ref.vector_weight == 0.7
    default = load_config(ws).with_profile("default").settings("local")
    assert (default.max_results, default.min_score) == (3, 0.2)
    assert default.fusion == "normalized" and default.date_hint == 0.4
    plain = _ws(tmp_path / "b", "")
    assert load_config(plain).with_profile("reference").settings("local") == \
        profile_settings("reference", "local")  # no [search]: the reference to the constant


def test_cli_flag_beats_the_file_which_beats_the_profile(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """End to end: ``search --profile default --json`` reports the file's ``max_results`` (and
    returns no more hits than it); ``--max-results`` overrides the file."""
    ws = _ws(tmp_path, "[search]\nmax_results = 1\n")

    def run(*extra: str) -> dict[str, object]:
        code = cli_main(["search", "PG pool", "-w", str(ws), "--provider", "none",
                         "--profile", "default", "--no-record", "--json", "--explain", *extra])
        out = capsys.readouterr().out
        assert code == 0, out
        return json.loads(out)

    first = run()
    assert first["settings"]["max_results"] == 1  # type: ignore[index]
    assert len(first["results"]) == 1  # type: ignore[arg-type]
    second = run("--max-results", "2")
    assert len(second["results"]) == 2  # type: ignore[arg-type]


def test_home_keeps_the_workspace_keys_but_not_openclaw_json_min_score(tmp_path: Path) -> None:
    """A home opened with ``--profile default``: ``openclaw.json``'s ``minScore`` (a reference
    score's gate) stays behind, its ``maxResults`` and the workspace TOML's keys come along."""
    home = tmp_path / "home"
    shutil.copytree(ROOT / "examples" / "demo-home", home,
                    ignore=shutil.ignore_patterns(".memory"))
    (home / "workspace" / CONFIG_FILE).write_text("[search]\nabstain_below = 0\ndate_hint = 0.1\n",
                                                  encoding="utf-8")
    s = open_home(home).load_config(profile="default").settings("local")
    assert s.abstain_below == 0.0 and s.date_hint == 0.1
    assert s.max_results == 6
    assert s.min_score == profile_settings("default", "local").min_score
