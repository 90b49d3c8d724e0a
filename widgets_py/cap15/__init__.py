"""Chapter 15, inference, decoding and serving: one module per widget, each declaring `WIDGET`.

The registry finds every `capNN` package of widgets_py and every `WIDGET` in it: a new
chapter is a new folder, a new widget a new module."""
