"""The site's JavaScript, type-checked: every script of docs/assets/tw and build_hooks (but the
vendored DOMPurify) says `// @ts-check` and is in one of types/'s two programs (the page's,
with the DOM, and the workers', with the worker scope: the two cannot share one), and
`tsc --noEmit` (TypeScript pinned by tests/engines/package-lock.json) passes over both. The
namespace they share (`tw`) and the protocol are typed in types/*.d.ts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TSC = ROOT / "tests" / "engines" / "node_modules" / ".bin" / "tsc"
PROGRAMS = ("page", "worker")
VENDORED = {"purify.min.js"}


def scripts() -> list[Path]:
    # build_hooks: each stage's scripts (export/, hosting/), not the editor's rollup input (runtime/editor/)
    found = sorted((ROOT / "docs" / "assets" / "tw").glob("*.js")) + sorted((ROOT / "build_hooks").glob("*/*.js"))
    return [p for p in found if p.name not in VENDORED]


def program(name: str) -> set[Path]:
    config = ROOT / "types" / f"tsconfig.{name}.json"
    return {(config.parent / f).resolve() for f in json.loads(config.read_text())["files"] if f.endswith(".js")}


def tsc(config: Path) -> subprocess.CompletedProcess:
    if not TSC.exists():
        if os.environ.get("CI"):
            pytest.fail(f"no {TSC}: ./dev test runs npm ci in tests/engines")
        pytest.skip(f"no {TSC} (./dev test runs npm ci in tests/engines)")
    return subprocess.run([str(TSC), "-p", str(config)], capture_output=True, text=True, timeout=300)


def test_every_script_is_checked():
    checked = set().union(*(program(name) for name in PROGRAMS))
    for path in scripts():
        assert path.read_text().startswith("// @ts-check\n"), f"{path.relative_to(ROOT)}: first line // @ts-check"
        assert path in checked, f"{path.relative_to(ROOT)} is in neither types/tsconfig.page.json nor tsconfig.worker.json"


@pytest.mark.parametrize("name", PROGRAMS)
def test_tsc_passes(name):
    done = tsc(ROOT / "types" / f"tsconfig.{name}.json")
    assert done.returncode == 0, done.stdout + done.stderr


def test_tsc_sees_a_wrong_script(tmp_path):
    """The check can fail: a page script reading `dataset` off a bare Element, naming a call
    the protocol does not have, and sending a payload with a misspelt field is refused, with
    the three errors."""
    bad = tmp_path / "bad.js"
    bad.write_text('// @ts-check\ndocument.querySelector(".x").dataset.x = "1";\nwindow.tw.protocol.CALLS.NOPE;\n'
                   'window.tw.kernel.get({}).call("run", { widgt: "roofline", params: {} });\n')
    config = json.loads((ROOT / "types" / "tsconfig.page.json").read_text())
    config["files"] = [str(ROOT / "types" / "page.d.ts"), str(bad)]
    (tmp_path / "tsconfig.json").write_text(json.dumps(config))
    done = tsc(tmp_path / "tsconfig.json")
    assert done.returncode != 0
    assert "Property 'dataset' does not exist on type 'Element'" in done.stdout, done.stdout
    assert "Property 'NOPE' does not exist" in done.stdout, done.stdout
    assert "'widgt' does not exist in type 'TWRunPayload'" in done.stdout, done.stdout
