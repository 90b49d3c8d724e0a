"""Imports every widget module so that each registers itself. Add new widgets here."""

from . import batching, clock, cost, kv_cache, quantize, roofline, sampling, speculative, training  # noqa: F401
