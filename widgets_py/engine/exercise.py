"""The exercise contract: what a chapter's exercise module declares, and how an answer is graded.

An exercise module builds one `Exercise` named `EXERCISE`; the registry finds it as it finds a
`WIDGET` (registry.exercise). The reader writes one function; `Exercise.check(code)` runs the
code as a module (reader_code.py: the way the «Codi» panel runs an edit), calls the function on
the visible examples and then on the hidden cases, each against `reference`, and returns a
`Verdict`: the first case that differs, named by its call, with what was expected and what
came back, or why the value cannot be compared (a wrong type, NaN, a wrong shape).

The reference is the chapter's own code wherever the chapter computes the answer (maths.serving,
maths.decoding, maths.numformats), so an exercise cannot drift from the figure that shows the
same number. Hidden cases come from a seeded generator: the same on every machine, absent from
the page's HTML. The build proves each exercise (`proof`): the reference and the solution pass,
the starter fails.

A passing answer can also drive a figure (`Drives`): the widget's module calls one of its own
functions, a seam, and `driven` writes that module again with the reader's function behind the
seam; the page applies it as a «Codi» edit (edits.py), so the figure says so until «Restaura».

The time limit, twice: the reader's own lines stop themselves after TIME_LIMIT_S
(reader_code.time_limited: verdict `timeout`, naming the line, the worker kept); a loop inside
one C call has no line to stop at, and the page stops the worker that has not answered after
its own, longer limit (exercise.js LIMIT_MS: `timeout` too, Python restarted). A
KeyboardInterrupt (Pyodide's interrupt buffer) is let through, never graded.
"""

from __future__ import annotations

import copy
import math
import numbers
import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import fmt, reader_code

NAME = re.compile(r"[a-z][a-z0-9_]*")  # a registry key, used in Markdown and in data-exercise
TIME_LIMIT_S = 8.0  # the reader's lines stop here, before the page's own limit (exercise.js LIMIT_MS; test_exercises holds the margin)


@dataclass(frozen=True)
class Case:
    args: dict[str, Any]  # keyword arguments of one call
    hidden: bool  # drawn by the seeded generator, not shown in the statement


@dataclass(frozen=True)
class Verdict:
    """The grade of one answer: plain data, sent to the page as it is (`to_dict`)."""

    verdict: str  # "pass", "fail", "error" or "timeout" (here, or from the page: the worker did not answer)
    message: str  # Catalan, for the reader
    passed: int  # cases passed before the first that failed (all of them on a pass)
    total: int  # cases checked
    call: str = ""  # the failing call as Python, e.g. kv_bytes(n_layers=80, ...)
    hidden: bool = False  # the failing case is a hidden one
    expected: str = ""  # what the reference returns there
    got: str = ""  # what the reader's function returned there
    line: int | None = None  # the reader's line where an exception arose

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class Drives:
    """A widget a passing answer can drive: its module calls `seam`, a function of its own, and
    `binding` (Python, run after the reader's code in that module, with the reader's function
    bound to the exercise's `function` name) defines `seam` again through the reader's function."""

    widget: str  # registry key of the widget
    seam: str  # the module-level function of the widget's module the binding replaces
    binding: str  # Python text: `def seam(...)` calling the reader's function


@dataclass(frozen=True)
class Exercise:
    name: str  # registry key, used in Markdown (md:exercise) and in data-exercise
    title: str  # Catalan title shown above the exercise
    statement: str  # Catalan Markdown: what to compute, the signature's meaning, the units
    function: str  # the function the reader writes (its name)
    starter: str  # the code the reader starts from: defines `function`, and fails a check
    solution: str  # a passing answer in the reader's terms, shown after an attempt
    hints: tuple[str, ...]  # 1 to 3, Catalan Markdown, revealed one by one
    reference: Callable[..., Any]  # (**args) -> the expected value: the chapter's own code
    examples: tuple[dict, ...]  # visible cases: keyword arguments of `function`
    draw: Callable[[np.random.Generator], dict]  # one hidden case from the generator
    hidden: int = 12  # hidden cases checked after the examples
    seed: int = 0  # the hidden cases' generator
    rtol: float = 1e-9  # relative tolerance for floats (ints are compared exactly)
    atol: float = 0.0  # absolute tolerance, for values that may be 0
    drives: Drives | None = None  # a widget whose figure a passing answer can drive

    def __post_init__(self):
        if not NAME.fullmatch(self.name):
            raise ValueError(f"exercise name {self.name!r}: lowercase letters, digits and '_'")
        if not 1 <= len(self.hints) <= 3:
            raise ValueError(f"exercise {self.name}: 1 to 3 hints, not {len(self.hints)}")
        if not self.examples:
            raise ValueError(f"exercise {self.name}: at least one visible example")

    def driven(self, code: str, widget_source: str) -> str:
        """The widget's module (`widget_source`) with the reader's `code` behind its seam: the
        code runs in a function of its own (its names cannot shadow the module's), which hands
        back the reader's function; the binding then defines the seam again through it."""
        if self.drives is None:
            raise ValueError(f"l'exercici '{self.name}' no mou cap figura")
        body = "".join(f"    {line}" if line.strip() else line for line in code.strip("\n").splitlines(True))
        return (f"{widget_source.rstrip()}\n\n\n"
                f"# La teva solució de l'exercici «{self.title}», al lloc de `{self.drives.seam}`.\n"
                f"# «Restaura» torna al codi original.\n\n"
                f"def _la_teva_solucio():\n{body}\n    return {self.function}\n\n\n"
                f"{self.function} = _la_teva_solucio()\n\n\n{self.drives.binding.strip()}\n")

    def cases(self) -> list[Case]:
        """The visible examples, then the hidden cases the seed draws (the same everywhere)."""
        rng = np.random.default_rng(self.seed)
        return [Case(dict(a), False) for a in self.examples] + [Case(self.draw(rng), True) for _ in range(self.hidden)]

    @property
    def filename(self) -> str:
        """The reader's code as tracebacks name it."""
        return f"<exercici: {self.name}>"

    def check(self, code: str, seconds: float = TIME_LIMIT_S) -> Verdict:
        """The reader's `code` run as a module, its `function` graded on every case; its lines
        stop after `seconds` (verdict `timeout`, at the line it had reached)."""
        try:
            with reader_code.time_limited(self.filename, seconds):
                return self._check(code)
        except reader_code.OutOfTime as stopped:
            line = reader_code.line_of(stopped, self.filename)
            where = f" (era a la línia {line})" if line else ""
            limit = fmt.number(seconds, 0 if float(seconds).is_integer() else 1)
            return Verdict("timeout", f"El codi no ha acabat en {limit} s i s'ha aturat{where}. Hi ha algun bucle que no acaba?",
                           0, 0, line=line)

    def _check(self, code: str) -> Verdict:
        try:
            module = reader_code.run_module(code, f"exercici_{self.name}", "", self.filename)
        except (KeyboardInterrupt, reader_code.OutOfTime):
            raise
        except BaseException as exc:  # noqa: BLE001 - the reader's code may raise anything: report it
            error = reader_code.failure(exc, self.filename)
            return Verdict("error", f"El codi no s'executa: {said(error)}", 0, 0, line=error["line"])
        fn = module.__dict__.get(self.function)
        if not callable(fn):
            return Verdict("error", f"El codi ha de definir la funció `{self.function}`.", 0, 0)
        return self.grade(fn)

    def grade(self, fn: Callable[..., Any]) -> Verdict:
        """`fn` called on every case, in order, until one differs from the reference."""
        cases = self.cases()
        for i, case in enumerate(cases):
            expected = self.reference(**copy.deepcopy(case.args))
            call = called(self.function, case.args)
            try:
                with np.errstate(all="ignore"):  # a NaN is explained below, not warned about
                    got = fn(**copy.deepcopy(case.args))  # a copy: an answer may modify its arguments
            except (KeyboardInterrupt, reader_code.OutOfTime):
                raise
            except BaseException as exc:  # noqa: BLE001
                error = reader_code.failure(exc, self.filename)
                return Verdict("error", f"Amb {which(case)} `{call}`, la funció ha fallat: {said(error)}", i,
                               len(cases), call, case.hidden, shown(expected), line=error["line"])
            reason = mismatch(expected, got, self.rtol, self.atol)
            if reason is not None:
                return Verdict("fail", f"Amb {which(case)} `{call}`, {reason}.", i, len(cases), call, case.hidden,
                               shown(expected), shown(got))
        return Verdict("pass", f"Correcte: la funció dona el resultat esperat en els {len(cases)} casos "
                               f"({len(self.examples)} d'exemple i {self.hidden} d'amagats).", len(cases), len(cases))

    def proof(self) -> str | None:
        """Why the build must refuse this exercise, or None: the reference and the solution pass
        every case, the starter runs and fails one."""
        try:
            mine = self.grade(self.reference)
        except Exception as exc:  # computing an expected value: the author's code, not a reader's
            return f"la referència falla: {type(exc).__name__}: {exc}"
        if mine.verdict != "pass":
            return f"la referència no passa les seves pròpies comprovacions: {mine.message}"
        solution = self.check(self.solution)
        if solution.verdict != "pass":
            return f"la solució no passa: {solution.message}"
        starter = self.check(self.starter)
        if starter.verdict == "pass":
            return "el codi inicial ja passa totes les comprovacions: el lector no hi té res a fer"
        if starter.total == 0:
            return f"el codi inicial no arriba a cridar la funció: {starter.message}"
        return None


def said(error: dict) -> str:
    """{kind, message, line} as a Catalan clause."""
    where = f" a la línia {error['line']}" if error["line"] else ""
    return f"{error['kind']}{where}: {error['message']}"


def which(case: Case) -> str:
    return "un cas amagat" if case.hidden else "l'exemple"


def shown(value: Any) -> str:
    """A value as the reader's Python would write it (code, so a decimal point), short."""
    if isinstance(value, np.ndarray):  # as the reader would type it back, on one line
        text = np.array2string(value, threshold=12, separator=", ", max_line_width=10**6,
                               formatter={"float_kind": lambda x: f"{x:.6g}"})
        return f"np.array({' '.join(text.split())})"
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.10g}"
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= 80 else text[:77] + "…"


def called(function: str, args: dict) -> str:
    return f"{function}({', '.join(f'{k}={shown(v)}' for k, v in args.items())})"


def kind(value: Any) -> str:
    """What the reader returned, in words: its type and, for an array, its shape."""
    if isinstance(value, np.ndarray):
        return f"un array de forma {value.shape}"
    return f"un valor de tipus `{type(value).__name__}` (`{shown(value)}`)"


def mismatch(expected: Any, got: Any, rtol: float, atol: float) -> str | None:
    """Why `got` is not `expected` (Catalan), or None: ints exactly, floats within rtol/atol,
    arrays by shape and then element by element."""
    if isinstance(expected, np.ndarray):
        return _array(expected, got, rtol, atol)
    if isinstance(expected, numbers.Integral) and not isinstance(expected, bool):
        if isinstance(got, bool) or not isinstance(got, numbers.Integral):
            return (f"s'esperava un enter (`int`), `{shown(expected)}`, i ha tornat {kind(got)}; "
                    "un recompte es fa amb enters (`//`, `math.ceil`, `int(...)`)")
        return None if int(got) == int(expected) else f"s'esperava `{shown(expected)}` i ha tornat `{shown(got)}`"
    if isinstance(expected, numbers.Real):
        if isinstance(got, bool) or not isinstance(got, numbers.Real):
            return f"s'esperava un nombre, `{shown(expected)}`, i ha tornat {kind(got)}"
        return _real(float(expected), float(got), rtol, atol)
    return None if got == expected else f"s'esperava `{shown(expected)}` i ha tornat `{shown(got)}`"


def _real(expected: float, got: float, rtol: float, atol: float) -> str | None:
    if math.isnan(got):
        return f"s'esperava `{shown(expected)}` i ha tornat NaN (un 0/0, inf − inf o l'arrel d'un negatiu?)"
    if math.isinf(got):
        return f"s'esperava `{shown(expected)}` i ha tornat `{shown(got)}` (una divisió per zero?)"
    if abs(got - expected) <= max(rtol * abs(expected), atol):
        return None
    return f"s'esperava `{shown(expected)}` i ha tornat `{shown(got)}`{relative(expected, got)}"


def relative(expected: float, got: float) -> str:
    """The relative difference as a Catalan clause: how far off, when a float is."""
    if not expected:
        return ""
    off = abs(got - expected) / abs(expected)
    if off < 1e-3:
        return " (una diferència relativa inferior al 0,1 %, però més gran que la tolerància)"
    return f" (una diferència relativa del {fmt.percent(off, 1)})"


def _array(expected: np.ndarray, got: Any, rtol: float, atol: float) -> str | None:
    if not isinstance(got, (np.ndarray, list, tuple)):
        return f"s'esperava un array de forma {expected.shape} i ha tornat {kind(got)}"
    try:
        values = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return f"s'esperava un array de nombres de forma {expected.shape} i ha tornat {kind(got)} que no ho és"
    if values.shape != expected.shape:
        return f"s'esperava un array de forma {expected.shape} i ha tornat un array de forma {values.shape}"
    nan = np.isnan(values) & ~np.isnan(expected)
    if nan.any():
        at = tuple(int(i) for i in np.argwhere(nan)[0])
        return (f"l'array tornat té {int(nan.sum())} NaN (el primer a l'índex {at[0] if len(at) == 1 else at}); "
                "un 0/0 o un inf − inf?")
    close = np.isclose(values, expected, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return None
    at = tuple(int(i) for i in np.argwhere(~close)[0])
    index = at[0] if len(at) == 1 else at
    return (f"{int((~close).sum())} elements diferents; el primer, a l'índex {index}: s'esperava "
            f"`{shown(expected[at])}` i ha tornat `{shown(values[at])}`")
