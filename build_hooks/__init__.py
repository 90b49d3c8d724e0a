"""MkDocs build hooks, by build stage: runtime/ (Pyodide, our wheel, bytecode), pages/ (directives,
prerendered widgets, maths), hosting/ (CSP, headers, compression, offline), export/ (single-file
chapters), authoring/ (`./dev new`); hooks.py runs them on one build context (context.py)."""
