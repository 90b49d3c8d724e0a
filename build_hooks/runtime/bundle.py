"""The layout of what the browser loads, in one place: Pyodide's folder, its lock, our wheel.

Pyodide's convention: packages are wheels listed in `pyodide-lock.json` with their sha256,
and `pyodide.loadPackage(name)` fetches, verifies and installs them. The site's lock holds
the official numpy entry and a pure-Python wheel of `widgets_py` (source, trained weights
and corpus as package data), built here from the files on disk on every build, so
`mkdocs serve` ships edited widget code. The wheel is byte-identical for identical
inputs (sorted entries, fixed timestamps), and its version carries a hash of them, so a
changed package is a new file name that no cache can confuse with the old one.

The browser learns all of this from `site_config()`, written into each widget page: the
worker hard-codes no folder, file or module name.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pyodide_lock import PackageSpec, PyodideLockSpec
from pyodide_lock.spec import InfoSpec

from widgets_py.engine import markup, protocol

from .. import cache
from . import assets, zips

PACKAGE = Path(__file__).resolve().parents[2] / "widgets_py"
NAME = "widgets_py"  # import name, and the distribution name in file names
PACKAGE_KEY = "widgets-py"  # its normalised name (PEP 503): the lock's key, loadPackage's argument
VERSION = "0.1.0"
ENTRY = "widgets_py.engine.browser"  # the module the worker imports: render(), fixed(), Trainer
RUNTIME_DIR = "pyodide/"  # Pyodide's files, numpy, our wheel and the lock, in the built site
LOCK = "pyodide-lock.json"
NUMPY_RECORD = "numpy-2.0.2.dist-info/RECORD"
INFO = InfoSpec(arch="wasm32", platform="emscripten_3_1_58", version=assets.PYODIDE_VERSION,
                python="3.12.7", abi_version="2024_0")  # as in the official 0.27.7 lock


@dataclass(frozen=True)
class Wheel:
    file_name: str
    data: bytes
    sha256: str


SOURCES_ONLY = (".pyc", ".c", ".h")  # caches, and the kernel's C: the wheel ships its build (kernel.wasm)


def package_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Archive name -> path: every file of the package (code, weights, corpus, the kernel's
    binary), no caches."""
    return {p.relative_to(package.parent).as_posix(): p for p in sorted(package.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and p.suffix not in SOURCES_ONLY}


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def make_wheel(files: dict[str, Path], extra: dict[str, bytes] | None = None) -> Wheel:
    """A py3-none-any wheel of `files` (and `extra` members: bytecode), byte-identical for identical inputs."""
    contents = dict(sorted({**{name: path.read_bytes() for name, path in files.items()}, **(extra or {})}.items()))
    version = f"{VERSION}+{cache.key(cache.listing(contents))[:12]}"  # a local version: the content's own
    info = f"{NAME}-{version}.dist-info/"
    contents[info + "METADATA"] = f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\nRequires-Dist: numpy\n".encode()
    contents[info + "WHEEL"] = b"Wheel-Version: 1.0\nGenerator: build_hooks.runtime.bundle\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    contents[info + "top_level.txt"] = f"{NAME}\n".encode()
    record = [_record_line(n, d) for n, d in contents.items()] + [info + "RECORD,,"]
    contents[info + "RECORD"] = ("\n".join(record) + "\n").encode()
    data = zips.write(contents)
    return Wheel(f"{NAME}-{version}-py3-none-any.whl", data, assets.sha256(data))


def numpy_wheel(data: bytes) -> Wheel:
    """The numpy wheel the site serves: the pinned one, or it with bytecode added (bytecode.py).

    Changed bytes get a changed name (a local version, the content's own hash), so no cache
    can serve a reader the pinned file under the lock's new sha256, or the reverse.
    """
    digest = assets.sha256(data)
    if digest == assets.PINNED[assets.NUMPY_WHEEL]:
        return Wheel(assets.NUMPY_WHEEL, data, digest)
    name, version, rest = assets.NUMPY_WHEEL.split("-", 2)
    return Wheel(f"{name}-{version}+{digest[:12]}-{rest}", data, digest)


def lock(wheel: Wheel | None, numpy: Wheel | None = None) -> str:
    """The site's pyodide-lock.json: numpy (the official entry's wheel, or it with bytecode) and our wheel."""
    numpy = numpy or numpy_wheel(assets.fetch(assets.NUMPY_WHEEL).read_bytes())
    packages = {"numpy": PackageSpec(name="numpy", version=numpy.file_name.split("-")[1], file_name=numpy.file_name,
                                     install_dir="site", sha256=numpy.sha256, imports=["numpy"], unvendored_tests=True)}
    if wheel is not None:
        packages[PACKAGE_KEY] = PackageSpec(name=PACKAGE_KEY, version=wheel.file_name.split("-")[1],
                                            file_name=wheel.file_name, install_dir="site", sha256=wheel.sha256,
                                            imports=[NAME], depends=["numpy"])
    spec = PyodideLockSpec(info=INFO, packages=packages)
    spec.check_wheel_filenames()
    return json.dumps(spec.model_dump(), indent=1, sort_keys=True)


def site_config(wheel: Wheel, core: dict[str, str], versions: dict[str, str]) -> protocol.SiteConfig:
    """What the browser needs to boot, from this module's layout (see assets/tw/kernel.js).

    `core`: file name -> sha256 of Pyodide's files as this site serves them (the pinned
    bytes, python_stdlib.zip with its bytecode), for whoever copies them (single_file.py).
    `versions`: site path -> hash of the bytes (offline.digest) of each file that a script
    loads by URL (the workers, what they import, the lock): the URL carries it (`?v=`), so
    no HTTP cache and no service worker pairs this build's page with another build's file.
    `markup`: what a widget's figure may contain (widgets_py/engine/markup.py), for the
    page's sanitiser. Its type is protocol.SiteConfig (types/protocol.d.ts: TWSiteConfig).
    """
    return {"runtime": RUNTIME_DIR, "lock": LOCK, "package": PACKAGE_KEY, "entry": ENTRY, "sha256": wheel.sha256,
            "core": core, "versions": versions, "markup": markup.allow_list()}
