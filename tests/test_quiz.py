"""Quiz and reading checklist, in Chromium: answers checked, progress kept across reloads."""

import pytest

pytestmark = pytest.mark.browser

PAGE = "cap15/index.html"
ANSWER = 2 * 32 * 8 * 128 * 32768 * 16 * 2  # bytes of KV cache asked by question 2


def test_numeric_answer_within_two_percent_and_state_survives_reload(watched, server):
    page = watched.page
    page.goto(server + PAGE + "#comprova")
    q = page.locator('.tw-q[data-kind="number"]')
    progress = page.locator(".tw-quiz .tw-quiz-progress")
    assert progress.text_content() == "0 de 5 resoltes"

    q.locator("input").fill(f"{ANSWER * 1.025:.0f}")  # 2,5 % off: refused
    q.locator("button").click()
    assert q.locator(".tw-feedback").get_attribute("data-ok") == "false"
    assert "marge" in q.locator(".tw-feedback").text_content()
    q.locator("input").fill("68.719.476.736")  # Catalan thousands points
    q.locator("button").click()
    assert q.locator(".tw-feedback").get_attribute("data-ok") == "true"
    q.locator("input").fill(f"{ANSWER * 0.981:.0f}")  # 1,9 % off: accepted
    q.locator("button").click()
    assert q.locator(".tw-feedback").get_attribute("data-ok") == "true"

    choice = page.locator('.tw-q[data-kind="choice"]').first
    wrong = choice.locator("li:not([data-correct])").first
    wrong.locator("button").click()
    assert wrong.locator(".tw-why").is_visible() and "tw-wrong" in wrong.get_attribute("class")
    right = choice.locator("li[data-correct]")
    right.locator("button").click()
    assert right.locator(".tw-why").is_visible()

    page.locator('.tw-q[data-kind="open"] summary').first.click()
    assert progress.text_content() == "3 de 5 resoltes"

    item = page.locator(".tw-checklist input[type=checkbox]").first
    item.check()
    page.reload()
    assert page.locator(".tw-quiz .tw-quiz-progress").text_content() == "3 de 5 resoltes"
    assert page.locator(".tw-checklist input[type=checkbox]").first.is_checked()
    page.click(".tw-quiz-reset")
    assert page.locator(".tw-quiz .tw-quiz-progress").text_content() == "0 de 5 resoltes"
    page.reload()
    assert page.locator(".tw-quiz .tw-quiz-progress").text_content() == "0 de 5 resoltes"
    assert watched.errors == []


def test_no_formulas_track_quiz_works(watched, server):
    page = watched.page
    page.goto(server + "cap15/sense-formules.html#comprova")
    total = page.locator(".tw-q").count()
    assert page.locator(".tw-quiz-progress").text_content() == f"0 de {total} resoltes"
    page.locator('.tw-q[data-kind="choice"] li[data-correct] button').first.click()
    assert page.locator(".tw-quiz-progress").text_content() == f"1 de {total} resoltes"
