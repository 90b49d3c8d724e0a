"""A Content-Security-Policy in every page: the site's own origin only.

Inline scripts (Material's small boot scripts) are allowed by their sha256, not by
'unsafe-inline'; WebAssembly needs 'wasm-unsafe-eval'. Skipped under `mkdocs serve`,
whose live-reload script is injected after this hook runs.
"""

from __future__ import annotations

import base64
import hashlib
import re

INLINE = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>(.*?)</script>", re.S)
POLICY_META = re.compile(r'<meta http-equiv="Content-Security-Policy" content="[^"]*">')  # what on_post_page writes
POLICY = ("default-src 'self'; script-src 'self' 'wasm-unsafe-eval' {hashes}; style-src 'self' 'unsafe-inline'; "
          "img-src 'self' data:; font-src 'self'; connect-src 'self'; worker-src 'self' blob:; "
          "object-src 'none'; base-uri 'self'; form-action 'self'")


def on_post_template(output: str, *, template_name: str, config, build) -> str:
    """Static templates such as 404.html get the same policy."""
    return on_post_page(output, page=None, config=config, build=build) if template_name.endswith(".html") else output


def on_post_page(output: str, *, page, config, build) -> str:
    if build.is_serve:
        return output
    hashes = sorted({"'sha256-" + base64.b64encode(hashlib.sha256(m.encode()).digest()).decode() + "'"
                     for m in INLINE.findall(output)})
    meta = f'<meta http-equiv="Content-Security-Policy" content="{POLICY.format(hashes=" ".join(hashes))}">'
    return output.replace("<head>", "<head>" + meta, 1)
