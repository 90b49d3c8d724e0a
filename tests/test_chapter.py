"""Chapter 15: twin links between the tracks, sections covered, no seed text copied."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.build

SEEDS = ROOT.parent / "shared" / "seeds"
TRACKS = ("cap15/index.html", "cap15/sense-formules.html")
TWINNED = ("dues-fases", "kv-cache", "continuous-batching", "quantitzacio", "speculative", "sampling", "cost")


def ids(html: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', html))


def test_every_twin_link_lands_on_an_existing_heading_both_ways(site):
    pages = {t: (site / t).read_text() for t in TRACKS}
    for here, other in (TRACKS, TRACKS[::-1]):
        links = re.findall(r'<a class="tw-twin" href="([^"#]+)#([^"]+)"|<a href="([^"#]+)#([^"]+)" class="tw-twin"',
                           pages[here])
        targets = [(a or c, b or d) for a, b, c, d in links]
        assert sorted(anchor for _, anchor in targets) == sorted(TWINNED), here
        for href, anchor in targets:
            assert Path(href).name == Path(other).name, (here, href)
            assert anchor in ids(pages[other]), (here, anchor)
            assert anchor in ids(pages[here]), f"{here}: its own section #{anchor} is missing"


def test_mathematical_track_has_all_sections_and_every_widget(site):
    html = (site / TRACKS[0]).read_text()
    assert set(TWINNED) | {"comprova", "recursos"} <= ids(html)
    placed = set(re.findall(r'data-widget="([^"]+)"', html))
    from widgets_py import get, names

    ours = {n for n in names() if get(n).compute.__module__.startswith("widgets_py.cap15.")}
    assert not ours - placed, (f"the mathematical track (docs/cap15/index.md) places every widget of chapter 15, "
                               f"and these are not on it: {sorted(ours - placed)}; add <!-- md:widget NAME --> where "
                               f"it belongs (the no-formulas track may leave it out)")
    assert placed <= ours
    assert html.count('class="tw-q"') == 5


def test_no_formulas_track_has_its_summary_and_quiz(site):
    html = (site / TRACKS[1]).read_text()
    assert {"endur", "comprova"} <= ids(html)
    assert "<math" not in html  # no formulas
    assert html.count('class="tw-q"') >= 3


def words(text: str) -> list[str]:
    return re.findall(r"[\wàèéíïòóúüç·']+", text.lower())


def ours_as_prose(markdown: str) -> str:
    """Our chapter's words, headings, table cells and quiz prompts included; left out, with
    the reason: formulas (shared notation), directives (widget and value names, not prose) and
    the cited paper titles in <em> of the resources (a title is quoted as published)."""
    text = re.sub(r"\$\$.*?\$\$|\$[^$\n]+\$", " ", markdown, flags=re.S)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r'<li data-item="[^"]+">.*?</li>', lambda m: re.sub(r"<em>.*?</em>", " ", m.group(0)), text)
    return " ".join(words(text))


RUN = 8  # words: long enough to be a sentence's shape, not a stock phrase


@pytest.mark.parametrize("seed, source", [("000_31626b2aeede98e9.txt", "docs/cap15/index.md"),
                                          ("001_8fb6548ec7b46e19.txt", "docs/cap15/sense-formules.md")])
def test_no_seed_sentence_is_copied(seed, source):
    """No run of 8 words of the seed appears anywhere in our text: prose, headings, table
    cells, quiz prompts and options."""
    if not (SEEDS / seed).is_file():  # the seeds live beside the repository, in shared/
        pytest.skip(f"seed text not found at {SEEDS}")
    ours = f" {ours_as_prose((ROOT / source).read_text())} "
    seed_words = words((SEEDS / seed).read_text())
    runs = {" ".join(seed_words[i:i + RUN]) for i in range(len(seed_words) - RUN + 1)}
    copied = sorted(r for r in runs if f" {r} " in ours)
    assert not copied, copied[:5]


WIDGETS = ROOT / "widgets_py" / "cap15"
STRAY = 3  # 8–9-word runs a widget module may share with the seeds (a label's stock phrase)
LONG = 10  # words: a run this long is a copied sentence, in any module


def widget_strings(source: str) -> list[str]:
    """The text a widget module shows: every string literal (titles, labels, help, notes,
    captions, alt texts), each f-string with its fields cut out, so a run never spans two
    strings or a computed value. Docstrings are the code's, not the reader's: left out."""
    import ast

    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    out, inside = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            inside |= {id(v) for v in node.values}
            out.append(" | ".join(v.value if isinstance(v, ast.Constant) else "" for v in node.values))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings | inside:
            out.append(node.value)
    return out


def shared_runs(text: str, seed_words: list[str]) -> list[str]:
    """The maximal runs of RUN words or more that `text` shares with the seed."""
    seed = f" {' '.join(seed_words)} "
    ours, runs, i = words(text), [], 0
    while i <= len(ours) - RUN:
        n = RUN
        if f" {' '.join(ours[i:i + n])} " not in seed:
            i += 1
            continue
        while i + n < len(ours) and f" {' '.join(ours[i:i + n + 1])} " in seed:
            n += 1
        runs.append(" ".join(ours[i:i + n]))
        i += n
    return runs


@pytest.mark.parametrize("module", sorted(p.name for p in WIDGETS.glob("*.py")))
def test_no_seed_sentence_is_copied_into_a_widget(module):
    """The widgets' own words (issue 32): no run of 10 words of either seed in any string of
    the module, and at most STRAY runs of 8–9 words."""
    seeds = sorted(SEEDS.glob("*.txt"))
    if not seeds:
        pytest.skip(f"seed text not found at {SEEDS}")
    strings = widget_strings((WIDGETS / module).read_text())
    runs = sorted({r for seed in seeds for s in strings for r in shared_runs(s, words(seed.read_text()))})
    long = [r for r in runs if len(r.split()) >= LONG]
    assert not long and len(runs) <= STRAY, f"{module}: runs shared with the seeds: {runs}"


def test_the_widget_copy_check_sees_help_texts_and_f_strings():
    """Negative control: a seed sentence planted in a help text or around an f-string field
    is caught; the docstring is not the reader's text."""
    sentence = "quan envies una pregunta a un model passen dues coses molt diferents"
    source = (f'"""{sentence}"""\nP = Param("x", help="{sentence}")\nS = f"{{a}} {sentence} {{b}}"\n')
    strings = widget_strings(source)
    assert len([s for s in strings if sentence in s]) == 2  # the help text and the f-string, not the docstring
    assert shared_runs(f"x {sentence} y", words(sentence)) == [sentence]
    assert shared_runs("a b c d e f g h", words(sentence)) == []


def test_the_copy_check_sees_headings_cells_and_quiz_prompts():
    """Negative control: a seed sentence planted in a heading, a table cell or a quiz prompt
    is caught."""
    seed = SEEDS / "001_8fb6548ec7b46e19.txt"
    if not seed.is_file():
        pytest.skip(f"seed text not found at {SEEDS}")
    sentence = "quan envies una pregunta a un model passen dues coses molt diferents"
    assert sentence in " ".join(words(seed.read_text()))
    for planted in (f"## 1. {sentence} {{ #x }}", f"| a | {sentence} |", f"**1. {sentence}?**"):
        assert sentence in ours_as_prose(planted), planted


# --- the glossary: one source, explained wherever a term appears ---------------------------

GLOSSARY = ROOT / "includes" / "glossari.md"
WIDGET_LABEL = re.compile(r'<p class="tw-title">(.*?)</p>|<dt>(.*?)</dt>|<small class="tw-help"[^>]*>(.*?)</small>'
                          r'|<label for="[^"]*">(.*?)</label>', re.S)
ABBR = re.compile(r'<abbr title="([^"]*)"[^>]*>(.*?)</abbr>')


def glossary():
    from build_hooks.pages.glossary import Glossary

    return Glossary.load(GLOSSARY)


def test_every_widget_label_on_the_no_formulas_page_explains_its_terms(site):
    """Every technical word (the glossary's list) and every acronym in a widget's title,
    control label, help or value name carries its definition as an <abbr title>."""
    g = glossary()
    html = (site / TRACKS[1]).read_text()
    labels = ["".join(m.groups(default="")) for m in WIDGET_LABEL.finditer(html)]
    assert len(labels) > 40, "widget labels not found: did widget_html.py change its markup?"
    technical = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(g.technical, key=len, reverse=True)))
                           + r")(?![\w-])", re.I)
    acronym = re.compile(r"(?<![\w-])[A-Z][A-Z0-9]+(?![\w-])")  # TTFT, GPU, INT4, BF16
    bare = set()
    for label in labels:
        for title, term in ABBR.findall(label):
            assert title.strip() and g.define(term), (term, label)
        text = re.sub(r"<output[^>]*>.*?</output>", " ", label)  # the control's current value
        text = re.sub(r"<[^>]+>", " ", ABBR.sub(" ", text))
        bare |= set(technical.findall(text)) | set(acronym.findall(text))
    assert not bare, f"terms in widget labels with no glossary entry in {GLOSSARY.name}: {sorted(bare)}"


def test_terms_are_explained_in_the_prose_of_both_tracks_with_keyboard_access(site):
    needed = ("TTFT", "TPOT", "FLOP/byte", "intensitat aritmètica", "entropia", "perplexitat", "p95", "sostre",
              "KV-cache", "prefill", "decode", "lot", "throughput", "quantització")
    g = glossary()
    assert not [t for t in needed if not g.define(t)]
    for track in TRACKS:
        html = (site / track).read_text()
        shown = {term.casefold() for _, term in ABBR.findall(html)}
        missing = [t for t in needed if t.casefold() not in shown and re.search(rf"(?<![\w-]){re.escape(t)}(?![\w-])", html)]
        assert not missing, (track, missing)
        assert re.search(r'<abbr title="[^"]+" tabindex="0">', html), f"{track}: no abbr reachable by keyboard"
        assert 'href="../glossari.html"' in html, f"{track}: no link to the glossary"


def test_glossary_page_lists_every_term_once(site):
    g = glossary()
    html = (site / "glossari.html").read_text()
    assert "Glossari" in html and 'href="glossari.html"' in (site / "index.html").read_text()
    rows = re.findall(r"<tr>\s*<td>(.*?)</td>", html, re.S)
    listed = [t.strip() for row in rows for t in re.sub(r"<[^>]+>", "", row).split(",")]
    assert sorted(listed) == sorted(g.terms), set(listed) ^ set(g.terms)


def test_prose_defines_each_term_at_its_first_use_per_section():
    """Markdown's abbr marks every use; the page keeps each term's first in each <h2>
    section (Material mounts a tooltip per <abbr> while the page loads)."""
    from build_hooks.pages.glossary import first_uses

    html = ('<p><abbr title="d">KV</abbr> i <abbr title="d">kv</abbr>, <abbr title="e">TTFT</abbr></p>'
            '<h2 id="b">B</h2><p><abbr title="d">KV</abbr> <abbr title="d">KV</abbr></p>')
    assert first_uses(html) == ('<p><abbr title="d">KV</abbr> i kv, <abbr title="e">TTFT</abbr></p>'
                                '<h2 id="b">B</h2><p><abbr title="d">KV</abbr> KV</p>')
    # a piece of a longer name is not the term (Markdown's abbr matches at a hyphen), nor its first use
    html = '<p>TensorRT-<abbr title="l">LLM</abbr> i <abbr title="l">LLM</abbr>-x, un <abbr title="l">LLM</abbr></p>'
    assert first_uses(html) == '<p>TensorRT-LLM i LLM-x, un <abbr title="l">LLM</abbr></p>'


def test_the_built_prose_marks_a_term_once_per_section(site):
    for track in TRACKS:
        html = (site / track).read_text()
        prose = WIDGET_LABEL.sub("", html)  # a widget's labels explain every term they show
        for section in re.split(r"(?=<h2[ >])", prose):
            terms = [term.casefold() for _, term in ABBR.findall(section)]
            assert len(terms) == len(set(terms)), (track, sorted(t for t in set(terms) if terms.count(t) > 1))


def test_glossary_wraps_label_terms_with_escaped_titles():
    from build_hooks.pages.glossary import Glossary

    g = Glossary({"TTFT": 'temps "fins al" <primer> token', "lot": "grup"}, ())
    assert g.wrap("TTFT p95, estàtic") == '<abbr title="temps &quot;fins al&quot; &lt;primer&gt; token">TTFT</abbr> p95, estàtic'
    assert g.wrap("Seqüències al lot") == 'Seqüències al <abbr title="grup">lot</abbr>'
    assert g.wrap("lots i pilots") == "lots i pilots"  # whole words only


def test_constants_the_prose_quotes_are_the_code_s():
    """Numbers of the prose that are constants of the code, not a widget's output: the two
    held-out evaluations (§1 and §4 score different lengths of the same text, issue 32) and
    Llama 3 70B's context limit beside the cost widget's crossovers."""
    import inspect

    from widgets_py.cap15 import quantize
    from widgets_py.engine import fmt
    from widgets_py.maths import train
    from widgets_py.maths.hardware import MODELS

    text = re.sub(r"\s+", " ", (ROOT / "docs/cap15/index.md").read_text())
    training = inspect.signature(train.evaluate).parameters["tokens"].default
    assert f"primers {fmt.number(training)} caràcters d'un text" in text
    assert f"primers {fmt.number(quantize.EVAL_TOKENS)} caràcters del text reservat, la meitat dels {fmt.number(training)}" in text
    assert quantize.EVAL_TOKENS * 2 == training  # "la meitat"
    assert f"Llama 3 70B, que només admet {fmt.number(MODELS['llama-3-70b'].max_context)} posicions" in text


def test_the_clocks_note_gives_the_clocks_own_constants():
    """§1's note on how the clock times says how long a timing lasts; those are clock.py's numbers."""
    from widgets_py.cap15 import clock
    text = (ROOT / "docs" / "cap15" / "index.md").read_text()
    note = text[text.index('??? note "Com mesura el rellotge'):]
    note = " ".join(note[:note.index("\n\n", note.index("tandes"))].split())
    assert clock.STEPS_PER_SAMPLE == 20 and "almenys vint passos del rellotge" in note
    assert f"com a mínim {clock.MIN_SAMPLE_S * 1e3:g} ms" in note and f"no passa de {clock.STAGE_S * 1e3:g} ms" in note
