"""The engine: the widget contract, parameters, Catalan number formats, SVG, the registry
and the browser's entry point. Knows no model and no chapter."""
