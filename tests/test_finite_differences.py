"""Tier 3: derivatives against central differences, in random directions."""

import numpy as np
import pytest
from grids import EPSILONS, KINKED_LAYERS, SIZES, SYMMETRIC_LAYERS, module
from numeric.layernorm import LAYER

from numeric.checks import verify
from numeric.checks.agreement import AgreementError, assert_agree


@pytest.mark.parametrize("key", SYMMETRIC_LAYERS)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_slope_matches_differences(key, epsilon):
    ts = np.concatenate([np.linspace(-3, 3, 61), [-0.8, -0.1, 0.0, 0.2, 0.7]]) * np.sqrt(max(epsilon, 1e-2))
    layer = module(key).LAYER
    pairs = [(name, of) for name, of in verify.functions_of_t(layer) if of is not None]
    assert pairs, "every symmetric layer has a slope"
    for name, of in pairs:
        assert verify.derivative_against_differences(layer, name, of, ts, epsilon) == ts.size


@pytest.mark.parametrize("key", SYMMETRIC_LAYERS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("epsilon", [1e-3, 0.25, 1.0, 100.0])
@pytest.mark.parametrize("scale", [1e-2, 1.0, 1e2])
def test_jacobian_matches_differences_in_random_directions(key, size, epsilon, scale, rng):
    values = scale * rng.standard_normal(size) + rng.standard_normal()
    assert verify.jacobian_against_differences(module(key).LAYER, values, epsilon, rng) == 3 * size


def test_difference_check_catches_a_wrong_jacobian(monkeypatch, rng):
    values = rng.standard_normal(5)
    right = LAYER.jacobian

    # Dropping the rank-one c c^T term leaves J 1 = 0 intact: only random
    # directions can see the difference.
    def wrong(x, e):
        centered = x - x.mean()
        return right(x, e) + np.outer(centered, centered) / (5 * (np.var(x) + e) ** 1.5)

    monkeypatch.setattr(LAYER, "jacobian", wrong)
    assert np.allclose(wrong(values, 0.25) @ np.ones(5), 0)
    with pytest.raises(AgreementError, match="J v vs differences"):
        verify.jacobian_against_differences(LAYER, values, 0.25, rng)


@pytest.mark.parametrize("key", KINKED_LAYERS)
@pytest.mark.parametrize("size", [2, 3, 7])
@pytest.mark.parametrize("epsilon", [1e-2, 0.25, 4.0])
def test_one_sided_differences_at_the_kink_agree_with_the_derived_limit(key, size, epsilon, rng):
    """The spread has a kink at the degenerate input; the layer's one-sided
    difference quotients from both sides still converge to the derived J."""
    layer = module(key).LAYER
    base = np.full(size, 0.7) if key.startswith("layernorm") else np.zeros(size)
    jac = layer.jacobian(base, epsilon)
    v = rng.standard_normal(size)
    for h in (1e-5, -1e-5):
        quotient = (layer.forward(base + h * v, epsilon) - layer.forward(base, epsilon)) / h
        # The remainder is second order: |v|^2 |h| / epsilon^2 bounds it.
        assert_agree(quotient, jac @ v, rtol=0, atol=4 * abs(h) * (v @ v) / epsilon**2, what=f"one-sided, h = {h}")
    # J v is not the zero vector: the check has something to see.
    assert np.linalg.norm(jac @ v) > 0.1 / (1 + epsilon)


def test_the_difference_step_follows_the_asymptote_it_is_scaled_to(monkeypatch):
    """The step of the slope's differences is scaled to the width over which the response rises to
    its asymptote: a reference asymptote far beyond the layer's (the wrong one) makes the step too
    large, its truncation error shows, and the check fails.  Each asymptote, upper or lower, is as
    far from zero as the other (the responses are odd), so either is the right scale."""
    ts, epsilon = np.linspace(-1, 1, 41), 0.04
    upper, lower = LAYER.asymptotes()
    assert upper == -lower > 0
    assert verify.derivative_against_differences(LAYER, "slope", "response", ts, epsilon) == ts.size
    monkeypatch.setattr(type(LAYER), "asymptotes", lambda self: (upper * 1e5, lower * 1e5))
    with pytest.raises(AgreementError, match="slope vs differences of response"):
        verify.derivative_against_differences(LAYER, "slope", "response", ts, epsilon)


def test_a_scalar_check_of_a_function_the_layer_lacks_names_it():
    """Verification asked for a function the layer does not have fails saying which, before
    evaluating anything."""
    with pytest.raises(AssertionError, match=r"^layernorm has no function no_such_function$"):
        verify.scalar_against_symbolic(LAYER, "no_such_function", np.array([0.0, 1.0]), np.array([0.25]))


@pytest.mark.parametrize("times", [1, 2])
def test_a_derived_eigenvalue_missing_from_numpys_is_refused_at_any_multiplicity(times):
    """An eigenvalue derived with multiplicity 1 (a complement's n - 2 at n = 3, say) must be among
    numpy's as surely as one of multiplicity 2: each is counted against the eigenvalues found."""
    from types import SimpleNamespace

    import sympy as sp

    pair = SimpleNamespace(multiplicity=sp.Integer(times), direction=SimpleNamespace(name="w"))
    tol = {"rtol": 1e-9, "atol": 1e-12}
    held = np.array([0.5] * times + [2.0] * (3 - times))
    rest = SimpleNamespace(multiplicity=sp.Integer(3 - times), direction=SimpleNamespace(name="u"))
    assert verify._multiplicities([([0.5], pair), ([2.0], rest)], held, tol) == 2
    with pytest.raises(AgreementError, match=f"multiplicity of w: {times} derived at n = 3, 0 of numpy's"):
        verify._multiplicities([([0.75], pair)], held, tol)


class _Flat:
    """A layer whose output is 0 everywhere, its differences exactly 0, with a stated Jacobian
    ``jac`` and a bound of 1: what J v vs differences accepts is its tolerance alone."""

    def __init__(self, jac):
        self.jac = jac

    def jacobian(self, x, epsilon):
        return self.jac

    def epsilon_root(self, epsilon):
        return np.sqrt(epsilon)

    def bound(self, epsilon):
        return 1.0

    def forward(self, x, epsilon):
        return np.zeros_like(x)


@pytest.mark.parametrize(("delta", "accepted"), [(0.5e-7, True), (2e-7 * 8, False)])
def test_jacobian_against_differences_allows_an_error_relative_to_the_bound_times_v(delta, accepted, rng):
    """|J v| <= ||J|| |v|: the check's absolute tolerance is 1e-7 ||J|| |v| in each entry.  J = delta I
    errs by delta |v_k| in entry k: at most delta |v|, within it for delta = 0.5e-7 (a tolerance
    without |v|, which is about 8 at n = 64, would refuse that); and at least delta |v| / sqrt(n)
    in the largest entry, twice the tolerance for delta = 2e-7 sqrt(n)."""
    size = 64
    x = rng.standard_normal(size)
    layer = _Flat(delta * np.eye(size))
    if accepted:
        assert verify.jacobian_against_differences(layer, x, 1.0, rng) == 3 * size
    else:
        with pytest.raises(AgreementError):
            verify.jacobian_against_differences(layer, x, 1.0, rng)
