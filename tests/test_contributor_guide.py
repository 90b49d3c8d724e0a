"""The contributor's guide's worked example is real: its widget module builds into a page."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.build


def test_worked_example_widget_builds(tmp_path):
    guide = (ROOT / "docs" / "contribuir.md").read_text()
    code = re.search(r'```python title="widgets_py/kv_size.py"\n(.*?)```', guide, re.S).group(1)
    project = tmp_path / "project"
    for part in ("docs", "widgets_py", "build_hooks", "corpus", "includes", "mkdocs.yml"):
        src = ROOT / part
        if src.exists():  # includes/: snippets mkdocs.yml watches, when the site has them
            (shutil.copytree if src.is_dir() else shutil.copy)(src, project / part)
    (project / "widgets_py" / "kv_size.py").write_text(code)
    with open(project / "widgets_py" / "widgets.py", "a") as f:
        f.write("from . import kv_size  # noqa: E402,F401\n")
    (project / "docs" / "exemple.md").write_text(
        "# Exemple\n\nEl cache fa <!-- md:value kv_size.total_gb -->.\n\n<!-- md:widget kv_size -->\n")
    env = {**os.environ, "PYTHONPATH": str(project), "NO_MKDOCS_2_WARNING": "1"}
    cli = subprocess.run([sys.executable, "-m", "widgets_py", "run", "kv_size", "tokens=8192"],
                         cwd=project, env=env, capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert '"total_gb": 2.68435456' in cli.stdout  # 2 · 80 · 8 · 128 · 8192 · 2 bytes
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    html = (tmp_path / "site" / "exemple.html").read_text()
    assert 'data-widget="kv_size"' in html and 'data-state="static"' in html
    assert '<span class="tw-live" data-live="kv_size.total_gb">2,68 GB</span>' in html
