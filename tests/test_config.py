"""Config is validated when it is loaded (issue #13 item 9).

Each bad ``memory-workbench.toml`` below used to load: a string or number went into the
dataclasses as it was and failed later with a traceback (``5.format``, ``'<' not supported``),
was read letter by letter (``extra_paths = "notes"``), or silently turned the index keyword-only
(an unknown provider with no fallback). Now ``load_config`` raises :class:`ConfigError`, one line
naming the key and what it expects, and every CLI command exits 2 with that line, no traceback,
and nothing written into the workspace.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.base.config import (
    CONFIG_CLASSES,
    CONFIG_FILE,
    ConfigError,
    SearchSettings,
    check_values,
    load_config,
    setting_meta,
)
from memory_core.cli import main as cli_main

from .conftest import ROOT

#: (TOML text, words the one-line error must contain: the key, then what it expects)
BAD: list[tuple[str, tuple[str, ...]]] = [
    ("[store]\npath = 5\n", ("store.path", "expects a string", "got 5")),
    ('[store]\nbusy_timeout_ms = "x"\n', ("store.busy_timeout_ms", "expects an integer")),
    ("[store]\nbusy_timeout_ms = true\n", ("store.busy_timeout_ms", "expects an integer")),
    ('[search]\nmin_score = "high"\n', ("search.min_score", "expects a number", '"high"')),
    ("[search]\nmin_score = nan\n", ("search.min_score", "finite")),
    ("sources = 5\n", ("sources", "expects a table")),
    ("search = 5\n", ("search", "expects a table")),
    ("[sources]\nextra_paths = [{bogus = 1}]\n",
     ("sources.extra_paths[0].bogus: unknown key", "sources.extra_paths[0].path: is required")),
    ("[sources]\nextra_paths = [5]\n", ("sources.extra_paths", "path or a { path, pattern }")),
    ('[sources]\nextra_paths = "notes"\n', ("sources.extra_paths", "expects a list", '["notes"]')),
    ('[sources]\nsources = ["memory", "notes"]\n', ("sources.sources[1]", "'sessions'")),
    ("[chunking]\ntokens = 0\n", ("chunking.tokens", "greater than or equal to 1")),
    ("[chunking]\ntokens = -5\n", ("chunking.tokens", "greater than or equal to 1")),
    ("[chunking]\ntokens = 100\noverlap = 100\n",
     ("chunking.overlap (100) must be smaller than chunking.tokens (100)",)),
    ("[chunking]\ntokens = 50\n", ("chunking.overlap (80)", "chunking.tokens (50)")),
    ('[store]\npath = ".memory/{profile}.sqlite"\n',
     ("store.path", "unknown placeholder {profile}", "{chunking}, {provider}")),
    ('[store]\npath = ".memory/{chunking.sqlite"\n', ("store.path", "not a valid path template")),
    ('[provider]\nprovider = "bogus"\nfallback = []\n',
     ("provider.provider", "'local'", "'none'", '"bogus"')),
    ('[provider]\nfallback = ["nonesuch"]\n', ("provider.fallback[0]", '"nonesuch"')),
    ('profile = "fast"\n', ("profile", "'reference' or 'default'")),
    ("[stroe]\npath = 'x.sqlite'\n", ("stroe: unknown key",)),
]
IDS = [toml.split("\n")[0][:40] + ("…" if toml.count("\n") > 1 else "") for toml, _ in BAD]


def _ws(tmp_path: Path, toml: str) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- PG_POOL_MAX is 32.\n", encoding="utf-8")
    (ws / CONFIG_FILE).write_text(toml, encoding="utf-8")
    return ws


def _snapshot(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() if p.is_file() else b"<dir>"
            for p in sorted(ws.rglob("*"))}


@pytest.mark.parametrize(("toml", "words"), BAD, ids=IDS)
def test_load_config_names_the_key_and_what_it_expects(tmp_path: Path, toml: str,
                                                       words: tuple[str, ...]) -> None:
    ws = _ws(tmp_path, toml)
    with pytest.raises(ConfigError) as err:
        load_config(ws)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(str(ws / CONFIG_FILE) + ": ")
    for w in words:
        assert w in msg, msg
    assert isinstance(err.value, ValueError)  # what the CLI maps to exit code 2


@pytest.mark.parametrize(("toml", "words"), BAD, ids=IDS)
def test_cli_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   toml: str, words: tuple[str, ...]) -> None:
    ws = _ws(tmp_path, toml)
    before = _snapshot(ws)
    code = cli_main(["search", "PG_POOL_MAX", "-w", str(ws), "--provider", "none"])
    out, errtext = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = [ln for ln in errtext.splitlines() if ln.strip()]
    assert len(lines) == 1, errtext
    assert lines[0].startswith("memory-core: error: ")
    for w in words:
        assert w in lines[0], lines[0]
    assert _snapshot(ws) == before  # no index created, nothing of the user's touched


def test_cli_process_has_no_traceback(tmp_path: Path) -> None:
    """The same, as a user runs it: a real process, several sub-commands."""
    ws = _ws(tmp_path, '[sources]\nextra_paths = "notes"\n')
    for args in (["index"], ["status"], ["search", "pool"]):
        proc = subprocess.run([sys.executable, "-m", "memory_core", *args, "-w", str(ws)],
                              capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and "sources.extra_paths: expects a list" in lines[0], proc.stderr
    assert not (ws / ".memory").exists()


def test_overrides_are_validated_the_same_way(tmp_path: Path) -> None:
    ws = _ws(tmp_path, "")
    with pytest.raises(ConfigError, match=r"^overrides: store\.busy_timeout_ms: expects an int"):
        load_config(ws, {"store": {"busy_timeout_ms": "x"}})
    with pytest.raises(ConfigError, match=r"^overrides: search\.max_results"):
        load_config(ws, {"search": {"max_results": 0}})
    with pytest.raises(ConfigError, match=r"unknown placeholder \{nope\}"):
        load_config(ws, {"store": {"path": "/tmp/{nope}.sqlite"}})
    # a file and the overrides together: the cross-key rule sees the merged values
    (ws / CONFIG_FILE).write_text("[chunking]\ntokens = 50\n", encoding="utf-8")
    assert load_config(ws, {"chunking": {"overlap": 10}}).chunking.tokens == 50
    with pytest.raises(ConfigError, match="overlap"):
        load_config(ws, {"chunking": {"overlap": 60}})


def test_unknown_provider_argument_is_refused(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """``--provider bogus`` used to start keyword-only without a word; now exit 2."""
    ws = _ws(tmp_path, "")
    with pytest.raises(ConfigError, match="unknown provider \"bogus\""):
        MemoryIndex.open(ws, provider="bogus")
    assert cli_main(["search", "pool", "-w", str(ws), "--provider", "bogus"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("memory-core: error: provider: unknown provider \"bogus\"")
    assert cli_main(["search", "pool", "-w", str(ws), "--provider", "none",
                     "--db", str(tmp_path / "{what}.sqlite")]) == 2
    assert "unknown placeholder {what}" in capsys.readouterr().err
    assert not (ws / ".memory").exists()


def test_valid_configs_still_load(tmp_path: Path) -> None:
    ws = _ws(tmp_path, """profile = "reference"
[sources]
extra_paths = ["notes", { path = "docs", pattern = "*.md" }]
[chunking]
tokens = 200
overlap = 0
[search]
max-results = 3
min_score = 0
[provider]
provider = "none"
fallback = []
timeout_s = 5
[store]
path = "{{literal}}/{chunking}-{provider}.sqlite"
""")
    cfg = load_config(ws)
    assert [(e.path, e.pattern) for e in cfg.sources.extra_paths] == [
        ("notes", "**/*.md"), ("docs", "*.md")]
    assert (cfg.chunking.tokens, cfg.chunking.overlap, cfg.chunking.mode) == (200, 0, "reference")
    s = cfg.settings()
    assert (s.max_results, s.min_score, s.fusion) == (3, 0.0, "reference")
    assert isinstance(s.min_score, float) and isinstance(cfg.provider.timeout_s, float)
    assert cfg.provider.fallback == []
    assert cfg.store_path(ws) == ws / "{literal}" / "reference-none.sqlite"


# --------------------------------------------------------------------------- one door (issue 20)

#: (argv after the workspace flags, words of the one line): each door refuses what is out of
#: the declared range, names the field as that door spells it, and exits 2
OUT_OF_RANGE: list[tuple[list[str], tuple[str, ...]]] = [
    (["search", "pool", "--vector-weight", "5"], ("search: --vector-weight", "less than or "
                                                   "equal to 1", "got 5.0")),
    (["search", "pool", "--min-score", "2"], ("search: --min-score", "got 2.0")),
    (["search", "pool", "--max-results", "0"], ("search: --max-results", "greater than")),
    (["search", "pool", "--candidate-multiplier", "0"], ("--candidate-multiplier",)),
    # the real limits are the declared ones (issue #32): refused, not clamped without a word
    (["search", "pool", "--candidate-multiplier", "50"], ("search: --candidate-multiplier",
                                                          "less than or equal to 20", "got 50")),
    (["search", "pool", "--max-results", "1000"], ("search: --max-results",
                                                   "less than or equal to 100", "got 1000")),
    (["eval", "--queries", "demo", "--set", "candidate_multiplier=21"],
     ("eval --set: candidate_multiplier", "less than or equal to 20")),
    (["eval", "--queries", "demo", "--set", "vector_weight=5"],
     ("eval --set: vector_weight", "less than or equal to 1")),
    (["eval", "--queries", "demo", "--set", "fusion=bogus"],
     ("eval --set: fusion", "'reference', 'rrf' or 'normalized'")),
    (["eval", "--queries", "demo", "--grid", "min_score=0,1.5", "--sweep"],
     ("eval --grid: min_score", "got 1.5")),
    (["eval", "--queries", "demo", "--set", "cjk_vector_weight=2"],
     ("eval --set: cjk_vector_weight", "less than or equal to 1")),
    (["eval", "--queries", "demo", "--set", "cjk_vector_weight=half"],
     ("cjk_vector_weight=half: not a number (or none)",)),
]


@pytest.mark.parametrize(("argv", "words"), OUT_OF_RANGE,
                         ids=[" ".join(a[2:] if a[0] == "search" else a[3:]) for a, _ in
                              OUT_OF_RANGE])
def test_every_cli_door_refuses_out_of_range_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
        words: tuple[str, ...]) -> None:
    ws = _ws(tmp_path, "")
    before = _snapshot(ws)
    code = cli_main([*argv, "-w", str(ws), "--provider", "none"])
    out, errtext = capsys.readouterr()
    assert code == 2, errtext
    assert out == ""
    lines = [ln for ln in errtext.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("memory-core: error: "), errtext
    for w in words:
        assert w in lines[0], lines[0]
    assert _snapshot(ws) == before  # refused before any index was built


def test_toml_door_refuses_out_of_range_search_setting(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _ws(tmp_path, "[search]\nvector_weight = 5\n")
    assert cli_main(["search", "pool", "-w", str(ws), "--provider", "none"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "search.vector_weight: expects a value less than or equal to 1" \
        in lines[0], lines


def test_python_api_door_checks_overrides(tmp_path: Path) -> None:
    """``MemoryIndex.settings(**overrides)`` and ``search(min_score=...)`` check the same way
    (they used to take 5 and clamp 2 without a word)."""
    ws = _ws(tmp_path, "")
    with MemoryIndex.open(ws, provider="none") as idx:
        assert idx.settings(vector_weight=0.25).vector_weight == 0.25
        assert idx.settings(vector_weight=None) == idx.settings()  # None: not given
        with pytest.raises(ConfigError, match=r"^settings: vector_weight: .*less than or equal"):
            idx.settings(vector_weight=5)
        with pytest.raises(ConfigError, match=r"^settings: fusion: "):
            idx.settings(fusion="bogus")
        with pytest.raises(ConfigError, match=r"^settings: bogus: unknown key"):
            idx.settings(bogus=1)
        with pytest.raises(ConfigError, match=r"^search: min_score: "):
            idx.search("pool", min_score=2)
        with pytest.raises(ConfigError, match=r"^search: max_results: expects an integer"):
            idx.search("pool", max_results=2.5)


def test_workbench_door_checks_widget_values() -> None:
    from workbench.tuning import apply_values, slider_range

    base = SearchSettings()
    assert apply_values(base, {"vector_weight": 0.4, "now_ms": None}).vector_weight == 0.4
    with pytest.raises(ConfigError, match="workbench: min_score"):
        apply_values(base, {"min_score": 1.5})
    # slider bounds come from the declaration and lie inside the declared range
    for name in ("max_results", "min_score", "vector_weight", "text_weight", "date_hint",
                 "candidate_multiplier", "rrf_k", "mmr_lambda", "half_life_days"):
        r = slider_range(name)
        for bound in (r["min_value"], r["max_value"]):
            assert check_values(SearchSettings, {name: bound}, "t") == {name: bound}


def test_every_setting_is_declared_with_help() -> None:
    """One declaration per setting: every config field has a help text, and ranges are
    declared where the validator enforces them."""
    for dc in CONFIG_CLASSES:
        for f in dataclasses.fields(dc):
            if f.metadata.get("internal"):
                continue
            if dc.__name__ == "MemoryConfig" and f.name != "profile":
                continue  # the tables themselves
            assert setting_meta(dc, f.name)["help"], (dc.__name__, f.name)
    meta = setting_meta(SearchSettings, "fusion")
    assert meta["choices"] == ["reference", "rrf", "normalized"]
    assert (setting_meta(SearchSettings, "min_score")["ge"],
            setting_meta(SearchSettings, "min_score")["le"]) == (0.0, 1.0)


def test_cli_flags_are_generated_from_the_declaration(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli_main(["search", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--fusion {reference,rrf,normalized}" in text
    assert "the vector leg's weight (≥ 0.0, ≤ 1.0)" in text


def test_every_default_passes_the_validator_unchanged() -> None:
    """Each dataclass's defaults, written back as a file would hold them, are valid and read
    back equal, types included (an int default of a float field would come back a float)."""
    for dc in CONFIG_CLASSES:
        defaults = dc() if dc.__name__ != "ExtraPath" else dc("x")
        plain = {f.name: getattr(defaults, f.name) for f in dataclasses.fields(dc)
                 if not f.metadata.get("internal") and not dataclasses.is_dataclass(
                     getattr(defaults, f.name)) and f.name != "extra_paths"}
        checked = check_values(dc, plain, "defaults")
        assert checked == {k: v for k, v in plain.items() if v is not None}, dc.__name__
        assert [type(v) for v in checked.values()] == [
            type(v) for v in plain.values() if v is not None], dc.__name__


def test_the_engine_declares_which_settings_need_a_new_fetch() -> None:
    """The settings that change what the candidates hold are declared on the setting
    (``setting(fetch=True)``), and the workbench's candidate cache reads that declaration
    (``SearchSettings.fetch_key``) instead of restating it (issue #32)."""
    from memory_core.base.config import FETCH_SETTINGS

    assert set(FETCH_SETTINGS) == {"keyword_query", "cjk_bigrams", "drop_question_frame",
                                   "block_rescore", "prf_terms", "prf_docs",
                                   "prf_weight", "decompose"}
    base = SearchSettings()
    fused_only = dataclasses.replace(base, vector_weight=0.1, min_score=0.9)
    assert fused_only.fetch_key() == base.fetch_key()
    for name, value in (("keyword_query", "or"), ("prf_terms", 5), ("decompose", 0.5),
                        ("block_rescore", 5)):
        assert dataclasses.replace(base, **{name: value}).fetch_key() != base.fetch_key(), name
    state = (ROOT / "workbench" / "state.py").read_text(encoding="utf-8")
    assert "settings.fetch_key()" in state and "settings.keyword_query" not in state
