"""Every archive the build writes (python_stdlib.zip, numpy's wheel, our packages' tar.bz2, the
bytecode cache), through one module.

The bytes must depend on the inputs alone: a changed byte is a new sha256 in the lock and the
site config, a new download for every reader. So a new member carries no build time (the
earliest zip timestamp), no owner's mode (0644) and its content as given, in the order given
(the callers sort); a member copied from another archive keeps its name, timestamp and
compression; and an archive only gaining members is appended to, its own members left as the
very bytes they were. A tar (`tar`) likewise: no time, no owner, 0644, members in the order given.
"""

from __future__ import annotations

import copy
import io
import struct
import tarfile
import zipfile

ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest zip timestamp: no build time in the bytes
TAR_BZ2, TAR, ZIP = ".tar.bz2", ".tar", ".zip"  # file name endings Pyodide's loader unpacks (shutil.unpack_archive)


def entry(name: str, compression: int = zipfile.ZIP_DEFLATED) -> zipfile.ZipInfo:
    """A world-readable archive member with no build time in it."""
    info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    info.compress_type = compression
    info.external_attr = 0o644 << 16
    return info


def write(members: dict[str, bytes], *, compression: int = zipfile.ZIP_DEFLATED, comment: bytes = b"") -> bytes:
    """A new zip of `members`, in their order, each an `entry`."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as z:
        if comment:
            z.comment = comment
        for name, data in members.items():
            z.writestr(entry(name, compression), data)
    return out.getvalue()


def append(data: bytes, extra: dict[str, bytes]) -> bytes:
    """The zip `data` with `extra` members added after its own, in name order; its own bytes unchanged."""
    out = io.BytesIO(data)
    with zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED) as z:
        for name in sorted(extra):
            z.writestr(entry(name), extra[name])
    return out.getvalue()


def rewrite(data: bytes, member, extra: dict[str, bytes] | None = None) -> bytes:
    """The zip `data` with each member as member(name, body) gives it, (new name, new body) or
    None to leave it out, keeping its timestamp and compression; then `extra`, in name order.
    A member whose body comes back as it was keeps its very compressed bytes (`_copy`)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            body = src.read(info)
            kept = member(info.filename, body)
            if kept is None:
                continue
            if kept[1] is body:
                _copy(z, src, info, kept[0])
            else:
                info.filename = kept[0]
                z.writestr(info, kept[1])
        for name in sorted(extra or {}):
            z.writestr(entry(name), extra[name])
    return out.getvalue()


_LOCAL = struct.Struct("<4s2B4HL2L2H")  # a member's local header, before its name and extra field


def _copy(z: zipfile.ZipFile, src: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> None:
    """`info`'s member of `src` into `z` (open for writing) under `name`, its compressed bytes
    as they are: deflating again every member of numpy's wheel took a second of each build, and
    the bytes would be this machine's zlib's rather than the archive's own. zipfile has no call
    for it, so this writes what its writestr would: the local header, the data, the entry."""
    src.fp.seek(info.header_offset)
    header = _LOCAL.unpack(src.fp.read(_LOCAL.size))
    src.fp.seek(header[10] + header[11], io.SEEK_CUR)  # the name and the extra field
    raw = src.fp.read(info.compress_size)
    copied = copy.copy(info)
    copied.filename = name
    copied.flag_bits &= ~0x08  # sizes in the header, no data descriptor after the data
    copied.header_offset = z.fp.tell()
    z.fp.write(copied.FileHeader())
    z.fp.write(raw)
    z.filelist.append(copied)
    z.NameToInfo[name] = copied
    z.start_dir = z.fp.tell()
    z._didModify = True


def stored(data: bytes) -> bytes:
    """The zip `data` with every member stored, not deflated (names, timestamps, order kept):
    for a file that gzips the whole archive, where one stream over all members packs tighter
    than each member deflated alone (the single-file export: 0,4 MB less for its three zips)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for info in src.infolist():
            body = src.read(info)
            info.compress_type = zipfile.ZIP_STORED
            z.writestr(info, body)
    return out.getvalue()


def without(data: bytes, drop) -> bytes:
    """The zip `data` without the members `drop(name)` is true of, and a wheel's RECORD without
    the lines naming them; `data` itself when none is dropped."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        gone = {name for name in z.namelist() if drop(name)}
    if not gone:
        return data

    def member(name: str, body: bytes) -> tuple[str, bytes] | None:
        return None if name in gone else (name, _record_without(name, body, gone))

    return rewrite(data, member)


def _record_without(name: str, body: bytes, gone: set[str]) -> bytes:
    """Member `name`'s body, but for a wheel's RECORD without the lines naming `gone`."""
    if not name.endswith(".dist-info/RECORD"):
        return body
    listed = tuple(g.encode() + b"," for g in sorted(gone))  # RECORD lines: path,hash,size
    return b"".join(line for line in body.splitlines(keepends=True) if not line.startswith(listed))


def tar(members: dict[str, bytes], *, compressed: bool = True) -> bytes:
    """A tar of `members`, in their order, bzip2-compressed at level 9 (`compressed`) or plain,
    each a regular file with no time, no owner and mode 0644 (its folders are made on unpacking)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:bz2" if compressed else "w", format=tarfile.PAX_FORMAT) as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            t.addfile(info, io.BytesIO(data))
    return out.getvalue()


def members(data: bytes) -> dict[str, bytes]:
    """Member name -> bytes of a zip or a tar, in the archive's order."""
    if zipfile.is_zipfile(io.BytesIO(data)):
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return {name: z.read(name) for name in z.namelist()}
    return tar_members(data)


def tar_members(data: bytes) -> dict[str, bytes]:
    """Member name -> bytes of a tar (compressed or not), in the archive's order."""
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        return {info.name: t.extractfile(info).read() for info in t.getmembers() if info.isfile()}


def plain_tar(data: bytes, drop) -> bytes:
    """The tar `data` uncompressed, without the members `drop(name)` is true of: for a file that
    gzips the whole archive (the single file)."""
    return tar({name: body for name, body in tar_members(data).items() if not drop(name)}, compressed=False)
