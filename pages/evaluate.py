"""Evaluate: a labelled query set → Recall@k, Success@k, MRR, nDCG per leg and for the hybrid;
a sweep heatmap; the queries one setting wins and the other loses. A view over
``memory_core.evaluation``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from memory_core import evaluation as ev
from memory_core import openclaw as oc
from memory_core.evaluation import longmemeval as lme
from memory_core.evaluation import runs as saved_runs
from workbench import charts, evalruns, state, tuning

key = state.current_key()
idx = state.open_index(key)
st.title("Evaluate")
state.index_caption(key)

oc_home = state.current_home(key)
if oc_home is not None:  # an agent's real queries: label-free metrics (memory_core.openclaw)
    real = state.mined_queries(key, state.transcripts(key))
    with st.expander(f"Real queries of agent {oc_home.agent}: {len(real)}, no labels needed",
                     expanded=True):
        if real:
            runs = {"tuned (Search & tune)": state.tuned_settings(key),
                    "the agent's (openclaw.json)": oc_home.load_config().settings()}
            rows_real = state.memo(
                "real-metrics", key, (tuple((q.query, q.at) for q in real),
                                      tuple((k, repr(v)) for k, v in runs.items())),
                lambda: oc.metrics_rows(state.ensure_indexed(key), real, runs))
            st.dataframe(pd.DataFrame(rows_real), hide_index=True, width="stretch",
                         key="eval_real")
            st.caption("Zero results then: what the agent got; now: these settings. Overlap@k: "
                       "share of the results then still in the top k now. Details: Real queries.")
        else:
            st.caption("No memory_search call in the agent's transcripts.")

labels = evalruns.label_store(key)
with st.expander("Your own labels: upload a query set"):
    st.caption(f"Kept as qrels beside the index, in `{labels.folder}` (never in the "
               "workspace's Markdown). Hits marked in Search & tune land there too.")
    up_q = st.file_uploader("Queries: our JSONL (with `relevant`), BEIR queries.jsonl or TREC "
                            "topics", key="eval_up_queries")
    up_r = st.file_uploader("Qrels: TREC or BEIR TSV (not needed for our JSONL)",
                            key="eval_up_qrels")
    if up_q is not None and st.button("Import labels", key="eval_import"):
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            qpath = Path(tmp) / (up_q.name or "queries.jsonl")
            qpath.write_bytes(up_q.getvalue())
            rpath = None
            if up_r is not None:
                rpath = Path(tmp) / ("qrels-" + (up_r.name or "qrels.txt"))
                rpath.write_bytes(up_r.getvalue())
            try:
                n = labels.import_files(qpath, rpath)
                st.success(f"{n} labelled queries imported: choose the query set **labels**.")
            except (ValueError, OSError) as e:
                st.error(f"Cannot import: {e}")


#: The metrics a per-query comparison (wins and losses, several runs against A) is read on.
PER_QUERY_METRICS = ["ndcg@10", "mrr@10", "success@5", "recall@5"]


def _many_runs_section(by_id: dict[str, Any], a_id: str, run_name: Any) -> None:
    """Several runs against run A at once, their p-values adjusted for the family (Holm)."""
    with st.expander("Several runs against A (multiple-testing correction)"):
        picked = st.multiselect("Runs", [i for i in by_id if i != a_id], key="eval_many",
                                format_func=run_name)
        metric = st.selectbox("Metric", PER_QUERY_METRICS, key="eval_many_metric")
        if picked and st.button("Compare with A", key="eval_many_run"):
            try:
                frame = evalruns.compare_many(by_id[a_id], [by_id[i] for i in picked], metric)
            except ValueError as e:
                st.error(f"Cannot compare: {e}")
                return
            st.dataframe(frame.style.format("{:.4f}", subset=[
                "A", "run's", "delta", "ci low", "ci high", "p-value", "p (Holm)"]),
                hide_index=True, width="stretch", key="eval_many_table")
            st.caption("Paired randomization test of each run against A (2,000 rounds, seed "
                       "42); p (Holm): Holm–Bonferroni adjusted over these runs — read it, "
                       "not the raw p, when several runs are tested at once.")


def _saved_runs_section() -> None:
    """The saved runs: list, compare two (intervals, p-values), open a win or a loss."""
    st.subheader("Saved runs")
    runs = saved_runs.list_runs()
    if not runs:
        st.caption(f"No saved run yet in `{saved_runs.runs_dir()}`: run an evaluation and "
                   "press **Save run** (or `memory-core eval … --save-run`).")
        return
    st.dataframe(pd.DataFrame([r.summary() for r in runs]), hide_index=True, width="stretch",
                 key="eval_runs_table")
    by_id = {r.id: r for r in runs}
    ids = list(by_id)

    def run_name(i: str) -> str:
        return f"{by_id[i].name} · {i}"

    # new pickers when a run is saved (the browser keeps a picker's value): B the newest again
    tag = f"{len(ids)}-{ids[0]}"
    c1, c2 = st.columns(2)
    a_id = c1.selectbox("Run A (baseline)", ids, index=min(1, len(ids) - 1),
                        key=f"eval_run_a-{tag}", format_func=run_name)
    b_id = c2.selectbox("Run B (change)", ids, index=0, key=f"eval_run_b-{tag}",
                        format_func=run_name)
    if st.button("Compare runs", key="eval_cmp_runs"):
        try:
            st.session_state["eval_run_cmp"] = ((a_id, b_id), saved_runs.compare_saved(
                by_id[a_id], by_id[b_id]))
        except ValueError as e:
            st.error(f"Cannot compare: {e}")
    _many_runs_section(by_id, a_id, run_name)
    stored_cmp = st.session_state.get("eval_run_cmp")
    if not stored_cmp or stored_cmp[0] != (a_id, b_id):
        return
    cmp = stored_cmp[1]
    for note in evalruns.mismatch_notes(by_id[a_id], by_id[b_id]):
        st.warning(f"These runs are not of one setup: {note}.")
    st.markdown(f"**{cmp.label_a}** (A) vs **{cmp.label_b}** (B): {cmp.n_queries} queries, "
                f"{cmp.settings['level']} level")
    st.dataframe(evalruns.comparison_frame(cmp).style.format(
        "{:.4f}", subset=["A", "B", "delta", "ci low", "ci high", "p-value"]),
        hide_index=True, width="stretch", key="eval_cmp_table")
    st.caption(f"95 % paired-bootstrap interval of B − A and two-sided paired randomization "
               f"test, {cmp.settings['rounds']} rounds each, seed {cmp.settings['seed']}. "
               f"Regressions (first gold rank fell by more than {cmp.settings['threshold']}): "
               f"{len(cmp.regressions)}.")
    options = evalruns.outcome_options(cmp)
    if not options:
        st.caption("No query differs on nDCG@10.")
        return
    pick = st.selectbox("Open a win or a loss (of B, on nDCG@10)", list(options), index=None,
                        key="eval_cmp_pick", placeholder="choose a query")
    if pick is None:
        return
    fa, fb = evalruns.side_frames(by_id[a_id], by_id[b_id], options[pick])
    left, right = st.columns(2)
    for col, tag, label, frame in ((left, "a", cmp.label_a, fa), (right, "b", cmp.label_b, fb)):
        col.markdown(f"**{tag.upper()}: {label}**" + ("" if len(frame) else " (no hit)"))
        col.dataframe(frame, hide_index=True, width="stretch", key=f"eval_side_{tag}")
    st.caption("★ gold: the hit holds a labelled evidence line (or is a relevant file).")


if lme.available():  # LongMemEval-S by the benchmark's metric (memory_core.evaluation)
    with st.expander("LongMemEval-S: the benchmark's own session-level metric"):
        lc = st.columns([1.4, 1.4, 1])
        lme_n = int(lc[0].select_slider("Questions (stratified by type)", [6, 12, 30, 60, 249],
                                        value=6, key="lme_n"))
        lme_variants: list[str] = list(lme.VARIANTS)
        lme_variant = str(lc[1].selectbox("Haystack written as", lme_variants,
                                          format_func=lambda v: lme.VARIANTS[str(v)],
                                          key="lme_variant"))
        if lc[2].button("Run LongMemEval-S", key="lme_run"):
            lme_bar, lme_progress = state.progress_bar("LongMemEval-S")
            lme_rep = lme.run_longmemeval(lme_n, lme_variant, progress=lme_progress)
            lme_bar.empty()
            st.session_state["lme_rows"] = lme.summary_rows(lme_rep, lme_variant)
        if st.session_state.get("lme_rows"):
            st.dataframe(pd.DataFrame(st.session_state["lme_rows"]), hide_index=True,
                         width="stretch", key="lme_table")
        st.caption("One index per question (the local model; ~1-2 min a question on a busy "
                   "2-core machine). Ranked list: gate off, 50 results (what peers publish); "
                   "agent: the profile's settings. Published figures: docs/retrieval.md.")

sets = ev.available_query_sets() + (["labels"] if labels.exists() else [])
if not sets:
    st.info("No labelled query set is available on this machine (the demo's queries, "
            "`../shared/datasets` or your own labels).")
    _saved_runs_section()
    st.stop()

if "eval_set" not in st.session_state:  # the demo set labelled against the open workspace
    st.session_state["eval_set"] = next(
        (n for n in ("demo-home", "demo") if n in sets
         and ev.same_workspace(ev.load_query_set(n).workspaces[""] or "", idx.workspace)),
        sets[0])
top = st.columns([1.6, 1.4, 1])
name = top[0].selectbox("Query set", sets, key="eval_set")
try:
    qs = labels.query_set() if name == "labels" else ev.load_query_set(name)
except Exception as e:  # DatasetMissing, a malformed file…
    st.error(f"Cannot load {name}: {e}")
    st.stop()
workspaces = {k: Path(p) for k, p in qs.workspaces.items() if p is not None}
skipped = ", ".join(f"{v} {k}" for k, v in qs.skipped.items()) or "none"
st.caption(f"{qs.description or qs.name} · {len(qs.queries)} queries · judged at "
           f"{qs.level} level · skipped: {skipped}")

single = next(iter(workspaces.values())) if len(workspaces) == 1 else None
matches = single is not None and ev.same_workspace(single, idx.workspace)
targets = (["open"] if not workspaces else ["open", "own"] if single is not None else ["own"])
target_labels = {"open": f"the open index ({idx.workspace.name})",
                 "own": "the query set's own workspace(s)"}
default_target = "open" if (matches or not workspaces) else "own"
per_ws = max(len([q for q in qs.queries if q.workspace == w]) for w in
             {q.workspace for q in qs.queries}) if qs.queries else 0
if st.session_state.get("eval_for") != (name, str(idx.workspace)):
    # a new query set or workspace: start from its sensible defaults
    st.session_state["eval_for"] = (name, str(idx.workspace))
    st.session_state["eval_target"] = default_target
    st.session_state["eval_limit"] = 0 if per_ws <= 60 else 50
if st.session_state.get("eval_target") not in targets:
    st.session_state["eval_target"] = default_target
target = top[1].radio("Evaluate against", targets, key="eval_target",
                      format_func=target_labels.__getitem__)
if target == "open" and single is not None and not matches:
    st.warning(f"This query set is labelled against `{single}`, but the open workspace is "
               f"`{idx.workspace}`: the labels only make sense on a copy of it.")
limit = top[2].number_input("Queries per workspace (0 = all)", 0, max(per_ws, 1), step=10,
                            key="eval_limit")

a_settings = state.tuned_settings(key)
c1, c2 = st.columns([1.6, 2.4])
b_choice = c1.radio(f"Compare A (the {key.profile} profile as tuned on Search & tune) with B =",
                    state.b_choices(key), key="eval_b", format_func=state.B_LABELS.__getitem__,
                    horizontal=True)
b_settings = state.b_settings(key, b_choice)
legs = c2.toggle("Also each leg alone", value=True, key="eval_legs",
                 help="The vector leg and the keyword leg of A, each ranked alone (no gate).")
can_qmd = bool(workspaces) and len(workspaces) == len(qs.workspaces)
qmd_too = c2.toggle("Also qmd (BM25)", value=False, key="eval_qmd", disabled=not can_qmd,
                    help="The real qmd backend on the set's own workspace(s), at the "
                         "reference's limits (4 results) and at 10 (docs/qmd.md)." if can_qmd
                    else "qmd needs the query set's own workspace(s).")

label_a, label_b = "A: tuned", f"B: {state.B_LABELS[b_choice]}"
run_target: Any = idx if target == "open" else None
run_id = (name, target, key, int(limit), legs, qmd_too, repr(a_settings), repr(b_settings))

ro = run_target is not None and idx.readonly  # the evaluator would sync it
if st.button("Run evaluation", type="primary", key="eval_run", disabled=ro,
             help="Disabled: the index is open read-only." if ro else None):
    bar, progress = state.progress_bar("Evaluating")
    if run_target is not None:
        state.sync_index(key)
    try:
        report = ev.run_eval(run_target, qs, {label_a: a_settings, label_b: b_settings},
                             progress, profile=key.profile, provider=key.provider or None,
                             legs=legs, limit=int(limit) or None)
        if qmd_too:
            from memory_core.evaluation.backend_eval import run_qmd_eval

            report.runs.extend(run_qmd_eval(qs, progress=progress,
                                            limit=int(limit) or None).runs)
    except Exception as e:
        st.error(f"Evaluation failed: {e}")
        st.stop()
    finally:
        bar.empty()
    st.session_state["eval_report"] = (run_id, report)

stored = st.session_state.get("eval_report")
if not stored:
    st.info("Press **Run evaluation**: A and B are measured on the same fetched candidates "
            "(one embedding and one keyword query per query).")
    _saved_runs_section()
    st.stop()
stored_id, report = stored
if stored_id != run_id:
    st.caption("The report below was made with other choices; run again to refresh it.")

METRICS = [f"{m}@{k}" for m in ("recall", "success") for k in (1, 3, 5, 10)] + ["mrr@10",
                                                                               "ndcg@10"]


def _metrics_parts(report: Any, level: str) -> tuple[Any, Any, Any]:
    """The metrics table, its bar chart and the by-category table (None with one category) at
    ``level``, built once per report and level: a level click switches between them."""
    table = pd.DataFrame({r.label: {m: r.metrics[level][m] for m in METRICS}
                          for r in report.runs}).T
    table["zero results"] = [r.metrics["zero_result_rate"] for r in report.runs]
    table["p50 ms"] = [r.metrics.get("latency_ms", {}).get("p50", float("nan"))
                       for r in report.runs]
    cats = report.runs[0].metrics.get("by_category") or {}
    rows = []  # by category, when there are several
    for r in (report.runs if len(cats) > 1 else []):
        bc = r.metrics.get("by_category", {})
        rows.append({"run": r.label, **{
            f"{c} ({bc[c]['n_queries']})": f"{bc[c][level]['success@5']:.3f} / "
                                           f"{bc[c][level]['recall@5']:.3f}"
            for c in cats if c in bc}})
    return table, charts.metrics_bar_figure(table, ["success@1", "success@5", "recall@5",
                                                    "recall@10", "mrr@10", "ndcg@10"]), (
        pd.DataFrame(rows) if rows else None)


@st.fragment
def _metrics_view(report: Any) -> None:
    """The report's metrics at the level picked here. A fragment: a level click redraws this
    block, not the page (issue #35: a click within 3x a bare Streamlit rerun)."""
    level = st.radio("Level", ["chunk", "file"], key="eval_level", horizontal=True,
                     help="file: chunks collapsed to their files (compares chunkers fairly).")
    table, fig, cat_rows = state.view_memo("eval-metrics", report, (level,),
                                           lambda: _metrics_parts(report, level))
    st.subheader(f"Metrics ({level} level, {report.runs[0].metrics['n_queries']} queries)")
    st.dataframe(table, width="stretch", column_config=evalruns.metric_columns(METRICS),
                 key="eval_metrics")
    st.plotly_chart(fig, key="eval_bars")
    if cat_rows is not None:
        with st.expander("By category (Success@5 / Recall@5)"):
            st.dataframe(cat_rows, hide_index=True, width="stretch")


def _diffs_frame(run_a: Any, run_b: Any, metric: str) -> tuple[int, int, Any]:
    """A's wins, the differing queries, and their table on ``metric`` (once per metric)."""
    diffs = ev.compare(run_a, run_b, metric)
    if not diffs:
        return 0, 0, None
    df = pd.DataFrame(diffs)
    cols = [c for c in ["qid", "category", "query", "a", "b", "delta", "a_first_rank",
                        "b_first_rank", "winner"] if c in df.columns]
    df = tuning.blank_ranks(df, [c for c in ("a_first_rank", "b_first_rank") if c in df])
    return sum(1 for d in diffs if d["winner"] == run_a.label), len(diffs), df[cols].rename(
        columns={"a": f"{metric} A", "b": f"{metric} B", "a_first_rank": "first gold A",
                 "b_first_rank": "first gold B"})


@st.fragment
def _wins_losses(report: Any) -> None:
    """The queries A wins and B wins on the metric picked here (a fragment, as above)."""
    st.subheader("Wins and losses (A vs B)")
    metric = st.selectbox("Per-query metric", PER_QUERY_METRICS, key="eval_cmp_metric")
    try:
        run_a, run_b = report.run(label_a), report.run(label_b)
    except KeyError:
        run_a, run_b = report.runs[0], report.runs[1] if len(report.runs) > 1 else report.runs[0]
    wins_a, n_diff, table = state.view_memo("eval-diffs", report,
                                            (run_a.label, run_b.label, metric),
                                            lambda: _diffs_frame(run_a, run_b, metric))
    m1, m2, m3 = st.columns(3)
    m1.metric(f"{run_a.label} wins", wins_a)
    m2.metric(f"{run_b.label} wins", n_diff - wins_a)
    m3.metric("Ties", report.runs[0].metrics["n_queries"] - n_diff)
    if table is None:
        st.caption("No query differs on this metric.")
        return
    st.dataframe(table, hide_index=True, width="stretch", key="eval_diffs")


_metrics_view(report)
if report.audit:
    with st.expander(f"Leg audit of {report.audit['config']} (pool {report.audit['pool']})"):
        st.dataframe(pd.DataFrame([report.audit["summary"]]), hide_index=True, width="stretch")
        st.caption("Which leg found a gold chunk within the pool fusion sees, and how often the "
                   "minScore gate or the maxResults cut removed one.")

# ----------------------------------------------------------------------------- wins and losses

_wins_losses(report)
st.download_button("Download the report (Markdown)", report.to_markdown(),
                   file_name=f"eval-{name.replace(':', '-')}.md", key="eval_md")
sv1, sv2, sv3 = st.columns([1.2, 1.6, 0.8])
to_save = sv1.selectbox("Run to save", [r.label for r in report.runs], key="eval_save_which")
save_name = sv2.text_input("Name", value=f"{name} {to_save}", key=f"eval_save_name_{to_save}")
if sv3.button("Save run", key="eval_save"):
    which = [r.label for r in report.runs].index(to_save)
    saved = saved_runs.save_run(report, qs, save_name or None, run_index=which,
                                level="file" if qs.level == "files" else "chunk")
    st.success(f"Saved run `{saved.id}` (TREC file, settings, index, code version, metrics).")

# ----------------------------------------------------------------------------- sweep

st.subheader("Sweep: vector weight × minScore")
st.caption("Every combination re-fuses the same cached candidates of A's keyword options "
           "(text weight = 1 − vector weight).")
if st.button("Run sweep", key="eval_sweep"):
    bar, progress = state.progress_bar("Evaluating")
    try:
        rows = ev.sweep(run_target, qs, a_settings, None, progress, profile=key.profile,
                        provider=key.provider or None, limit=int(limit) or None)
    except Exception as e:
        st.error(f"Sweep failed: {e}")
        st.stop()
    finally:
        bar.empty()
    st.session_state["eval_sweep_rows"] = (run_id, rows)
sweep_state = st.session_state.get("eval_sweep_rows")
if sweep_state:
    rows = sweep_state[1]
    metric_cols = [k for k in rows[0] if k not in ("vector_weight", "min_score")] if rows else []
    hm_metric = st.selectbox("Heatmap metric", metric_cols, key="eval_hm_metric",
                             index=metric_cols.index("success@5") if "success@5" in metric_cols
                             else 0)
    st.plotly_chart(charts.heatmap_figure(rows, "vector_weight", "min_score", hm_metric),
                    key="eval_heatmap")
    best, n_tied = evalruns.best_cells(rows, hm_metric,
                                       (a_settings.vector_weight, a_settings.min_score))
    st.caption(f"Best {hm_metric}: {best[hm_metric]:.3f} at vector weight "
               f"{best['vector_weight']}, minScore {best['min_score']}"
               + (f" — tied by {n_tied} of {len(rows)} cells; the one nearest the current "
                  f"settings (vector weight {a_settings.vector_weight}, minScore "
                  f"{a_settings.min_score}) is shown." if n_tied > 1 else "."))
    cc = st.columns([1, 1, 1.2])
    vws = list(dict.fromkeys(r["vector_weight"] for r in rows))
    mss = list(dict.fromkeys(r["min_score"] for r in rows))
    cell_vw = cc[0].selectbox("Cell: vector weight", vws, index=vws.index(best["vector_weight"]),
                              key="eval_cell_vw")
    cell_ms = cc[1].selectbox("Cell: minScore", mss, index=mss.index(best["min_score"]),
                              key="eval_cell_ms")
    if cc[2].button("Apply to Search & tune", key="eval_apply_cell"):
        evalruns.apply_cell(key, {"vector_weight": cell_vw, "min_score": cell_ms})
        st.success(f"Search & tune now uses vector weight {cell_vw}, text weight "
                   f"{round(1 - float(cell_vw), 6)}, minScore {cell_ms}.")

_saved_runs_section()
