"""axe-core, pinned: from the npm registry (`npm pack`), by version and sha256, kept in
~/.cache/textbook/npm and injected by tests only: it is never part of the site."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

AXE_VERSION = "4.10.3"
AXE_SHA256 = "0f2b4d7dcdf7d1219df8d1959ad68e565f51d14c3f0d88bb71cd59abeb956292"  # axe-core-4.10.3.tgz
CACHE = Path(os.environ.get("TEXTBOOK_CACHE", Path.home() / ".cache" / "textbook")) / "npm"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]


@pytest.fixture(scope="session")
def axe_source() -> str:
    tgz = CACHE / f"axe-core-{AXE_VERSION}.tgz"
    if not tgz.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "pack", f"axe-core@{AXE_VERSION}", "--pack-destination", str(CACHE)],
                       check=True, capture_output=True, timeout=300)
    data = tgz.read_bytes()
    got = hashlib.sha256(data).hexdigest()
    assert got == AXE_SHA256, f"{tgz}: sha256 {got}, expected {AXE_SHA256}: delete it to fetch it again"
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return tar.extractfile("package/axe.min.js").read().decode()
