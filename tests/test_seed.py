"""Every assertion of the seed script's verify(), ported to the derived functions.

The expected values are the seed's own hand-typed expressions: an outside
reference that the derivations did not produce.
"""

import numpy as np
import pytest
import seed_reference

from numeric import layernorm, response, slope


@pytest.mark.parametrize("epsilon", [0.04, 0.25, 1.0])
def test_seed_verify(epsilon):
    np.testing.assert_allclose(slope(0.0, epsilon), 1 / np.sqrt(epsilon))
    for t in (-0.8, -0.1, 0.0, 0.2, 0.7):
        step = 1e-6
        finite_difference = (response(t + step, epsilon) - response(t - step, epsilon)) / (2 * step)
        np.testing.assert_allclose(finite_difference, slope(t, epsilon), rtol=1e-8, atol=1e-9)
    z = np.array([-0.3, 0.0, 0.3])
    centered = z - z.mean()
    q = np.mean(centered**2)
    u = layernorm.forward(z, epsilon)
    np.testing.assert_allclose(np.mean(u**2), q / (q + epsilon))
    jacobian = layernorm.jacobian(z, epsilon)
    np.testing.assert_allclose(jacobian @ np.ones(3), 0, atol=1e-14)
    np.testing.assert_allclose(jacobian @ centered, epsilon * centered / (q + epsilon) ** 1.5, atol=1e-14)
    assert np.linalg.norm(jacobian, 2) <= 1 / np.sqrt(epsilon) + 1e-12


@pytest.mark.parametrize("epsilon", [0.04, 0.25, 1.0])
def test_derived_functions_match_the_seed_formulas(epsilon):
    t = np.linspace(-3, 3, 1201)
    np.testing.assert_allclose(response(t, epsilon), seed_reference.response(t, epsilon), rtol=1e-14)
    np.testing.assert_allclose(slope(t, epsilon), seed_reference.slope(t, epsilon), rtol=1e-13)
