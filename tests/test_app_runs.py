"""AppTests of saved runs on the Evaluate page and of labels marked in Search & tune."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.apptesting import OpenApp


def _table(at: AppTest, column: str):  # the first table with that column (a DataFrame)
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_save_two_runs_compare_them_and_open_a_loss(open_app: OpenApp, demo_ws: Path) -> None:
    at = open_app(demo_ws, "pages/evaluate.py", timeout=300)
    assert any("No saved run yet" in c.value for c in at.caption)
    at.radio(key="eval_b").set_value("reference").run()
    at.toggle(key="eval_legs").set_value(False).run()
    at.button(key="eval_run").click().run()
    assert not at.exception and not at.error
    for label in ("B: reference profile", "A: tuned"):  # baseline first, so B is the newest
        at.selectbox(key="eval_save_which").set_value(label).run()
        at.button(key="eval_save").click().run()
        assert not at.exception and any("Saved run" in s.value for s in at.success)
    runs = _table(at, "query_set")
    assert len(runs) == 2 and set(runs["n_queries"]) == {27}
    pickers = {s.label: s.value for s in at.selectbox if s.label.startswith("Run ")}
    assert pickers["Run A (baseline)"] != pickers["Run B (change)"]
    assert pickers["Run B (change)"].endswith("A-tuned")  # the newest run is B
    # several runs against A at once, p-values adjusted over the family (issue #35)
    b_id = at.selectbox(key=next(s.key for s in at.selectbox if s.label == "Run B (change)"))
    at.multiselect(key="eval_many").set_value([b_id.value]).run()
    at.button(key="eval_many_run").click().run()
    many = _table(at, "p (Holm)")
    assert len(many) == 1 and many["p (Holm)"].iloc[0] >= many["p-value"].iloc[0]
    at.button(key="eval_cmp_runs").click().run()
    cmp = _table(at, "p-value")
    assert list(cmp["metric"])[:5] == ["ndcg@10", "mrr@10", "recall@5", "recall@10", "success@1"]
    assert ((cmp["ci low"] <= cmp["delta"]) & (cmp["delta"] <= cmp["ci high"])).all()
    assert ((cmp["p-value"] > 0) & (cmp["p-value"] <= 1)).all()
    pick = at.selectbox(key="eval_cmp_pick")
    losses = [o for o in pick.options if o.startswith("loss")]
    opened = losses[0] if losses else pick.options[0]
    pick.set_value(opened).run()
    assert not at.exception
    sides = [d.value for d in at.dataframe if list(d.value.columns) == ["rank", "gold", "hit",
                                                                         "score"]]
    assert len(sides) == 2  # A's and B's hit lists, side by side
    side_a, side_b = sides
    assert len(side_a) + len(side_b) > 0  # (a loss may be a run that returned nothing)
    assert "★" in set(side_a["gold"]) | set(side_b["gold"])  # a win or loss has a gold hit


def test_labels_marked_in_search_are_evaluated(open_app: OpenApp, demo_ws: Path) -> None:
    search = open_app(demo_ws, "pages/search.py")
    search.text_input(key="search_query").input("PgBouncer port").run()
    assert not [r for r in search.radio if (r.key or "").startswith("lbl_")]  # drawn when open
    search.session_state["search_labels"] = True
    search.run()
    radios = [r for r in search.radio if (r.key or "").startswith("lbl_")]
    assert len(radios) >= 2
    first = radios[0].key
    other = next(r.key for r in radios[1:]
                 if r.key.split("#")[0] != first.split("#")[0])  # a hit in another file
    search.radio(key=first).set_value("relevant").run()
    search.button(key="search_save_labels").click().run()
    assert not search.exception and any("1 hit(s)" in s.value for s in search.success)
    labels = list(demo_ws.parent.rglob("labels/qrels.txt"))
    assert len(labels) == 1 and "memory" not in labels[0].parts[-3:-1]

    def evaluate() -> dict[str, float]:
        at = open_app(demo_ws, "pages/evaluate.py", timeout=300)
        at.selectbox(key="eval_set").set_value("labels").run()
        at.toggle(key="eval_legs").set_value(False).run()
        at.button(key="eval_run").click().run()
        assert not at.exception and not at.error
        return dict(_table(at, "ndcg@10").loc["A: tuned"])

    top = evaluate()
    assert top["success@1"] == 1.0 and top["mrr@10"] == 1.0
    # the first hit is not relevant after all; one in another file is
    search.radio(key=first).set_value("not relevant").run()
    search.radio(key=other).set_value("relevant").run()
    search.button(key="search_save_labels").click().run()
    moved = evaluate()
    assert moved["success@1"] == 0.0 and moved["success@10"] == 1.0
    assert 0 < moved["mrr@10"] < 1.0


def test_a_sweep_cell_applied_to_search_and_tune(open_app: OpenApp, demo_ws: Path) -> None:
    at = open_app(demo_ws, "pages/search.py", timeout=300)  # its sliders drawn once already
    assert at.slider(key="t_vector_weight").value != 0.3
    at.switch_page("pages/evaluate.py").run()
    at.toggle(key="eval_legs").set_value(False).run()
    at.button(key="eval_run").click().run()
    at.button(key="eval_sweep").click().run()
    assert not at.exception
    at.selectbox(key="eval_cell_vw").set_value(0.3).run()
    at.selectbox(key="eval_cell_ms").set_value(0.1).run()
    at.button(key="eval_apply_cell").click().run()
    assert any("vector weight 0.3" in s.value for s in at.success)
    at.switch_page("pages/search.py").run()
    assert not at.exception
    assert at.slider(key="t_vector_weight").value == 0.3
    assert at.slider(key="t_text_weight").value == 0.7
    assert at.slider(key="t_min_score").value == 0.1
