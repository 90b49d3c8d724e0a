"""Puts the pinned Pyodide runtime, numpy, the widgets_py wheel and their lock into the site.

Where each file goes and how the wheel and the lock are made is `bundle.py`'s business;
this hook fetches the pinned files (`assets.py`), refuses stale trained weights, and adds
everything to the build as generated files.
"""

from __future__ import annotations

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

from widgets_py.models import pretrained

from . import assets, bundle


def on_files(files: Files, *, config, build) -> Files:
    for name in assets.PINNED:
        try:
            path = assets.fetch(name)
        except assets.AssetError as exc:  # one message, no traceback: it says all there is
            raise PluginError(str(exc)) from None
        files.append(File.generated(config, bundle.RUNTIME_DIR + name, abs_src_path=str(path)))
    try:
        for name in pretrained.specs():
            pretrained.check(name)  # stale weights fail the build with how to retrain
    except pretrained.WeightsError as exc:
        raise PluginError(str(exc)) from None
    build.wheel = bundle.make_wheel(bundle.package_files())
    files.append(File.generated(config, bundle.RUNTIME_DIR + build.wheel.file_name, content=build.wheel.data))
    files.append(File.generated(config, bundle.RUNTIME_DIR + bundle.LOCK, content=bundle.lock(build.wheel)))
    return files
