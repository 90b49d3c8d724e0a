"""Static HTML of one widget instance: controls, prerendered figure, values and tables.

The page is complete with JavaScript off: controls start disabled and the figure is
the one CPython computed at build time, drawn once per layout (engine.svg: wide, and
compact for a phone's column), each in its slot `[data-layout]` of `.tw-figure`; tw.css
shows the one the figure's box fits. The browser host only enables the controls and swaps
the parts marked here (a figure's slot, `[data-value]`, `.tw-tables`). The names the scripts
look up are engine/dom.py's (C, D here), generated into protocol.js for them.
"""

from __future__ import annotations

import json
from html import escape

from widgets_py.engine import registry
from widgets_py.engine.dom import Class as C
from widgets_py.engine.dom import Data as D
from widgets_py.engine.params import Param


def _attr(value) -> str:
    return escape(json.dumps(value, ensure_ascii=False, separators=(",", ":")), quote=True)


GRID_MIN = 50  # positions from which an evenly spaced integer slider is sent as [min, step, count]


def is_grid(p: Param) -> bool:
    """A slider whose positions are min, min + step, … and whose labels are the plain integers
    (fmt.number): url-state.js computes both, as tw.slider does, instead of reading lists."""
    return p.kind == "int" and not p.ticks and not p.unit and p.off is None and len(p.positions()) >= GRID_MIN


def control(p: Param, value, uid: str) -> str:
    cid = escape(f"{uid}-{p.name}")  # uid carries the page's id= option: every attribute is escaped
    help_html = f'<small class="tw-help" id="{cid}-help">{escape(p.help)}</small>' if p.help else ""
    described = f' aria-describedby="{cid}-help"' if p.help else ""
    if p.kind == "choice":
        options = "".join(
            f'<option value="{escape(v)}"{" selected" if v == value else ""}>{escape(lab)}</option>'
            for v, lab in p.choices
        )
        field = f'<select id="{cid}" name="{escape(p.name)}"{described} disabled>{options}</select>'
        return f'<div class="{C.CONTROL}"><label for="{cid}">{escape(p.label)}</label>{field}{help_html}</div>'
    if p.kind == "bool":
        checked = " checked" if value else ""
        field = f'<input type="checkbox" id="{cid}" name="{escape(p.name)}"{checked}{described} disabled>'
        return f'<div class="{C.CONTROL} tw-check"><label for="{cid}">{field}{escape(p.label)}</label>{help_html}</div>'
    positions = p.positions()
    index = p.nearest_index(value)
    if is_grid(p):  # a long run of integers (a seed): three numbers, not a list of thousands
        grid = f'data-{D.GRID}="{_attr([positions[0], positions[1] - positions[0], len(positions)])}"'
    else:
        grid = f'data-{D.POSITIONS}="{_attr(positions)}" data-{D.LABELS}="{_attr([p.display(v) for v in positions])}"'
    field = (
        f'<input type="range" id="{cid}" name="{escape(p.name)}" min="0" max="{len(positions) - 1}" step="1" '
        f'value="{index}" data-{D.KIND}="{p.kind}" {grid} '
        f'aria-valuetext="{escape(p.display(value))}"{described} disabled>'
    )
    return (
        f'<div class="{C.CONTROL}"><label for="{cid}">{escape(p.label)} '
        f'<output for="{cid}">{escape(p.display(value))}</output></label>{field}{help_html}</div>'
    )


def figure(result: registry.Result) -> str:
    """The figure's slots, one per layout drawn: the page is right at any width before Python
    arrives (figures.js puts a redrawn layout in its slot and marks the others stale)."""
    drawn = result.figures or (("wide", result.figure),)
    return "".join(f'<div class="tw-layout" data-{D.LAYOUT}="{escape(name)}">{svg}</div>' for name, svg in drawn)


def params_line(w: registry.Widget, params: dict, shown: list[str] | None) -> str:
    """The parameters the figure shows, as text: printed in place of the controls (tw.css
    @media print); url-state.js rewrites it from the controls when the reader moves them."""
    parts = []
    for p in w.params:
        if shown is not None and p.name not in shown:
            continue
        parts.append(f"{p.label}: {p.display(params[p.name])}")
    return f'<p class="{C.PARAMS}" data-print="params">Paràmetres: {escape("; ".join(parts))}.</p>' if parts else ""


def widget(name: str, instance: str, params: dict, result: registry.Result, shown: list[str] | None = None) -> str:
    """One line of HTML (no blank lines, so Markdown leaves it alone).

    shown: the parameters that get a control (default: all); the others stay fixed at
    their value, carried in hidden inputs so the browser recomputes with them.
    """
    w = registry.get(name)
    uid = f"tw-{instance}"
    # a second instance on a page (its id= option) names its landmarks apart (axe: landmark-unique)
    named = escape(w.title if instance == name else f"{w.title} ({instance})")
    controls = "".join(
        control(p, params[p.name], uid) if shown is None or p.name in shown
        else f'<input type="hidden" name="{escape(p.name)}" data-{D.JSON}="{_attr(params[p.name])}">'
        for p in w.params
    )
    text = registry.formatted(name, result.values)
    values = "".join(
        f'<div data-{D.VALUE}="{escape(o.name)}"><dt>{escape(o.label)}</dt><dd>{escape(text[o.name])}</dd></div>'
        for o in w.outputs if o.panel
    )
    # a region that may scroll sideways: reachable by keyboard and named (axe: scrollable-region-focusable)
    tables = (f'<div class="{C.TABLES}" tabindex="0" role="region" aria-label="Taules: {named}">'
              f'{result.tables}</div>') if result.tables else ""
    train = (
        f'<div class="{C.TRAIN}"><button type="button" class="{C.TRAIN_START}" disabled>Entrena des de zero</button>'
        f'<button type="button" class="{C.TRAIN_CANCEL}" hidden>Atura</button>'
        f'<progress class="{C.TRAIN_PROGRESS}" max="1" value="0" hidden></progress>'
        f'<span class="{C.TRAIN_STATUS}" role="status" aria-live="polite"></span></div>'
    ) if w.trainable else ""
    flags = (f' data-{D.AUTORUN}="true"' if w.autorun else "") + (f' data-{D.MODELS}="true"' if w.models else "")
    return (
        f'<div class="{C.WIDGET}" id="{escape(uid)}" data-{D.WIDGET}="{escape(name)}" data-{D.INSTANCE}="{escape(instance)}" '
        f'data-{D.STATE}="static" data-{D.PARAMS}="{_attr(params)}"{flags}>'
        f'<div class="{C.HEAD}"><p class="{C.TITLE}">{escape(w.title)}</p>'
        f'<p class="{C.STATUS}" role="status" aria-live="polite">Figura calculada en construir la pàgina.</p>'
        f'<progress class="{C.PROGRESS}" max="1" value="0" hidden></progress></div>'
        f'<div class="{C.BODY}"><form class="{C.CONTROLS}" aria-label="Controls: {named}">{controls}{train}</form>'
        f'<figure class="{C.FIGURE}">{figure(result)}</figure>'
        f'<dl class="{C.VALUES}" aria-live="polite">{values}</dl>{tables}</div>'
        f'{params_line(w, params, shown)}</div>'
    )


def is_live(html: str) -> bool:
    """Whether a page holds a widget, a value in prose or an exercise: then it boots Python
    (prerender.on_post_page) and says how its code panels behave and where the editor is
    (codepanel.py: an exercise's editor is the panel's)."""
    return any(f'class="{c}' in html for c in (C.WIDGET, C.LIVE, C.FIXED, C.EXERCISE))


LONG_TEXT = 24  # characters from which a value in prose (a sampled text, not a number) may wrap


def live_number(ref: str, text: str, params: dict | None) -> str:
    """A value inside prose: bound to a widget instance (`data-live`) or fixed parameters.
    A number keeps its unit on its line; a long text (a generated sample) wraps, or a phone's
    page would scroll sideways (issue 28)."""
    wrap = " tw-wrap" if len(text) >= LONG_TEXT else ""
    if params is None:
        return f'<span class="{C.LIVE}{wrap}" data-{D.LIVE}="{escape(ref)}">{escape(text)}</span>'
    return f'<span class="{C.FIXED}{wrap}" data-{D.FIXED}="{escape(ref)}" data-{D.PARAMS}="{_attr(params)}">{escape(text)}</span>'

