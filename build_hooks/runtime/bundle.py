"""The layout of what the browser loads, in one place: Pyodide's folder, its lock, our packages.

Pyodide's convention: packages are archives listed in `pyodide-lock.json` with their sha256,
and `pyodide.loadPackage(name)` fetches, verifies and installs them. The site's lock holds
the official numpy entry and the pure-Python packages of `widgets_py`, built here from the
files on disk on every build, so `mkdocs serve` ships edited widget code. Each is laid out as
a wheel and archived as a `.tar.bz2`, the model data's as a `.zip` (make_package says why):
- `widgets-py`, the code: what the worker loads before any widget is interactive, so only the
  worker's entry and what more than one widget needs (placement.py says which modules). Each
  module the worker imports ships as its bytecode alone (bytecode.py compiles it, assemble.py
  lays it out), the others as source;
- `widgets-py-widget-NAME`, each calculator's own: what that widget alone imports, installed
  with the boot for a page's first calculator, when the page asks for its others (host.js),
  or before a call that names it;
- `widgets-py-models`, the model data (MODEL_DATA: the mini-GPTs' trained weights, the
  training corpus, the WebAssembly kernel) and the code only the widgets declared `models`
  run (the mini-GPT, its training, the kernel's driver): about half the bytes, which only
  those widgets read (engine/widget.py), so the worker loads it after the calculators are
  interactive, when the page asks (host.js: a model widget near the viewport, or the page
  idle) or a call needs it (worker.js);
- `widgets-py-sources`, the source of the modules shipped as bytecode, and the code that reads
  or checks a reader's code (edits, exercises), installed beside the rest only when something
  needs it (the «Codi» panel opens, an exercise's hints or check: worker.js): no widget reads
  it to answer.
All are checked against the lock's sha256 by loadPackage, precached for offline reading
(hosting/offline.py: every file of the site) and carried by the single file
(export/single_file.py: every package of the lock). Each package is byte-identical for
identical inputs (sorted entries, no timestamps), and its version carries a hash of them,
so a changed package is a new file name that no cache can confuse with the old one.

The browser learns all of this from `site_config()`, written into each widget page: the
worker hard-codes no folder, file or module name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pyodide_lock import PackageSpec, PyodideLockSpec
from pyodide_lock.spec import InfoSpec

from widgets_py.engine import markup, protocol

from .. import cache
from . import assets, placement, zips

PACKAGE = Path(__file__).resolve().parents[2] / "widgets_py"
NAME = "widgets_py"  # import name, and the distribution name in file names
PACKAGE_KEY = "widgets-py"  # its normalised name (PEP 503): the lock's key, loadPackage's argument
MODELS_NAME, MODELS_KEY = "widgets_py_models", "widgets-py-models"  # the model data's package, likewise
SOURCES_NAME, SOURCES_KEY = "widgets_py_sources", "widgets-py-sources"  # the compiled modules' source, likewise
WIDGET_NAME, WIDGET_KEY = "widgets_py_widget_", "widgets-py-widget-"  # + a calculator's name: its own package
MODEL_DATA = (f"{NAME}/maths/weights/", f"{NAME}/maths/data/", f"{NAME}/accel/wasm/")  # archive folders: its files
VERSION = "0.1.0"
ENTRY = "widgets_py.engine.browser"  # the module the worker imports: render(), fixed(), Trainer
RUNTIME_DIR = "pyodide/"  # Pyodide's files, numpy, our packages and the lock, in the built site
LOCK = "pyodide-lock.json"
SCRIPTS_DIR = "assets/tw/"  # the site's own scripts, from its root (worker.js and what it imports)
WORKER_IMPORTS = {"protocol": "protocol.js", "lockdown": "lockdown.js"}  # worker.js's imports, by its URL's keys
NUMPY_RECORD = "numpy-2.0.2.dist-info/RECORD"
INFO = InfoSpec(arch="wasm32", platform="emscripten_3_1_58", version=assets.PYODIDE_VERSION,
                python="3.12.7", abi_version="2024_0")  # as in the official 0.27.7 lock


@dataclass(frozen=True)
class Archive:
    file_name: str
    data: bytes
    sha256: str


SOURCES_ONLY = (".pyc", ".c", ".h")  # caches, and the kernel's C: the wheel ships its build (kernel.wasm)


def package_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Archive name -> path: every file of the package (code, weights, corpus, the kernel's
    binary), no caches."""
    return {p.relative_to(package.parent).as_posix(): p for p in sorted(package.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and p.suffix not in SOURCES_ONLY}


def split(files: dict[str, Path]) -> tuple[dict[str, Path], dict[str, Path]]:
    """(the code, the model data) of package_files(): the second, MODEL_DATA's files."""
    data = {name: path for name, path in files.items() if name.startswith(MODEL_DATA)}
    return {name: path for name, path in files.items() if name not in data}, data


def make_package(files: dict[str, Path], extra: dict[str, bytes] | None = None, name: str = NAME) -> Archive:
    """The package `name` of `files` (and `extra` members: bytecode), with the dist-info that
    names it (importlib.metadata reads its METADATA), as a `.tar.bz2`, or for the model data a
    `.zip`. Pyodide's loader unpacks either as it does a wheel (shutil.unpack_archive, whose
    tarfile and bz2 its boot imports anyway). For code, one bzip2 stream over the whole archive
    packs tighter than a zip's members each deflated alone (the code: 296 KB as a wheel, 183 KB
    so); the model data, mostly weights that bzip2 packs no further, would be 8 % smaller so
    (579 KB against 628 KB) but take 100 ms more to unpack (node here), more on a phone's CPU.
    A wheel's RECORD, a hash per file that no one reads here, is left out. Byte-identical for
    identical inputs. The code's (NAME) requires numpy; the others nothing."""
    contents = dict(sorted({**{n: path.read_bytes() for n, path in files.items()}, **(extra or {})}.items()))
    version = f"{VERSION}+{cache.key(cache.listing(contents))[:12]}"  # a local version: the content's own
    info = f"{name}-{version}.dist-info/"
    requires = "Requires-Dist: numpy\n" if name == NAME else ""
    contents[info + "METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{requires}".encode()
    contents[info + "top_level.txt"] = f"{NAME}\n".encode()  # the model data's files are widgets_py's package data
    if name == MODELS_NAME:
        data = zips.write(contents)
        return Archive(f"{name}-{version}{zips.ZIP}", data, assets.sha256(data))
    data = zips.tar(contents)
    return Archive(f"{name}-{version}{zips.TAR_BZ2}", data, assets.sha256(data))


def members(package: Archive) -> dict[str, bytes]:
    """Member name -> bytes of one of our packages (make_package)."""
    return zips.members(package.data)


def numpy_wheel(data: bytes) -> Archive:
    """The numpy wheel the site serves: the pinned one, or it with bytecode added (bytecode.py).

    Changed bytes get a changed name (a local version, the content's own hash), so no cache
    can serve a reader the pinned file under the lock's new sha256, or the reverse.
    """
    digest = assets.sha256(data)
    if digest == assets.PINNED[assets.NUMPY_WHEEL]:
        return Archive(assets.NUMPY_WHEEL, data, digest)
    name, version, rest = assets.NUMPY_WHEEL.split("-", 2)
    return Archive(f"{name}-{version}+{digest[:12]}-{rest}", data, digest)


def widget_package(widget: str) -> tuple[str, str]:
    """(distribution name, lock key) of calculator `widget`'s own package (placement.py)."""
    return WIDGET_NAME + widget.lower(), WIDGET_KEY + widget.lower().replace("_", "-")


def lock(wheel: Archive | None, numpy: Archive | None = None, models: Archive | None = None,
         sources: Archive | None = None, widgets: dict[str, Archive] | None = None) -> str:
    """The site's pyodide-lock.json: numpy (the official entry's wheel, or it with bytecode), our
    code's package and, apart, the model data's, the sources' (each loaded by name, never as a
    dependency) and each calculator's own (`widgets`: widget -> its package), which needs the code's."""
    numpy = numpy or numpy_wheel(assets.fetch(assets.NUMPY_WHEEL).read_bytes())
    packages = {"numpy": PackageSpec(name="numpy", version=numpy.file_name.split("-")[1], file_name=numpy.file_name,
                                     install_dir="site", sha256=numpy.sha256, imports=["numpy"], unvendored_tests=True)}
    if wheel is not None:
        packages[PACKAGE_KEY] = PackageSpec(name=PACKAGE_KEY, version=wheel.file_name.split("-")[1],
                                            file_name=wheel.file_name, install_dir="site", sha256=wheel.sha256,
                                            imports=[NAME], depends=["numpy"])
    if models is not None:
        packages[MODELS_KEY] = PackageSpec(name=MODELS_KEY, version=models.file_name.split("-")[1],
                                           file_name=models.file_name, install_dir="site", sha256=models.sha256,
                                           imports=[], depends=[])
    if sources is not None:
        packages[SOURCES_KEY] = PackageSpec(name=SOURCES_KEY, version=sources.file_name.split("-")[1],
                                            file_name=sources.file_name, install_dir="site", sha256=sources.sha256,
                                            imports=[], depends=[])
    for widget, package in sorted((widgets or {}).items()):
        key = widget_package(widget)[1]
        packages[key] = PackageSpec(name=key, version=package.file_name.split("-")[1], file_name=package.file_name,
                                    install_dir="site", sha256=package.sha256, imports=[], depends=[PACKAGE_KEY])
    spec = PyodideLockSpec(info=INFO, packages=packages)
    spec.check_wheel_filenames()
    return json.dumps(spec.model_dump(), indent=1, sort_keys=True)


def site_config(wheel: Archive, core: dict[str, str], versions: dict[str, str], models: Archive | None = None,
                sources: Archive | None = None, widgets: dict[str, Archive] | None = None) -> protocol.SiteConfig:
    """What the browser needs to boot, from this module's layout (see assets/tw/kernel.js).

    `core`: file name -> sha256 of Pyodide's files as this site serves them (the pinned
    bytes, python_stdlib.zip with its bytecode), for whoever copies them (single_file.py).
    `versions`: site path -> hash of the bytes (offline.digest) of each file that a script
    loads by URL (the workers, what they import, the lock): the URL carries it (`?v=`), so
    no HTTP cache and no service worker pairs this build's page with another build's file.
    `markup`: what a widget's figure may contain (widgets_py/engine/markup.py), for the
    page's sanitiser. `models`: the model data's package, as the lock names it, its sha256 and
    the widgets and exercises whose calls need it (none: the site has no model data).
    `sources`: the compiled modules' source, as the lock names it (none: the code's package
    carries every source). `widgets`: each calculator with a package of its own (`widgets`),
    and each exercise that drives one, -> that package, as the lock names it. `page`: the
    widgets of the page, in its order (none here: prerender.py writes each page's). `worker`:
    worker.js's URL (worker_url). Its type is protocol.SiteConfig (types/protocol.d.ts: TWSiteConfig).
    """
    return {"runtime": RUNTIME_DIR, "lock": LOCK, "package": PACKAGE_KEY, "entry": ENTRY, "sha256": wheel.sha256,
            "models": {"package": MODELS_KEY, "sha256": models.sha256, "needs": placement.needing_models()} if models else None,
            "sources": SOURCES_KEY if sources else None, "worker": worker_url(versions),
            "widgets": placement.driving({name: widget_package(name)[1] for name in widgets or {}}), "page": [],
            "core": core, "versions": versions, "markup": markup.allow_list()}


def worker_url(versions: dict[str, str]) -> str:
    """worker.js from the site's root, with its version and those of the scripts it imports
    (`worker.js?v=…&protocol=…&lockdown=…`: worker.js imports them at those): kernel.js starts
    it, and preload.py has the page ask for it at once. A file without a version goes without one."""
    pairs = [("v", SCRIPTS_DIR + protocol.SCRIPTS["WORKER"]),
             *((key, SCRIPTS_DIR + file) for key, file in WORKER_IMPORTS.items())]
    query = "&".join(f"{key}={versions[path]}" for key, path in pairs if path in versions)
    return SCRIPTS_DIR + protocol.SCRIPTS["WORKER"] + ("?" + query if query else "")
