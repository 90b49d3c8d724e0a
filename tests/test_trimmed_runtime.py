"""The first visit's runtime (build_hooks/runtime/trim.py): the standard library and numpy trimmed to what
the worker imports, as bytecode; the pinned archives beside them, fetched only when a reader's
edit imports what was left out (widgets_py/engine/on_miss.py); a name that exists nowhere
fails as it always did."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import sys
import zipfile
from urllib.parse import urlsplit

import pytest

from build_hooks.runtime import assets, bundle, bytecode, trim
from widgets_py.engine import on_miss

from test_bytecode import RUN  # node boots the site's runtime


def _zip(members: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, text in members.items():
            z.writestr(name, text)
    return out.getvalue()


@pytest.fixture
def finder(tmp_path, monkeypatch):
    """A trimmed zip on sys.path (package `twpkg` without its submodule `extra`), and a finder
    over a whole zip and a wheel whose downloads are counted."""
    trimmed = tmp_path / "trimmed.zip"
    trimmed.write_bytes(_zip({"twpkg/__init__.py": "", "twkept.py": ""}))
    whole = _zip({"twpkg/__init__.py": "", "twpkg/extra.py": "X = 'extra'\n", "twtop.py": "X = 'top'\n"})
    wheel = _zip({"twnp/__init__.py": "", "twnp/sub/__init__.py": "X = 'sub'\n"})
    site = tmp_path / "site-packages"
    (site / "twnp").mkdir(parents=True)
    (site / "twnp" / "__init__.py").write_text("")
    served = {"whole.zip": whole, "wheel.whl": wheel}
    downloads = []

    def download(url):
        downloads.append(url)
        return served[url.rsplit("/", 1)[1]]

    index = {"archives": [
        {"file": "whole.zip", "sha256": hashlib.sha256(whole).hexdigest(), "kind": "path", "completes": "x",
         "root": str(trimmed), "mount": str(tmp_path / "whole.zip"), "modules": ["twpkg", "twtop", "twkept"]},
        {"file": "wheel.whl", "sha256": hashlib.sha256(wheel).hexdigest(), "kind": "site", "completes": "twnp",
         "into": str(site) + "/", "members": ["twnp/sub/"], "modules": ["twnp.sub"]},
    ]}
    monkeypatch.setattr(sys, "path", [str(trimmed), str(site), *sys.path])
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    for name in [m for m in sys.modules if m.startswith(("twpkg", "twtop", "twkept", "twnp"))]:
        monkeypatch.delitem(sys.modules, name)
    f = on_miss.Finder("http://site/pyodide/", index, download)
    sys.meta_path.append(f)
    f.downloads, f.served = downloads, served
    yield f
    for name in [m for m in sys.modules if m.startswith(("twpkg", "twtop", "twkept", "twnp"))]:
        del sys.modules[name]


def test_a_left_out_module_is_fetched_once_and_a_missing_one_fails_as_before(finder):
    import twkept  # noqa: F401 - in the trimmed zip: nothing fetched
    assert finder.downloads == []
    with pytest.raises(ModuleNotFoundError, match="no_such_module_xyz"):
        import no_such_module_xyz  # noqa: F401
    assert finder.downloads == []  # a name no archive holds: Python's own error, nothing downloaded
    import twtop
    import twpkg.extra  # a trimmed package's submodule: its folder in the whole zip joins __path__
    assert (twtop.X, twpkg.extra.X) == ("top", "extra")
    assert finder.downloads == ["http://site/pyodide/whole.zip"]  # once, for both
    import twnp.sub
    assert twnp.sub.X == "sub" and finder.downloads[1:] == ["http://site/pyodide/wheel.whl"]
    with pytest.raises(ModuleNotFoundError):
        import twpkg.nothing  # noqa: F401 - in no archive: the usual error


def test_an_archive_with_another_hash_is_refused(finder):
    finder.served["whole.zip"] = _zip({"twtop.py": "X = 'tampered'\n"})
    with pytest.raises(ImportError, match="sha256"):
        import twtop  # noqa: F401


def test_the_finder_is_installed_only_over_a_trimmed_stdlib(tmp_path, monkeypatch):
    whole = tmp_path / "python312.zip"
    whole.write_bytes(_zip({"json/__init__.py": ""}))
    monkeypatch.setattr(sys, "path", [str(whole)])
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    assert on_miss.install("http://site/pyodide/") is None  # the whole stdlib: nothing left out
    trimmed = tmp_path / "trimmed" / "python312.zip"  # another path: zipimport keeps what it read of one
    trimmed.parent.mkdir()
    trimmed.write_bytes(_zip({"json/__init__.pyc": "", on_miss.INDEX: json.dumps({"archives": []})}))
    monkeypatch.setattr(sys, "path", [str(trimmed)])
    assert isinstance(on_miss.install("http://site/pyodide/"), on_miss.Finder) and isinstance(sys.meta_path[-1], on_miss.Finder)


def members(data: bytes) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return z.namelist()


@pytest.mark.build
def test_the_site_serves_trimmed_bytecode_and_the_pinned_archives_beside(site):
    if not shutil.which("node"):
        pytest.skip("no node: no bytecode, so nothing is trimmed (the pinned files ship whole)")
    runtime = site / bundle.RUNTIME_DIR
    stdlib = (runtime / bytecode.STDLIB_FILE).read_bytes()
    names = members(stdlib)
    assert [n for n in names if not n.endswith(".pyc")] == [trim.INDEX]  # no source: bytecode only
    assert {"json/__init__.pyc", "_pyodide/_base.pyc", "typing.pyc", "traceback.pyc", "tokenize.pyc"} <= set(names)
    assert "colorsys.pyc" not in names and "email/mime/text.pyc" not in names  # left for the browser test
    index = trim.read_index(stdlib)
    for archive in index["archives"]:
        assert assets.sha256((runtime / archive["file"]).read_bytes()) == archive["sha256"] in assets.PINNED.values()
    lock = json.loads((runtime / bundle.LOCK).read_text())
    numpy = members((runtime / lock["packages"]["numpy"]["file_name"]).read_bytes())
    assert "numpy/__init__.pyc" in numpy and "numpy/__init__.py" not in numpy
    assert not [n for n in numpy if n.endswith(trim.NEVER_IMPORTED) or n.startswith(("numpy/f2py/", "numpy/testing/"))]
    assert "numpy/random/__init__.pyc" in numpy  # the widgets' generators
    # extension modules no import entered: numpy's C tests, LAPACK's lite wrapper; each one the
    # index names, so an import of it fetches the pinned wheel (test below)
    numpy_index = next(a for a in index["archives"] if a["completes"] == "numpy")
    so = [n for n in numpy if n.endswith(".so")]
    assert "numpy/_core/_multiarray_umath.cpython-312-wasm32-emscripten.so" in so
    assert not [n for n in so if n.split("/")[-1].startswith(("lapack_lite.", "_rational_tests.", "_umath_tests."))]
    assert {"numpy.linalg.lapack_lite", "numpy._core._rational_tests", "numpy.fft"} <= set(numpy_index["modules"])
    assert "numpy/linalg/lapack_lite.cpython-312-wasm32-emscripten.so" in numpy_index["members"]


def test_a_dropped_member_names_its_module():
    assert trim.module_name("numpy/fft/") == "numpy.fft"
    assert trim.module_name("numpy/linalg/lapack_lite.cpython-312-wasm32-emscripten.so") == "numpy.linalg.lapack_lite"



# the package stage's own exercise, on the site as served and without the finder: an import the
# trimmed runtime lacks fails here; then: was anything of the stdlib or numpy compiled from source?
CHECK = """\
import json, sys
{exercise}
from_source = sorted(m.__spec__.origin for m in list(sys.modules.values()) if getattr(m, "__spec__", None)
                     and (m.__spec__.origin or "").endswith(".py") and "/widgets_py/" not in m.__spec__.origin)
json.dumps({{"from_source": from_source, "loaded": len(sys.modules)}})
"""


@pytest.mark.build
def test_every_widget_runs_at_its_defaults_on_the_trimmed_runtime_alone(site, tmp_path):
    if not shutil.which("node"):
        pytest.skip("no node here to run Pyodide outside a browser (CI has it)")
    exercise = bytecode.PACKAGE_IMPORTS.format(entry=bundle.ENTRY, scanned=[])
    (tmp_path / "run.js").write_text(RUN)
    (tmp_path / "check.py").write_text(CHECK.format(exercise=exercise))
    done = subprocess.run(["node", str(tmp_path / "run.js"), str(site / bundle.RUNTIME_DIR), str(tmp_path / "check.py"),
                           bundle.SOURCES_KEY], capture_output=True, text=True, timeout=600)  # the code panel reads them
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["loaded"] > 300 and got["from_source"] == []


SEL = '.tw-widget[data-widget="roofline"]'
# a standard-library module, a trimmed package's submodule, a numpy subpackage and a numpy
# extension module the site left out, each used so that the figure changes: the KV cache in 8
# bits if all four work
LEFT_OUT = """import colorsys
from email.mime.text import MIMEText
import numpy.fft
from numpy.linalg import lapack_lite
if colorsys.rgb_to_hsv(1, 0, 0)[0] == 0 and MIMEText("x")["Content-Type"].startswith("text/plain") \\
        and abs(numpy.fft.fft([1.0, 1.0])[0] - 2) < 1e-12 and issubclass(lapack_lite.LapackError, Exception):
    KV_FORMAT = "fp8"
"""


@pytest.mark.browser
def test_an_edit_imports_what_the_site_left_out_and_a_missing_module_fails_as_before(watched, server, site):
    from test_codepanel import assert_edited_matches_cpython, editor_text, open_panel, ready, run_edit, type_at_end, values

    from widgets_py.engine import registry

    assert "colorsys.pyc" not in members((site / bundle.RUNTIME_DIR / bytecode.STDLIB_FILE).read_bytes())
    page = watched.page
    page.goto(server + "cap15/")
    ready(page)
    page.wait_for_function(__import__("conftest").KERNEL_WARM, timeout=90_000)
    full = [trim.STDLIB_FULL, assets.NUMPY_WHEEL]
    fetched = lambda: [u for u in watched.requests if urlsplit(u).path.rsplit("/", 1)[-1] in full]  # noqa: E731
    assert fetched() == []  # the page and its warm-up import nothing the trimmed runtime lacks
    params = page.eval_on_selector(SEL, "w => window.tw.readParams(w)")
    original = json.loads(json.dumps(registry.reply("roofline", params, "wide")))["values"]  # the shipped code, in CPython
    figure = page.inner_html(f"{SEL} .tw-figure")

    open_panel(page)
    page.click(f"{SEL} .tw-code-edit")
    shipped = editor_text(page)
    type_at_end(page, LEFT_OUT)
    run_edit(page)
    status = page.text_content(f"{SEL} .tw-code-status")
    assert page.get_attribute(SEL, "data-edited") == "true", status
    assert values(page)["kv_prompt_gb"] == pytest.approx(original["kv_prompt_gb"] / 2)  # all four imports worked
    assert_edited_matches_cpython(page, editor_text(page))
    assert page.inner_html(f"{SEL} .tw-figure") != figure
    assert sorted(urlsplit(u).path.rsplit("/", 1)[-1] for u in fetched()) == sorted(full)  # each once

    page.click(f"{SEL} .cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(shipped + "import no_such_module_xyz\n")
    run_edit(page)
    status = page.text_content(f"{SEL} .tw-code-status")
    assert "ModuleNotFoundError" in status and "no_such_module_xyz" in status, status
    assert len(fetched()) == 2  # nothing more downloaded for a name no archive has
    assert watched.errors == []
