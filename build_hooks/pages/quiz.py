"""The quiz directive: questions written in Markdown, checked in the page by assets/tw/quiz.js.

    <!-- md:quiz -->                               opens the page's quiz (id=KEY to name it;
                                                    default: the page's path, cap15-index)
    <!-- md:question open id=fases -->             a question: open, number or choice; its id
    **1. The question, in Markdown.**               keeps the reader's progress across edits
    <!-- md:model -->                              open: the model answer, shown on request
    <!-- md:question number id=kv answer=68719476736 tolerance=0.02 unit=bytes -->
    <!-- md:question choice id=spec -->
    <!-- md:option correct -->                     choice: an option (one paragraph of text or
    <!-- md:why -->                                inline HTML, no Markdown: it becomes a button)
                                                    and why it is right or wrong
    <!-- md:end-quiz -->

Each directive sits alone on its line; the text between them is ordinary Markdown (maths,
live numbers, links). The output is the markup quiz.js reads (its header comment), so the
page works the same as hand-written HTML did, and mistakes fail the build with the line.
"""

from __future__ import annotations

import math
import re
import shlex
from html import escape

from mkdocs.exceptions import PluginError

from widgets_py.engine.params import parse_number

from . import directives

DIRECTIVE = re.compile(r"^<!-- md:(quiz|question|model|option|why|end-quiz)\b ?(.*?) ?-->[ \t]*$")
FENCE = re.compile(r"^(```|~~~)")
KINDS = ("open", "number", "choice")
KEY = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class QuizError(ValueError):
    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


def _options(args: str, line: int) -> tuple[list[str], dict[str, str]]:
    words, pairs = [], {}
    for item in shlex.split(args):
        key, sep, value = item.partition("=")
        if sep:
            pairs[key] = value
        else:
            words.append(item)
    return words, pairs


class Question:
    def __init__(self, kind: str, pairs: dict[str, str], line: int):
        if kind not in KINDS:
            raise QuizError(f"md:question: tipus '{kind}' desconegut (permesos: {', '.join(KINDS)})", line)
        if not KEY.match(pairs.get("id", "")):
            raise QuizError("md:question: cal id=NOM (minúscules, xifres i guions): hi queda desat el progrés", line)
        attrs = {"data-q": pairs.pop("id"), "data-kind": kind}
        if kind == "number":
            answer = parse_number(pairs.get("answer", ""), "float")  # quiz.js reads it with Number()
            if answer is None or not math.isfinite(answer) or answer == 0:
                raise QuizError(f"md:question number: answer={pairs.get('answer', '')!r}: cal un nombre finit i no nul, "
                                "escrit com 68719476736, 0.25 o 6.9e10 (sense separadors, ni inf, ni _)", line)
            tolerance = parse_number(pairs.get("tolerance", ""), "float")
            if tolerance is None or not 0 <= tolerance < 1:
                raise QuizError(f"md:question number: tolerance={pairs.get('tolerance', '')!r}: cal una fracció "
                                "de 0 a 1 (0.02 accepta un 2 % d'error)", line)
            attrs.update({f"data-{k}": pairs.pop(k) for k in ("answer", "tolerance", "unit") if k in pairs})
        if pairs:
            raise QuizError(f"md:question {kind}: opció desconeguda '{next(iter(pairs))}'", line)
        self.kind, self.attrs, self.line = kind, attrs, line
        self.body: list[str] = []
        self.model: list[str] | None = None
        self.options: list[dict] = []  # {correct, option: [lines], why: [lines]}

    def add(self, text: str) -> None:
        if self.options:
            self.options[-1]["why" if self.options[-1]["why"] is not None else "option"].append(text)
        elif self.model is not None:
            self.model.append(text)
        else:
            self.body.append(text)

    def render(self) -> list[str]:
        if self.kind == "choice":
            right = sum(o["correct"] for o in self.options)
            if len(self.options) < 2 or right != 1 or any(o["why"] is None for o in self.options):
                raise QuizError("md:question choice: cal dues opcions o més, una sola amb 'correct', "
                                "i cada md:option seguida del seu md:why", self.line)
        attrs = " ".join(f'{k}="{escape(v, quote=True)}"' for k, v in self.attrs.items())
        out = [f'<div class="tw-q" {attrs} markdown>', "", *self.body, ""]
        if self.model is not None:
            out += ['<details class="tw-model" markdown>', "<summary>Mostra una resposta model</summary>", "",
                    *self.model, "", "</details>"]
        if self.options:
            out.append('<ul class="tw-options">')  # raw HTML: an option becomes a button (quiz.js)
            for o in self.options:
                text = lambda lines: " ".join(s.strip() for s in lines if s.strip())  # noqa: E731
                correct = ' data-correct="true"' if o["correct"] else ""
                out.append(f'<li{correct}><span class="tw-option">{text(o["option"])}</span>'
                           f'<span class="tw-why">{text(o["why"])}</span></li>')
            out.append("</ul>")
        return out + ["</div>", ""]


def expand(markdown: str, default_key: str) -> tuple[str, list[str]]:
    """(Markdown with each quiz expanded to quiz.js's markup, the keys of the quizzes)."""
    out: list[str] = []
    keys: list[str] = []
    quiz_line = None  # the line of the open md:quiz
    question: Question | None = None
    fence = None
    for n, line in enumerate(markdown.split("\n"), 1):
        m = DIRECTIVE.match(line) if fence is None else None
        f = FENCE.match(line.lstrip())
        if f and (fence is None or f.group(1) == fence):
            fence = f.group(1) if fence is None else None
        if not m:
            (question.add if question else out.append)(line)
            continue
        kind, args = m.group(1), m.group(2)
        words, pairs = _options(args, n)
        if kind == "quiz":
            if quiz_line is not None:
                raise QuizError("md:quiz dins d'un altre qüestionari (tanca'l amb md:end-quiz)", n)
            key = pairs.get("id", default_key)
            if not KEY.match(key) or words:
                raise QuizError(f"md:quiz: id '{key}' no vàlid (minúscules, xifres i guions)", n)
            quiz_line = n
            keys.append(key)
            out += [f'<div class="tw-quiz" data-quiz="{key}" markdown>', ""]
            continue
        if quiz_line is None:
            raise QuizError(f"md:{kind} fora d'un qüestionari (obre'l amb md:quiz)", n)
        if kind in ("question", "end-quiz") and question:
            out += question.render()
            question = None
        if kind == "question":
            question = Question(words[0] if words else "", pairs, n)
        elif kind == "end-quiz":
            out.append("</div>")
            quiz_line = None
        elif question is None:
            raise QuizError(f"md:{kind} abans de cap md:question", n)
        elif kind == "model":
            if question.kind != "open" or question.model is not None:
                raise QuizError("md:model: només una, i només en preguntes open", n)
            question.model = []
        elif kind == "option":
            if question.kind != "choice":
                raise QuizError("md:option: només en preguntes choice", n)
            question.options.append({"correct": words == ["correct"], "option": [], "why": None})
        elif kind == "why":
            if not question.options or question.options[-1]["why"] is not None:
                raise QuizError("md:why: ha de seguir un md:option", n)
            question.options[-1]["why"] = []
    if quiz_line is not None:
        raise QuizError("md:quiz sense md:end-quiz", quiz_line)
    return "\n".join(out), keys


def on_page_markdown(markdown: str, *, page, config, files, build) -> str:
    if "<!-- md:" not in markdown:
        return markdown
    default = page.file.src_uri.removesuffix(".md").replace("/", "-").lower()
    try:
        markdown, keys = expand(markdown, default)
    except QuizError as exc:
        raise PluginError(f"{directives.source(page)}:{exc.line}: {exc}") from None
    for key in keys:
        if key in build.quizzes:
            raise PluginError(f"{directives.source(page)}: el qüestionari '{key}' ja és a {build.quizzes[key]}; "
                              "posa-hi id=ALTRE")
        build.quizzes[key] = page.file.src_uri
    return markdown
