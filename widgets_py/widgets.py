"""Imports every widget module so that each registers itself. Add new widgets here."""

from . import batching, cost, kv_cache, roofline  # noqa: F401
