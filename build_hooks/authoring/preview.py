"""`./dev serve`: an edit is shown after rebuilding only what it changed, and nothing stale is shown.

ProperDocs' `serve --dirty` renders again only the pages whose Markdown is newer than their
HTML, and knows nothing of what else a page is made from. This module adds the rest, as a
concern that acts only in a dirty serve. Each build hashes the project's inputs (`snapshot`)
and compares them with those of the last build that ended well (`plan`):

- a page's Markdown: that page (ProperDocs' own rule);
- a widgets_py module: the pages that place or quote (md:widget, md:value, md:exercise) a
  widget or an exercise whose module imports it, directly or not (`imports`, `closure`);
  what each page uses is recorded as it renders (prerender.py: `build.uses`);
- what every page is made from (the build hooks, mkdocs.yml, includes/: the glossary appended
  to every page, overrides/: the theme), a page added or removed (the navigation), a module
  added or removed, a data file of widgets_py (weights, corpus, the kernel): every page, from
  an empty site folder, as a first build.

The pages to render again get their HTML's mtime set to 0, so ProperDocs' rule picks them.
Every widget page also carries the site config (the wheel's hash: prerender.config_attribute)
and every page the hashes of our scripts and styles (`?v=`, offline.versioned); after a
widget or an asset edit, the pages not rendered again get both rewritten in place
(`refreshed`), the same bytes as a fresh render, so none boots Python with another build's
files. Material's search index keeps the entries of the pages not rendered again
(`on_env`). The warning ProperDocs logs on every dirty build (its navigation may go stale)
does not apply: the navigation changes only with mkdocs.yml or a page added or removed,
which rebuild everything; it is logged at debug level, so the strict build does not stop.

Run as `python -m build_hooks.authoring.preview [serve options]`: the one serve command
(`./dev serve`, tests/test_serve.py and benchmarks/serve.py run it).
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from mkdocs import utils

from widgets_py.engine import registry

from ..hosting import offline
from ..pages import prerender
from ..pages.dependencies import PACKAGE, changed, closure, code_key, imports, snapshot

EVERY_PAGE = ("includes/", "overrides/", "build_hooks/", "mkdocs.yml")  # what every page is made from
EVERYTHING = None  # plan(): every page, from an empty site folder
DIRTY_WARNING = "A 'dirty' build is being performed"  # ProperDocs' (commands/build.py)
SERVE = ("serve", "-f", "mkdocs.yml", "--livereload", "--dirty")
log = logging.getLogger("properdocs.plugins.textbook.preview")  # shown as ProperDocs' own lines are


@dataclass(frozen=True)
class State:
    """What one build was made from, kept for the next dirty build to compare with."""
    inputs: dict[str, str]  # path from the project's root -> sha256 of its bytes
    uses: dict[str, frozenset[str]]  # page src_uri -> the widgets and exercises it places or quotes
    modules: dict[str, str]  # widget or exercise name -> its module's path from the root


def plan(previous: State | None, inputs: dict[str, str], graph: dict[str, set[str]]) -> set[str] | None:
    """The src_uri of the pages to render again, or EVERYTHING (None)."""
    if previous is None:
        return EVERYTHING
    edits = changed(previous.inputs, inputs)
    added_or_removed = {p for p in edits if (p in inputs) != (p in previous.inputs)}
    if any(p.startswith(EVERY_PAGE) for p in edits):
        return EVERYTHING
    if any(p.startswith(PACKAGE) and (not p.endswith(".py") or p in added_or_removed) for p in edits):
        return EVERYTHING
    pages = {p.removeprefix("docs/") for p in edits if p.startswith("docs/") and p.endswith(".md")}
    if any("docs/" + p in added_or_removed for p in pages):
        return EVERYTHING  # the navigation changed
    modules = {p for p in edits if p.startswith(PACKAGE)}
    if modules:
        reach = {name: closure(path, graph) for name, path in previous.modules.items()}
        pages |= {page for page, names in previous.uses.items() if any(reach.get(n, {""}) & modules for n in names)}
    return pages


def relative(path: str, root: Path) -> str | None:
    """`path` from the project's root; None outside it (a chapter from elsewhere: not watched)."""
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def _root(config) -> Path:
    return Path(config.config_file_path).parent


def _demote(record: logging.LogRecord) -> bool:
    """ProperDocs' warning on every dirty build, at debug level (see the module's docstring)."""
    if str(record.msg).startswith(DIRTY_WARNING):
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
    return True


def on_config(config, *, build):
    if build.dirty:
        logger = logging.getLogger("properdocs.commands.build")
        for old in [f for f in logger.filters if getattr(f, "__name__", "") == _demote.__name__]:
            logger.removeFilter(old)  # this module is imported afresh on every build
        logger.addFilter(_demote)
    return config


def on_files(files, *, config, build):
    if not build.dirty:
        return files
    root = _root(config)
    inputs = snapshot(root)
    sources = {p: (root / p).read_text(encoding="utf-8") for p in inputs if p.startswith(PACKAGE) and p.endswith(".py")}
    build.preview = State(inputs, {}, {})  # uses and modules: filled as pages render (on_post_build)
    graph = imports(sources)
    build.code_key = functools.cache(lambda name: code_key(relative(registry.module_file(name), root), inputs, graph))
    pages = plan(build.previous, inputs, graph)
    site = Path(config.site_dir)
    if pages is EVERYTHING:
        if build.previous is not None:
            log.info("preview: every page is rendered again")
        utils.clean_directory(str(site))
        build.previous = None
        return files
    log.info(f"preview: rendering again {', '.join(sorted(pages)) or 'no page'}")
    for page in files.documentation_pages():
        if page.src_uri in pages and os.path.isfile(page.abs_dest_path):
            os.utime(page.abs_dest_path, (0, 0))  # older than its source: ProperDocs renders it again
    return files


def on_env(env, *, config, files, build):
    """Material's search keeps its previous index under dirty builds, but replaces only one
    page's entries (it assumes one page changed): the entries of every page rendered again
    are dropped here first, so none is doubled or stale."""
    if build.dirty:
        for plugin in config.plugins.values():
            previous = getattr(plugin, "search_index_prev", None)
            if previous is not None:
                urls = {files.get_file_from_path(src).url for src in build.rendered if files.get_file_from_path(src)}
                previous.entries = [e for e in previous.entries if e["location"].split("#")[0] not in urls]
    return env


def on_page_markdown(markdown: str, *, page, config, files, build) -> str:
    build.rendered.add(page.file.src_uri)
    return markdown


def refreshed(html: str, build, docs_dir: Path) -> str:
    """A page rendered by an earlier build, with this build's site config and asset hashes."""
    return offline.restamped(prerender.reconfigured(html, build), docs_dir)


def on_post_build(*, config, build) -> None:
    if not build.dirty:
        return
    root = _root(config)
    uses = {} if build.previous is None else dict(build.previous.uses)
    uses.update({page: frozenset(build.uses.get(page, ())) for page in build.rendered})
    names = set().union(*uses.values()) if uses else set()
    modules = {name: path for name in names if (path := relative(registry.module_file(name), root))}
    edits = set() if build.previous is None else changed(build.previous.inputs, build.preview.inputs)
    if any(p.startswith(PACKAGE) or (p.startswith("docs/") and not p.endswith(".md")) for p in edits):
        docs_dir = Path(config.docs_dir)
        for page in not_rendered(config, build.rendered):
            html = page.read_text(encoding="utf-8")
            new = refreshed(html, build, docs_dir)
            if new != html:
                page.write_text(new, encoding="utf-8")
    build.preview = State(build.preview.inputs, uses, modules)


def not_rendered(config, rendered: set[str]) -> list[Path]:
    """The site's HTML pages that this build did not render (by their source's name)."""
    site = Path(config.site_dir)
    fresh = {Path(config.site_dir, src.removesuffix(".md") + ".html").resolve() for src in rendered}
    return [p for p in sorted(site.rglob("*.html")) if p.resolve() not in fresh]


def main(argv: list[str]) -> None:
    """ProperDocs' serve, dirty, with live reload (extra options, such as --dev-addr, after)."""
    from properdocs.__main__ import cli
    cli([*SERVE, *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
