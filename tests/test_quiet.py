"""Every product is computed without a floating-point warning, at the edges of the float range too:
a row a fast path cannot take is taken again, and says nothing on the way."""

import numpy as np
import pytest

import numeric
from derivations import LAYERS


def _plain():
    return [key for key in LAYERS if not LAYERS[key].parameters and not LAYERS[key].scalars]


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("key", _plain())
def test_no_runtime_warning_from_forward_jacobian_or_products(key):
    module = getattr(numeric, key)
    rng = np.random.default_rng(4)
    for power in (-300, -150, 0, 150, 300):
        for eps in (1e-300, 1e-5, 1e300):
            for size in (2, 3, 7):
                x = rng.standard_normal((2, size)) * 10.0**power
                g, v = rng.standard_normal((2, 2, size))
                module.forward(x, eps)
                module.jacobian(x, eps)
                module.vjp(x, eps, g)
                module.jvp(x, eps, v)
                module.hvp(x, eps, g, v)
