"""Typesets the pages' TeX as MathML at build time: no KaTeX, no MathJax, no CDN.

pymdownx.arithmatex (generic mode) marks formulas as `<span class="arithmatex">\\(…\\)</span>`
and `<div class="arithmatex">\\[…\\]</div>`; each is replaced by the MathML that
latex2mathml produces, which browsers render natively.
"""

from __future__ import annotations

import re
from html import unescape

from latex2mathml.converter import convert
from mkdocs.exceptions import PluginError

from . import directives

INLINE = re.compile(r'<span class="arithmatex">\\\((.+?)\\\)</span>', re.S)
BLOCK = re.compile(r'<div class="arithmatex">\\\[(.+?)\\\]</div>', re.S)


def _mathml(tex: str, display: str, page) -> str:
    try:
        mathml = convert(unescape(tex).strip(), display=display)
        return mathml.replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "")  # implied in HTML
    except Exception as exc:  # latex2mathml raises many types; name the formula instead
        raise PluginError(f"{directives.source(page)}: cannot typeset ${tex}$: {exc}") from None


def on_page_content(html: str, *, page, config, files, build) -> str:
    html = BLOCK.sub(lambda m: f'<div class="tw-math">{_mathml(m.group(1), "block", page)}</div>', html)
    return INLINE.sub(lambda m: _mathml(m.group(1), "inline", page), html)
