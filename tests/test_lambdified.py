"""Tier 2: lambdified functions against the symbolic expressions, at seeded points."""

import numpy as np
import pytest
import sympy as sp
from grids import EPSILONS
from numeric.layernorm import LAYER

from derivations import eigen, jacobian
from derivations.symbols import epsilon as EPS
from derivations.symbols import i, k, mu, n, q, x
from numeric import layernorm, verify
from numeric.agreement import AgreementError, assert_agree, exact

T_GRID = np.concatenate([[0.0, -0.0], -np.logspace(-4, 2, 7), np.logspace(-4, 2, 7), [-0.8, -0.1, 0.2, 0.7]])


@pytest.mark.parametrize("name", ["response", "slope"])
@pytest.mark.parametrize("epsilon", [1e-6, 1e-4, 1e-2, 1.0, 1e2])
def test_scalar_function_matches_symbolic(name, epsilon):
    assert verify.scalar_against_symbolic(LAYER, name, T_GRID, np.array([epsilon])) == T_GRID.size


def test_symbolic_check_catches_a_wrong_function(monkeypatch):
    monkeypatch.setattr(LAYER, "slope", lambda t, e: e / (2 * t**2 / 3 + e) ** 1.4999)
    with pytest.raises(AgreementError, match="slope vs symbolic"):
        verify.scalar_against_symbolic(LAYER, "slope", T_GRID, np.array([0.25]))


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_jacobian_entries_match_symbolic(epsilon, rng):
    values = rng.standard_normal(4)
    entry = jacobian.entry(LAYER.definition)
    m, v = float(np.mean(values)), float(np.var(values))
    expected = np.array(
        [
            [
                exact(
                    entry.subs({i: r, k: col, n: 4}), {x[r]: values[r], x[col]: values[col], mu: m, q: v, EPS: epsilon}
                )
                for col in range(4)
            ]
            for r in range(4)
        ]
    )
    assert_agree(layernorm.jacobian(values, epsilon), expected, rtol=1e-12, atol=1e-15 / np.sqrt(epsilon), what="J")


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_forward_matches_definition(epsilon, rng):
    values = rng.standard_normal(5)
    m = sp.Rational(float(np.mean(values)))
    expected = [
        exact(
            LAYER.definition.output.subs(x[i], x[r]),
            {x[r]: values[r], mu: float(m), q: float(np.var(values)), EPS: epsilon},
        )
        for r in range(5)
    ]
    assert_agree(layernorm.forward(values, epsilon), np.array(expected), rtol=1e-12, atol=1e-15, what="forward")


@pytest.mark.parametrize("size", [2, 3, 7])
def test_eigenvalues_match_symbolic_values(size, rng):
    values = rng.standard_normal(size)
    point = {mu: float(np.mean(values)), q: float(np.var(values)), EPS: 0.25}
    expected = sorted(
        exact(p.value, point)
        for p in eigen.eigenpairs(LAYER.definition)
        for _ in range(int(p.multiplicity.subs(n, size)))
    )
    assert_agree(layernorm.eigenvalues(values, 0.25), np.array(expected), rtol=1e-13, atol=1e-16, what="eigenvalues")


def test_agreement_helper_refuses_shape_mismatch_and_nan():
    with pytest.raises(AgreementError, match="shape"):
        assert_agree(np.ones(3), np.ones((3, 1)), rtol=1e-3, what="shapes")
    with pytest.raises(AgreementError, match="non-finite"):
        assert_agree(np.array([np.nan]), np.array([1.0]), rtol=1e-3, what="nan")
    assert assert_agree(np.ones(3), np.ones(3), rtol=0, what="equal") == 3
