"""Each hit's score split into its components, as plain HTML bars (Search & tune, issue #23).

The same picture as :func:`workbench.charts.composition_figure` (stacked components, removed
hits faded below the returned ones, the part temporal decay took hatched, a dashed line at
minScore), drawn as one ``st.html`` block of ``div`` widths instead of a Plotly figure: a
slider step redraws it in a few milliseconds, where the Plotly figure cost the browser more
than the rest of the fragment together (``benchmarks/bench_slider.py``). The interactive
figure stays one click away on the page.
"""

from __future__ import annotations

import html

from memory_core import FusionResult

from .charts import COMPONENT_COLOURS, DECAY_COLOUR, FONT, hit_label, lost_to_decay
from .tuning import RETURNED, hit_status

GATE_COLOUR = "#d62728"
OTHER_COLOUR = "#72B7B2"
HATCH = f"repeating-linear-gradient(135deg,{DECAY_COLOUR} 0 1.5px,transparent 1.5px 5px)"


def _pct(x: float, top: float) -> str:
    return f"{100 * max(x, 0.0) / top:.2f}%"


def _swatch(colour: str, name: str, *, background: str | None = None,
            border: str = "none") -> str:
    return (f'<span style="display:inline-flex;align-items:center;gap:4px;margin-right:12px">'
            f'<span style="width:12px;height:10px;background:{background or colour};'
            f'border:{border}"></span>{html.escape(name)}</span>')


def composition_html(result: FusionResult, *, cut_limit: int = 10) -> str:
    """The score composition of the returned hits and up to ``cut_limit`` removed ones."""
    s = result.settings
    shown = [*result.hits, *result.below_gate[:cut_limit]]
    keys: list[str] = []
    for h in shown:
        keys.extend(k for k in h.components if k not in keys)
    # the axis: the longest bar (components plus the part decay took) or the gate
    top = max([s.min_score, *(sum(max(v, 0.0) for v in h.components.values()) + lost_to_decay(h)
                              for h in shown)], default=1.0) * 1.05 or 1.0
    legend = [_swatch(COMPONENT_COLOURS.get(k, OTHER_COLOUR), k) for k in keys]
    if any(lost_to_decay(h) > 0 for h in shown):
        legend.append(_swatch(DECAY_COLOUR, "lost to decay", background=HATCH,
                              border=f"1px solid {DECAY_COLOUR}"))
    gate = ""
    if s.min_score > 0:
        legend.append(_swatch(GATE_COLOUR, f"minScore {s.min_score:.2f}", background="none",
                              border=f"1px dashed {GATE_COLOUR}"))
        gate = (f'<span style="position:absolute;top:-2px;bottom:-2px;left:'
                f'{_pct(s.min_score, top)};border-left:1.5px dashed {GATE_COLOUR}"></span>')
    rows = []
    for i, h in enumerate(shown, 1):
        status = hit_status(h)
        parts = "".join(
            f'<span title="{html.escape(k)} {v:.3f}" style="width:{_pct(v, top)};'
            f'background:{COMPONENT_COLOURS.get(k, OTHER_COLOUR)}"></span>'
            for k, v in h.components.items() if v > 0)
        lost = lost_to_decay(h)
        if lost > 0:
            parts += (f'<span title="lost to decay {lost:.3f}" style="width:{_pct(lost, top)};'
                      f'background:{HATCH};box-shadow:inset 0 0 0 1px {DECAY_COLOUR}"></span>')
        tip = html.escape(f"{status} · score {h.score:.3f} · "
                          + ", ".join(f"{k} {v:.3f}" for k, v in h.components.items())
                          + f"\n{' '.join(h.snippet.split())[:300]}", quote=True)
        fade = "" if status == RETURNED else "opacity:0.38;"
        rows.append(
            f'<div title="{tip}" style="display:flex;align-items:center;gap:8px;height:20px;'
            f'{fade}"><span style="flex:0 0 34%;overflow:hidden;text-overflow:ellipsis;'
            f'white-space:nowrap;text-align:right">{html.escape(hit_label(i, h, status))}</span>'
            '<span style="flex:1;position:relative;display:flex;height:13px">'
            f'{parts}{gate}</span><span style="flex:0 0 42px">{h.score:.3f}</span></div>')
    return (f'<div style="font-family:{FONT};font-size:12px;line-height:1.2">'
            f'<div style="margin:4px 0 8px">{"".join(legend)}</div>{"".join(rows)}'
            '<div style="display:flex;gap:8px"><span style="flex:0 0 34%"></span>'
            '<span style="flex:1;display:flex;justify-content:space-between;color:#808495">'
            f'<span>0</span><span>score</span><span>{top:.2f}</span></span>'
            '<span style="flex:0 0 42px"></span></div></div>')
