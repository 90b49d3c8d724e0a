"""The contributor's guide's worked example is real: it is the suite's fixture chapter.

The guide shows the widget module and the chapter's directives; `tests/fixtures/book` holds
the same files, and conftest builds them into the site every chapter-wide test reads (see
test_book.py), so the example cannot go stale without a test failing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import FIXTURE, ROOT, book_with_fixture

GUIDE = (ROOT / "docs" / "contribuir.md").read_text()


def block(title: str) -> str:
    return re.search(rf'```\w+ title="{re.escape(title)}"\n(.*?)```', GUIDE, re.S).group(1)


def test_guide_widget_module_is_the_fixture_chapters():
    assert block("widgets_py/cap99/kv_size.py") == (FIXTURE / "widgets_py" / "cap99" / "kv_size.py").read_text()


def test_guide_trainable_widget_is_the_fixture_chapters():
    assert block("widgets_py/cap99/tiny_training.py") == (FIXTURE / "widgets_py" / "cap99" / "tiny_training.py").read_text()


def test_guide_directives_are_on_the_fixture_pages():
    page = (FIXTURE / "docs" / "cap99" / "index.md").read_text()
    for line in block("docs/cap99/index.md").strip().splitlines():
        assert line in page.splitlines(), line


def test_worked_example_runs_from_the_command_line(tmp_path):
    project = book_with_fixture(tmp_path / "project")
    env = {**os.environ, "PYTHONPATH": str(project)}
    cli = subprocess.run([sys.executable, "-m", "widgets_py", "run", "kv_size", "tokens=8192"],
                         cwd=project, env=env, capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert '"total_gb": 2.68435456' in cli.stdout  # 2 · 80 · 8 · 128 · 8192 · 2 bytes
