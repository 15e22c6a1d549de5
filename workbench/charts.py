"""Plotly figures of the workbench (interactive in the browser; CJK text renders with the
system's Noto CJK fonts)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from memory_core import FusionResult, Hit

from .tuning import GATED, RETURNED, hit_status

#: Colour of each additive score component (``Hit.components`` keys).
COMPONENT_COLOURS = {"vector": "#4C78A8", "text": "#F58518", "boost": "#54A24B",
                     "date": "#B279A2"}
DECAY_COLOUR = "#BAB0AC"
FONT = "Noto Sans CJK SC, Noto Sans, sans-serif"


def wrap(text: str, width: int = 60, lines: int = 6) -> str:
    """Escape ``text`` and break it into ``<br>``-joined lines for a hover label: greedy line
    filling (a word longer than a line is cut) without :mod:`textwrap`, ~4x cheaper, since a map
    wraps thousands (20k hovers: 2.6 s → 0.6 s here)."""
    words = text.split()
    out: list[str] = []
    cur = ""
    used = 0
    for w in words:
        if len(out) >= lines:
            break
        used += 1
        while len(w) > width:  # break a long word across lines
            if cur:
                out.append(cur)
                cur = ""
            out.append(w[:width])
            w = w[width:]
        if not cur:
            cur = w
        elif len(cur) + 1 + len(w) <= width:
            cur = f"{cur} {w}"
        else:
            out.append(cur)
            cur = w
    if cur:
        out.append(cur)
    cut = len(out) > lines or used < len(words)
    out = out[:lines]
    if cut and out:
        out[-1] = out[-1][: max(0, width - 2)].rstrip() + " …"
    return "<br>".join(html.escape(x, quote=False) for x in out)  # no &quot; in hovers


def lost_to_decay(h: Hit) -> float:
    """What temporal decay took from the hit (its score before decay minus after)."""
    return h.score / h.decay - h.score if 0 < h.decay < 1 else 0.0


def hit_label(i: int, h: Hit, status: str) -> str:
    """A hit's label on a composition chart: its rank (or gated / cut) and its citation."""
    tag = f"#{i}" if status == RETURNED else ("gated" if status == GATED else "cut")
    return f"{tag} {h.citation}"


def composition_figure(result: FusionResult, *, cut_limit: int) -> go.Figure:
    """Stacked horizontal bars: each hit's score split into its components.

    Removed hits (gated or cut) are drawn faded below the returned ones; a dashed line marks
    minScore, and the part temporal decay took away is shown hatched.
    """
    shown = [*result.hits, *result.below_gate[:cut_limit]]
    statuses = [hit_status(h) for h in shown]
    # unique labels keep plotly from merging bars of two chunks with one citation
    labels = [hit_label(i + 1, h, st_) + ("\u200b" * (i if st_ != RETURNED else 0))
              for i, (h, st_) in enumerate(zip(shown, statuses, strict=True))]
    opacity = [1.0 if x == RETURNED else 0.35 for x in statuses]
    keys: list[str] = []
    for h in shown:
        keys.extend(k for k in h.components if k not in keys)
    fig = go.Figure()
    hover = [wrap(h.snippet, 70, 5) for h in shown]
    for k in keys:
        fig.add_trace(go.Bar(
            y=labels, x=[h.components.get(k, 0.0) for h in shown], name=k, orientation="h",
            marker={"color": COMPONENT_COLOURS.get(k, "#72B7B2"), "opacity": opacity},
            customdata=[[st_, f"{h.score:.3f}", hv] for st_, h, hv in
                        zip(statuses, shown, hover, strict=True)],
            hovertemplate=(f"<b>%{{y}}</b><br>{k}: %{{x:.3f}} · score %{{customdata[1]}}"
                           "<br>%{customdata[0]}<br><br>%{customdata[2]}<extra></extra>")))
    lost = [lost_to_decay(h) for h in shown]
    if any(v > 0 for v in lost):
        fig.add_trace(go.Bar(
            y=labels, x=lost, name="lost to decay", orientation="h",
            marker={"color": "rgba(0,0,0,0)", "line": {"color": DECAY_COLOUR, "width": 1},
                    "pattern": {"shape": "/", "fgcolor": DECAY_COLOUR}},
            hovertemplate="<b>%{y}</b><br>lost to decay: %{x:.3f}<extra></extra>"))
    return _stacked_layout(fig, len(shown), result.settings.min_score or None)


def _stacked_layout(fig: go.Figure, bars: int, gate: float | None, **layout: Any) -> go.Figure:
    """The layout of a stacked bar chart of ``bars`` bars, with a dashed line at the gate
    (named in the legend) when there is one."""
    fig.update_layout(
        barmode="stack", height=max(220, 30 * bars + 110), font={"family": FONT},
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        yaxis={"autorange": "reversed", "automargin": True, "tickfont": {"size": 11}},
        xaxis={"title": "score", "rangemode": "tozero"}, **layout)
    if gate is not None:
        fig.add_vline(x=gate, line_dash="dash", line_color="#d62728")
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=f"minScore {gate:.2f}",
                                 line={"color": "#d62728", "dash": "dash"}, hoverinfo="skip"))
    return fig


def heatmap_figure(rows: Sequence[Mapping[str, Any]], x: str, y: str, metric: str,
                   title: str | None = None) -> go.Figure:
    """A heatmap of ``metric`` over two swept settings (best value where others vary too)."""
    df = pd.DataFrame(list(rows))
    pivot = df.pivot_table(index=y, columns=x, values=metric, aggfunc="max").sort_index()
    fig = go.Figure(go.Heatmap(
        z=pivot.values, x=[str(c) for c in pivot.columns], y=[str(i) for i in pivot.index],
        colorscale="Viridis", colorbar={"title": metric},
        text=[[f"{v:.3f}" for v in row] for row in pivot.values], texttemplate="%{text}",
        hovertemplate=f"{x} %{{x}}<br>{y} %{{y}}<br>{metric} %{{z:.3f}}<extra></extra>"))
    fig.update_layout(title=title or f"{metric} by {x} × {y}", height=460,
                      xaxis_title=x, yaxis_title=y, font={"family": FONT},
                      margin={"l": 10, "r": 10, "t": 50, "b": 10})
    return fig


def metrics_bar_figure(table: pd.DataFrame, metrics: Sequence[str]) -> go.Figure:
    """Grouped bars: one group per metric, one bar per run (rows of ``table``, indexed by run)."""
    fig = go.Figure()
    for run, row in table.iterrows():
        fig.add_trace(go.Bar(name=str(run), x=list(metrics),
                             y=[float(row[m]) for m in metrics]))
    fig.update_layout(barmode="group", height=360, yaxis={"range": [0, 1]},
                      font={"family": FONT}, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      legend={"orientation": "h", "y": 1.12})
    return fig


#: Colours of the promotion score components (spec §6.4).
PROMOTION_COLOURS = {"frequency": "#4C78A8", "relevance": "#F58518", "diversity": "#54A24B",
                     "recency": "#E45756", "consolidation": "#72B7B2", "conceptual": "#B279A2",
                     "phaseBoost": "#9D755D"}


def stacked_components_figure(labels: Sequence[str], components: Sequence[Mapping[str, float]],
                              faded: Sequence[bool], threshold: float | None = None,
                              hover: Sequence[str] | None = None) -> go.Figure:
    """Stacked horizontal bars of additive components, one bar per label (faded ones greyed).

    One hover box a bar lists every component, with the ``hover`` text once (in the first
    trace only: carried by every trace, it was most of a 400 kB figure, issue #35)."""
    keys: list[str] = []
    for c in components:
        keys.extend(k for k in c if k not in keys and any(x.get(k) for x in components))
    opacity = [0.35 if f else 1.0 for f in faded]
    fig = go.Figure()
    for n, k in enumerate(keys):
        with_text = n == 0 and hover is not None
        fig.add_trace(go.Bar(
            y=list(labels), x=[c.get(k, 0.0) for c in components], name=k, orientation="h",
            marker={"color": PROMOTION_COLOURS.get(k, COMPONENT_COLOURS.get(k, "#72B7B2")),
                    "opacity": opacity},
            customdata=list(hover) if with_text and hover is not None else None,
            hovertemplate=f"{k}: %{{x:.3f}}" + ("<br>%{customdata}" if with_text else "")
                          + "<extra></extra>"))
    return _stacked_layout(fig, len(labels), threshold, hovermode="y unified")
