"""Entry point for the Pyodide worker: one JSON call per control change."""

from __future__ import annotations

import json

from . import registry


def render(name: str, params_json: str) -> str:
    """Run widget `name` with JSON params; return values, their Catalan text and the figure."""
    result = registry.run(name, json.loads(params_json))
    return json.dumps({
        "values": result.values,
        "text": registry.formatted(name, result.values),
        "figure": result.figure,
        "alt": result.alt,
        "tables": result.tables,
    }, ensure_ascii=False)
