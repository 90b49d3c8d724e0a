"""How closely two runs of one widget must agree: CPython here against CPython elsewhere
(golden files) or against Pyodide (browser parity).

The weights are the same bytes everywhere; what differs is the order in which float32
products are summed (OpenBLAS kernels per CPU, numpy without BLAS in Pyodide). A model
loss then moves in its sixth digit, so a value in nats (a loss, or the small difference
of two losses, such as a quantization's degradation) is compared at the scale of the
loss, not at the scale of the difference; everything else at a relative 1e-5.
"""

import pytest

from widgets_py.engine.registry import get

RELATIVE = 1e-5
LOSS_NATS = 1e-5  # absolute, in nats: ~5e-6 of a 2-nat loss


def expected(widget: str, key: str, value):
    """`value` as the other run's value must equal it: pytest.approx for floats."""
    if not isinstance(value, float):
        return value
    units = {o.name: o.unit for o in get(widget).outputs}
    return pytest.approx(value, rel=RELATIVE, abs=LOSS_NATS if units.get(key) == "nats" else 1e-9)
