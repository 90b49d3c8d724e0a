"""The code panel's editor: CodeMirror 6 from the npm registry, pinned, bundled into one file.

Like assets.py for Pyodide, trust comes from the hashes: every npm tarball below is fetched
with `npm pack NAME@VERSION` (once, into the cache) and used only if its sha256 matches the
pin. rollup 3 (pure JavaScript, no native binary) then bundles `editor/entry.js` with the
packages' own ESM files into one classic script, `window.twEditor`; the result is cached
under a hash of its inputs, so a build runs node only when a pin or the entry changed.

No node, no registry and no cached bundle: the build goes on without the editor (one line
on stderr), and the panel falls back to a plain monospace textarea. A tarball with another
hash stops the build, since it means a tampered source or a corrupted cache.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from .. import cache
from .assets import AssetError, progress, sha256

ENTRY = Path(__file__).with_name("editor") / "entry.js"
SITE_DIR = "assets/tw/editor/"  # in the built site: codemirror-<hash>.js

# npm spec -> sha256 of its `npm pack` tarball
PINNED: dict[str, str] = {
    "@codemirror/state@6.7.6": "91d75acc955ceeaf86af9396c11cda7694fe6222aac8427fa033d89eff5ac839",
    "@codemirror/view@6.43.15": "f0d5921406f841d211fa0887aabf10626c47676bfc63a4abed2a4d207e27c5ac",
    "@codemirror/language@6.13.1": "e711ec28da046f6c163e777c5466d8ac805ee9ef5f51c511e8729c6789be7f83",
    "@codemirror/commands@6.11.1": "f477f46d8c00278e1b387baebd53bd6556fd5f3c7401ebe2a05543600fcbff0f",
    "@codemirror/streamparser@6.0.0": "b4888c5ab40350e7a1747d765948a8fa45cfd127c479dd4cdef8097046efe14a",
    "@lezer/common@1.5.5": "ed93cee36403124f51eae638b8a032d6694914c19704de7610db7f2a9441c963",
    "@lezer/highlight@1.2.5": "e349eec1ff4382439c1e6286ae937e0203a8349c5192e2e133863391775ac7ff",
    "@lezer/lr@1.4.12": "64382ee7f144221e4c655f2034393c6be9cecaf5ea2ec1c1edeb99424defb272",
    "@lezer/python@1.1.19": "0e00a32717366099c01b38a19ceb73315cd1dd9b335d98b49fea50ab7c5c2a98",
    "@marijn/find-cluster-break@1.0.4": "5d12b770b64d46632c84fcd18e1d4c09f195ed0f5dbc71f94a41f0af333eaeae",
    "style-mod@4.1.5": "c4a44844213a141da55c51a2f81d701acdb9944465328b4a2a6b9626c6d9fc39",
    "w3c-keyname@2.2.8": "05d21484026d1f2dd842c843181e391e66d60f1d5dff292d562c3f40302dab36",
    "crelt@1.0.7": "3542299c0278fdc26aceb2b13d31bffbcb89d7367706bbc457130e3fd103c03e",
    "rollup@3.29.5": "0ab853d5ad72703fd2d5500705e1d64beac9dcc1885424f9ca85d48cd09076bf",  # the bundler
}

# bare imports resolve to the package's ESM file (`module`, else exports.import, else main)
ROLLUP_CONFIG = """\
import { readFileSync } from "node:fs";
import { join } from "node:path";
const modules = join(process.cwd(), "node_modules");
const packages = {
  name: "packages",
  resolveId(source, importer) {
    if (!importer || source.startsWith(".") || source.startsWith("/")) return null;
    const dir = join(modules, source);
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    const esm = pkg.module || (pkg.exports && pkg.exports.import) || pkg.main;
    return join(dir, esm);
  },
};
export default {
  input: "entry.js",
  plugins: [packages],
  output: { file: "editor.js", format: "iife", name: "twEditor", generatedCode: "es2015" },
};
"""


def _name(spec: str) -> str:
    return spec.rpartition("@")[0]


def _tarball_path(spec: str) -> Path:
    return cache.folder("npm") / (_name(spec).lstrip("@").replace("/", "-") + "-" + spec.rpartition("@")[2] + ".tgz")


def fetch(specs) -> None:
    """Download the tarballs of `specs` not cached yet, with one `npm pack` for all of them
    (one npm start-up instead of one per package: a cold build's longest step)."""
    missing = [spec for spec in specs if not _tarball_path(spec).is_file()]
    if not missing:
        return
    progress(f"{len(missing)} npm packages not cached yet, npm pack {' '.join(missing)} …")
    with tempfile.TemporaryDirectory(prefix="tw-npm-") as tmp:
        subprocess.run(["npm", "pack", *missing, "--silent"], cwd=tmp, check=True, capture_output=True, timeout=300)
        for spec in missing:
            target = _tarball_path(spec)
            cache.write(target, (Path(tmp) / target.name).read_bytes())  # npm names them as _tarball_path does


def tarball(spec: str, pinned: dict[str, str] = PINNED) -> Path:
    """A verified local copy of the `npm pack` tarball of `spec`; downloads it on first use."""
    target = _tarball_path(spec)
    fetch([spec])
    got = sha256(target.read_bytes())
    if got != pinned[spec]:
        raise AssetError(f"{spec}: sha256 {got} of {target}, pinned {pinned[spec]} (delete it to download again)")
    return target


def inputs_hash() -> str:
    pins = (f"{spec}={PINNED[spec]}\n".encode() for spec in sorted(PINNED))
    return cache.key(*pins, ENTRY.read_bytes() + b"\0" + ROLLUP_CONFIG.encode())[:16]


def _rollup(out: Path) -> None:
    fetch(PINNED)
    with tempfile.TemporaryDirectory(prefix="tw-editor-") as tmp:
        work = Path(tmp)
        for spec in PINNED:
            dest = work / "node_modules" / _name(spec)
            dest.mkdir(parents=True)
            with tarfile.open(tarball(spec)) as tar:
                safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                tar.extractall(dest, **safe)
            for item in (dest / "package").iterdir():  # npm tarballs hold one folder, package/
                item.rename(dest / item.name)
        shutil.copyfile(ENTRY, work / "entry.js")
        (work / "rollup.config.mjs").write_text(ROLLUP_CONFIG)
        subprocess.run(["node", "node_modules/rollup/dist/bin/rollup", "-c", "rollup.config.mjs", "--silent"],
                       cwd=work, check=True, capture_output=True, timeout=300)
        cache.write(out, (work / "editor.js").read_bytes())


def bundle() -> Path | None:
    """The editor bundle (built once per set of inputs), or None where it cannot be built."""
    out = cache.folder("editor") / f"codemirror-{inputs_hash()}.js"
    if out.is_file():
        return out
    try:
        _rollup(out)
    except (OSError, subprocess.SubprocessError) as exc:  # no node/npm, or offline: the textarea serves
        detail = getattr(exc, "stderr", b"") or b""
        progress(f"code editor not built ({type(exc).__name__}: {detail.decode(errors='replace').strip()[:200] or exc}); "
                 "the code panel will use a plain textarea")
        return None
    progress(f"code editor bundled: {out} ({out.stat().st_size // 1024} KB)")
    return out


def site_path(path: Path) -> str:
    """Where the bundle lives in the built site."""
    return SITE_DIR + path.name
