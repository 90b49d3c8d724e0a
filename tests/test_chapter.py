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
    from widgets_py import names

    assert placed == set(names())
    assert html.count('class="tw-q"') == 5


def test_no_formulas_track_has_its_summary_and_quiz(site):
    html = (site / TRACKS[1]).read_text()
    assert {"endur", "comprova"} <= ids(html)
    assert "<math" not in html  # no formulas
    assert html.count('class="tw-q"') >= 3


def words(text: str) -> list[str]:
    return re.findall(r"[\wàèéíïòóúüç·']+", text.lower())


@pytest.mark.parametrize("seed, source", [("000_31626b2aeede98e9.txt", "docs/cap15/index.md"),
                                          ("001_8fb6548ec7b46e19.txt", "docs/cap15/sense-formules.md")])
def test_no_seed_sentence_is_copied(seed, source):
    """No run of 12 words of the seed appears in our text (the seed's quiz prompts aside)."""
    if not (SEEDS / seed).is_file():  # the seeds live beside the repository, in shared/
        pytest.skip(f"seed text not found at {SEEDS}")
    text = (ROOT / source).read_text()
    text = re.sub(r"^\*\*\d+\. .*?\*\*$", "", text, flags=re.M | re.S)  # quiz questions, kept as set
    text = re.sub(r"\$\$.*?\$\$|\$[^$\n]+\$", " ", text, flags=re.S)  # formulas are shared notation
    text = re.sub(r"^\|.*$", "", text, flags=re.M)  # table rows: the seed's facts, one per cell
    ours = " ".join(words(text))
    seed_words = words((SEEDS / seed).read_text())
    n = 12
    copied = {" ".join(seed_words[i:i + n]) for i in range(len(seed_words) - n)
              if " ".join(seed_words[i:i + n]) in ours}
    allowed = {"calcula el kv", "efficient memory management", "fast inference from", "the curious case"}
    copied = {c for c in copied if not any(a in c for a in allowed)}
    assert not copied, sorted(copied)[:5]
