"""Imports every widget module so that each registers itself. Add new widgets here."""

from . import roofline  # noqa: F401
