"""Stored quiz and checklist state (issue 15 §4): validated on read, bad state discarded
with the reset working, failing writes shown as "not saved" without an error."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

PAGE = "cap15/index.html"
QUIZ = "tw-quiz:cap15-math"
LIST = "cap15-recursos-docs"  # the page's first checklist (_open checks it)
# what a stored value may have become: other code, an old version, a hand edit, a half write
BAD = ["7", '"x"', "true", "[]", "null", "{", '{"a":1}', '{"speculative":"yes"}', "[true]", '{"__proto__":{"x":true}}']
IGNORED = ("Failed to load resource",)  # Python is blocked below: only the quiz runs


def _open(watched, server, stored=None):
    """The quiz page, Python blocked; with `stored`, the quiz's and the checklist's keys hold it
    before the page opens (written from a page of the same origin without the chapter: the
    404 page, a load cheaper than a reload of the chapter)."""
    page = watched.page
    page.route("**/pyodide/**", lambda route: route.abort())  # keep the CPU for the quiz
    if stored is not None:
        page.goto(server + "404.html")
        page.evaluate("([keys, v]) => keys.forEach((k) => localStorage.setItem(k, v))", [[QUIZ, f"tw-list:{LIST}"], stored])
    page.goto(server + PAGE + "#comprova")
    assert page.get_attribute(".tw-checklist", "data-list") == LIST
    return page


def _errors(watched):
    return [e for e in watched.errors if not e.startswith(IGNORED)]


@pytest.mark.parametrize("stored", BAD)
def test_bad_stored_quiz_state_is_discarded_and_the_quiz_works(watched, server, stored):
    page = _open(watched, server, stored)
    progress = page.locator(".tw-quiz .tw-quiz-progress")
    total = page.locator(".tw-quiz .tw-q").count()
    assert progress.text_content() == f"0 de {total} resoltes"
    page.locator('.tw-quiz .tw-q[data-kind="choice"] li[data-correct] button').first.click()
    assert progress.text_content() == f"1 de {total} resoltes"
    page.locator(".tw-checklist input[type=checkbox]").first.check()
    page.reload()  # the answer was saved in a valid shape
    assert page.locator(".tw-quiz .tw-quiz-progress").text_content() == f"1 de {total} resoltes"
    assert page.locator(".tw-checklist input[type=checkbox]").first.is_checked()
    assert page.locator(".tw-not-saved").count() == 0
    assert _errors(watched) == []


def test_after_bad_state_the_reset_clears_what_was_saved(watched, server):
    page = _open(watched, server, BAD[0])
    total = page.locator(".tw-quiz .tw-q").count()
    page.locator('.tw-quiz .tw-q[data-kind="choice"] li[data-correct] button').first.click()
    # the button's own click event: a pointer click lands where the button was when it aimed, and
    # a page reloaded at #comprova may still be scrolling there (CI, 2026-12-03: twice in a run
    # the click hit something else and the progress never went back to 0)
    page.locator(".tw-quiz-reset").dispatch_event("click")
    # the reset's write is in before the reload (CI, 2026-12-02: a loaded machine reloaded
    # with the answer still counted, once in 880 tests)
    page.wait_for_function("(t) => document.querySelector('.tw-quiz .tw-quiz-progress').textContent === t",
                           arg=f"0 de {total} resoltes")
    page.wait_for_function("(k) => !Object.values(JSON.parse(localStorage.getItem(k) || '{}')).some(Boolean)", arg=QUIZ)
    page.reload()
    assert page.locator(".tw-quiz .tw-quiz-progress").text_content() == f"0 de {total} resoltes"
    assert page.locator(".tw-not-saved").count() == 0
    assert _errors(watched) == []


@pytest.mark.parametrize("failure", ["QuotaExceededError", "SecurityError"])
def test_failing_writes_say_not_saved_without_an_error(watched, server, failure):
    watched.context.add_init_script(f"""
        Storage.prototype.setItem = function () {{ throw new DOMException('refused', '{failure}'); }};
    """)
    page = _open(watched, server)
    total = page.locator(".tw-quiz .tw-q").count()
    page.locator('.tw-quiz .tw-q[data-kind="choice"] li[data-correct] button').first.click()
    assert page.locator(".tw-quiz .tw-quiz-progress").text_content() == f"1 de {total} resoltes"
    note = page.locator(".tw-quiz .tw-not-saved")
    assert note.count() == 1 and "no es desa" in note.text_content()
    page.locator(".tw-checklist input[type=checkbox]").first.check()
    assert page.locator(".tw-not-saved").count() == 2  # the checklist says it too
    assert _errors(watched) == []


def test_storage_denied_entirely_still_runs_the_quiz(watched, server):
    watched.context.add_init_script("""
        Object.defineProperty(window, 'localStorage', { get() { throw new DOMException('denied', 'SecurityError'); } });
    """)
    stacks: list[str] = []
    watched.page.on("pageerror", lambda e: stacks.append(e.stack or str(e)))
    page = _open(watched, server)
    total = page.locator(".tw-quiz .tw-q").count()
    page.locator('.tw-quiz .tw-q[data-kind="choice"] li[data-correct] button').first.click()
    assert page.locator(".tw-quiz .tw-quiz-progress").text_content() == f"1 de {total} resoltes"
    assert page.locator(".tw-quiz .tw-not-saved").count() == 1
    # Material's own bundle reads localStorage outside a try (its __md_get): the theme's
    # errors are not ours; none may come from our scripts
    assert [s for s in stacks if "assets/tw/" in s] == []
