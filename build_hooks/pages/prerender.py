"""Markdown directives that place widgets and live numbers, prerendered in CPython.

    <!-- md:widget roofline batch=8 -->        a widget, on its own line (optional id=NAME,
                                               controls=a,b to show only those controls)
    <!-- md:value roofline.tpot_ms -->         a value of that instance, updated live
    <!-- md:value roofline.tpot_ms batch=1 --> a value at fixed parameters (not live)
    <!-- md:exercise kv_bytes -->              an exercise (exercises.py), on its own line, once a page

HTML comments, like mkdocs-material's own shortcodes, so an unprocessed page still reads.
Directives inside code spans and fenced blocks are left as they are. Their grammar, and the
build errors `file:line: what is wrong; what is allowed` for anything that only looks like
one, live in `directives.py`; a widget may sit indented in a list item or an admonition.
"""

from __future__ import annotations

import json
import os
import re
import traceback
from html import escape

from mkdocs.exceptions import PluginError

from widgets_py.engine import markup, registry
from widgets_py.engine.dom import Data, Id
from widgets_py.engine.params import ParamError

from . import directives, exercises, reference
from .directives import ALLOWED, DirectiveError, check_grid, check_id, split
from .widget_html import is_live, live_number, widget

SLOT = '<div class="tw-slot" data-slot="{}"></div>'


def fixed_values(name: str, raw: dict, cache: dict, code: str = "") -> tuple[dict, dict]:
    """(params, Catalan text of the values) at fixed parameters: numbers only, no figure,
    each distinct call computed once per build (`cache` is the build's `fixed`), or, in a
    dirty serve, once per `code` (its code_key: see warm_run)."""
    params = registry.validate_params(name, raw)
    key = code + name + json.dumps(params, sort_keys=True)
    if key not in cache:
        cache[key] = params, registry.formatted(name, reference.compute(name, params)[1])
    return cache[key]


def code_of(build, name: str) -> str:
    """In a dirty serve, a hash of the code `name` runs (dependencies.code_key); '' in a build."""
    return build.code_key(name) if build.code_key else ""


def warm_run(build, name: str, params: dict):
    """reference.run (measured values pinned: reproducible builds), each distinct call once per
    build, or, in a dirty serve, once per version of the code it runs (`build.warm`, hooks.py):
    an edit of one widget computes that widget's runs again, no other."""
    runs = build.warm.setdefault("runs", {})
    key = code_of(build, name) + name + json.dumps(params, sort_keys=True)
    if key not in runs:
        runs[key] = reference.run(name, params)
    return runs[key]


def failed_in_widget(exc: BaseException, frames: int = 3) -> str:
    """An exception raised by a widget's own code, short: the type and message, then the last
    few frames from where the build entered widgets_py (file from the repository's root,
    line, function, code): the widget's own line is the last."""
    stack = traceback.extract_tb(exc.__traceback__)
    entered = next((i for i, f in enumerate(stack) if f"{os.sep}widgets_py{os.sep}" in f.filename), 0)
    stack = stack[entered:]
    shown = "".join(f"\n    {registry.shown(f.filename)}:{f.lineno} a {f.name}(): {(f.line or '').strip()}"
                    for f in stack[-frames:])
    return f"un widget ha fallat amb {type(exc).__name__}: {exc}{shown}"


def on_page_markdown(markdown: str, *, page, config, files, build) -> str:
    slots: list[tuple[str, int]] = []  # (widget or exercise HTML, source line), by slot number
    instances: dict[str, tuple[str, dict, dict]] = {}  # id -> (widget, params, formatted values)
    placed: dict[str, int] = {}  # exercise -> the line that placed it
    used: set[str] = set()  # the widgets and exercises the page places or quotes (a dirty serve's dependencies)

    def place(d: directives.Directive) -> str:
        name, pairs = split(d.args)
        used.add(name)
        instance = check_id(pairs.pop("id", name))
        shown = pairs.pop("controls").split(",") if "controls" in pairs else None
        if shown:
            unknown = sorted(set(shown) - {p.name for p in registry.get(name).params})
            if unknown:
                raise ParamError(f"controls: paràmetre desconegut '{unknown[0]}' del widget '{name}'")
        if instance in instances:
            raise ParamError(f"dos widgets amb id '{instance}'; afegeix id=ALTRE al segon")
        params = registry.validate_params(name, pairs)
        check_grid(registry.get(name).params, pairs, params, shown)
        result = warm_run(build, name, params)
        drawn = markup.problems(result.figure + result.tables)
        if drawn:  # the page's sanitiser would drop it: the build says so first
            raise ParamError(f"el widget '{name}' dibuixa {', '.join(drawn)}, fora de la llista de "
                             "widgets_py/engine/markup.py (formes i text SVG, taules, les classes de CLASSES; cap enllaç ni script)")
        instances[instance] = (name, params, registry.formatted(name, result.values))
        slots.append((widget(name, instance, params, result, shown), d.line))
        return f"\n{d.indent}{SLOT.format(len(slots) - 1)}\n"  # indented as written: lists, admonitions

    def exercise(d: directives.Directive) -> str:
        name, pairs = split(d.args)
        if pairs:
            raise ParamError(f"md:exercise {name}: un exercici no pren paràmetres ({', '.join(pairs)}); "
                             "permès: '<!-- md:exercise NOM -->'")
        registry.exercise(name)  # an unknown name: the exercises there are
        used.add(name)
        if name in placed:
            raise ParamError(f"l'exercici '{name}' ja és en aquesta pàgina, a la línia {placed[name]}; "
                             "cada exercici hi va una sola vegada")
        unplaced = exercises.unplaced_figure(name, {widget for widget, _, _ in instances.values()})
        if unplaced:
            raise ParamError(unplaced)
        placed[name] = d.line
        slots.append((exercises.html(name, config), d.line))
        return f"\n{d.indent}{SLOT.format(len(slots) - 1)}\n"

    def value(d: directives.Directive) -> str:
        ref, pairs = split(d.args)
        instance, _, key = ref.rpartition(".")
        if instance in instances and not pairs:
            name, _, text = instances[instance]
            registry.get(name).output(key)
            return live_number(ref, text[key], None)
        if instance not in instances and instance not in registry.names():
            placed = ", ".join(sorted(instances)) or "cap"
            raise ParamError(f"md:value {ref}: '{instance}' no és cap widget d'aquesta pàgina (ids: {placed}) "
                             f"ni cap widget registrat; permès: ID.VALOR d'un md:widget de la pàgina, o "
                             f"NOM.VALOR clau=valor d'un widget de widgets_py")
        if instance not in instances and not pairs:  # silently fixed, had its widget been removed
            params = registry.get(instance).params
            example = f"<!-- md:value {ref} {params[0].name}={params[0].default} -->" if params else "cap: no en té"
            raise ParamError(f"md:value {ref}: el widget '{instance}' no és en aquesta pàgina, i un valor sense "
                             f"paràmetres hi quedaria fix sense dir-ho; permès: col·locar-lo (<!-- md:widget {instance} -->) "
                             f"perquè sigui viu, o escriure els paràmetres que el fixen ({example})")
        name, base, _ = instances.get(instance, (instance, {}, None))
        used.add(name)
        registry.get(name).output(key)
        params, text = fixed_values(name, {**base, **pairs}, build.warm.setdefault("fixed", build.fixed), code_of(build, name))
        return live_number(f"{name}.{key}", text[key], params)

    # Widgets first, values after, wherever they stand: a value written before its widget
    # follows it as one written after does (a page reads in any order).
    done: dict[int, str] = {}
    line = 0
    handlers = {"widget": place, "exercise": exercise, "value": value}  # in this order
    try:
        found = directives.scan(markdown, directives.line_offset(page.file.abs_src_path, markdown))
        for pending, handler in handlers.items():
            for i, d in enumerate(found):
                if d.kind == pending:
                    line = d.line
                    done[i] = handler(d)
    except DirectiveError as exc:
        raise PluginError(f"{directives.source(page)}:{exc.line}: {exc}") from None
    except ParamError as exc:  # the directive asked for something the widget does not offer
        raise PluginError(f"{directives.source(page)}:{line}: {exc}") from None
    except Exception as exc:  # a bug inside a widget: where it was asked for, and where it broke
        raise PluginError(f"{directives.source(page)}:{line}: {failed_in_widget(exc)}") from None
    out, last = [], 0
    for i, d in enumerate(found):
        if d.kind == "value":
            out += [markdown[last:d.start], done[i]]
            last = d.end
        else:  # a widget or an exercise replaces its whole line
            out += [markdown[last:d.line_start], done[i]]
            last = d.line_end
    build.slots[page.file.src_uri] = slots
    build.uses[page.file.src_uri] = used
    return "".join(out + [markdown[last:]])


def on_page_content(html: str, *, page, config, files, build) -> str:
    slots = build.slots.pop(page.file.src_uri, [])
    for i, (rendered, line) in enumerate(slots):
        tag = SLOT.format(i)
        if tag not in html:  # Markdown made it code: indented 4 spaces outside a list or an admonition
            raise PluginError(f"{directives.source(page)}:{line}: md:widget o md:exercise convertit en codi "
                              "per Markdown "
                              f"(sagnat 4 espais fora d'una llista o d'un avís?); {ALLOWED}")
        html = html.replace(f"<p>{tag}</p>", rendered).replace(tag, rendered)
    return html


def on_post_page(output: str, *, page, config, build) -> str:
    """Pages with widgets start Python from <head> (assets/tw/kernel.js), before the body parses.

    The site config is written once, on that script (#tw-config: kernel.js reads it as it
    starts, the page's scripts later). A page reached by instant navigation has it too:
    Material (9.8) adds the new page's <head> elements the old one lacks, without running
    them, and drops the old page's that the new one lacks.
    """
    if not is_live(output):
        return output
    root = "../" * page.url.count("/")
    tag = (f'<script src="{root}assets/tw/protocol.js"></script><script src="{root}assets/tw/kernel.js" '
           f'{config_attribute(build, output)} id="{Id.CONFIG}"></script>')
    return output.replace("</title>", "</title>" + tag, 1)


def config_attribute(build, output: str) -> str:
    """The site config as the kernel's <script> carries it (on_post_page), with the widgets of
    the page `output`, in its order (`page`: the worker boots with the first calculator's own
    package, worker.js)."""
    page = list(dict.fromkeys(re.findall(f'data-{Data.WIDGET}="([^"]+)"', output)))
    return f'data-{Data.CONFIG}="{escape(json.dumps({**build.site_config(), "page": page}), quote=True)}"'


def reconfigured(output: str, build) -> str:
    """A page rendered by an earlier build with this build's site config (the wheel's hash, the
    versions of what scripts load): what a dirty serve writes into the pages that place no
    edited widget, so that no page boots Python with another build's files."""
    attribute = config_attribute(build, output)
    return re.sub(f'data-{Data.CONFIG}="[^"]*"', lambda m: attribute, output, count=1)
