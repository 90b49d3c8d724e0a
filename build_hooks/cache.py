"""The build's caches, in one place: where they live, how an entry is named, written and pruned.

A slow step whose result depends on bytes alone (a pinned download, node compiling bytecode,
rollup bundling the editor, gzip and brotli of a big file, an archive without its bytecode)
keeps the result under one root (TEXTBOOK_CACHE, else XDG_CACHE_HOME/textbook, else
~/.cache/textbook), in a folder per kind, named by a hash of everything it depends on
(`key`): a changed input is a new entry, never a stale one, so nothing is invalidated, only
pruned. Builds run side by side (the test suite's, a `serve` beside a `build`) and a build
runs threads, so an entry is written to a temp file named for its process and thread in the
entry's own folder and renamed over the entry (`write`): a reader finds a whole entry or
none. A folder that gains an entry with every edit (bytecode, export, compressed) is pruned
to a size, least recently used first: a hit (`read`) marks its entry used.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from pathlib import Path

PART = ".part"  # a temp file's suffix: another build's entry being written, never pruned
LIMIT = 256 * 1024 * 1024  # bytes a pruned folder keeps (one book's big files take about 40 MB)


def root() -> Path:
    return Path(os.environ.get("TEXTBOOK_CACHE") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "textbook")


def folder(kind: str) -> Path:
    """The folder of one kind of entry (made by the first `write`)."""
    return root() / kind


def key(*parts: bytes) -> str:
    """The sha256 (hex) of `parts` in order: an entry's name, from everything it depends on."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
    return h.hexdigest()


def listing(files: dict[str, bytes]) -> bytes:
    """Named files as one part of a `key`: each name and the sha256 of its bytes, in name order."""
    return b"".join(name.encode() + b"\0" + hashlib.sha256(files[name]).digest() for name in sorted(files))


def read(path: Path) -> bytes | None:
    """The entry at `path`, marked recently used; None if there is none (or it was just pruned)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    with contextlib.suppress(FileNotFoundError):  # pruned this instant: still good bytes
        os.utime(path)
    return data


def write(path: Path, data: bytes) -> Path:
    """`data` at `path`, whole or not at all: written beside it under a name of this process and
    thread, then renamed over it (atomic on one file system)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}{PART}")
    try:
        part.write_bytes(data)
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)  # a failed write leaves nothing behind
    return path


def kept(where: Path | None, data: bytes, suffix: str, make, valid=lambda entry: True) -> bytes:
    """make(data), kept in the folder `where` under the sha256 of `data` and `suffix`; an entry
    that is not valid(entry) is made again. No folder: made every time."""
    if where is None:
        return make(data)
    path = where / f"{key(data)}{suffix}"
    entry = read(path)
    if entry is not None and valid(entry):
        return entry
    entry = make(data)
    write(path, entry)
    return entry


def prune(where: Path, limit: int = LIMIT) -> None:
    """Remove the least recently used entries (by mtime: a hit touches it) beyond `limit` bytes."""
    entries = []
    for path in where.iterdir() if where.is_dir() else ():
        if path.name.endswith(PART):
            continue
        try:
            stat = path.stat()
        except FileNotFoundError:  # another build's prune got there first
            continue
        entries.append((stat.st_mtime, stat.st_size, path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= limit:
            break
        path.unlink(missing_ok=True)
        total -= size
