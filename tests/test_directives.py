"""Authoring mistakes (issue 15 §2): anything that looks like a directive is either a valid
one or a build error `file:line: what is wrong; what is allowed`; where a directive can
legitimately sit (admonitions, list items) it works; every attribute is escaped.

The probes are black-box: each builds a one-page project with the real hooks and
`mkdocs build --strict`, so they hold whatever the hooks look like inside."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import ROOT, generator

pytestmark = pytest.mark.build

HEAD = "# Proves\n\n"  # the case starts on line 3

# (case id, Markdown after HEAD, the line the error must name, words the message must hold)
REFUSED = [
    ("empty", "<!-- md:widget  -->\n", 3, ["buida", "md:widget NOM"]),
    ("unclosed", "<!-- md:widget roofline batch=8\n\nMés text -->\n", 3, ["sense tancar"]),
    ("no-spaces", "<!--md:widget roofline-->\n", 3, ["espai"]),
    ("typo", "Text.\n\n<!-- md:widgte roofline -->\n", 5, ["md:widgte", "md:widget"]),
    ("uppercase", "<!-- MD:widget roofline -->\n", 3, ["md:widget"]),
    ("mid-line", "Abans <!-- md:widget roofline --> després.\n", 3, ["sol a la seva línia"]),
    ("indented-code", "Text.\n\n    <!-- md:widget roofline -->\n", 5, ["codi", "md:widget NOM"]),
    ("value-unclosed", "El sostre és <!-- md:value roofline.tpot_ms\n", 3, ["sense tancar"]),
    ("value-typo", "El sostre és <!-- md:valeu roofline.tpot_ms -->.\n", 3, ["md:valeu"]),
    ("repeated-key", "<!-- md:widget roofline batch=8 batch=16 -->\n", 3, ["batch", "repetit"]),
    ("repeated-key-value", "X <!-- md:value roofline.tpot_ms batch=1 batch=2 -->.\n", 3, ["batch", "repetit"]),
    ("off-grid-int", "<!-- md:widget batching chunk_tokens=65 -->\n", 3, ["chunk_tokens", "64"]),
    ("off-grid-float", "<!-- md:widget cost price=0.3 -->\n", 3, ["price", "0,25"]),
    ("hex", "<!-- md:widget roofline batch=0x10 -->\n", 3, ["batch", "1..256"]),
    ("quote-in-id", "<!-- md:widget roofline id='a\"><b>x</b>' -->\n", 3, ["id="]),
    ("front-matter", None, 6, ["md:widgte"]),  # the line counts the front matter MkDocs drops
]
# (case id, Markdown after HEAD, widgets the page must carry)
WORKS = [
    ("admonition", "!!! note \"Prova\"\n\n    Text.\n\n    <!-- md:widget roofline -->\n", ["roofline"]),
    ("list-item", "- Primer punt.\n\n    <!-- md:widget roofline -->\n\n- Segon.\n", ["roofline"]),
    ("two-spaces-before-close", "<!-- md:widget roofline  -->\n", ["roofline"]),
    ("hidden-control-off-grid", "<!-- md:widget cost price=0.3 controls=model -->\n", ["cost"]),
    ("in-code", "Escriu `<!-- md:widgte roofline -->` o:\n\n```markdown\n<!--md:widget x\n```\n\n"
                "<!-- md:widget roofline -->\n", ["roofline"]),
]


def _project(tmp_path, body: str, nav: str = "", more: dict[str, str] | None = None):
    """A one-page project (`body` is docs/index.md; `more`, other pages) with the book's hooks
    and configuration, `nav` its navigation (none: MkDocs lists every page), built strictly."""
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    for part in ("widgets_py", "build_hooks", "includes", "overrides"):
        (project / part).symlink_to(ROOT / part)
    config = (ROOT / "mkdocs.yml").read_text()
    (project / "mkdocs.yml").write_text(config[: config.index("\nnav:")] + "\n" + nav)
    for name, text in {"index.md": body, **(more or {})}.items():
        (project / "docs" / name).write_text(text)
    done = subprocess.run(generator.build_command(tmp_path / "site"), cwd=project, capture_output=True, text=True, timeout=300)
    return done, tmp_path / "site" / "index.html"


@pytest.mark.parametrize("case, body, line, words", REFUSED, ids=[c[0] for c in REFUSED])
def test_directive_mistakes_fail_the_build_naming_file_and_line(tmp_path, case, body, line, words):
    if body is None:
        body = "---\ntitle: Proves\n---\n" + HEAD + "<!-- md:widgte roofline -->\n"
    else:
        body = HEAD + body
    done, _ = _project(tmp_path, body)
    assert done.returncode != 0, f"{case}: the build accepted it"
    message = next((l for l in done.stderr.splitlines() if "index.md:" in l), "")
    assert f"index.md:{line}:" in message, done.stderr[-1500:]
    assert all(w in message for w in words), message


@pytest.fixture(scope="module")
def works(tmp_path_factory) -> Path:
    """One strict build of every WORKS case, each its own page (an error in any fails it)."""
    tmp = tmp_path_factory.mktemp("works")
    done, _ = _project(tmp, HEAD, more={f"{case}.md": HEAD + body for case, body, _ in WORKS})
    assert done.returncode == 0, done.stderr[-1500:]
    return tmp / "site"


@pytest.mark.parametrize("case, widgets", [(c[0], c[2]) for c in WORKS], ids=[c[0] for c in WORKS])
def test_directives_where_markdown_allows_them_work(works, case, widgets):
    html = (works / f"{case}.html").read_text()
    assert re.findall(r'class="tw-widget" id="[^"]+" data-widget="([^"]+)"', html) == widgets
    assert "md:widget" not in re.sub(r"<code>.*?</code>", "", html, flags=re.S)  # nothing left as text
    assert not re.search(r'class="[^"]*\btw-slot\b(?!-)', html)  # no figure slot outside a widget (the config lists class names)


class _Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


@pytest.mark.parametrize("instance", ['a"><script>alert(1)</script>', "x' onmouseover='y", "a&b<c>"])
def test_every_attribute_of_a_widget_is_escaped(instance):
    from build_hooks.pages.widget_html import widget
    from widgets_py.engine import registry

    params = registry.validate_params("roofline", {})
    parsed = _Elements()
    parsed.feed(widget("roofline", instance, params, registry.run("roofline", params)))
    assert not [t for t, _ in parsed.tags if t == "script"]
    assert not [a for _, attrs in parsed.tags for a in attrs if a.startswith("on")]
    root = parsed.tags[0][1]
    assert root["id"] == f"tw-{instance}" and root["data-instance"] == instance
    labels = [attrs["for"] for t, attrs in parsed.tags if t == "label"]
    assert labels and all(f.startswith(f"tw-{instance}-") for f in labels)
