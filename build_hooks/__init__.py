"""MkDocs build hooks: bundle Pyodide and widgets_py, prerender widgets, typeset maths."""
