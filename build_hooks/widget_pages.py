"""Markdown directives that place widgets and live numbers, prerendered in CPython.

    <!-- md:widget roofline batch=8 -->        a widget, on its own line (optional id=NAME,
                                               controls=a,b to show only those controls)
    <!-- md:value roofline.tpot_ms -->         a value of that instance, updated live
    <!-- md:value roofline.tpot_ms batch=1 --> a value at fixed parameters (not live)

HTML comments, like mkdocs-material's own shortcodes, so an unprocessed page still reads.
Directives inside code spans and fenced blocks are left as they are.
"""

from __future__ import annotations

import json
import re
import shlex
from html import escape

from mkdocs.exceptions import PluginError

from widgets_py.engine import registry
from widgets_py.engine.params import ParamError

from .widget_html import live_number, widget

CODE = re.compile(r"(^(```|~~~).*?^\2[ \t]*$|`[^`\n]+`)", re.M | re.S)
WIDGET = re.compile(r"^<!-- md:widget (.+?) -->[ \t]*$", re.M)
VALUE = re.compile(r"<!-- md:value (.+?) -->")
SLOT = '<div class="tw-slot" data-slot="{}"></div>'


def fixed_values(name: str, raw: dict, cache: dict) -> tuple[dict, dict]:
    """(params, Catalan text of the values) at fixed parameters: numbers only, no figure,
    each distinct call computed once per build (`cache` is the build's `fixed`)."""
    params = registry.validate_params(name, raw)
    key = name + json.dumps(params, sort_keys=True)
    if key not in cache:
        cache[key] = params, registry.formatted(name, registry.compute(name, params)[1])
    return cache[key]


def _split(args: str) -> tuple[str, dict[str, str]]:
    head, *rest = shlex.split(args)
    pairs = {}
    for item in rest:
        key, sep, value = item.partition("=")
        if not sep:
            raise ParamError(f"'{item}' no té la forma clau=valor")
        pairs[key] = value
    return head, pairs


def _outside_code(markdown: str, fn) -> str:
    """Apply `fn` to the parts of the text that are not code."""
    out, last = [], 0
    for m in CODE.finditer(markdown):
        out += [fn(markdown[last:m.start()]), m.group(0)]
        last = m.end()
    return "".join(out + [fn(markdown[last:])])


def on_page_markdown(markdown: str, *, page, config, files, build) -> str:
    slots: list[str] = []
    instances: dict[str, tuple[str, dict, dict]] = {}  # id -> (widget, params, formatted values)

    def place(m: re.Match) -> str:
        name, pairs = _split(m.group(1))
        instance = pairs.pop("id", name)
        shown = pairs.pop("controls").split(",") if "controls" in pairs else None
        if shown:
            unknown = sorted(set(shown) - {p.name for p in registry.get(name).params})
            if unknown:
                raise ParamError(f"controls: paràmetre desconegut '{unknown[0]}' del widget '{name}'")
        if instance in instances:
            raise ParamError(f"dos widgets amb id '{instance}'; afegeix id=ALTRE al segon")
        params = registry.validate_params(name, pairs)
        result = registry.run(name, params)
        instances[instance] = (name, params, registry.formatted(name, result.values))
        slots.append(widget(name, instance, params, result, shown))
        return "\n" + SLOT.format(len(slots) - 1) + "\n"

    def value(m: re.Match) -> str:
        ref, pairs = _split(m.group(1))
        instance, _, key = ref.rpartition(".")
        if instance in instances and not pairs:
            name, _, text = instances[instance]
            registry.get(name).output(key)
            return live_number(ref, text[key], None)
        name, base, _ = instances.get(instance, (instance, {}, None))
        registry.get(name).output(key)
        params, text = fixed_values(name, {**base, **pairs}, build.fixed)
        return live_number(f"{name}.{key}", text[key], params)

    try:
        markdown = _outside_code(markdown, lambda part: WIDGET.sub(place, part))
        markdown = _outside_code(markdown, lambda part: VALUE.sub(value, part))
    except (ParamError, ValueError) as exc:
        raise PluginError(f"{page.file.src_uri}: {exc}") from None
    build.slots[page.file.src_uri] = slots
    return markdown


def on_page_content(html: str, *, page, config, files, build) -> str:
    slots = build.slots.pop(page.file.src_uri, [])
    for i, rendered in enumerate(slots):
        tag = SLOT.format(i)
        if tag not in html:
            raise PluginError(f"{page.file.src_uri}: widget {i} was lost by Markdown (is it indented?)")
        html = html.replace(f"<p>{tag}</p>", rendered).replace(tag, rendered)
    if slots or "tw-live" in html or "tw-fixed" in html:
        # a data attribute, not a <script type="application/json">: Material's instant
        # navigation re-creates the scripts of a new page, and would run this one as JS
        html += f'<div id="tw-config" hidden data-config="{escape(json.dumps(build.site_config()), quote=True)}"></div>'
    return html


def on_post_page(output: str, *, page, config, build) -> str:
    """Pages with widgets start Python from <head> (assets/tw/kernel.js), before the body parses."""
    if 'id="tw-config"' not in output:
        return output
    root = "../" * page.url.count("/")
    tag = (f'<script src="{root}assets/tw/protocol.js"></script><script src="{root}assets/tw/kernel.js" '
           f'data-config="{escape(json.dumps(build.site_config()), quote=True)}"></script>')
    return output.replace("</title>", "</title>" + tag, 1)
