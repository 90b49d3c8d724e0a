"""A serve process on a copy of the project, driven over HTTP as the browser's live reload drives
it: tests/test_serve.py checks what it shows after an edit, benchmarks/serve.py times it.

`COMMANDS`: `preview` is `./dev serve`'s (build_hooks/authoring/preview.py: dirty rebuilds),
`plain` ProperDocs' serve as it was before (every edit rebuilds the whole book).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

BIN = Path(sys.executable).parent
COMMANDS = {
    "preview": [sys.executable, "-m", "build_hooks.authoring.preview"],
    "plain": [str(BIN / "properdocs"), "serve", "-f", "mkdocs.yml", "--livereload"],
}
EPOCH = re.compile(r"livereload\((\d+), (\d+)\);")  # the script the server injects into each page


class Serve:
    """`command` run in `project` on `port`; its log in `log`, its site folder under `tmp`."""

    def __init__(self, project: Path, command: list[str], port: int, tmp: Path):
        self.project, self.port = project, port
        self.tmp = tmp / "serve-tmp"  # the serve's mkdtemp lands here: its site folder is found
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.log_path = tmp / "serve.log"
        self.log = open(self.log_path, "wb")
        env = {**os.environ, "TMPDIR": str(self.tmp), "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen([*command, "--dev-addr", f"127.0.0.1:{port}"], cwd=project, env=env,
                                        stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def cpu(self) -> float:
        """CPU seconds the serve (its threads and the children it waited for) has used: a
        rebuild's cost on a machine whose load changes the wall time (/proc/PID/stat)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime

    def logged(self) -> str:
        return self.log_path.read_text(errors="replace")

    def site(self) -> Path:
        """The serve's site folder (ProperDocs' temporary one)."""
        found = sorted(self.tmp.glob("properdocs_*"))
        assert len(found) == 1, f"one site folder expected under {self.tmp}: {found}"
        return found[0]

    def get(self, path: str, timeout: float = 300) -> str | None:
        """The page as served (the server holds a request while it rebuilds); None if it is not there."""
        if self.process.poll() is not None:
            raise RuntimeError(f"the serve stopped ({self.process.returncode}):\n{self.logged()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/{path}", timeout=timeout) as reply:
                return reply.read().decode()
        except urllib.error.HTTPError:
            return None
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return None

    def until(self, done, timeout: float, what: str) -> float:
        """Seconds until done() holds, polled every 50 ms; an error naming `what` after `timeout`."""
        start = time.perf_counter()
        while not done():
            if time.perf_counter() - start > timeout:
                raise AssertionError(f"{what}: not after {timeout:.0f} s; the serve's log ends:\n{self.logged()[-3000:]}")
            time.sleep(0.05)
        return time.perf_counter() - start

    def shows(self, pages: list[str], text: str) -> bool:
        return all(text in (self.get(page) or "") for page in pages)

    def reload_signal(self, page: str) -> threading.Thread:
        """A thread that asks /livereload/ as the page's script does and stops when the server
        says the site changed: its `.at` is perf_counter() then."""
        epoch, request = EPOCH.search(self.get(page) or "").groups()

        def wait():
            while self.process.poll() is None:
                reply = self.get(f"livereload/{epoch}/{request}", timeout=120)
                if reply is not None and float(reply) > int(epoch):
                    waiter.at = time.perf_counter()
                    return

        waiter = threading.Thread(target=wait, daemon=True)
        waiter.at = None
        waiter.start()
        return waiter


def edit(path: Path, old: str, new: str) -> None:
    """`old` replaced by `new` in `path` (once; it must be there)."""
    text = path.read_text()
    assert old in text, f"{path}: '{old}' not found"
    path.write_text(text.replace(old, new, 1))
