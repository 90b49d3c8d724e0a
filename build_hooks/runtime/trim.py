"""The first visit's runtime: what the worker imports, as bytecode; the rest beside it, whole.

Pyodide's `python_stdlib.zip` holds 550 members, and the worker imports some 160 of them;
numpy's wheel holds subpackages (f2py, fft, polynomial, testing, ...) and type stubs that no
widget imports. Every byte of them was downloaded before a page became interactive (issue
33). So the site serves, under the names Pyodide loads:

- `python_stdlib.zip`: only the standard-library modules the package stage saw imported
  (bytecode.py's `imported`: the worker's boot, numpy, every widget module, run at its
  defaults, the code panel's paths, and every module the package's source names), each as
  sourceless bytecode (`json/__init__.pyc`: zipimport loads it without a `.py` beside it; its
  code keeps the source's path, so a traceback names the file and line as before);
- numpy's wheel without the subpackages none of those imports entered, and without `.pyi`
  stubs and `.pxd` headers (never imported), each imported module as sourceless bytecode
  too, its RECORD listing what is left;

and beside them the pinned archives themselves, unchanged: `python_stdlib-full.zip` and
numpy's pinned wheel. The trimmed zip carries `tw-runtime.json` (INDEX), which says what each
of them completes and for which module names; the worker's finder
(widgets_py/engine/on_miss.py) reads it and fetches an archive only when an import needs it.
The single-file export reads it too, to ship the whole archives instead (single_file.py).
"""

from __future__ import annotations

import io
import json
import zipfile

from . import assets, bundle, bytecode, zips

INDEX = "tw-runtime.json"  # in the trimmed stdlib zip; widgets_py/engine/on_miss.py reads it
STDLIB_FULL = "python_stdlib-full.zip"  # the pinned python_stdlib.zip, under the name the site serves it
STDLIB_MOUNT = "/lib/python_stdlib-full.zip"  # where the finder writes it, in the interpreter
NEVER_IMPORTED = (".pyi", ".pxd")  # type stubs and Cython headers: read by tools, never by an import
EXTENSION = ".so"  # an extension module (numpy's are `name.cpython-312-wasm32-emscripten.so`)


def _origin_source(origin: str) -> str:
    """A zip module's origin names its .pyc when one was loaded: the source's path is the key."""
    return origin[:-1] if origin.endswith(".pyc") else origin


def stdlib_members(pycs: dict[str, bytes], imported: tuple[str, ...]) -> dict[str, bytes]:
    """Zip member -> bytecode, for every standard-library module in `imported`."""
    out = {}
    for origin in map(_origin_source, imported):
        if not origin.startswith(bytecode.STDLIB):
            continue
        if origin not in pycs:
            raise RuntimeError(f"{origin}: imported but not compiled (bytecode.py's stages disagree)")
        out[origin[len(bytecode.STDLIB):] + "c"] = pycs[origin]
    return out


def top_level(zip_data: bytes) -> list[str]:
    """The top-level module and package names an archive holds."""
    with zipfile.ZipFile(io.BytesIO(zip_data)) as z:
        return sorted({name.split("/")[0].removesuffix(".py") for name in z.namelist() if name.endswith(".py")})


def _subpackage(name: str, top: str) -> str | None:
    """`numpy/fft/x.py` -> `fft`; None for a file of `top`'s own folder or outside it."""
    parts = name.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == top else None


def used_subpackages(imported: tuple[str, ...], top: str) -> set[str]:
    """The subpackages of `top` (in site-packages) that some imported module belongs to."""
    rels = (o[len(bytecode.SITE_PACKAGES):] for o in imported if o.startswith(bytecode.SITE_PACKAGES))
    return {sub for rel in rels if (sub := _subpackage(rel, top))}


def rewritten(data: bytes, rename, record: str) -> bytes:
    """The wheel `data` with each member named `rename(name)`, or left out where that is None;
    its RECORD says the same (a moved .pyc needs no hash, PEP 376)."""
    def member(name: str, body: bytes) -> tuple[str, bytes] | None:
        if (new_name := rename(name)) is None:
            return None
        if name == record:
            lines = []
            for line in body.splitlines(keepends=True):
                path = line.split(b",")[0].decode()
                if (new := rename(path)) is not None:
                    lines.append(line if new == path else f"{new},,\n".encode())
            body = b"".join(lines)
        return new_name, body

    return zips.rewrite(data, member)


def sourceless(name: str) -> str:
    """`pkg/__pycache__/mod.cpython-312.pyc` -> `pkg/mod.pyc`, where a finder loads bytecode with no source."""
    folder, _, file = name.rpartition("/__pycache__/")
    return f"{folder}/{file.split('.')[0]}.pyc"


def numpy_wheel(data: bytes, imported: tuple[str, ...]) -> tuple[bytes, list[str]]:
    """(numpy's wheel without what no import entered, the members dropped: subpackages' folders,
    then extension modules).

    An imported module ships as its bytecode alone, moved where Python's sourceless loader
    finds it (its code names the source's path, for tracebacks); the modules of a kept
    subpackage that nothing imported keep their source. An extension module (`.so`) that
    nothing imported is left out: numpy's C tests (`_rational_tests`…) and `linalg.lapack_lite`.
    Pyodide compiles every `.so` of a wheel as it installs it, so each costs its download and
    its compile on the first visit.
    """
    with zipfile.ZipFile(io.BytesIO(data)) as z:  # a subpackage is a folder with an __init__.py (not __pycache__)
        names = z.namelist()
    packages = {sub for name in names if (sub := _subpackage(name, "numpy")) and name == f"numpy/{sub}/__init__.py"}
    dropped = sorted(packages - used_subpackages(imported, "numpy"))
    compiled = {sourceless(name)[:-1] for name in names if "/__pycache__/" in name}  # sources with bytecode
    loaded = {o[len(bytecode.SITE_PACKAGES):] for o in imported if o.startswith(bytecode.SITE_PACKAGES)}
    unloaded = sorted(name for name in names if name.endswith(EXTENSION) and name not in loaded
                      and _subpackage(name, "numpy") not in dropped)

    def rename(name: str) -> str | None:
        if name.endswith(NEVER_IMPORTED) or _subpackage(name, "numpy") in dropped or name in compiled or name in unloaded:
            return None
        return sourceless(name) if "/__pycache__/" in name else name

    return rewritten(data, rename, bundle.NUMPY_RECORD), [f"numpy/{sub}/" for sub in dropped] + unloaded


def module_name(member: str) -> str:
    """A dropped member's module: `numpy/fft/` -> numpy.fft; `numpy/linalg/lapack_lite.cpython-312-wasm32-emscripten.so`
    -> numpy.linalg.lapack_lite."""
    path = member.rstrip("/")
    return (path.split(".", 1)[0] if path.endswith(EXTENSION) else path).replace("/", ".")


def index(stdlib_full: bytes, numpy_full: bundle.Archive, numpy_dropped: list[str]) -> bytes:
    """INDEX: each archive beside the trimmed ones, what it completes, and for which names.

    `kind` says how the finder uses it: "path", a zip put on sys.path after the trimmed one
    (its packages' folders added to the trimmed packages' `__path__`); "site", a wheel whose
    `members` folders are unpacked into site-packages.
    """
    archives = [
        {"file": STDLIB_FULL, "sha256": assets.sha256(stdlib_full), "completes": bytecode.STDLIB_FILE,
         "kind": "path", "mount": STDLIB_MOUNT, "root": bytecode.STDLIB.rstrip("/"), "modules": top_level(stdlib_full)},
        {"file": numpy_full.file_name, "sha256": numpy_full.sha256, "completes": "numpy", "kind": "site",
         "into": bytecode.SITE_PACKAGES, "members": numpy_dropped,
         "modules": [module_name(m) for m in numpy_dropped]},
    ]
    return json.dumps({"archives": archives}, indent=0, sort_keys=True).encode()


def stdlib_zip(members: dict[str, bytes], index_data: bytes) -> bytes:
    """The trimmed python_stdlib.zip: the bytecode members and INDEX, the same bytes for the same inputs."""
    return zips.write(dict(sorted({**members, INDEX: index_data}.items())))


def runtime(core: dict[str, bytes], numpy: bundle.Archive, pinned: dict[str, bytes],
            pycs: dict[str, bytes], imported: tuple[str, ...]) -> tuple[dict[str, bytes], bundle.Archive]:
    """(Pyodide's core files, numpy) trimmed to `imported`, the pinned archives added to the core files."""
    numpy_full = bundle.Archive(assets.NUMPY_WHEEL, pinned[assets.NUMPY_WHEEL], assets.PINNED[assets.NUMPY_WHEEL])
    stdlib_full = pinned[bytecode.STDLIB_FILE]
    numpy_data, dropped = numpy_wheel(numpy.data, imported)
    stdlib = stdlib_zip(stdlib_members(pycs, imported), index(stdlib_full, numpy_full, dropped))
    return ({**core, bytecode.STDLIB_FILE: stdlib, STDLIB_FULL: stdlib_full, numpy_full.file_name: numpy_full.data},
            bundle.numpy_wheel(numpy_data))


def read_index(stdlib: bytes) -> dict | None:
    """The INDEX of a served python_stdlib.zip, or None if it is not a trimmed one."""
    with zipfile.ZipFile(io.BytesIO(stdlib)) as z:
        return json.loads(z.read(INDEX)) if INDEX in z.namelist() else None
