"""The single file's payload encoding: single_file.encode85 (Python, at build) read back by
export_decode.js (the page and its worker), run in Node; and the characters it may use."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess

import pytest

from build_hooks.export import single_file
from conftest import ROOT

DECODER = ROOT / "build_hooks" / "export" / "export_decode.js"
# every length of a last group (0-3 bytes), the extremes of a group, and random bytes
CASES = [b"", b"\x00", b"\xff", b"ab", b"abc", b"abcd", b"\x00" * 4, b"\xff" * 4, b"\xff" * 7,
         bytes(range(256)), os.urandom(4099)]


def node_decode(texts: list[str]) -> list[str | dict]:
    """twDecode85 of each text in Node: the bytes as hex, or {"error": message}."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = DECODER.read_text() + f"""
const out = {json.dumps(texts)}.map((t) => {{
  try {{ return Buffer.from(twDecode85(t)).toString("hex"); }} catch (e) {{ return {{ error: e.message }}; }}
}});
process.stdout.write(JSON.stringify(out));
"""
    done = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_browser_decodes_what_the_build_encodes():
    assert node_decode([single_file.encode85(c) for c in CASES]) == [c.hex() for c in CASES]


def test_the_encoding_is_base85_in_another_alphabet():
    """Python's own b85decode reads it once the alphabet is mapped back (an independent check
    of encode85's arithmetic), and it is a quarter longer than the bytes."""
    data = os.urandom(1000)
    text = single_file.encode85(data)
    assert base64.b85decode(text.encode().translate(bytes.maketrans(single_file.TW85, single_file.B85))) == data
    assert len(text) == 1250 and single_file.decode85(text) == data


def test_a_payload_cannot_end_or_escape_its_script():
    text = single_file.encode85(bytes(range(256)) * 64)
    assert set(text) == set(single_file.TW85.decode())
    assert not re.search(r"""[<>&"'/=\\`\s]""", single_file.TW85.decode())


def test_bad_text_is_refused_with_what_is_wrong():
    good = single_file.encode85(b"abcdefgh")
    out = node_decode([good[:3] + "<" + good[4:], good + "!", "~~~~~"])
    assert "<" in out[0]["error"] and "posició 3" in out[0]["error"]
    assert "1 sol" in out[1]["error"]  # 11 characters: a last group of one digit
    assert "32 bits" in out[2]["error"]
