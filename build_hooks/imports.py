"""Which modules of the package a module imports, and when: read from the source, never run.

Two concerns read it: a dirty serve renders again the pages whose widgets' modules reach an
edited one (pages/dependencies.py, authoring/preview.py), and the build puts each module in
the package the browser loads it with (runtime/placement.py), which needs to know whether an
import runs when its module does, when one of its functions is called, or never (a type's).
"""

from __future__ import annotations

import ast

TOP, CALL, TYPING = "top", "call", "typing"  # when an import runs: with its module, in a call, never


def module_path(name: str, paths: set[str]) -> str | None:
    """`widgets_py.engine.svg` -> `widgets_py/engine/svg.py` (or its package's __init__.py)."""
    base = name.replace(".", "/")
    for candidate in (base + ".py", base + "/__init__.py"):
        if candidate in paths:
            return candidate
    return None


def _statements(body: list[ast.stmt], when: str):
    """(import statement, when it runs) of a block, walked with its nesting: a function's body
    runs in a call; an `if TYPE_CHECKING:` block never (a type checker reads it)."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, when
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _statements(node.body, TYPING if when == TYPING else CALL)
        elif isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            yield from _statements(node.body, TYPING)
            yield from _statements(node.orelse, when)
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):  # classes, with, try, loops, if
                block = getattr(node, field, None)
                if isinstance(block, list):
                    yield from _statements(block, when)


def import_sites(sources: dict[str, str]) -> dict[str, dict[str, str]]:
    """Module path -> {path of a package module it imports (and their packages): when} (`sources`:
    path -> code). `when` is TOP, CALL or TYPING; a module imported more than one way counts
    by the earliest (TOP before CALL before TYPING)."""
    paths = set(sources)
    order = (TOP, CALL, TYPING)
    sites = {}
    for path, code in sources.items():
        package = path.split("/")[:-1]  # the package a relative import starts from
        found: dict[str, str] = {}
        for node, when in _statements(ast.parse(code, filename=path).body, TOP):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                base = ".".join(package[:len(package) - node.level + 1]) if node.level else ""
                module = ".".join(p for p in (base, node.module or "") if p)
                names = [module] + [f"{module}.{a.name}" for a in node.names]
            for name in names:
                parts = name.split(".")
                for i in range(1, len(parts) + 1):  # a module imports its packages' __init__ too
                    hit = module_path(".".join(parts[:i]), paths)
                    if hit and hit != path and (hit not in found or order.index(when) < order.index(found[hit])):
                        found[hit] = when
        sites[path] = found
    return sites


def imports(sources: dict[str, str]) -> dict[str, set[str]]:
    """Module path -> paths of the package's modules it imports (and their packages), however
    (import_sites): an import inside a function counts too."""
    return {path: set(found) for path, found in import_sites(sources).items()}


def closure(path: str, graph: dict[str, set[str]]) -> set[str]:
    """`path` and every module it imports, directly or not."""
    seen, todo = set(), [path]
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.add(p)
            todo += graph.get(p, ())
    return seen
