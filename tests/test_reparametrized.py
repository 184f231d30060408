"""Gemma's RMSNorm: rmsnorm_affine at gain 1 + w and bias 0, derived by substitution, checked apart."""

import numpy as np
import pytest
import sympy as sp

import numeric
from derivations import LAYERS, formulas
from derivations.claims import Claim, check
from derivations.symbols import beta, diag_gamma, gamma, gamma_max, gemma_max, w_gemma
from numeric.checks.agreement import assert_agree

GEMMA = LAYERS["rmsnorm_gemma"]


def test_every_formula_is_the_base_formula_at_gain_one_plus_w():
    base = {f.name: f for f in formulas(GEMMA.base.key)}
    own = {f.name: f for f in formulas(GEMMA.key)}
    # The base's parameter gradients are not Gemma's: its parameter is w.
    assert set(base) - set(own) == {"dgain", "dbias"}
    assert set(own) - set(base) == {"dweight"}  # derived for w itself
    for name, found in own.items():
        if name not in base:
            continue
        expected = base[name].expr.replace(
            lambda e: isinstance(e, sp.Indexed) and e.base in (gamma, beta),
            lambda e: 1 + w_gemma[e.indices[0]] if e.base == gamma else sp.Integer(0),
        )
        expected = expected.xreplace({gamma_max: gemma_max, diag_gamma: GEMMA.diagonal})
        assert found.expr == expected, name
        assert not found.expr.has(gamma, beta, gamma_max), name
    assert str(own["spectral_bound"].expr.rhs) == "gemma_max/sqrt(epsilon)"


@pytest.mark.parametrize("epsilon", [1e-6, 0.04, 1.0])
def test_numeric_functions_are_the_base_at_gain_one_plus_w(epsilon):
    rng = np.random.default_rng(4)
    x, dy, v = (rng.standard_normal((3, 6)) for _ in range(3))
    w = rng.normal(0, 0.3, 6)
    gemma, base = numeric.rmsnorm_gemma, numeric.rmsnorm_affine
    params = (1 + w, np.zeros(6))
    assert_agree(gemma.forward(x, epsilon, weight=w), base.forward(x, epsilon, *params), rtol=0, what="forward")
    assert_agree(gemma.jacobian(x[0], epsilon, weight=w), base.jacobian(x[0], epsilon, *params), rtol=0, what="J")
    dx, dweight = gemma.vjp(x, epsilon, dy, weight=w)
    _, dgain, _ = base.vjp(x, epsilon, dy, *params)
    assert_agree(dx, base.vjp(x, epsilon, dy, *params)[0], rtol=0, what="vjp")
    assert_agree(dweight, dgain, rtol=0, what="d/dw = d/dgain: the gain is 1 + w")
    assert_agree(gemma.jvp(x, epsilon, v, weight=w), base.jvp(x, epsilon, v, *params), rtol=0, what="jvp")
    assert_agree(gemma.hvp(x, epsilon, dy, v, weight=w), base.hvp(x, epsilon, dy, v, *params), rtol=0, what="hvp")
    assert gemma.bound(epsilon, weight=w) == pytest.approx(np.abs(1 + w).max() / np.sqrt(epsilon), rel=1e-15)
    # Independently: J v against central differences of forward.
    direction = rng.standard_normal(6)
    h = 1e-6
    ahead = gemma.forward(x[0] + h * direction, epsilon, weight=w)
    behind = gemma.forward(x[0] - h * direction, epsilon, weight=w)
    jac = gemma.jacobian(x[0], epsilon, weight=w)
    assert_agree(jac @ direction, (ahead - behind) / (2 * h), rtol=1e-6, atol=1e-6 / np.sqrt(epsilon), what="J v")


def test_zero_weight_is_plain_rmsnorm():
    x = np.random.default_rng(2).standard_normal((2, 5))
    assert_agree(
        numeric.rmsnorm_gemma.forward(x, 1e-5, weight=np.zeros(5)),
        numeric.rmsnorm.forward(x, 1e-5),
        rtol=0,
        what="w = 0",
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: numeric.rmsnorm_gemma.forward(np.ones((2, 4)), 1e-5), "weight is required"),
        (lambda: numeric.rmsnorm_gemma.forward(np.ones((2, 4)), 1e-5, gain=np.ones(4)), "gain is not a parameter"),
        (lambda: numeric.rmsnorm_gemma.forward(np.ones((2, 4)), 1e-5, weight=np.ones(3)), "weight"),
        (lambda: numeric.rmsnorm_gemma.forward(np.ones((2, 4)), 0.0, weight=np.ones(4)), "epsilon"),
    ],
)
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_claims_about_gemma_point_to_the_base_layer():
    verdict = check(Claim("slope_at_zero == 1/sqrt(epsilon)", "rmsnorm_gemma"))
    assert verdict.verdict == "error"
    assert "rmsnorm_affine with gamma = " in verdict.detail
