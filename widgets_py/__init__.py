"""Pure-numpy widgets of the interactive textbook.

Each widget is a Python function of its parameters that returns named values and an
SVG figure. The same call prerenders the page at build time (CPython) and recomputes
it in the reader's browser (Pyodide).
"""

from .params import Output, Param, ParamError
from .registry import Result, Widget, formatted, get, names, register, run

__all__ = ["Output", "Param", "ParamError", "Result", "Widget", "formatted", "get", "names",
           "register", "run"]
