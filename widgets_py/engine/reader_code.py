"""A reader's code, run as a module of the shipped package: the one way the worker runs it.

Two callers: a reader's edit of a widget's module (edits.py, the «Codi» panel) and a reader's
answer to an exercise (exercise.py). Both compile the text as a fresh module whose relative
imports resolve to the shipped package, name it in tracebacks so that an error points at the
reader's own line, and turn anything raised (SystemExit too) into an answer. What this cannot
do is isolate the code: it is Python in the worker's interpreter. What it may reach in the
browser is narrowed by assets/tw/lockdown.js, what its output may draw by markup.py, and a
run that never ends is stopped by `time_limited` where the reader's own lines loop, and by the
page otherwise (the worker's time limit).
"""

from __future__ import annotations

import contextlib
import linecache
import sys
import time
import traceback
import types
from typing import Iterator


class OutOfTime(BaseException):
    """Raised at a line of the reader's code once its time is up (`time_limited`). Not an
    Exception: an `except Exception` in the reader's loop does not swallow it."""


def run_module(code: str, name: str, package: str, filename: str, doc: str | None = None) -> types.ModuleType:
    """`code` run as a fresh module `name` of `package` (its relative imports resolve to the
    shipped package), compiled without this module's future flags; `filename` names it in
    tracebacks, which show the reader's lines. Whatever it raises reaches the caller."""
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)  # tracebacks show the edited lines
    compiled = compile(code, filename, "exec", dont_inherit=True)
    module = types.ModuleType(name, doc)
    module.__package__ = package
    module.__file__ = filename
    exec(compiled, module.__dict__)  # noqa: S102 - the reader's own code, in the reader's worker
    return module


def line_of(exc: BaseException, filename: str) -> int | None:
    """The line of the reader's text where `exc` arose (the deepest frame in it), if any."""
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        return exc.lineno
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    return lines[-1] if lines else None


def failure(exc: BaseException, filename: str) -> dict:
    """{kind, message, line} of what the reader's code raised, the line in its own text."""
    message = exc.msg if isinstance(exc, SyntaxError) else str(exc) or repr(exc)
    return {"kind": type(exc).__name__, "message": message, "line": line_of(exc, filename)}



@contextlib.contextmanager
def time_limited(filename: str, seconds: float) -> Iterator[None]:
    """Within the block, the reader's code (frames compiled as `filename`) raises OutOfTime at
    its next line once `seconds` have passed: a loop of the reader's own lines stops itself and
    the worker answers, its figures intact. Why not leave it to the page's limit alone: that
    restarts Python (a new boot), and WebKitGTK keeps a worker terminated inside WebAssembly
    spinning on its thread, after the page is left too (measured: one core, until the browser's
    web process ends). A loop inside one C call (`sum(range(10**15))`) has no line to stop at:
    the page's limit stays for it. Frames of other files (numpy, the chapter's reference) are
    not traced, so they run at full speed."""
    deadline = time.monotonic() + seconds

    def step(frame, event, arg):  # a line, or an opcode: a line event alone misses `while 1: pass`
        if time.monotonic() > deadline:
            raise OutOfTime(f"{seconds:g} s")
        return step

    def call(frame, event, arg):
        if frame.f_code.co_filename != filename:
            return None
        frame.f_trace_opcodes = True
        return step

    here = sys._getframe()
    asked, here.f_trace_opcodes = here.f_trace_opcodes, True  # CPython 3.12 (Pyodide's) sends opcode events
    here.f_trace_opcodes = asked  # only if a frame asked for them before sys.settrace (f_opcode_trace_set)
    previous = sys.gettrace()  # a debugger's or coverage's, put back after
    sys.settrace(call)
    try:
        yield
    finally:
        sys.settrace(previous)
