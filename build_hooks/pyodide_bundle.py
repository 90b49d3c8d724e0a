"""Puts the pinned Pyodide runtime, numpy and a widgets_py bundle into the built site.

The widgets_py bundle is a deterministic zip of the package's source, the corpus and the
committed trained weights (`widgets_py/weights/`, never retrained by a build), made on
every build from the files on disk (so `mkdocs serve` ships edited widget code); its
name and sha256 go into each widget page, and the browser refuses a bundle that differs.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

from widgets_py import pretrained

from . import assets

PACKAGE = Path(__file__).resolve().parent.parent / "widgets_py"
SITE_DIR = "pyodide/"  # where the runtime lives in the built site
BUNDLE_DIR = "assets/tw/"

bundle: dict[str, str] = {}  # {'name': ..., 'sha256': ...} of the current build's bundle


def bundle_files(package: Path = PACKAGE) -> dict[str, Path]:
    """What the browser needs: the package's .py files, the corpus, the trained weights."""
    from widgets_py import corpus

    files = {str(p.relative_to(package.parent)): p for p in sorted(package.rglob("*.py"))
             if "__pycache__" not in p.parts}
    files["corpus/ca.txt"] = corpus.PATH
    for name in pretrained.specs():
        pretrained.check(name)  # stale weights fail the build with how to retrain
    for p in pretrained.files():
        files[str(p.relative_to(package.parent))] = p
    return files


def make_bundle(files: dict[str, Path]) -> bytes:
    """A zip of `files` (archive name -> path), byte-identical for identical inputs."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, files[name].read_bytes())
    return out.getvalue()


def on_files(files: Files, *, config) -> Files:
    for name in assets.PINNED:
        try:
            path = assets.fetch(name)
        except assets.AssetError as exc:  # one message, no traceback: it says all there is
            raise PluginError(str(exc)) from None
        files.append(File.generated(config, SITE_DIR + name, abs_src_path=str(path)))
    files.append(File.generated(config, SITE_DIR + "pyodide-lock.json", content=assets.lockfile()))
    try:
        data = make_bundle(bundle_files())
    except pretrained.WeightsError as exc:
        raise PluginError(str(exc)) from None
    digest = assets.sha256(data)
    bundle.update(name=f"widgets_py-{digest[:12]}.zip", sha256=digest)
    files.append(File.generated(config, BUNDLE_DIR + bundle["name"], content=data))
    return files
