"""The site generator, named once: ProperDocs, the maintained fork of MkDocs 1.6.

It reads `mkdocs.yml` (named explicitly: without `-f`, ProperDocs looks for properdocs.yml
first and asks for a rename), runs its `hooks:` and the plugins MkDocs' entry points
register (Material's), and aliases the `mkdocs` module, so the hooks' `from mkdocs… import`
lines run against ProperDocs. Everything that builds the site in a fresh interpreter (the
export command, the tests) builds it with `build_command()`.
"""

from __future__ import annotations

import sys
from pathlib import Path

CONFIG = "mkdocs.yml"


def build_command(site_dir: Path | str, *extra: str) -> list[str]:
    """`properdocs build --strict` of the config in the working directory, into `site_dir`."""
    return [sys.executable, "-m", "properdocs", "build", "-f", CONFIG, "--strict", *extra, "--site-dir", str(site_dir)]
