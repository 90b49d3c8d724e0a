"""What the browser runs: the pinned Pyodide files and CodeMirror (fetched, checked by sha256), our wheel and
the site's lock, their bytecode, trimmed to what the worker imports; `assemble.py` puts it all into the site.
"""
