"""Quizzes and reading checklists of every chapter, in Chromium: answers checked, progress kept
across reloads. The quizzes are found in the built site (book.quiz_pages)."""

import pytest
from playwright.sync_api import expect

import book

pytestmark = pytest.mark.browser


def catalan(n: float) -> str:
    """An integer as a reader writes it in Catalan: thousands points."""
    return f"{round(n):,}".replace(",", ".")


def test_every_quiz_checks_answers_and_keeps_progress(watched, server, site):
    pages = book.quiz_pages(site)
    assert {"cap15/index.html", "cap15/sense-formules.html", "cap99/index.html"} <= set(pages)
    page = watched.page
    for url in pages:
        page.goto(server + url)
        total = page.locator(".tw-q").count()
        progress = page.locator(".tw-quiz .tw-quiz-progress")
        expect(progress).to_have_text(f"0 de {total} resoltes")
        solved = 0

        numbers = page.locator('.tw-q[data-kind="number"]')
        if numbers.count():
            q = numbers.first
            answer, tolerance = float(q.get_attribute("data-answer")), float(q.get_attribute("data-tolerance"))
            q.locator("input").fill(f"{answer * (1 + 1.25 * tolerance):.0f}")  # past the margin: refused
            q.locator("button").click()
            assert q.locator(".tw-feedback").get_attribute("data-ok") == "false"
            assert "marge" in q.locator(".tw-feedback").text_content()
            q.locator("input").fill(catalan(answer))  # Catalan thousands points
            q.locator("button").click()
            assert q.locator(".tw-feedback").get_attribute("data-ok") == "true", url
            q.locator("input").fill(f"{answer * (1 - 0.9 * tolerance):.0f}")  # inside the margin: accepted
            q.locator("button").click()
            assert q.locator(".tw-feedback").get_attribute("data-ok") == "true"
            solved += 1

        choice = page.locator('.tw-q[data-kind="choice"]').first
        wrong = choice.locator("li:not([data-correct])").first
        wrong.locator("button").click()
        assert wrong.locator(".tw-why").is_visible() and "tw-wrong" in wrong.get_attribute("class")
        expect(progress).to_have_text(f"{solved} de {total} resoltes")
        right = choice.locator("li[data-correct]")
        right.locator("button").click()
        assert right.locator(".tw-why").is_visible()
        solved += 1

        if page.locator('.tw-q[data-kind="open"] summary').count():
            page.locator('.tw-q[data-kind="open"] summary').first.click()  # solved on "toggle", a task later
            solved += 1
        expect(progress).to_have_text(f"{solved} de {total} resoltes")

        checklist = page.locator(".tw-checklist input[type=checkbox]")
        if checklist.count():
            checklist.first.check()
        page.reload()
        expect(page.locator(".tw-quiz .tw-quiz-progress")).to_have_text(f"{solved} de {total} resoltes")
        if checklist.count():
            assert page.locator(".tw-checklist input[type=checkbox]").first.is_checked()
        page.click(".tw-quiz-reset")
        expect(page.locator(".tw-quiz .tw-quiz-progress")).to_have_text(f"0 de {total} resoltes")
        page.reload()
        expect(page.locator(".tw-quiz .tw-quiz-progress")).to_have_text(f"0 de {total} resoltes")
    assert watched.errors == []


def test_the_kv_question_accepts_its_computed_answer(watched, server):
    """Chapter 15's question 2: 2 (K and V) · 32 layers · 8 heads · 128 · 32.768 tokens · 16 · 2 bytes."""
    page = watched.page
    page.goto(server + "cap15/index.html#comprova")
    q = page.locator('.tw-q[data-q="kv-bytes"]')
    assert float(q.get_attribute("data-answer")) == 2 * 32 * 8 * 128 * 32768 * 16 * 2
    q.locator("input").fill("68.719.476.736")
    q.locator("button").click()
    assert q.locator(".tw-feedback").get_attribute("data-ok") == "true"
