"""What a page fetches first, asked for at once: a <link rel="preload"> for each, first in <head>.

csp.py's policy is a <meta> tag (a static host sends no header), and a policy in a <meta>
stops Chromium's preload scanner (crbug.com/1458493; Lighthouse #13004): each script of
<head> was then requested only once the one before it had run, a round trip each before
Python's worker could start. So, right after the policy, the page asks for every script and
stylesheet of its <head> (the parser meets these links before the first script, and fetches
them in parallel) and, on a page that starts Python, for the first scripts its worker
imports (`boot_files`). benchmarks/phone.py measures the chain. Runs after every script of
<head> is in and versioned (offline.py); skipped under `mkdocs serve`, like the policy.
"""

from __future__ import annotations

import re
from html import escape

from widgets_py.engine.dom import Id
from widgets_py.engine.protocol import SiteConfig

from .csp import POLICY_META

PRELOAD = re.compile(r'<link rel="preload" href="[^"]*" as="(?:script|style)">')  # what on_post_page writes
HEAD_FILES = re.compile(r'<script\b[^>]*\bsrc="([^"]+)"|<link rel="stylesheet" href="([^"]+)"')


def on_post_page(output: str, *, page, config, build) -> str:
    if build.is_serve:
        return output
    boots = f'id="{Id.CONFIG}"' in output  # the page starts Python's worker (prerender.py)
    worker = boot_files("../" * page.url.count("/"), build.site_config()) if boots else []
    policy = POLICY_META.search(output)
    return output[:policy.end()] + links(output, worker) + output[policy.end():]


def boot_files(root: str, config: SiteConfig) -> list[str]:
    """The scripts Python's worker imports first, in turn (worker.js, then pyodide.js): the page
    asks for them at once, and the worker, a moment later, gets them from the browser's HTTP
    cache where the host lets it cache them (GitHub Pages: for 10 minutes). Chromium's console
    then warns that these two were preloaded "but not used": the worker used them, which the
    page does not see."""
    return [root + config["worker"], root + config["runtime"] + "pyodide.js"]


def links(output: str, worker: list[str]) -> str:
    """The preloads: the scripts of <head>, in order, then `worker`'s, then the stylesheets
    (an HTTP/1.1 host serves six at a time: what starts Python goes first)."""
    head = output[:output.index("</head>")]
    found = HEAD_FILES.findall(head)
    files = [*((src, "script") for src, _ in found if src), *((escape(url), "script") for url in worker),
             *((href, "style") for _, href in found if href)]  # attribute text: escaped as found
    return "".join(f'<link rel="preload" href="{href}" as="{kind}">' for href, kind in files)
