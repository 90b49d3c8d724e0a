"""Imports that the site's trimmed runtime left out, fetched from the site when first needed.

The site's `python_stdlib.zip` holds the bytecode of only the standard-library modules the
worker and the widgets import, and its numpy wheel only the subpackages they import
(build_hooks/runtime/trim.py): a first visit downloads what the page runs. The pinned archives are
served whole beside them, and the trimmed zip's `tw-runtime.json` says, for each, which
module names it completes. A reader's edit in the «Codi» panel may import anything: the
finder installed here, last on `sys.meta_path`, is asked only for names no other finder
found. For a name an archive completes, it downloads that archive once (a synchronous
XMLHttpRequest to the site's own origin, which the worker's lock-down allows; checked against
the sha256 the build wrote), puts it where Python looks (the standard library's zip on
`sys.path` after the trimmed one, its folders added to the trimmed packages' `__path__`;
numpy's left-out folders into site-packages) and looks again. Any other name is not found
here, so Python raises its usual ModuleNotFoundError, and nothing is downloaded.

Nothing is installed when the mounted standard library carries no index: `./dev serve`, a
build without node, and the single-file export (which ships the archives whole).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import io
import json
import os
import sys
import zipfile
import zipimport

INDEX = "tw-runtime.json"  # written by build_hooks/runtime/trim.py into the trimmed zip


def _download(url: str) -> bytes:
    """The bytes at `url`, synchronously: an import cannot wait for a promise."""
    from js import XMLHttpRequest  # Pyodide's own module: only in the browser's worker

    request = XMLHttpRequest.new()
    request.open("GET", url, False)
    request.responseType = "arraybuffer"  # allowed for a synchronous request in a worker
    request.send(None)
    if request.status != 200:
        raise ImportError(f"{url}: HTTP {request.status}")
    return request.response.to_bytes()


def _completes(name: str, modules: list[str]) -> bool:
    return any(name == m or name.startswith(m + ".") for m in modules)


class Finder:
    """A meta-path finder of last resort over the archives an index lists (see the module's doc)."""

    def __init__(self, base_url: str, index: dict, download=_download):
        self.base = base_url
        self.archives = index["archives"]
        self.download = download
        self.fetched: list[str] = []  # the archives downloaded, in order

    def find_spec(self, name, path=None, target=None):
        archive = next((a for a in self.archives if _completes(name, a["modules"])), None)
        if archive is None:
            return None  # not ours: ModuleNotFoundError, as without this finder
        if archive["file"] not in self.fetched:
            self._complete(archive)
        if archive["kind"] == "path" and path is not None:  # a trimmed package's submodule
            for entry in list(path):
                if entry.startswith(archive["root"] + "/"):
                    mapped = archive["mount"] + entry[len(archive["root"]):]
                    if mapped not in path:
                        path.append(mapped)  # the package's own __path__: found directly next time
        return importlib.machinery.PathFinder.find_spec(name, path)

    def _complete(self, archive: dict) -> None:
        data = self.download(self.base + archive["file"])
        if hashlib.sha256(data).hexdigest() != archive["sha256"]:
            raise ImportError(f"{archive['file']}: sha256 differs from the build's; reload the page")
        self.fetched.append(archive["file"])
        if archive["kind"] == "path":
            with open(archive["mount"], "wb") as f:
                f.write(data)
            at = next((i + 1 for i, p in enumerate(sys.path) if p == archive["root"]), len(sys.path))
            sys.path.insert(at, archive["mount"])
        else:
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                for member in z.namelist():
                    target = os.path.join(archive["into"], member)
                    if member.startswith(tuple(archive["members"])) and not os.path.exists(target):
                        z.extract(member, archive["into"])
        importlib.invalidate_caches()  # folders Python listed before the new files arrived


def install(runtime_url: str) -> Finder | None:
    """Put the finder last on sys.meta_path, if the mounted standard library has an index."""
    stdlib = next((p for p in sys.path if p.endswith(".zip")), None)
    if stdlib is None:
        return None
    try:
        data = zipimport.zipimporter(stdlib).get_data(INDEX)
    except (OSError, zipimport.ZipImportError):
        return None  # the whole archive: nothing was left out
    finder = Finder(runtime_url, json.loads(data))
    sys.meta_path.append(finder)
    return finder
