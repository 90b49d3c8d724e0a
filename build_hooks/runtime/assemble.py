"""Puts the pinned Pyodide runtime, numpy, the widgets_py wheels (code, model data, sources) and their lock into the site.

Where each file goes and how the wheel and the lock are made is `bundle.py`'s business;
this hook fetches the pinned files (`assets.py`), adds the bytecode of what the worker
imports (`bytecode.py`: the package's own stage not under `mkdocs serve`, where the package
changes with every edit), trims the standard library and numpy to what that stage imported,
the pinned archives beside them (`trim.py`; not under `mkdocs serve`, nor without node), and
ships our compiled modules as bytecode alone, their source in a wheel apart (`sourceless`),
all of it in a thread begun in `on_config`, refuses stale trained weights, and adds
everything to the build as generated files.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

from widgets_py.maths import pretrained

from . import assets, bundle, bytecode, placement, trim


def with_bytecode(core: dict[str, bytes], numpy: bundle.Archive,
                  pycs: dict[str, bytes]) -> tuple[dict[str, bytes], bundle.Archive]:
    """(Pyodide's core files, the numpy wheel) with `pycs`' bytecode added to their archives."""
    stdlib = bytecode.add_to_zip(core[bytecode.STDLIB_FILE], bytecode.stdlib_entries(pycs))
    numpy_data = bytecode.add_to_zip(numpy.data, bytecode.wheel_entries(pycs, "numpy"), record=bundle.NUMPY_RECORD)
    return {**core, bytecode.STDLIB_FILE: stdlib}, bundle.numpy_wheel(numpy_data)


def sourceless(code: dict[str, Path], pycs: dict[str, bytes]) -> tuple[dict[str, bytes], dict[str, Path]]:
    """(the code wheel's extra members, the sources wheel's files) from the code's files and the
    bytecode of the modules the worker imports (`pycs`, bytecode.wheel_entries): each such module
    as `pkg/mod.pyc`, where Python's sourceless loader finds it (trim.sourceless), its source apart."""
    members = {trim.sourceless(name): data for name, data in pycs.items()}
    apart = {name: path for name, path in code.items() if name + "c" in members}
    assert len(apart) == len(members), sorted(set(members) - {n + "c" for n in apart})  # bytecode of a file we ship
    return members, apart


def on_config(config, *, build):
    if "runtime" not in build.warm:  # a dirty serve whose code is unchanged has it (hooks.py)
        build.warm["runtime"] = build.later(assemble, build.is_serve)  # node works while the build goes on
    build.runtime = build.warm["runtime"]
    return config


def assemble(is_serve: bool, trimmed: bool = True) -> tuple[dict[str, bytes], bundle.Archive, bundle.Archive, bundle.Archive,
                                                            bundle.Archive | None, dict[str, bundle.Archive]]:
    """(Pyodide's core files, the numpy wheel, our code's package, our model data's, the sources'
    or None, each calculator's own) as the site serves them; `trimmed=False`: the layout before
    trim.py, whole archives with bytecode beside their source, ours too (benchmarks/budget.py).
    Under `mkdocs serve` or without node, the code's package holds every module."""
    pinned = {name: assets.fetch(name).read_bytes() for name in assets.PINNED}
    sources = bundle.package_files()
    code, data = bundle.split(sources)
    models = bundle.make_package(data, name=bundle.MODELS_NAME)
    wheel = bundle.make_package(sources)  # source and data, one package: what bytecode.package() rehearses with
    core = {name: data for name, data in pinned.items() if name != assets.NUMPY_WHEEL}
    numpy = bundle.numpy_wheel(pinned[assets.NUMPY_WHEEL])
    first = bytecode.runtime(pinned, bundle.lock(None, numpy).encode())
    if first:
        core, numpy = with_bytecode(core, numpy, first.pycs)
    if first and not is_serve:
        scanned = bytecode.scanned({n: p.read_bytes() for n, p in sources.items() if n.endswith(".py")}, bundle.NAME)
        ours = bytecode.package({**core, numpy.file_name: numpy.data, wheel.file_name: wheel.data,
                                 bundle.LOCK: bundle.lock(wheel, numpy).encode()}, bundle.PACKAGE_KEY, bundle.ENTRY, scanned)
        if ours:
            core, numpy = with_bytecode(core, numpy, ours.pycs)
            pycs = bytecode.wheel_entries(ours.pycs, bundle.NAME)
            if not trimmed:
                return core, numpy, bundle.make_package(code, pycs), models, None, {}
            core, numpy = trim.runtime(core, numpy, pinned, {**first.pycs, **ours.pycs}, ours.imported)
            return (core, numpy, *split_packages(code, data, pycs))
    return core, numpy, bundle.make_package(code), models, None, {}


def split_packages(code: dict[str, Path], data: dict[str, Path], pycs: dict[str, bytes]) -> tuple[
        bundle.Archive, bundle.Archive, bundle.Archive, dict[str, bundle.Archive]]:
    """(the code's package, the model data's, the sources', each calculator's own) as the site
    serves them, each module in the package placement.py gives it: in the code's, the model
    data's or a calculator's, as its bytecode alone where it has some; in the sources', the
    source of every module that has bytecode, and the reader's modules as source alone (its
    calls are rare, and the source is there anyway)."""
    placed = placement.place(code)
    members, apart = sourceless(code, pycs)

    def package(names, extra_files=None, **named) -> bundle.Archive:
        files = {n: code[n] for n in sorted(names) if n not in apart}
        return bundle.make_package({**(extra_files or {}), **files},
                                   {n + "c": members[n + "c"] for n in sorted(names) if n in apart}, **named)
    return (package(placed.code), package(placed.models, data, name=bundle.MODELS_NAME),
            bundle.make_package({**apart, **{n: code[n] for n in placed.reader}}, name=bundle.SOURCES_NAME),
            {widget: package(names, name=bundle.widget_package(widget)[0]) for widget, names in placed.widgets.items()})


def on_files(files: Files, *, config, build) -> Files:
    try:
        for name in pretrained.specs():
            pretrained.check(name)  # stale weights fail the build with how to retrain
    except pretrained.WeightsError as exc:
        raise PluginError(str(exc)) from None
    try:
        core, numpy, wheel, models, sources, widgets = build.runtime.result()
    except assets.AssetError as exc:  # one message, no traceback: it says all there is
        raise PluginError(str(exc)) from None
    build.wheel, build.models, build.sources, build.widgets = wheel, models, sources, widgets
    build.core = {name: assets.sha256(data) for name, data in core.items()}
    for name, data in core.items():
        files.append(File.generated(config, bundle.RUNTIME_DIR + name, content=data))
    for w in (numpy, wheel, models, sources, *widgets.values()):
        if w is not None:
            files.append(File.generated(config, bundle.RUNTIME_DIR + w.file_name, content=w.data))
    files.append(File.generated(config, bundle.RUNTIME_DIR + bundle.LOCK,
                                content=bundle.lock(wheel, numpy, models, sources, widgets)))
    return files
