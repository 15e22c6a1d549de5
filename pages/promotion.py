"""Promotion: the diary facts the agent keeps recalling, scored for ``MEMORY.md`` with their
components; the diff applying them would make; apply and undo. A view over
``memory_core.promotion`` (spec §6)."""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime
from typing import Any

import pandas as pd
import streamlit as st

from memory_core import evaluation as ev
from memory_core import promotion as pr
from memory_core.base.dates import path_date
from memory_core.evaluation import dreaming as ev_dreaming
from workbench import charts, state

key = state.current_key()
st.title("Promotion")
state.index_caption(key)
idx = state.ensure_indexed(key)
st.caption(f"{key.label()} — short-term memories (dated diaries) that searches keep recalling "
           "become candidates for the long-term `MEMORY.md`.")
read_only = state.store_overrides(key.workspace) is not None or idx.readonly
if idx.readonly:
    st.info("The index is open read-only ($MEMORY_WORKBENCH_READONLY): candidates can be "
            "inspected; nothing is recorded, promoted or undone.")
elif read_only:
    st.info("This workspace is read-only evaluation data: candidates can be inspected, but "
            "nothing is written to its `MEMORY.md`.")

# ----------------------------------------------------------------------------- signals


def _query_sources() -> list[str]:
    """Labelled query sets whose queries can be replayed as a query log."""
    return [n for n in ev.available_query_sets()
            if n.startswith(("demo", "locomo")) and not n.endswith(":all")]


with st.expander("Seed recall signals (replay a query log)", expanded=False):
    st.caption("Runs each query through search and records its hits on dated diaries as "
               "recalls, spread over simulated days ending today, with the nightly daily-note "
               "ingestion after each day. Writes only to the index database.")
    sources = _query_sources()
    options = [*sources, "typed queries"]
    if st.session_state.get("promo_src") not in options:
        st.session_state["promo_src"] = ("demo" if "demo" in sources
                                         and idx.workspace.name == "demo-workspace"
                                         else "typed queries")
    src = st.selectbox("Queries", options, key="promo_src")
    typed = ""
    if src == "typed queries":
        typed = st.text_area("One query a line", key="promo_typed", height=120)
    r1, r2, r3 = st.columns(3)
    days = r1.slider("Simulated days", 1, 30, 7, key="promo_days")
    mode = r2.radio("Mode", ["repeat", "spread"], key="promo_mode", horizontal=True,
                    help="repeat: the whole log every day; spread: the log once, cut into days.")
    reset = r3.toggle("Forget earlier signals first", key="promo_reset")
    if st.button("Replay", key="promo_replay", disabled=idx.readonly):
        if src == "typed queries":
            queries = [q for q in typed.splitlines() if q.strip()]
        else:
            queries = [q.query for q in ev.load_query_set(src).queries]
        if not queries:
            st.warning("No queries to replay.")
        else:
            bar, progress = state.progress_bar("Replaying")
            rep = pr.replay(idx, queries, int(days), progress=lambda d, n: progress("search", d, n),
                            mode=mode, reset=reset)
            bar.empty()
            st.success(f"{rep.searches} searches over {rep.days} days ({rep.first_day} → "
                       f"{rep.last_day}): {rep.recalls_recorded} recalls and "
                       f"{rep.daily_recorded} daily signals recorded; {rep.entries} tracked "
                       f"entries, {rep.candidates} pass the default gates.")

with st.expander("The agent's real recalls, and the Light/REM phases", expanded=False):
    # memory_core.openclaw mines the transcripts; promotion records and dreams (spec §6.2-6.3)
    from memory_core import openclaw as oc

    oc_home = state.current_home(key)
    files = state.transcripts(key)
    real = state.mined_queries(key, files)
    st.caption(f"{len(real)} memory_search calls in {len(files)} transcripts: their results "
               "are recorded at their own times, as the reference's tool records them. The "
               "phases write staging reports under memory/dreaming/ and feed phaseBoost.")
    if st.button("Record the real recalls", key="promo_real", disabled=not real or read_only):
        rep_s = pr.replay_tool_results(idx, [(q.query, q.result_at or q.at, q.results_then)
                                             for q in real])
        st.success(f"{rep_s.answered} calls: {rep_s.recalls_recorded} recalls recorded; "
                   f"{rep_s.entries} tracked entries, {rep_s.candidates} pass the default gates.")
    # the options of `memory-core dream`, run through the same pr.dream; a home's own
    # dreaming settings (storage mode, lookbacks, limits) are where they start
    cfg_d = (pr.DreamingConfig.from_openclaw(oc.config.dreaming_settings(oc_home.raw))
             if oc_home else pr.DreamingConfig())
    modes = ["separate", "inline", "both"]
    o1, o2, o3, o4 = st.columns(4)
    phase = o1.radio("Phase", ["both", "light", "rem"], key="promo_phase", horizontal=True,
                     help="both: Light, then REM.")
    storage = o2.selectbox("Staging reports", modes, index=modes.index(cfg_d.storage),
                           key="promo_storage", help="separate: memory/dreaming/<phase>/DAY.md; "
                           "inline: a managed block in today's diary; both.")
    # on where there are transcripts (an OpenClaw home binds its agent to the workspace:
    # `dream --openclaw-home` always ingests them)
    sessions = o3.toggle("Ingest session transcripts", value=oc_home is not None or bool(files),
                         key="promo_sessions", help="signal 3: new transcript lines into "
                         "memory/.dreams/session-corpus/ (`dream --sessions`).")
    diary = o4.toggle("Write DREAMS.md", value=True, key="promo_diary",
                      help="append what the phases did to the dream diary (`dream --diary`).")
    if st.button("Run Light and REM", key="promo_dream", disabled=read_only):
        cfg_d.storage = storage
        cfg_d.ingest_sessions = bool(sessions)
        tz = oc.config.dreaming_timezone(oc_home.raw) if oc_home else None
        for r in pr.dream(idx, cfg_d, phase=phase, diary=bool(diary), timezone=tz):
            st.success(f"{r.phase}: {len(r.keys)} of {r.considered} recent entries picked"
                       + (f", {r.sessions_ingested} transcript lines ingested"
                          if sessions else "") + f"; wrote {', '.join(r.written) or 'nothing'}")

# ----------------------------------------------------------------------------- evaluation


@st.cache_data(show_spinner=False)
def _saved_dreaming() -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    runs, meta = ev_dreaming.saved_evaluation()
    return [ev_dreaming.summary(r) for r in runs], [r.to_dict() for r in runs], meta


@st.cache_data(show_spinner=False, max_entries=8)
def _replayed(conv: str, days: int) -> list[dict[str, Any]]:
    # a few session days of one conversation, both profiles, keyword-only: seconds, cached
    return [ev_dreaming.summary(r) for r in ev_dreaming.run_dreaming_eval([conv],
                                                                           max_days=days)]


def _sizes(runs: list[dict[str, Any]]) -> pd.DataFrame:
    """MEMORY.md's length after each night, per profile, with the budget."""
    cols = {r["profile"]: [d["memoryChars"] for d in r["days"]] for r in runs}
    frame = pd.DataFrame(cols)
    frame["budget"] = runs[0]["budget"]
    frame.index.name = "night"
    return frame


with st.expander("Dreaming evaluation: what promotion saved the agent, and its junk",
                 expanded=False):
    rows, saved_runs, meta = _saved_dreaming()
    st.caption(f"{meta['dataset']}, keyword-only, {meta['heldOut']}: each conversation is "
               "replayed day by day; the questions whose evidence lies in earlier sessions are "
               "asked through search on the three session days after it, and the nights run "
               "Light, REM and promotion. *Saved searches*: asks whose evidence lines were "
               "already in MEMORY.md; *junk*: promoted bullets that are evidence for no "
               "question. (`memory-core eval --dreaming`; docs/promotion.md section 6.)")
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="dream_saved")
    st.line_chart(_sizes(saved_runs), height=220)
    st.caption("MEMORY.md's length after each night (the conversations one after the other): "
               "the budget line is never crossed.")
    convs = ev_dreaming.conversations()
    if not convs:
        st.caption("LoCoMo dev is not beside the project (../shared/datasets): the figures "
                   "above are the saved evaluation; nothing can be replayed here.")
    else:
        e1, e2, e3 = st.columns([2, 2, 1])
        conv = e1.selectbox("Conversation", convs, key="dream_conv")
        ndays = e2.slider("Session days", 3, 35, 6, key="dream_days")
        if e3.button("Replay", key="dream_replay"):
            with st.spinner(f"Replaying {ndays} days of {conv} in both profiles…"):
                st.session_state["dream_last"] = (conv, ndays, _replayed(conv, int(ndays)))
        if st.session_state.get("dream_last"):
            c_, n_, got = st.session_state["dream_last"]
            st.caption(f"{c_}, its first {n_} session days:")
            st.dataframe(pd.DataFrame(got), hide_index=True, width="stretch", key="dream_live")

# ----------------------------------------------------------------------------- candidates

st.subheader("Candidates")
g = st.columns(6)
min_score = g[0].slider("minScore", 0.0, 1.0, 0.80, 0.01, key="promo_min_score")
min_recalls = g[1].number_input("minRecallCount", 0, 50, 3, key="promo_min_recalls")
min_unique = g[2].number_input("minUniqueQueries", 0, 50, 3, key="promo_min_unique")
max_age = g[3].number_input("maxAgeDays (−1: off)", -1, 365, 30, key="promo_max_age")
limit = g[4].number_input("limit", 1, 100, 10, key="promo_limit")
when = g[5].date_input("Now", value=None, key="promo_now", help="Empty: the clock.")
now: Any = (datetime(when.year, when.month, when.day, 23, 59, tzinfo=UTC)
            if isinstance(when, date) else None)

# read-only with no state store yet: there are no signals, and opening one would create it
no_state = idx.readonly and not pr.state_path(idx.workspace).is_file()
# once per gate values and state of the signals and MEMORY.md: a click elsewhere (a row, the
# selection, a toggle) reruns the page without scoring every tracked entry again
stamp = state.file_stamp(pr.state_path(idx.workspace), idx.workspace / "MEMORY.md")
gates = {"now": now, "min_score": float(min_score), "min_recall_count": int(min_recalls),
         "min_unique_queries": int(min_unique), "max_age_days": float(max_age),
         "limit": int(limit)}
cands = [] if no_state else state.memo("promo-candidates", key, (stamp, *gates.items()),
                                       lambda: pr.list_candidates(idx, **gates))
passed = [c for c in cands if c.passed]
m = st.columns(3)
m[0].metric("Tracked entries", len(cands))
m[1].metric("Pass the gates", len(passed))
m[2].metric("Likely duplicates of MEMORY.md",
            sum(1 for c in passed if c.duplicate is not None and c.duplicate.likely))
# issue #34: MEMORY.md lines a later memory line superseded, the newer line beside each
upd = pr.preview_update(idx) if not read_only else None
if upd is not None and upd.stale:
    st.subheader("Stale in MEMORY.md")
    st.dataframe(pd.DataFrame([{"line": s.line, "MEMORY.md says": s.text.strip(),
                                "newer line": s.newer_text.strip(), "where": s.superseded_by}
                               for s in upd.stale]), hide_index=True)
    st.code(upd.diff, language="diff", wrap_lines=True)
    if st.button("Update the stale lines", key="promo_stale"):
        try:
            pr.apply_update(idx, upd)
        except Exception as e:  # PromotionError: MEMORY.md changed since the preview
            st.error(f"Not updated: {e}")
        else:
            state.bump_generation(key)
            st.session_state["promo_last"] = (f"Updated {len(upd.stale)} stale line(s) of "
                                              "MEMORY.md (Undo last reverts it).")
            st.rerun()

if not cands:
    st.info("No recall signals yet. Search with “Record as recall” on Search & tune, or "
            "replay a query log above.")
    st.stop()


def _candidates_frame_and_chart(shown: list[Any], today: date, gate: float) -> tuple[Any, Any]:
    """The candidates' table and their stacked score components (built once per choice)."""
    table = pd.DataFrame([{
        "rank": c.rank, "passed": c.passed, "score": round(c.score, 3),
        "where": f"{c.path}#L{c.start_line}-L{c.end_line}",
        "duplicate?": ("" if c.duplicate is None else
                       f"{'likely' if c.duplicate.likely else 'no'} (jaccard "
                       f"{c.duplicate.jaccard:.2f}"
                       + (f", cosine {c.duplicate.cosine:.2f}" if c.duplicate.cosine is not None
                          else "") + ")"),
        # the figures the gates test, under their gates' names (the old "unique queries" column
        # showed distinct queries while minUniqueQueries tests queries/days: "1" passed a gate of 3)
        "signals (minRecallCount)": c.signals, "recalls": c.recall_count,
        "daily": c.daily_count, "queries/days (minUniqueQueries)": c.context_diversity,
        "distinct queries": c.unique_queries,
        "days": len(c.recall_days),
        # the diary's own age, and §6.4's recency age (since the last recall: 0 after a replay
        # ending today, which the old "age (days)" label passed off as the diary's age)
        "diary date": (d.isoformat() if (d := path_date(c.path)) else "—"),
        "diary age (days)": (today - d).days if d else None,
        "since recall (days)": round(c.age_days, 1),
        "why not": "; ".join(c.reasons),
        "snippet": " ".join(c.snippet.split())[:140],
    } for c in shown])
    labels = [f"{'✓' if c.passed else '·'} {c.path}#L{c.start_line}-L{c.end_line}" for c in shown]
    return table, charts.stacked_components_figure(  # a repeated label: one bar each all the same
        [x + "\u200b" * labels[:i].count(x) for i, x in enumerate(labels)],
        [c.components for c in shown], [not c.passed for c in shown], gate,
        [charts.wrap(c.snippet, 70, 4) for c in shown])


@st.fragment
def _candidates_view(cands: list[Any], passed: list[Any], today: date, gate: float) -> None:
    """The candidates' table and score components. A fragment: the toggle redraws this block,
    not the page (issue #35: a click within 3x a bare Streamlit rerun), from the table and
    figure built for the same choice before."""
    show_all = st.toggle("Show gated entries too", value=False, key="promo_show_all")
    table, fig = state.view_memo("promo", cands, (show_all, today, gate),
                                 lambda: _candidates_frame_and_chart(
                                     cands if show_all else (passed or cands[:10]), today, gate))
    st.dataframe(table, hide_index=True, width="stretch", key="promo_table",
                 column_config={"snippet": st.column_config.TextColumn(width="large"),
                                # in view at 1440 px: the citation whole, what may repeat
                                "where": st.column_config.TextColumn(width=220, pinned=True),
                                "duplicate?": st.column_config.TextColumn(width=230)})
    st.plotly_chart(fig, key="promo_chart")
    st.caption("Weighted components (§6.4): 0.24 frequency + 0.30 relevance + 0.15 diversity + "
               "0.15 recency (14-day half-life) + 0.10 consolidation + 0.06 conceptual.")


_candidates_view(cands, passed, now.date() if now is not None else datetime.now(UTC).date(),
                 float(min_score))

# ----------------------------------------------------------------------------- apply / undo

st.subheader("Apply to MEMORY.md")
keys = [c.key for c in passed]
# keyed by the candidate set: a new set of candidates starts fully selected
sel_key = "promo_chosen_" + hashlib.sha1("\n".join(keys).encode()).hexdigest()[:10]
chosen = st.multiselect("Candidates to promote", keys, default=keys, key=sel_key,
                        format_func=lambda k: next(f"{c.path}#L{c.start_line}-L{c.end_line} "
                                                   f"({c.score:.3f})" for c in passed
                                                   if c.key == k))
selected = [c for c in passed if c.key in chosen]
plan = state.memo("promo-plan", key, (stamp, now, tuple(c.key for c in selected)),
                  lambda: pr.preview_apply(idx, selected, now=now)) if selected else None
if plan is not None:
    if plan.diff:
        st.code(plan.diff, language="diff", wrap_lines=True)
    else:
        st.caption("Applying would change nothing.")
    if plan.skipped:
        st.warning("Skipped: " + "; ".join(f"`{k}`: {v}" for k, v in plan.skipped.items()))
    if plan.dropped_sections:
        st.info("To stay within the budget, these older promoted sections would be dropped: "
                + ", ".join(plan.dropped_sections))
    for w in plan.warnings:
        st.warning(w)
else:
    st.caption("Nothing selected: no change to preview.")

over_ok = True
if plan is not None and plan.changed and plan.over_budget:
    # the reference writes anyway and warns; here a person confirms going over the budget
    over_ok = st.checkbox("Apply anyway, over the budget", key="promo_over_ok",
                          help="MEMORY.md is loaded into every session: past its budget the "
                               "agent's context pays for every extra character.")
n_write = len(selected) - len(plan.skipped) if plan is not None else 0
if plan is not None and n_write != len(passed):
    # "Pass the gates 4" and an Apply that writes 3 must not be left to be noticed
    st.caption(f"{len(passed)} pass the gates; {len(selected)} selected; {n_write} would be "
               f"written" + (f" ({len(plan.skipped)} skipped, above)" if plan.skipped else "")
               + ".")
b1, b2, _ = st.columns([1, 1, 4])
if b1.button(f"Apply ({n_write})" if plan is not None else "Apply", type="primary",
             key="promo_apply",
             disabled=read_only or plan is None or not plan.changed or not over_ok):
    try:
        res = pr.apply(idx, plan)
    except Exception as e:  # PromotionError: something changed since the preview
        st.error(f"Not applied: {e}")
    else:
        state.bump_generation(key)
        st.session_state["promo_last"] = (
            f"Promoted {len(res.applied)} entr{'y' if len(res.applied) == 1 else 'ies'} into "
            f"`{res.memory_path.name}`" + (f" (backup `{res.backup_path}`)"
                                           if res.backup_path else "") + ".")
        st.rerun()
if b2.button("Undo last", key="promo_undo", disabled=read_only):
    res_u = pr.undo(idx)
    state.bump_generation(key)
    st.session_state["promo_last"] = res_u.message if res_u.restored else (
        f"Nothing undone: {res_u.message}")
    st.rerun()
if st.session_state.get("promo_last"):
    st.success(st.session_state["promo_last"])

with st.expander("MEMORY.md now"):
    try:
        st.code(idx.file_text("MEMORY.md"), language="markdown")
    except FileNotFoundError:
        st.caption("(no MEMORY.md)")
