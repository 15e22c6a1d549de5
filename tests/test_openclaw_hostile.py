"""Hostile OpenClaw homes (issue 19, items 4 and 9): an agent id that climbs out of the home,
a workspace in a system folder or the home folder, an enormous or deeply nested
``openclaw.json``; and an export that must change only the values (backups never overwritten,
CRLF, a symlinked file, a read-only file, a BOM).

Keyword-only (``--provider none``): no model is loaded.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_core.base.config import SearchSettings
from memory_core.cli import main
from memory_core.openclaw import apply_export, open_home, plan_export
from memory_core.openclaw.config import (
    MAX_CONFIG_BYTES,
    MAX_JSON5_BYTES,
    OpenClawConfigError,
    normalize_agent_id,
)
from memory_core.openclaw.home import OpenClawHomeError

from .openclaw_fixture import _call, _result, build_home


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, err: str) -> None:
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err


# ------------------------------------------------------------------ item 4: the agent id


def test_agent_id_normalised_as_the_reference_does() -> None:
    assert normalize_agent_id("  Ops ") == "ops"
    assert normalize_agent_id("") == normalize_agent_id(None) == "main"
    assert normalize_agent_id("../../../../tmp/outside/evil") == "tmp-outside-evil"
    assert normalize_agent_id("a/../b c") == "a-b-c"
    assert normalize_agent_id("../..") == "main"
    assert normalize_agent_id("x" * 70) == "x" * 64
    assert normalize_agent_id("ſecret") == "ecret"  # ASCII only, as the reference's regex


def test_agent_id_cannot_read_transcripts_outside_the_home(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = build_home(tmp_path / "deep" / "er")
    outside = tmp_path / "outside" / "evil" / "sessions"
    outside.mkdir(parents=True)
    (outside / "x.jsonl").write_text("\n".join([
        _call("c1", "SECRET_OUTSIDE_QUERY", {}, 1_795_168_800_000),
        _result("c1", [], 1_795_168_800_100)]) + "\n")
    climb = os.path.relpath(tmp_path / "outside" / "evil", home / "agents")
    assert climb.startswith("..") and (home / "agents" / climb / "sessions").is_dir()
    cfg = home / "openclaw.json"
    cfg.write_text(cfg.read_text().replace('{ id: "main", default: true }',
                                           f'{{ id: {json.dumps(climb)}, default: true }}'))
    oc = open_home(home)
    assert "/" not in oc.agent and ".." not in oc.agent
    assert oc.sessions_dir.resolve().is_relative_to(home.resolve())
    code, out, err = run(capsys, "queries", "--openclaw-home", str(home), "--json")
    assert code == 0, err
    assert "SECRET_OUTSIDE" not in out
    code, out, err = run(capsys, "search", "--openclaw-home", str(home), "--provider", "none",
                         "--json", "SECRET_OUTSIDE_QUERY")
    assert code == 0, err
    assert "SECRET_OUTSIDE" not in out
    # and --agent on the command line is normalised the same way
    code, out, err = run(capsys, "queries", "--openclaw-home", str(home), "--agent", climb)
    assert code == 0 and "SECRET_OUTSIDE" not in out + err


# ------------------------------------------------------------- item 4: the workspace


@pytest.mark.parametrize("workspace", ["/etc", "/", "/usr/share"])
def test_system_folder_workspace_refused(tmp_path: Path, workspace: str) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / "openclaw.json").write_text(json.dumps({"agents": {"defaults": {
        "workspace": workspace}}}))
    with pytest.raises(OpenClawHomeError, match="refused") as e:
        open_home(home)
    assert "\n" not in str(e.value)


def test_home_folder_workspace_refused_and_nothing_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    user_home = tmp_path / "user"
    user_home.mkdir()
    monkeypatch.setenv("HOME", str(user_home))
    home = user_home / ".openclaw"
    home.mkdir()
    (home / "openclaw.json").write_text('{ agents: { list: [ { id: "main", workspace: "~" } ] } }')
    with pytest.raises(OpenClawHomeError, match="home folder"):
        open_home(home)
    code, _, err = run(capsys, "search", "--openclaw-home", str(home), "--provider", "none",
                       "anything")
    one_line_error(code, err)
    code, _, err = run(capsys, "index", "--openclaw-home", str(home), "--provider", "none")
    one_line_error(code, err)
    assert not (user_home / ".memory").exists()
    assert sorted(p.name for p in user_home.iterdir()) == [".openclaw"]


def test_workspace_inside_the_home_folder_still_opens(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    home = build_home(tmp_path)
    assert open_home(home).workspace == (home / "workspace").resolve()


# ------------------------------------------------------------ item 4: size and depth


def _minimal_home(tmp_path: Path) -> Path:
    home = tmp_path / "h"
    (home / "workspace").mkdir(parents=True)
    return home


def test_huge_openclaw_json_refused_in_one_line(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    home = _minimal_home(tmp_path)
    pad = "x" * 1000
    with (home / "openclaw.json").open("w") as fh:  # 51 MB, as in the issue
        fh.write('{"agents": {"defaults": {}}, "pad": [')
        fh.write(",".join(f'"{pad}"' for _ in range(51_000)))
        fh.write("]}")
    assert (home / "openclaw.json").stat().st_size > MAX_CONFIG_BYTES
    with pytest.raises(OpenClawHomeError, match="too large"):
        open_home(home)
    code, _, err = run(capsys, "queries", "--openclaw-home", str(home))
    one_line_error(code, err)


def test_large_strict_json_read_json5_capped(tmp_path: Path) -> None:
    home = _minimal_home(tmp_path)
    cfg = home / "openclaw.json"
    items = ",".join(f'"{i:08d}"' for i in range(MAX_JSON5_BYTES // 5))  # ~1.1 MB, strict
    cfg.write_text('{"memory": {"search": {"query": {"maxResults": 4}}}, "pad": [' + items
                   + "]}")
    assert cfg.stat().st_size > MAX_JSON5_BYTES
    assert open_home(home).load_config().settings().max_results == 4
    cfg.write_text("// JSON5 now\n{ memory: { search: { query: { maxResults: 4 } } }, pad: ["
                   + items + "] }")
    with pytest.raises(OpenClawHomeError, match="JSON5 is more than"):
        open_home(home)


def test_deeply_nested_openclaw_json_one_line(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    home = _minimal_home(tmp_path)
    for text in ('{"a": ' + "[" * 5000 + "]" * 5000 + "}",
                 "{ a: " + "[" * 5000 + "]" * 5000 + ", } // json5"):
        (home / "openclaw.json").write_text(text)
        with pytest.raises(OpenClawHomeError, match="nested too deeply"):
            open_home(home)
        code, _, err = run(capsys, "search", "--openclaw-home", str(home), "--provider", "none",
                           "x")
        one_line_error(code, err)
        with pytest.raises(OpenClawConfigError, match="nested too deeply"):
            plan_export(home / "openclaw.json", SearchSettings(max_results=3))


# --------------------------------------------------------------------- item 9: export


def _settings(home: Path, **values: object) -> SearchSettings:
    s = open_home(home).load_config().settings()
    for k, v in values.items():
        setattr(s, k, v)
    return s


def test_two_exports_in_one_second_keep_every_backup(tmp_path: Path) -> None:
    home = build_home(tmp_path)
    path = home / "openclaw.json"
    original = path.read_bytes()
    now = datetime.now(UTC)
    # earlier backups of this very second and the next: an export must never replace them
    taken = [path.with_name(f"{path.name}.bak-{t.strftime('%Y%m%dT%H%M%SZ')}")
             for t in (now, now + timedelta(seconds=1))]
    for b in taken:
        b.write_bytes(b"an earlier backup\n")
    first = apply_export(plan_export(path, _settings(home, max_results=5)))
    after_first = path.read_bytes()
    second = apply_export(plan_export(path, _settings(home, max_results=7)))
    assert first and second and first != second and first not in taken and second not in taken
    assert first.read_bytes() == original and second.read_bytes() == after_first
    assert all(b.read_bytes() == b"an earlier backup\n" for b in taken)
    assert open_home(home).load_config().settings().max_results == 7


def test_export_keeps_crlf(tmp_path: Path) -> None:
    home = build_home(tmp_path)
    path = home / "openclaw.json"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    before = path.read_bytes()
    plan = plan_export(path, _settings(home, max_results=5, mmr_enabled=True,
                                       candidate_multiplier=7))
    assert plan.ok and len(plan.changes) == 3, plan.refused
    apply_export(plan)
    after = path.read_bytes()
    assert after.count(b"\n") == after.count(b"\r\n")  # no bare LF
    assert b"maxResults: 5," in after
    unchanged = [ln for ln in before.split(b"\r\n") if b"maxResults" not in ln
                 and b"hybrid" not in ln]
    assert all(ln in after.split(b"\r\n") for ln in unchanged)
    s = open_home(home).load_config().settings()
    assert (s.max_results, s.mmr_enabled, s.candidate_multiplier) == (5, True, 7)
    # a block inserted on lines of its own gets CRLF too
    small = tmp_path / "small.json"
    small.write_bytes(b"{\r\n  agents: {\r\n    defaults: {\r\n      memorySearch: {\r\n"
                      b"        provider: 'none',\r\n      },\r\n    },\r\n  },\r\n}\r\n")
    apply_export(plan_export(small, SearchSettings(max_results=5)))
    text = small.read_bytes()
    assert b"maxResults: 5" in text and text.count(b"\r\n") > 9
    assert text.count(b"\n") == text.count(b"\r\n")


def test_export_through_a_symlink_keeps_the_link(tmp_path: Path) -> None:
    home = build_home(tmp_path)
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "openclaw.json"
    (home / "openclaw.json").rename(real)
    (home / "openclaw.json").symlink_to(real)
    backup = apply_export(plan_export(home / "openclaw.json", _settings(home, max_results=5)))
    assert (home / "openclaw.json").is_symlink()
    assert os.readlink(home / "openclaw.json") == str(real)
    assert "maxResults: 5," in real.read_text()
    assert backup is not None and backup.parent == home and not backup.is_symlink()
    assert sorted(p.name for p in dotfiles.iterdir()) == ["openclaw.json"]


def test_export_refuses_a_read_only_file(tmp_path: Path) -> None:
    home = build_home(tmp_path)
    path = home / "openclaw.json"
    plan = plan_export(path, _settings(home, max_results=5))
    assert plan.ok
    path.chmod(0o444)
    before = path.read_bytes()
    try:
        with pytest.raises(OpenClawConfigError, match="read-only") as e:
            apply_export(plan)
        assert "\n" not in str(e.value)
        assert path.read_bytes() == before and (path.stat().st_mode & 0o777) == 0o444
        assert not list(home.glob("openclaw.json.bak-*"))
    finally:
        path.chmod(0o644)


def test_export_keeps_a_bom(tmp_path: Path) -> None:
    home = build_home(tmp_path)
    path = home / "openclaw.json"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert open_home(home).load_config().settings().max_results == 3  # read despite the BOM
    plan = plan_export(path, _settings(home, max_results=5, mmr_enabled=True))
    assert plan.ok and len(plan.changes) == 2, plan.refused
    apply_export(plan)
    after = path.read_bytes()
    assert after.startswith(b"\xef\xbb\xbf") and not after.startswith(b"\xef\xbb\xbf" * 2)
    s = open_home(home).load_config().settings()
    assert (s.max_results, s.mmr_enabled) == (5, True)
    strict = tmp_path / "strict.json"
    strict.write_bytes(b"\xef\xbb\xbf" + json.dumps({"memory": {"search": {}}}).encode())
    plan = plan_export(strict, SearchSettings(max_results=2))
    assert plan.ok and plan.new_text.startswith("\ufeff"), plan.refused
