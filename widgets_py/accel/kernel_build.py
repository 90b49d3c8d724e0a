"""Builds the browser's kernel: wasm/*.c -> wasm/kernel.wasm, with wasm/ops.h as
primitives.OPS writes it. An authoring and test tool (the site ships the committed binary):

    .venv/bin/python -m widgets_py.accel.kernel_build

Debian 12's clang 14 and its wasm-ld (./dev test installs clang-14 and lld-14): the same
compiler gives the same bytes, which tests/test_kernel.py checks. No libc: the sources use
wasm_simd128.h's intrinsics and clang's builtins only.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import primitives
from .kernel import HEADER, HERE, STACK, WASM

SOURCES = ("products.c", "exp.c", "rows.c", "attention.c", "backward.c", "run.c")
CLANG = ("clang-14", "wasm-ld-14")  # Debian 12's: the committed binary is theirs
FLAGS = ("--target=wasm32", "-O3", "-msimd128", "-mbulk-memory", "-ffreestanding", "-nostdlib",
         "-fno-vectorize", "-fno-slp-vectorize",  # the SIMD is written out: what the source says runs
         "-Wall", "-Wextra", "-Werror", "-Wl,--no-entry", "-Wl,--stack-first", f"-Wl,-z,stack-size={STACK}",
         "-Wl,--export=__heap_base", "-Wl,--strip-all")


def toolchain() -> tuple[str, str] | None:
    """clang and wasm-ld as the committed binary was built, or None if this machine lacks them."""
    found = tuple(shutil.which(tool) for tool in CLANG)
    return found if all(found) else None


def build() -> bytes:
    """wasm/*.c -> kernel.wasm's bytes, with ops.h as primitives.OPS writes it (a test and
    authoring tool: the site ships the committed binary)."""
    tools = toolchain()
    if tools is None:
        raise RuntimeError(f"building the kernel needs {' and '.join(CLANG)} (Debian: apt-get install clang-14 lld-14)")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp)
        for name in (*SOURCES, "kernel.h"):
            shutil.copy(HERE / name, src / name)
        (src / "ops.h").write_text(primitives.header())
        out = src / "kernel.wasm"
        done = subprocess.run([tools[0], *FLAGS, "-o", str(out), *SOURCES], cwd=src, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"clang failed on wasm/*.c:\n{done.stderr.strip()}")
        return out.read_bytes()


if __name__ == "__main__":
    if sys.argv[1:]:
        sys.exit("usage: python -m widgets_py.accel.kernel_build   (writes wasm/ops.h and wasm/kernel.wasm)")
    HEADER.write_text(primitives.header())
    WASM.write_bytes(build())
    print(f"{WASM.name}: {WASM.stat().st_size} bytes from {', '.join(SOURCES)}")
