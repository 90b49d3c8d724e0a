"""Firefox ESR and WebKitGTK behind one small interface, for tests/test_engines.py and
benchmarks/engines.py (Chromium keeps Playwright: tests/conftest.py).

- Firefox: Debian's `firefox-esr`, driven by puppeteer-core (npm, pinned by
  tests/engines/package-lock.json, installed by `./dev test`) over WebDriver BiDi, through a
  small node bridge (tests/engines/firefox.mjs). Console errors come from the engine.
- WebKit: Debian's `webkit2gtk-driver` (WebKitWebDriver) driving the MiniBrowser of
  `libwebkit2gtk-4.1-0` through Selenium's `webdriver.WebKitGTK`, under Xvfb (`xvfb-run`, or
  a display already there). WebKitGTK is Safari's engine family, not Safari: iOS memory
  limits and Safari-only quirks do not reproduce here. Its WebDriver has neither BiDi nor a
  log endpoint, so console errors are caught in the page by PROBE (console.error, uncaught
  errors and rejections, CSP violations, failed loads), which the test server puts first in
  each page it serves (`with_probe`), and `single_file_with_probe` into a copy of a single file.

Both send every request that leaves 127.0.0.1 to a recording proxy on 127.0.0.1 (`Recorder`):
a page that makes no request off its origin leaves it empty. Everything runs in the page as
JavaScript (`js`): the same checks, in the same words, in every engine.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent / "engines"
MINIBROWSER = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser"
ENGINES = ("firefox", "webkit")

PROBE = """(() => {
  const seen = (window.__twErrors = window.__twErrors || []);
  const say = (what) => seen.push(String(what));
  const error = console.error;
  console.error = function (...args) { say(args.map(String).join(" ")); return error.apply(this, args); };
  addEventListener("error", (e) => say(e.message ? `uncaught: ${e.message}`
    : `failed to load: ${e.target && (e.target.src || e.target.href || e.target.tagName)}`), true);
  addEventListener("unhandledrejection", (e) => say(`unhandled rejection: ${e.reason && e.reason.message || e.reason}`));
  document.addEventListener("securitypolicyviolation", (e) => say(`CSP ${e.violatedDirective}: ${e.blockedURI}`));
})();"""
PROBE_PATH = "/__tw_probe.js"


def firefox_binary() -> str | None:
    return os.environ.get("TEXTBOOK_FIREFOX") or shutil.which("firefox-esr") or shutil.which("firefox")


def missing(engine: str) -> str | None:
    """Why `engine` cannot run here, in words that say what to install; None if it can."""
    if engine == "firefox":
        if not firefox_binary():
            return "no firefox-esr on PATH (apt-get install firefox-esr; ./dev test installs it when root)"
        if not shutil.which("node"):
            return "no node to run puppeteer-core (apt-get install nodejs npm)"
        if not (HERE / "node_modules" / "puppeteer-core").is_dir():
            return "no puppeteer-core in tests/engines/node_modules (./dev test runs npm ci there)"
        return None
    if engine == "webkit":
        try:
            import selenium  # noqa: F401
        except ImportError:
            return "no selenium in .venv (pip install -e '.[test]')"
        if not shutil.which("WebKitWebDriver"):
            return "no WebKitWebDriver on PATH (apt-get install webkit2gtk-driver)"
        if not Path(MINIBROWSER).exists():
            return f"no {MINIBROWSER} (apt-get install libwebkit2gtk-4.1-0)"
        if not os.environ.get("DISPLAY") and not shutil.which("Xvfb"):
            return "no display and no Xvfb for WebKitGTK (apt-get install xvfb)"
        return None
    raise ValueError(engine)


class Recorder:
    """A proxy on 127.0.0.1 that forwards nothing: it records each request sent to it (every
    request the engine makes off 127.0.0.1) and answers 403."""

    def __init__(self):
        hits = self.hits = []
        calibration = self.calibration = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self):
                if "tw-probe.invalid" not in self.path:  # the test's own calibration (test_engines.engine)
                    hits.append(f"{self.command} {self.path}")
                else:
                    calibration.append(self.path)
                self.send_response(403)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_HEAD = do_PUT = do_OPTIONS = do_CONNECT = answer

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.httpd.server_port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class EngineError(RuntimeError):
    pass


class EngineCrashed(EngineError):
    """The engine's page died under the test (WebKitGTK: its web process crashed, and the
    WebDriver session went with it); `Engine.restart()` gives a new session."""


# How long a page may take to load (its "load" event) in every engine, as firefox.mjs's
# goto and reload wait: a machine whose cores are busy loads the chapter in over 30 s
# (Playwright's default, which Chromium's sandbox test once failed at a load average of 70-100)
PAGE_LOAD_S = 120


class Engine:
    """One browser session of one engine: one page, driven by JavaScript run in it."""

    name = ""

    def goto(self, url: str) -> None: ...
    def reload(self) -> None: ...
    def js(self, code: str, *args):
        """The value of `code`, a JavaScript function (async or not), called with `args`."""
    def errors(self) -> list[str]: ...
    def close(self) -> None: ...
    def restart(self) -> None:
        """A new session of the same engine, after an EngineCrashed."""
        raise EngineError(f"{self.name}: no restart")
    version = ""

    def end_stopped_workers(self) -> None:
        """After a test whose page stopped a worker in the middle of a loop (the exercise time
        limit, «Reinicia Python»): what that worker may leave running is ended. Nothing here:
        Firefox ends such a worker (its content process measured idle afterwards), and each
        Chromium test closes its own context; WebKit overrides."""

    def call_source(self, code: str, args) -> str:
        return f"({code})(...{json.dumps(list(args))})"

    def wait(self, code: str, *args, timeout: float = 90, poll: float = 0.1):
        """Until `code` (a function of `args`) returns something true; that value."""
        end = time.monotonic() + timeout
        while True:
            value = self.js(code, *args)
            if value:
                return value
            if time.monotonic() > end:
                raise TimeoutError(f"{self.name}: not true after {timeout:.0f} s: {code[:200]}")
            time.sleep(poll)


class Chromium(Engine):
    """Chromium through the session's Playwright browser, behind the same interface, for the
    tests that hold all three engines to one check (tests/test_sandbox_engines.py). A fresh
    context each: its own storage and service workers."""

    name = "chromium"

    def __init__(self, browser):
        self.context = browser.new_context()
        self.page = self.context.new_page()
        self.seen: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.seen.append(m.text))
        self.page.on("pageerror", lambda e: self.seen.append(f"uncaught: {e}"))
        self.version = "Chromium " + browser.version
        self.recorder = None

    def goto(self, url):
        self.page.goto(url, timeout=PAGE_LOAD_S * 1e3)

    def reload(self):
        self.page.reload(timeout=PAGE_LOAD_S * 1e3)

    def js(self, code, *args):
        return self.page.evaluate(self.call_source(code, args))

    def errors(self):
        return list(self.seen)

    def close(self):
        self.context.close()


class Firefox(Engine):
    name = "firefox"

    def __init__(self, proxy: str, env: dict[str, str]):
        options = {"executablePath": firefox_binary(), "proxy": proxy}
        # release builds read services.settings.server (firefox.mjs) only with this set
        env = {**os.environ, **env, "MOZ_REMOTE_SETTINGS_DEVTOOLS": "1"}
        self.proc = subprocess.Popen(["node", str(HERE / "firefox.mjs"), json.dumps(options)], cwd=HERE, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.next = 0
        hello = self.proc.stdout.readline()
        if not hello:
            raise EngineError(f"firefox did not start: {self.proc.stderr.read()[-2000:]}")
        self.version = json.loads(hello)["ok"]

    def _send(self, cmd: str, **fields):
        self.next += 1
        self.proc.stdin.write(json.dumps({"id": self.next, "cmd": cmd, **fields}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise EngineError(f"firefox bridge ended: {self.proc.stderr.read()[-2000:]}")
        reply = json.loads(line)
        if "error" in reply:
            raise EngineError(f"firefox {cmd}: {reply['error']}")
        return reply["ok"]

    def goto(self, url):
        self._send("goto", url=url)

    def reload(self):
        self._send("reload")

    def js(self, code, *args):
        return self._send("eval", code=self.call_source(code, args))

    def errors(self):
        return self._send("errors")

    def close(self):
        try:
            self._send("close")
        except EngineError:
            pass
        self.proc.wait(timeout=30)


class WebKit(Engine):
    name = "webkit"

    def __init__(self, proxy: str, env: dict[str, str]):
        self.xvfb = None
        self.env = {**os.environ, **env}
        if not self.env.get("DISPLAY"):
            self.xvfb, self.env["DISPLAY"] = start_xvfb()
        self.proxy = proxy
        self.seen: list[str] = []
        self.url = ""
        self.dead = False
        self.log = Path(tempfile.mkstemp(prefix="tw-webkit-", suffix=".log")[1])
        self._start()

    def _start(self):
        from selenium import webdriver
        from selenium.webdriver.webkitgtk.options import Options
        from selenium.webdriver.webkitgtk.service import Service

        options = Options()
        options.binary_location = MINIBROWSER
        for arg in (f"--proxy=http://{self.proxy}", "--ignore-host=127.0.0.1", "--automation"):
            options.add_argument(arg)
        service = Service(executable_path=shutil.which("WebKitWebDriver"), env=self.env, log_output=str(self.log))
        self.driver = webdriver.WebKitGTK(options=options, service=service)
        self.driver.set_script_timeout(300)
        self.driver.set_page_load_timeout(PAGE_LOAD_S)
        self.version = "WebKitGTK " + self.driver.capabilities.get("browserVersion", "?")

    def end_stopped_workers(self):
        """WebKitGTK keeps a worker that was terminated inside a WebAssembly loop (Python's
        `while True: pass`) spinning on its thread, after the page is left too: measured here,
        one core for the rest of the session, which doubled the time of every later test. A new
        session ends the web process that holds it."""
        self.restart()

    def restart(self):
        try:
            self.driver.quit()
        except Exception:  # noqa: BLE001 - the crashed session may be gone already
            pass
        self._start()
        self.dead = False

    def _do(self, command, *args):
        """`command(*args)` of the driver; a dead page raises EngineCrashed, with the URL and
        the tail of WebKitWebDriver's log (MiniBrowser's stderr)."""
        from selenium.common.exceptions import InvalidSessionIdException, WebDriverException

        try:
            return command(*args)
        except WebDriverException as e:
            # a crash during a script: "Could not parse script result"; after it: no session
            if isinstance(e, InvalidSessionIdException) or "Could not parse script result" in str(e):
                tail = self.log.read_text(errors="replace")[-1500:] if self.log.exists() else ""
                self.dead = True
                raise EngineCrashed(f"webkit: the page died at {self.url}: {e.msg}\n{tail}") from e
            raise

    def _harvest(self):
        try:
            self.seen += self.driver.execute_script("return window.__twErrors ? window.__twErrors.splice(0) : []")
        except Exception:  # noqa: BLE001 - no page yet
            pass

    def goto(self, url):
        self._harvest()
        self.url = url
        self._do(self.driver.get, url)

    def reload(self):
        self._harvest()
        self._do(self.driver.refresh)

    def js(self, code, *args):
        reply = self._do(self.driver.execute_async_script,
            "const done = arguments[arguments.length - 1];"
            f"Promise.resolve().then(() => {self.call_source(code, args)})"
            ".then((ok) => done({ok: ok === undefined ? null : ok}), (e) => done({error: String(e && e.message || e)}));")
        if "error" in reply:
            raise EngineError(f"webkit: {reply['error']}")
        return reply["ok"]

    def errors(self):
        self._harvest()
        return list(self.seen)

    def close(self):
        try:
            self.driver.quit()
        except Exception:  # noqa: BLE001 - a crashed session
            pass
        self.log.unlink(missing_ok=True)
        if self.xvfb:
            self.xvfb.terminate()
            self.xvfb.wait(timeout=10)


def start_xvfb():
    """An Xvfb of our own on a free display number: (process, ":N")."""
    for n in range(90, 140):
        if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists():
            proc = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(50):
                if Path(f"/tmp/.X11-unix/X{n}").exists():
                    return proc, f":{n}"
                time.sleep(0.1)
            proc.terminate()
    raise EngineError("Xvfb did not start")


# What the suite sets in each engine's environment: WebAssembly on the baseline tier alone. The
# tests check behaviour, and on a 2-core machine the optimizing tiers' compiles take the second
# core for seconds per Python boot, slowing the test itself and whatever runs beside it.
# Measured here, one cold visit of cap15 to every widget ready (wall / CPU of the machine):
# WebKitGTK 8.4 s / 13.5 s, with JSC_useOMGJIT=0 5.8 s / 8.4 s; Chromium (conftest:
# --js-flags=--liftoff-only) 3.0 s / 8.3 s, 2.5 s / 6.7 s; Firefox, without its optimizing
# tier, 2.3 s either way, so it runs as shipped. The benchmarks run every engine as shipped.
TEST_TIERS = {"webkit": {"JSC_useOMGJIT": "0"}}


def launch(engine: str, proxy: str, env: dict[str, str] | None = None) -> Engine:
    """A session of `engine` whose traffic off 127.0.0.1 goes to `proxy`; `env`: added to its environment."""
    return {"firefox": Firefox, "webkit": WebKit}[engine](proxy, env or {})


def with_probe(html: bytes) -> bytes:
    """A page with PROBE's script first in <head> (from PROBE_PATH: the page's CSP allows 'self')."""
    return html.replace(b"<head>", b'<head><script src="' + PROBE_PATH.encode() + b'"></script>', 1)


def single_file_with_probe(src: Path, dest: Path) -> None:
    """A copy of a single-file chapter with PROBE inline first in <head>, its hash in the CSP."""
    html = src.read_text()
    digest = "'sha256-" + base64.b64encode(hashlib.sha256(PROBE.encode()).digest()).decode() + "'"
    html, n = re.subn(r"(<meta http-equiv=\"Content-Security-Policy\" content=\"[^\"]*script-src )", rf"\1{digest} ", html, count=1)
    assert n == 1, "the single file's CSP names script-src"
    dest.write_text(html.replace("<head>", f"<head><script>{PROBE}</script>", 1))
