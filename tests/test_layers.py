"""The package shows its layers, chapters > engine > accel > maths, each importing only those
below it (import-linter's layers contract, pyproject.toml); no import cycle anywhere."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "widgets_py"
LINT = Path(sys.executable).with_name("lint-imports")


def chapters(package: Path) -> list[str]:
    return sorted(p.name for p in package.iterdir() if re.fullmatch(r"cap\d+", p.name) and (p / "__init__.py").is_file())


def lint(package: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """import-linter's verdict on `package` (a widgets_py folder), under pyproject.toml's
    contract with every chapter package of it in the top layer."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [contract] = config["contracts"]
    layers = [" | ".join(chapters(package)), *contract["layers"][1:]]
    lines = ["[importlinter]", f"root_package = {config['root_package']}", "",
             f"[importlinter:contract:{contract['id']}]", f"name = {contract['name']}", f"type = {contract['type']}",
             f"containers = {' '.join(contract['containers'])}", "layers =", *(f"    {layer}" for layer in layers)]
    ini = tmp_path / "contract.ini"
    ini.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "PYTHONPATH": str(package.parent)}  # this folder's widgets_py first
    return subprocess.run([str(LINT), "--config", str(ini), "--no-cache"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)


def test_the_layer_contract_holds(tmp_path):
    """The contract covers every chapter of the package, and the package keeps it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert config["contracts"][0]["layers"][0] in chapters(PACKAGE)
    out = lint(PACKAGE, tmp_path)
    assert out.returncode == 0 and "1 kept, 0 broken" in out.stdout, out.stdout + out.stderr


def test_the_layer_contract_fails_on_an_upward_import(tmp_path):
    """A maths module that imports the engine (its Catalan formats) breaks the contract, by name."""
    copy = tmp_path / "pkg" / "widgets_py"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.npz", "*.wasm"))
    serving = copy / "maths" / "serving.py"
    serving.write_text(serving.read_text() + "\nfrom ..engine import fmt  # an upward import\n")
    out = lint(copy, tmp_path)
    assert out.returncode != 0 and "BROKEN" in out.stdout, out.stdout + out.stderr
    assert "widgets_py.maths.serving -> widgets_py.engine.fmt" in out.stdout, out.stdout


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """Module -> the widgets_py modules it imports (statically, at any depth of its code)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                target = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
                for alias in node.names:
                    found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def test_the_import_graph_has_no_cycle():
    graph, state, path = imports(), {}, []

    def visit(n):
        state[n] = "open"
        path.append(n)
        for m in sorted(graph[n]):
            assert state.get(m) != "open", " -> ".join(path[path.index(m):] + [m])
            if m not in state:
                visit(m)
        state[n] = "done"
        path.pop()

    for n in sorted(graph):
        if n not in state:
            visit(n)


def test_layers_import_downwards_only():
    """engine knows no chapter; models know no chapter; a chapter's widget imports no widget."""
    for name, deps in imports().items():
        layer = name.split(".")[1] if "." in name else ""
        for dep in deps:
            dep_layer = dep.split(".")[1] if "." in dep else ""
            if layer in ("engine", "models"):
                assert not re.match(r"cap\d+$", dep_layer), f"{name} imports the chapter module {dep}"
            if re.match(r"cap\d+$", layer) and re.match(r"cap\d+$", dep_layer):
                assert dep == f"widgets_py.{layer}", f"widget {name} imports {dep}"
    assert {"widgets_py.engine.registry", "widgets_py.maths.gpt", "widgets_py.cap15.roofline"} <= set(imports())


def test_the_maths_and_acceleration_write_no_words_for_readers():
    """Sentences for readers are made in the widgets and engine.fmt; below the engine a
    string is a key, a label from a datasheet or a message for a developer (in English)."""
    catalan = re.compile(r"[àèéíòóúïüç]|\b(del|amb|els|les|una|dels|posicions|només|límit)\b", re.I)
    for path in [*(PACKAGE / "accel").glob("*.py"), *(PACKAGE / "maths").glob("*.py")]:
        tree = ast.parse(path.read_text())
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
                      and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                assert not catalan.search(node.value), f"{path.name}:{node.lineno}: {node.value!r}"


def test_shared_modules_cite_no_chapter_section():
    for path in [*(PACKAGE / "engine").glob("*.py"), *(PACKAGE / "accel").glob("*.py"), *(PACKAGE / "maths").glob("*.py")]:
        for line in path.read_text().splitlines():
            assert not re.search(r"§\s*\d", line) or "et al." in line, f"{path.name}: {line.strip()}"


def test_widget_modules_keep_no_cache_of_their_own():
    """Results that outlive a call live with the weights (session.cached), where a retraining
    drops them all; a widget's own lru_cache or module dict would keep the old weights' numbers."""
    for path in PACKAGE.glob("cap*/*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for d in node.decorator_list:
                    name = ast.unparse(d)
                    assert not re.search(r"\b(lru_cache|cache|cached_property)\b", name), f"{path.name}: @{name}"
        for node in tree.body:  # module level: no mutable containers filled at run time
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, (ast.Dict, ast.List, ast.Set)):
                target = ast.unparse(node.targets[0] if isinstance(node, ast.Assign) else node.target)
                assert not (isinstance(node.value, ast.Dict) and not node.value.keys) and \
                    not (isinstance(node.value, (ast.List, ast.Set)) and not node.value.elts), \
                    f"{path.name}: module-level {target} starts empty, a cache or a registry"


def test_no_module_keeps_run_time_state():
    """Run-time state lives on the session (engine.session), created per worker, build and
    test: nowhere in widgets_py a `global` statement, a module-level container that starts
    empty (a cache or registry filled as the page runs) or a module-level counter. What stays
    at module level is constants set at import and caches of pure functions of the shipped
    files (functools.cache: the corpus, the shipped weights, the registry's scan)."""
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        where = path.relative_to(PACKAGE)
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Global)], f"{where}: a global statement"
        for node in tree.body:
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            target = ast.unparse(node.targets[0] if isinstance(node, ast.Assign) else node.target)
            value = node.value
            empty = (isinstance(value, ast.Dict) and not value.keys) or (isinstance(value, (ast.List, ast.Set)) and not value.elts) \
                or (isinstance(value, ast.Call) and ast.unparse(value.func) in ("dict", "list", "set", "itertools.count", "count"))
            assert not empty, f"{where}: module-level {target} starts empty, run-time state (engine.session holds it)"
            assert not (isinstance(value, ast.Constant) and value.value is None), \
                f"{where}: module-level {target} = None, set later at run time (engine.session holds it)"


def test_the_workers_boot_imports_no_model_and_no_kernel():
    """Before the page is told its widgets are ready the worker imports browser.py: the
    calculators never read the mini-GPT, so its code and the kernel's load with the first model
    (session.products, session.load), not on every page's boot."""
    code = ("import sys; import widgets_py.engine.browser; "
            "print(' '.join(m for m in sys.modules if m.startswith(('widgets_py.accel', 'widgets_py.maths.gpt', "
            "'widgets_py.maths.pretrained', 'widgets_py.maths.layers'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [], out.stdout
