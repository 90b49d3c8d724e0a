"""Shared fixtures: one strict build of the site per session, a loopback server, Chromium."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def build_site(dest: Path, project: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of `project` into `dest`, in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(dest)],
        cwd=project, capture_output=True, text=True, timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", **(env or {})},
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def port() -> int:
    """The test server's port, known before the build: Material's instant navigation
    matches links against sitemap.xml, whose URLs carry site_url's port."""
    return free_port()


@pytest.fixture(scope="session")
def site(tmp_path_factory, port) -> Path:
    dest = tmp_path_factory.mktemp("site")
    done = build_site(dest, env={"TEXTBOOK_SITE_URL": f"http://127.0.0.1:{port}/"})
    assert done.returncode == 0, done.stderr[-3000:]
    return dest


class _Quiet(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm"}

    def log_message(self, *args):  # keep pytest output readable
        pass


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
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield b
        b.close()


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


@pytest.fixture
def watched(browser):
    # page.route cannot see requests a service worker answers: tests that inject failures
    # need the network path, and the offline test makes its own context with the worker
    context = browser.new_context(service_workers="block")
    yield Watched(context)
    context.close()
