"""The md:quiz directive: Markdown in, quiz.js's markup out; mistakes name their line."""

from __future__ import annotations

import pytest

from build_hooks.pages.quiz import QuizError, expand

QUIZ = """# Capítol

<!-- md:quiz -->
<!-- md:question open id=fases -->
**1. Per què?**
<!-- md:model -->
Perquè sí, amb $x$.
<!-- md:question number id=kv answer=1024 tolerance=0.02 unit=bytes -->
**2. Quants?**
<!-- md:question choice id=tria -->
**3. Quina?**
<!-- md:option correct -->
La bona, amb <sub>+</sub>.
<!-- md:why -->
Correcte.
<!-- md:option -->
La dolenta.
<!-- md:why -->
No.
<!-- md:end-quiz -->

```markdown
<!-- md:quiz -->   dins d'un bloc de codi: es deixa tal com és
```
"""


def test_expands_to_the_markup_quiz_js_reads():
    html, keys = expand(QUIZ, "cap99-index")
    assert keys == ["cap99-index"]
    assert '<div class="tw-quiz" data-quiz="cap99-index" markdown>' in html
    assert '<div class="tw-q" data-q="fases" data-kind="open" markdown>' in html
    assert '<details class="tw-model" markdown>\n<summary>Mostra una resposta model</summary>\n\nPerquè sí, amb $x$.' in html
    assert ('<div class="tw-q" data-q="kv" data-kind="number" data-answer="1024" data-tolerance="0.02" '
            'data-unit="bytes" markdown>') in html
    assert ('<li data-correct="true"><span class="tw-option">La bona, amb <sub>+</sub>.</span>'
            '<span class="tw-why">Correcte.</span></li>') in html
    assert '<li><span class="tw-option">La dolenta.</span><span class="tw-why">No.</span></li>' in html
    assert html.count("<div") == html.count("</div>")
    assert "<!-- md:quiz -->   dins d'un bloc de codi" in html  # code is left alone


@pytest.mark.parametrize("broken, line, words", [
    (QUIZ.replace("id=fases", ""), 4, "cal id="),
    (QUIZ.replace("md:question open", "md:question oberta"), 4, "tipus 'oberta'"),
    (QUIZ.replace("answer=1024", "answer=molts"), 8, "answer='molts': cal un nombre finit i no nul"),
    (QUIZ.replace("answer=1024", "answer=inf"), 8, "answer='inf'"),  # float() took these
    (QUIZ.replace("answer=1024", "answer=1_024"), 8, "answer='1_024'"),
    (QUIZ.replace("answer=1024", "answer=1e999"), 8, "answer='1e999'"),
    (QUIZ.replace("answer=1024", "answer=0"), 8, "no nul"),  # quiz.js divides by it
    (QUIZ.replace("tolerance=0.02", "tolerance=2"), 8, "tolerance='2': cal una fracció de 0 a 1"),
    (QUIZ.replace("tolerance=0.02", "tolerance=nan"), 8, "tolerance='nan'"),
    (QUIZ.replace(" tolerance=0.02", ""), 8, "tolerance=''"),
    (QUIZ.replace("<!-- md:option correct -->", "<!-- md:option -->"), 10, "una sola amb 'correct'"),
    (QUIZ.replace("<!-- md:end-quiz -->\n", ""), 3, "sense md:end-quiz"),
    (QUIZ.replace("<!-- md:quiz -->\n", "", 1), 3, "fora d'un qüestionari"),
    (QUIZ.replace("<!-- md:model -->", "<!-- md:why -->"), 6, "ha de seguir un md:option"),
])
def test_mistakes_fail_with_their_line(broken, line, words):
    with pytest.raises(QuizError) as err:
        expand(broken, "cap99-index")
    assert err.value.line == line and words in str(err.value)
