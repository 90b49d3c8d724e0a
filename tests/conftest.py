"""Shared fixtures: one strict build of the site per session, a loopback server, Chromium."""

from __future__ import annotations

import atexit
import functools
import http.server
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "book"  # a second, small chapter: the guide's example grown up
NOT_THE_BOOK = {".git", ".venv", "tests", "benchmarks", "site", "__pycache__", "textbook_ch15.egg-info"}

import properdocs.replacement  # noqa: E402,F401 - `mkdocs.*` imports in this process are ProperDocs', as in a build
import widgets_py  # noqa: E402

from build_hooks import generator  # noqa: E402

# The fixture chapter's widgets join the registry here too (widgets_py.cap99), so every test
# that walks the registry or the built site covers it like any chapter of the book.
widgets_py.__path__.append(str(FIXTURE / "widgets_py"))


@pytest.fixture(autouse=True, scope="module")
def run_session():
    """Each test module runs in a widgets_py session of its own (engine.session: memo, models,
    backend): what one module computes or retrains does not reach another. A test that
    needs other state (the browser's kernel on wasmtime, a retrained model) makes its own
    Session, active within it."""
    from widgets_py.engine.session import Session

    with Session().active() as fresh:
        yield fresh


def scaffold_into(project: Path) -> str:
    """`./dev new chapter`, `./dev new widget` (SCAFFOLDED) and `./dev new exercise`
    (SCAFFOLDED_EXERCISE) in `project` (its own widgets_py must be the one imported), and the
    directives they print pasted into the page, the widget's with a live value, as a
    contributor does; returns what the commands printed."""
    from build_hooks.authoring import scaffold

    chapter, name = SCAFFOLDED
    said = [str(p.relative_to(project)) for p in scaffold.chapter(chapter, "Capítol de l'esquelet", root=project)]
    said += [str(p.relative_to(project)) for p in scaffold.widget(chapter, name, root=project)]
    said += [str(p.relative_to(project)) for p in scaffold.exercise(chapter, SCAFFOLDED_EXERCISE, root=project)]
    page = project / "docs" / chapter / "index.md"
    page.write_text(page.read_text() + f"\nEls pesos ocupen <!-- md:value {name}.weights_gb -->.\n\n"
                    f"{scaffold.directive(name)}\n\n{scaffold.directive(SCAFFOLDED_EXERCISE, 'exercise')}\n")
    return "\n".join(f"escrit: {p}" for p in said)


# A chapter, a widget and an exercise from the scaffold, written at the start of every session into a
# scratch folder laid out like the fixture's (docs/, widgets_py/, its nav lines): they join
# the registry and the session's book like cap99, so the whole suite covers what `./dev new`
# writes, unchanged (test_scaffold.py).
SCAFFOLDED = ("cap98", "esquelet_pesos")  # beside the fixture's cap99: numbers no chapter of the book takes
SCAFFOLDED_EXERCISE = "esquelet_experts"  # an exercise of the same chapter
# The chapters the suite adds to the book (the fixture's, the scaffold's): tests/book.engine_pages
SUITE_CHAPTERS = (SCAFFOLDED[0], *sorted(p.name for p in (FIXTURE / "docs").iterdir() if p.is_dir()))
# Once per process: a mutation run (benchmarks/mutation.py: mutmut) runs pytest several times
# in one, and a second scaffold would find the first's widget already in the book.
SCAFFOLD = next((Path(p).parent for p in widgets_py.__path__ if Path(p).parent.name.startswith("textbook-scaffold-")), None)
if SCAFFOLD is None:
    SCAFFOLD = Path(tempfile.mkdtemp(prefix="textbook-scaffold-"))
    # removed as the process that made it ends (not a forked child of it: a mutation run's)
    atexit.register(lambda made_by=os.getpid(): os.getpid() == made_by and shutil.rmtree(SCAFFOLD, ignore_errors=True))
    (SCAFFOLD / "widgets_py").mkdir()
    (SCAFFOLD / "mkdocs.yml").write_text("nav:\n")
    widgets_py.__path__.append(str(SCAFFOLD / "widgets_py"))
    scaffold_into(SCAFFOLD)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
# The suite's Chromium runs WebAssembly on its baseline tier alone (Liftoff), as its WebKit does
# (engines.TEST_TIERS says why, with what was measured); the benchmarks, and a test whose claim
# is a time (`shipped_browser`), run CHROMIUM_ARGS, the engine as readers get it.
CHROMIUM_TEST_ARGS = [*CHROMIUM_ARGS, "--js-flags=--liftoff-only"]
# The page's kernel (kernel.js: the same object until the worker is restarted), and its
# worker's warm-up state (null until it is over, then {failed})
KERNEL = 'tw.kernel.get(JSON.parse(document.querySelector("script[data-config]").dataset.config))'
KERNEL_WARM = f"() => {KERNEL}.warm"


def build_site(dest: Path, project: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    """`properdocs build --strict` of `project` into `dest`, in a fresh interpreter."""
    return subprocess.run(generator.build_command(dest), cwd=project, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def port() -> int:
    """The test server's port, known before the build: Material's instant navigation
    matches links against sitemap.xml, whose URLs carry site_url's port."""
    return free_port()


def book_with_fixture(dest: Path) -> Path:
    """A copy of the project with the fixture chapter added as a contributor adds one: its
    pages in docs/cap99/, its widgets in widgets_py/cap99/, its entry in the navigation."""
    dest.mkdir(parents=True, exist_ok=True)
    for src in ROOT.iterdir():
        if src.name not in NOT_THE_BOOK and not src.name.startswith("."):
            if src.is_dir():
                shutil.copytree(src, dest / src.name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(src, dest / src.name)
    for part in ("docs", "widgets_py"):
        shutil.copytree(FIXTURE / part, dest / part, dirs_exist_ok=True)
        shutil.copytree(SCAFFOLD / part, dest / part, dirs_exist_ok=True)
    config = (dest / "mkdocs.yml").read_text()
    assert config.rstrip().split("\n")[-1].startswith("  - "), "nav: must stay the last key of mkdocs.yml"
    scaffolded_nav = (SCAFFOLD / "mkdocs.yml").read_text().split("nav:\n", 1)[1]
    (dest / "mkdocs.yml").write_text(config.rstrip() + "\n" + (FIXTURE / "nav.yml").read_text() + scaffolded_nav)
    return dest


@pytest.fixture(scope="session")
def site(tmp_path_factory, port) -> Path:
    """The book, the fixture chapter and a chapter from the scaffold, built strictly once per session."""
    dest = tmp_path_factory.mktemp("site")
    project = book_with_fixture(tmp_path_factory.mktemp("project"))
    done = build_site(dest, project, env={"TEXTBOOK_SITE_URL": f"http://127.0.0.1:{port}/"})
    assert done.returncode == 0, done.stderr[-3000:]
    return dest


class _Quiet(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm"}

    def log_message(self, *args):  # keep pytest output readable
        pass

    def reply(self, body: bytes, kind: str | None = None) -> None:
        """Answer 200 with `body` made here (an instrumented page, a rewritten script) as `kind`,
        by default the type of the path asked for."""
        self.send_response(200)
        self.send_header("Content-Type", kind or self.guess_type(self.path.split("?")[0]))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="session")
def server(site, port):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/"
    httpd.shutdown()


def chromium_path() -> str | None:
    """Debian's chromium where present (no browser downloads here), else Playwright's own."""
    for candidate in (os.environ.get("TEXTBOOK_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


@pytest.fixture(scope="session")
def playwright():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


def _chromium(playwright, args: list[str]):
    """A Chromium whose contexts' pages wait for a load as long as the other engines' do
    (engines.PAGE_LOAD_S), not Playwright's 30 s: a busy machine passes that."""
    import engines

    b = playwright.chromium.launch(executable_path=chromium_path(), args=args)
    made = b.new_context

    def new_context(**options):
        context = made(**options)
        context.set_default_navigation_timeout(engines.PAGE_LOAD_S * 1e3)
        return context

    b.new_context = new_context
    return b


@pytest.fixture(scope="session")
def browser(playwright):
    b = _chromium(playwright, CHROMIUM_TEST_ARGS)
    yield b
    b.close()


@pytest.fixture(scope="session")
def shipped_browser(playwright):
    """Chromium with every WebAssembly tier, as readers get it (CHROMIUM_ARGS): for a test whose
    claim is a time (in-browser training within a minute)."""
    b = _chromium(playwright, CHROMIUM_ARGS)
    yield b
    b.close()


@pytest.fixture(scope="session")
def launched():
    """Firefox ESR and WebKitGTK sessions (tests/engines.py), each launched once per test
    session, when a test first asks for it, with a recording proxy for what leaves 127.0.0.1.
    A machine without an engine skips its tests, saying what to install; under CI it fails."""
    import engines

    sessions = {}

    def launch(name: str):
        if name in sessions:
            return sessions[name]
        why = engines.missing(name)
        if why:
            if os.environ.get("CI"):
                pytest.fail(f"{name}: {why}; CI runs the core suite in every engine")
            pytest.skip(f"{name} not available: {why}")
        recorder = engines.Recorder()
        browser = engines.launch(name, recorder.address, engines.TEST_TIERS.get(name))
        browser.recorder = recorder
        sessions[name] = browser
        # the recorder does see what leaves 127.0.0.1 in this engine (a test that cannot fail is no test)
        try:
            browser.goto("http://tw-probe.invalid/")
        except Exception:  # noqa: BLE001 - the proxy's 403 may count as a failed navigation
            pass
        assert recorder.calibration, f"{name}: the recording proxy saw nothing of http://tw-probe.invalid/"
        return browser

    yield launch
    for browser in sessions.values():
        browser.close()
        browser.recorder.close()


class Watched:
    """A page plus what it did: console errors and every request URL."""

    def __init__(self, context):
        self.context = context
        self.page = context.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        context.on("request", lambda r: self.requests.append(r.url))  # the page's and its workers'


def watching(browser):
    """A Watched page in a new context of `browser`, closed after the test (a fixture's body).
    page.route cannot see requests a service worker answers: tests that inject failures need
    the network path, and the offline test makes its own context with the worker."""
    context = browser.new_context(service_workers="block")
    yield Watched(context)
    context.close()


@pytest.fixture
def watched(browser):
    yield from watching(browser)
