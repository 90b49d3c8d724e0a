"""What a widget's figure and tables may contain: the one allow-list of elements and attributes.

A widget's `figure` and `tables` are markup that enters the page. Two places hold them to
this list, so a figure that passes the build also passes the page:

- the build (build_hooks/pages/widget_html.py) checks every prerendered figure and table with
  `problems()` and stops on anything else, naming the widget, the element and the fix;
- the page (docs/assets/tw/markup.js) hands every figure and table the worker sends, shipped
  code's and a reader's edit's alike, to DOMPurify with this list (the site config carries
  it, `allow_list()`): whatever is not on it is dropped before it reaches the DOM.

No element that loads, links, runs or styles anything (`script`, `style`, `a`, `image`,
`use`, `foreignObject`, `iframe`, `meta`, `link`, `form`…), no event handler, and no
attribute that takes a URL (`href`, `src`, `xlink:href`, `style`): a widget draws shapes and
text that the site's CSS colours through their `class`. A class is one of `CLASSES`, the
drawing classes tw.css colours: any other would let a figure borrow the theme's layout (a
Material overlay is `position: fixed` over the whole article) or the page's own hooks
(`tw-widget`, `tw-live`, which the scripts look up).
"""

from __future__ import annotations

from html.parser import HTMLParser

SVG_TAGS = ("svg", "g", "title", "desc", "line", "polyline", "polygon", "path", "rect", "circle", "ellipse",
            "text", "tspan")
HTML_TAGS = ("table", "caption", "thead", "tbody", "tfoot", "tr", "th", "td", "colgroup", "col",
             "p", "span", "div", "mark", "strong", "em", "b", "i", "small", "sub", "sup", "code", "br",
             "ul", "ol", "li")
TAGS = SVG_TAGS + HTML_TAGS
# lower case: HTML parsers (DOMPurify, html.parser) compare attribute names that way
ATTRIBUTES = ("class", "role", "aria-label", "aria-hidden", "aria-describedby", "tabindex",
              "viewbox", "preserveaspectratio", "width", "height", "x", "y", "x1", "x2", "y1", "y2", "dx", "dy",
              "cx", "cy", "r", "rx", "ry", "d", "points", "transform", "text-anchor", "dominant-baseline",
              "stroke-dasharray", "colspan", "rowspan", "scope", "headers")

# the classes a figure or a table may carry: tw.css's drawing classes (svg.py's header says
# what the kit's draw)
CLASSES = ("tw-svg", "tw-frame", "tw-grid", "tw-grid-q", "tw-tick", "tw-label", "tw-note",  # axes, text
           "tw-line", "tw-dot", "tw-bar", "tw-s1", "tw-s2", "tw-s3", "tw-cut",  # series
           "tw-slot-empty", "tw-slot-used", "tw-slot-used2", "tw-roof", "tw-limit", "tw-band",  # slots, marks
           "tw-tok", "tw-tok-text", "tw-struck", "tw-sample", "tw-prompt", "tw-pending")  # tokens, samples, rows


def allow_list() -> dict[str, list[str]]:
    """The list as the page's sanitiser takes it (DOMPurify's ALLOWED_TAGS and ALLOWED_ATTR,
    and the classes markup.js keeps of a `class`)."""
    return {"tags": list(TAGS), "attributes": list(ATTRIBUTES), "classes": list(CLASSES)}


class _Check(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in TAGS:
            self.found.append(f"<{tag}>")
        self.found += [f"<{tag} {name}>" for name, _ in attrs if name not in ATTRIBUTES]
        self.found += [f'class="{c}"' for name, value in attrs if name == "class"
                       for c in (value or "").split() if c not in CLASSES]

    handle_startendtag = handle_starttag

    def handle_comment(self, data):
        self.found.append("<!-- -->")

    def handle_decl(self, decl):
        self.found.append(f"<!{decl}>")

    def handle_pi(self, data):
        self.found.append(f"<?{data}>")


def problems(html: str) -> list[str]:
    """What `html` holds beyond the allow-list (elements, attributes, classes), each once, in order."""
    check = _Check()
    check.feed(html)
    check.close()
    return list(dict.fromkeys(check.found))
