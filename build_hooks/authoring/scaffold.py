"""`./dev new widget CHAPTER NAME`, `./dev new exercise CHAPTER NAME` and `./dev new chapter NAME
TITLE`: the files a contributor starts from, written so that they build and pass the suite at
once (issues 30 and 41).

    widget    widgets_py/CHAPTER/NAME.py     a calculator widget calling the shared maths
              tests/test_NAME.py             its own test: one case worked out by hand
              tests/golden/NAME.json         its default run, pinned (as test_golden.py writes it)
              and prints the directive to paste into the chapter's page
    exercise  widgets_py/CHAPTER/ex_NAME.py  an exercise whose reference is the shared maths
              tests/test_ex_NAME.py          its own test: the build's proof, wrong answers caught
              and prints the directive to paste into the chapter's page
    chapter   widgets_py/NAME/__init__.py    the chapter's package (the registry finds it)
              docs/NAME/index.md             its first page
              mkdocs.yml                     its entry at the end of nav:

Every file is new: an existing one, a name the registry already has, a chapter that does not
exist (widget, exercise) or already does (chapter), stop the command with what to do instead.
"""

from __future__ import annotations

import json
import keyword
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"[a-z][a-z0-9_]*")  # a module name, a directive's widget name
CHAPTER = re.compile(r"cap\d+")


class ScaffoldError(Exception):
    """A request the scaffold refuses; the message says what to do instead."""


WIDGET = '''"""{title}: the weights' memory of a model of the table, in one number format.

Written by `./dev new widget`: a working start. Replace the computation with your widget's
own, keeping its shape: `compute` does the work with the shared maths (maths/serving.py,
maths/hardware.py), `figure` only draws what it returns.
"""

from __future__ import annotations

from ..engine import fmt
from ..engine.params import Output, Param
from ..engine.svg import Plot
from ..engine.widget import Widget
from ..maths.hardware import MODELS, counts
from ..maths.numformats import FORMATS
from ..maths.serving import WEIGHT_FORMATS


def {name}(model: str, weight_format: str) -> dict:
    params = counts(MODELS[model]).total  # every parameter, experts included
    return {{"params_b": params / 1e9, "weights_gb": params * FORMATS[weight_format].nbytes / 1e9}}


def figure(p: dict, v: dict) -> tuple[str, str]:
    plot = Plot(height=120).scales((0, max(v["weights_gb"], 1.0)), (0, 1))
    plot.span(0, v["weights_gb"], 40, 30, "tw-s2")  # a bar on a row: x in GB, y and height in SVG units
    alt = f"Els pesos ocupen {{fmt.with_unit(v['weights_gb'], 1, 'GB')}} en {{p['weight_format']}}."
    return plot.render("{title}", alt), alt


WIDGET = Widget(
    name="{name}",
    title="{title}",
    params=(
        Param("model", "choice", "llama-3-70b", "Model", choices=tuple((k, m.label) for k, m in MODELS.items())),
        Param("weight_format", "choice", "bf16", "Format dels pesos", choices=fmt.format_choices(WEIGHT_FORMATS)),
    ),
    outputs=(
        Output("params_b", "paràmetres", "G", 2),
        Output("weights_gb", "memòria dels pesos", "GB", 1),
    ),
    compute={name},
    figure=figure,
    summary="La memòria que ocupen els pesos d'un model en un format.",
)
'''

TEST = '''"""{name}: its own maths against a case worked out by hand (the suite's golden, property and
browser tests find the widget by themselves)."""

import pytest

from widgets_py import run


def test_llama_3_70b_in_bf16_takes_two_bytes_a_parameter():
    # Meta-Llama-3-70B: 70.55 G parameters (its config.json's shapes), 2 bytes each in bf16
    values = run("{name}", {{"model": "llama-3-70b", "weight_format": "bf16"}}).values
    assert values["weights_gb"] == pytest.approx(141.1, rel=1e-3)


def test_int4_is_a_quarter_of_bf16():
    bf16 = run("{name}", {{"weight_format": "bf16"}}).values["weights_gb"]
    assert run("{name}", {{"weight_format": "int4"}}).values["weights_gb"] == pytest.approx(bf16 / 4)
'''

PAGE = '''# {title}

Un capítol nou. Cada pàgina és Markdown; un widget es col·loca amb
`<!-- md:widget NOM -->` en una línia pròpia, i una xifra que calcula, amb
`<!-- md:value NOM.VALOR -->` dins d'una frase (docs/contribuir.md).
'''


EXERCISE = '''"""{title}: the routed experts a pass of a MoE model reads, per layer.

Written by `./dev new exercise`: a working start. Replace it with your exercise, keeping its
shape: the reference is the chapter's own code (here maths.serving.expected_experts, which the
step times use), never a copy of its formula; the starter fails a check, the solution passes
them all, and the build proves both (engine/exercise.py).
"""

from __future__ import annotations

from ..engine import fmt
from ..engine.exercise import Exercise
from ..maths.hardware import MODELS
from ..maths.serving import expected_experts

MOE = tuple(k for k, m in MODELS.items() if m.n_experts)  # the book's models with routed experts


def case(model: str, tokens: int) -> dict:
    m = MODELS[model]
    return {{"n_experts": m.n_experts, "k": m.n_active_experts, "tokens": tokens}}


def draw(rng) -> dict:
    """One hidden case: a router of the book's models or one drawn around them, a decode batch of tokens."""
    tokens = int(rng.integers(1, 129))
    if rng.random() < 0.5:
        return case(str(rng.choice(MOE)), tokens)
    return {{"n_experts": int(rng.choice([8, 16, 64, 128, 256])), "k": int(rng.integers(1, 9)), "tokens": tokens}}


EXAMPLE = case("mixtral-8x7b", 4)

STATEMENT = f"""
En un model de mescla d'experts (MoE), cada capa té `n_experts` experts, i el router envia
cada token a `k` d'aquests experts. Una passada de `tokens` tokens només llegeix de la memòria
els experts que fa servir algun dels tokens.

Escriu `{name}(n_experts, k, tokens)`, que torni quants experts diferents llegeix la
passada a cada capa, de mitjana, si cada token tria els seus `k` experts a l'atzar, tots amb
la mateixa probabilitat i independentment dels altres tokens.

Per exemple, {{MODELS["mixtral-8x7b"].label}} en té {{EXAMPLE["n_experts"]}} per capa i n'envia
{{EXAMPLE["k"]}} a cada token: una passada de {{EXAMPLE["tokens"]}} tokens en llegeix
{{fmt.number(expected_experts(**EXAMPLE), 2)}} de mitjana.
"""

STARTER = \'\'\'def {name}(n_experts, k, tokens):
    """Experts diferents que llegeix, de mitjana, una passada de `tokens` tokens."""
    return min(n_experts, k * tokens)  # cada token, uns experts que cap altre no ha triat
\'\'\'

SOLUTION = \'\'\'def {name}(n_experts, k, tokens):
    """Experts diferents que llegeix, de mitjana, una passada de `tokens` tokens."""
    missed = (1 - k / n_experts) ** tokens  # probabilitat que cap token no triï un expert donat
    return n_experts * (1 - missed)
\'\'\'

EXERCISE = Exercise(
    name="{name}",
    title="{title}",
    statement=STATEMENT,
    function="{name}",
    starter=STARTER,
    solution=SOLUTION,
    hints=("Mira-ho des d'un sol expert: amb quina probabilitat **no** el tria un token? I cap dels "
           "`tokens` tokens?",
           "Un token deixa fora un expert donat amb probabilitat `1 - k / n_experts`, i tots els tokens, "
           "amb aquesta probabilitat elevada a `tokens`. Es llegeixen els experts que no queden fora."),
    reference=expected_experts,
    examples=(EXAMPLE, case("mixtral-8x7b", 1), case("deepseek-v3", 64)),
    draw=draw,
    hidden=12,  # hidden cases checked after the examples, drawn by `draw`
    seed=0,  # the hidden cases' generator: the same cases on every machine
    rtol=1e-9,  # a mean, a float: equal within this relative difference
)
'''

TEST_EXERCISE = '''"""Exercise {name}: the build's proof, and answers a reader could write that its checks must catch
(the build proves it too, every time: build_hooks/pages/exercises.py)."""

import pytest

from widgets_py.engine import registry

EXERCISE = registry.exercise("{name}")


def test_the_build_proves_it():
    assert EXERCISE.proof() is None  # the reference and the solution pass, the starter fails


@pytest.mark.parametrize("why, code", [
    ("k forgotten: one expert per token", "def {name}(n_experts, k, tokens):\\n"
                                          "    return n_experts * (1 - (1 - 1 / n_experts) ** tokens)\\n"),
    ("the power outside the bracket", "def {name}(n_experts, k, tokens):\\n"
                                      "    return n_experts * (1 - (1 - k / n_experts)) ** tokens\\n"),
])
def test_a_plausible_wrong_answer_fails_naming_a_call(why, code):
    verdict = EXERCISE.check(code)
    assert verdict.verdict == "fail" and verdict.call in verdict.message, f"{{why}}: {{verdict}}"
'''


def _new(path: Path, text: str) -> Path:
    if path.exists():
        raise ScaffoldError(f"{_shown(path)} ja existeix: no el sobreescric; tria un altre nom o esborra'l")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _all_new(*paths: Path) -> None:
    taken = [_shown(p) for p in paths if p.exists()]
    if taken:
        raise ScaffoldError(f"{', '.join(taken)} ja existeix: no escric res; tria un altre nom o esborra'l")


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def _chapter_exists(chapter: str, root: Path) -> None:
    if not CHAPTER.fullmatch(chapter) or not (root / "widgets_py" / chapter / "__init__.py").is_file():
        there = sorted(p.parent.name for p in (root / "widgets_py").glob("cap*/__init__.py"))
        raise ScaffoldError(f"no hi ha cap capítol '{chapter}' (widgets_py/{chapter}/__init__.py); n'hi ha: "
                            f"{', '.join(there)}; o crea'l abans amb ./dev new chapter {chapter} TÍTOL")


def _named(name: str) -> None:
    """A name the module, its function and the directive can all carry."""
    if not NAME.fullmatch(name) or keyword.iskeyword(name):
        raise ScaffoldError(f"'{name}' no serveix de nom: minúscules, xifres i '_', començant per una lletra, "
                            "i que no sigui una paraula de Python (for, class…)")


def widget(chapter: str, name: str, root: Path = ROOT) -> list[Path]:
    """The widget's module, its test and its golden file; returns the files written."""
    _chapter_exists(chapter, root)
    _named(name)
    from widgets_py.engine import registry

    if name in registry.names():
        raise ScaffoldError(f"ja hi ha un widget '{name}' al llibre; els noms són únics: tria'n un altre")
    title = name.replace("_", " ").capitalize()
    module, test, golden = (root / "widgets_py" / chapter / f"{name}.py", root / "tests" / f"test_{name}.py",
                            root / "tests" / "golden" / f"{name}.json")
    _all_new(module, test, golden)  # before writing any: a refusal leaves nothing behind
    written = []
    try:
        written.append(_new(module, WIDGET.format(name=name, title=title)))
        written.append(_new(test, TEST.format(name=name)))
        registry.refresh()  # the new module joins the registry
        values = registry.run(name, {}).values
        written.append(_new(golden, json.dumps(values, indent=1, sort_keys=True) + "\n"))
    except BaseException:
        for path in written:  # all or nothing: a half-written widget would still build
            path.unlink()
        registry.refresh()
        raise
    return written


def exercise(chapter: str, name: str, root: Path = ROOT) -> list[Path]:
    """The exercise's module and its test; returns the files written."""
    _chapter_exists(chapter, root)
    _named(name)
    from widgets_py.engine import registry

    if name in registry.exercise_names():
        raise ScaffoldError(f"ja hi ha un exercici '{name}' al llibre; els noms són únics: tria'n un altre")
    if name in registry.names():
        raise ScaffoldError(f"ja hi ha un widget '{name}' al llibre, i ./dev test -k {name} triaria també les seves "
                            "proves: tria un altre nom per a l'exercici")
    module, test = root / "widgets_py" / chapter / f"ex_{name}.py", root / "tests" / f"test_ex_{name}.py"
    _all_new(module, test)
    title = name.replace("_", " ").capitalize()
    written = []
    try:
        written.append(_new(module, EXERCISE.format(name=name, title=title)))
        written.append(_new(test, TEST_EXERCISE.format(name=name)))
        registry.refresh()  # the new module joins the registry
        registry.exercise(name)
    except BaseException:
        for path in written:  # all or nothing, as for a widget
            path.unlink()
        registry.refresh()
        raise
    return written


def with_chapter(config: str, lines: list[str]) -> str:
    """mkdocs.yml with a chapter's nav lines after the last chapter's (an entry whose pages are
    in a capNN/ folder), before the glossary and the guide; at the end if there is none."""
    text = config.rstrip().split("\n")
    start = max(i for i, line in enumerate(text) if line.rstrip() == "nav:")
    entries = [i for i in range(start + 1, len(text)) if text[i].startswith("  - ")] + [len(text)]
    last = None
    for begin, end in zip(entries, entries[1:]):
        if any(re.search(r"\bcap\d+/", line) for line in text[begin:end]):
            last = end
    at = last if last is not None else len(text)
    return "\n".join(text[:at] + lines + text[at:]) + "\n"


def chapter(name: str, title: str, root: Path = ROOT) -> list[Path]:
    """The chapter's package, its first page and its nav entry; returns the files written."""
    if not CHAPTER.fullmatch(name):
        raise ScaffoldError(f"'{name}' no és un nom de capítol: capNN (cap16, cap17…)")
    if (root / "widgets_py" / name).exists() or (root / "docs" / name).exists():
        raise ScaffoldError(f"el capítol {name} ja existeix (widgets_py/{name} o docs/{name})")
    config = root / "mkdocs.yml"
    text = config.read_text()
    keys = [line for line in text.splitlines() if re.match(r"[A-Za-z_]+:", line)]  # the top-level keys
    if not keys or keys[-1].rstrip() != "nav:":
        raise ScaffoldError("mkdocs.yml: nav: ha de ser l'última clau perquè hi afegeixi el capítol al final")
    package, page = root / "widgets_py" / name / "__init__.py", root / "docs" / name / "index.md"
    _all_new(package, page)
    written = [_new(package, f'"""{title}: the widgets of chapter {name[3:]}."""\n'), _new(page, PAGE.format(title=title))]
    entry = json.dumps(f"{int(name[3:])} · {title}", ensure_ascii=False)  # a YAML string, quoted as JSON is
    lines = [f"  - {entry}:", f"      - {json.dumps(title, ensure_ascii=False)}: {name}/index.md"]
    config.write_text(with_chapter(text, lines))
    return [*written, config]


def directive(name: str, kind: str = "widget") -> str:
    return f"<!-- md:{kind} {name} -->"


def main(argv: list[str]) -> int:
    usage = ("ús: ./dev new widget CAPÍTOL NOM  |  ./dev new exercise CAPÍTOL NOM  |  "
             "./dev new chapter capNN \"Títol\"")
    try:
        if len(argv) == 3 and argv[0] in ("widget", "exercise"):
            written = (widget if argv[0] == "widget" else exercise)(argv[1], argv[2])
            print("\n".join(f"escrit: {_shown(p)}" for p in written))
            print(f"\nEnganxa a la pàgina del capítol, en una línia pròpia:\n\n"
                  f"    {directive(argv[2], argv[0])}\n\ni comprova-ho amb: ./dev test -k {argv[2]}")
        elif len(argv) == 3 and argv[0] == "chapter":
            written = chapter(argv[1], argv[2])
            print("\n".join(f"escrit: {_shown(p)}" for p in written))
            print(f"\nAra: ./dev new widget {argv[1]} NOM, i ./dev serve per veure'l")
        else:
            print(usage, file=sys.stderr)
            return 2
    except ScaffoldError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
