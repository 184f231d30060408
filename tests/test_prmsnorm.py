"""Partial RMSNorm: the subset rule, the derivations for symbolic n and k, numeric, and the claims.

J is not symmetric, so the checks that read a norm off eigenvalues do not apply; what applies
instead is checked here: eigenpairs through J v = lambda v, the bound at each input against
numpy, and ||J||_2 growing without bound (the refutation of "1/sqrt(eps)-Lipschitz").
"""

import dataclasses
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp
from grids import slow, tiered

from derivations import LAYERS, quantities
from derivations.claims import Claim, check
from derivations.claims.confirm import confirm
from derivations.codegen import emit
from derivations.core.proof import is_zero
from derivations.derive import backward, eigen, jacobian, spectral
from derivations.derive.sums import reduce_sums
from derivations.layers.prmsnorm import FIRST_K, first_entries, m
from derivations.symbols import epsilon, i, k, k_p, kappa, n, r, r_k, s, w, x
from numeric import prmsnorm
from numeric.checks.agreement import assert_agree

LAYER = LAYERS["prmsnorm"]
PS = (0.0625, 0.3, 0.5, 1.0)


def at_p(p: Fraction) -> object:
    """The layer with its subset's default at p, under a key of its own (nothing cached is shared)."""
    subset = dataclasses.replace(FIRST_K, default=p)
    return dataclasses.replace(LAYER, key=f"prmsnorm_at_{p.numerator}_{p.denominator}", subsets=(subset,))


# --- the subset: k = ceil(p n), computed exactly -----------------------------------------


@pytest.mark.parametrize(
    ("size", "p", "chosen"),
    [
        (10, 0.3, 3),  # ceil(0.3 * 10) in floating point is 4
        (10, 0.1, 1),  # 0.1 * 10 exceeds 1 in its binary value
        (10, 0.7, 7),
        (3, 0.0625, 1),  # the paper's 6.25 %: never an empty subset
        (768, 0.0625, 48),
        (7, Fraction(2, 7), 2),
        (5, 1, 5),
        (2, 0.5, 1),
        (3, 0.34, 2),
        (100, 0.01, 1),
        (64, np.float32(0.25), 16),
    ],
)
def test_k_is_the_exact_ceiling(size, p, chosen):
    assert first_entries(size, p) == (1,) * chosen + (0,) * (size - chosen)


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, 1.5, 1.0000001, float("nan"), float("inf"), "0.5", None, True, 1j])
def test_a_bad_p_is_a_value_error_naming_p(bad):
    with pytest.raises(ValueError, match=r"^p must"):
        first_entries(4, bad)
    with pytest.raises(ValueError, match=r"^p must"):
        prmsnorm.forward(np.ones(4), 0.25, p=bad)


# --- symbolic identities, for symbolic n and k ---------------------------------------------


def test_the_indicator_is_its_own_square_inside_sums():
    reduced = reduce_sums(sp.Sum(m[k] ** 2 * x[k] ** 2, (k, 0, n - 1)))
    assert reduced == reduce_sums(sp.Sum(m[k] * x[k] ** 2, (k, 0, n - 1)))
    assert LAYER.express(reduced) == n * kappa * r_k


def test_the_jacobian_is_the_literature_form_and_not_symmetric():
    entry = LAYER.to_display(jacobian.entry(LAYER))
    stated = sp.KroneckerDelta(i, k) / s - x[i] * m[k] * x[k] / (k_p * s**3)
    assert is_zero(entry - stated)
    assert not jacobian.is_symmetric(LAYER)
    names = {quantity.name(item) for quantity, item in quantities.rows(LAYER)}
    assert "norm_bound" in names
    assert not {"spectral_norm", "spectral_bound", "jacobian_degenerate"} & names


def test_eigenpairs_for_symbolic_n_and_k():
    pairs = {p.direction.name: p for p in eigen.eigenpairs(LAYER)}
    root = sp.sqrt(r_k + epsilon)
    assert is_zero(pairs["x"].value - epsilon / root**3)
    assert is_zero(pairs["complement"].value - 1 / root)
    assert pairs["complement"].multiplicity == n - 1
    # J w for a w that is NOT orthogonal to m * x is no multiple of w: the constraint matters.
    product = reduce_sums(sp.Sum(jacobian.entry(LAYER) * w[k], (k, 0, n - 1)))
    assert (LAYER.express(product, strict=False) - w[i] / root) != 0


def test_the_bound_at_x_is_the_triangle_inequality():
    bound = spectral.triangle_bound(LAYER)
    root = sp.sqrt(r_k + epsilon)
    # 1/s + ||x|| ||m * x|| / (k s**3), with ||x|| = sqrt(n r) and ||m * x|| = sqrt(n kappa r_k).
    assert is_zero(bound - (1 / root + sp.sqrt(n * r) * sp.sqrt(n * kappa * r_k) / (n * kappa * root**3)))
    with pytest.raises(Exception, match="not symmetric"):
        spectral.cases(LAYER)


def test_the_triangle_bound_of_a_symmetric_jacobian_is_refused_as_a_derivation_error():
    """Where J is symmetric its norm is the largest |eigenvalue|, and a bound is not derived: the
    refusal is a DerivationError (what the commands report in one line), never another error."""
    from derivations import DerivationError

    with pytest.raises(DerivationError, match="J is symmetric"):
        spectral.triangle_bound(LAYERS["layernorm"])


@pytest.mark.parametrize("p", [Fraction(1, 16), Fraction(1, 2), Fraction(2, 3), Fraction(1)])
@pytest.mark.parametrize("size", tiered([2, 3, 4], fast=2))
def test_symbolic_n_and_k_agree_with_explicit_differentiation(p, size):
    layer = at_p(p)
    assert "symbolic-n entry equals Matrix.jacobian" in jacobian.explicit_agrees(layer, size)
    assert "explicit products" in backward.explicit_agrees(layer, size)


@pytest.mark.parametrize("p", [Fraction(1, 16), Fraction(1, 2)])
def test_the_hessian_product_agrees_with_the_explicit_hessian(p):
    assert "explicit Hessian" in backward.explicit_hessian_agrees(at_p(p), 3)


def test_the_patterns_are_at_the_stated_p():
    assert LAYER.explicit_statistics(3)[m[0]] == 1
    assert [LAYER.explicit_statistics(3)[m[c]] for c in range(3)] == [1, 0, 0]
    t = sp.Symbol("t", real=True)
    assert is_zero(quantities.value(LAYER, "response") - t / sp.sqrt(t**2 + epsilon))
    # At p = 1/2 the subset of (-t, 0, t) is (-t, 0): r_k = t**2 / 2.
    half = at_p(Fraction(1, 2))
    assert is_zero(half.on_pattern(half.patterns[0]) - t / sp.sqrt(t**2 / 2 + epsilon))


# --- numeric: lambdified vs symbolic, finite differences, eigenpairs, the bound -----------


def _explicit_jacobian(size: int, p: float) -> tuple[sp.Matrix, list[sp.Indexed]]:
    entries = [x[c] for c in range(size)]
    chosen = first_entries(size, p)
    count = sum(chosen)
    mean_square = sum(x[c] ** 2 for c in range(size) if chosen[c]) / count
    outputs = sp.Matrix([x[c] / sp.sqrt(mean_square + epsilon) for c in range(size)])
    return outputs.jacobian(entries), entries


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("size", tiered([2, 3, 5], fast=2))
def test_lambdified_jacobian_against_the_definition_differentiated_exactly(p, size):
    rng = np.random.default_rng(size)
    direct, entries = _explicit_jacobian(size, p)
    for eps in (1e-4, 0.25, 3.0):
        values = rng.standard_normal(size) * 2
        point = {**dict(zip(entries, values, strict=True)), epsilon: eps}
        expected = np.array([[mpmath_value(direct[a, b], point) for b in range(size)] for a in range(size)])
        assert_agree(prmsnorm.jacobian(values, eps, p=p), expected, rtol=1e-13, atol=1e-15, what="J")


def mpmath_value(expr: sp.Expr, point: dict) -> float:
    exact = {symbol: sp.Rational(float(value)) for symbol, value in point.items()}
    with mpmath.workdps(40):
        return float(expr.evalf(40, subs=exact))


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("size", [2, 3, 7, 64])
@pytest.mark.parametrize("eps", [1e-6, 0.25, 100.0])
def test_products_against_central_differences_in_random_directions(p, size, eps):
    rng = np.random.default_rng(size + int(100 * p))
    x0 = rng.standard_normal((2, size)) * 3
    scale = max(float(np.abs(x0).max()), np.sqrt(eps))
    jac = prmsnorm.jacobian(x0, eps, p=p)
    bound = prmsnorm.norm_bound(x0, eps, p=p)
    for _ in range(3):
        v, g = rng.standard_normal(x0.shape), rng.standard_normal(x0.shape)
        h = 1e-6 * scale
        differences = (prmsnorm.forward(x0 + h * v, eps, p=p) - prmsnorm.forward(x0 - h * v, eps, p=p)) / (2 * h)
        atol = 1e-7 * float(np.max(bound)) * float(np.linalg.norm(v))
        assert_agree(np.einsum("bik,bk->bi", jac, v), differences, rtol=1e-6, atol=atol, what="J v")
        products = {
            "jvp": (prmsnorm.jvp(x0, eps, v, p=p), np.einsum("bik,bk->bi", jac, v)),
            "vjp": (prmsnorm.vjp(x0, eps, g, p=p), np.einsum("bi,bik->bk", g, jac)),
        }
        for name, (computed, expected) in products.items():
            assert_agree(computed, expected, rtol=1e-12, atol=1e-14 * float(np.max(bound)), what=name)
        ahead = prmsnorm.vjp(x0 + h * v, eps, g, p=p)
        behind = prmsnorm.vjp(x0 - h * v, eps, g, p=p)
        hvp = prmsnorm.hvp(x0, eps, g, v, p=p)
        assert_agree(hvp, (ahead - behind) / (2 * h), rtol=1e-5, atol=1e-6 * float(np.abs(hvp).max()), what="hvp")


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("size", [2, 3, 7, 64])
def test_eigenpairs_and_the_bound_through_their_properties(p, size):
    rng = np.random.default_rng(size)
    x0 = rng.standard_normal(size) * 2
    eps = 0.25
    jac = prmsnorm.jacobian(x0, eps, p=p)
    along_x = float(prmsnorm.eigen_x(x0, eps, p=p))
    assert_agree(jac @ x0, along_x * x0, rtol=1e-12, atol=1e-14, what="J x")
    weighted = np.asarray(first_entries(size, p)) * x0
    free = rng.standard_normal(size)
    free -= (free @ weighted) / (weighted @ weighted) * weighted  # (m * x)^T w = 0
    assert_agree(jac @ free, float(prmsnorm.eigen_complement(x0, eps, p=p)) * free, rtol=1e-12, atol=1e-14, what="J w")
    expected = np.sort([along_x] + [float(prmsnorm.eigen_complement(x0, eps, p=p))] * (size - 1))
    assert_agree(np.sort(np.linalg.eigvals(jac).real), expected, rtol=1e-10, atol=1e-12, what="spectrum")
    norm = np.linalg.norm(jac, 2)
    assert norm <= float(prmsnorm.norm_bound(x0, eps, p=p)) * (1 + 1e-12)
    if sum(first_entries(size, p)) < size:
        # Not symmetric: the norm exceeds every |eigenvalue|.
        assert norm > max(abs(along_x), float(prmsnorm.eigen_complement(x0, eps, p=p))) * (1 + 1e-9)
    assert_agree(
        prmsnorm.second_moment(x0, eps, p=p), np.mean(prmsnorm.forward(x0, eps, p=p) ** 2), rtol=1e-13, what="second"
    )


def test_the_norm_has_no_bound_over_all_inputs():
    """n = 2, k = 1, x = (a, B): J_10 = -a B / s**3, so ||J||_2 grows with B (finite differences)."""
    eps, a = 0.25, 0.5
    s3 = (a**2 + eps) ** 1.5
    for big in (1.0, 10.0, 1e3, 1e6):
        x0 = np.array([a, big])
        h = 1e-6 * np.sqrt(eps)  # the scale along x_0, where the output is not linear
        columns = [
            (prmsnorm.forward(x0 + h * e, eps, p=0.5) - prmsnorm.forward(x0 - h * e, eps, p=0.5)) / (2 * h)
            for e in np.eye(2)
        ]
        norm = np.linalg.norm(np.stack(columns, axis=1), 2)
        assert norm >= a * big / s3 * (1 - 1e-6)
    assert norm > 1e5 / np.sqrt(eps)


def test_the_p_keyword_and_its_refusals():
    x0 = np.array([1.0, -2.0, 3.0, 0.5])
    assert_agree(prmsnorm.forward(x0, 0.25), prmsnorm.forward(x0, 0.25, p=0.0625), rtol=0, what="default p")
    assert not np.allclose(prmsnorm.forward(x0, 0.25, p=0.5), prmsnorm.forward(x0, 0.25))
    with pytest.raises(ValueError, match=r"^q is not an argument of prmsnorm"):
        prmsnorm.norm_bound(x0, 0.25, q=0.5)
    with pytest.raises(ValueError, match=r"^p is not an argument of response"):
        prmsnorm.response(1.0, 0.25, p=0.5)
    with pytest.raises(ValueError, match=r"^p must"):
        prmsnorm.vjp(x0, 0.25, x0, p=0)
    with pytest.raises(ValueError, match=r"^p must"):
        prmsnorm.jacobian(x0, 0.25, p=2)
    with pytest.raises(ValueError, match="layer prmsnorm takes p"):
        emit("prmsnorm", "numpy")


# --- claims: no wrong verdict ------------------------------------------------------------------


def test_lipschitz_in_one_over_root_epsilon_is_refuted_and_recomputed_independently():
    verdict = check(Claim("norm(J, 2) <= 1/sqrt(epsilon)", layer="prmsnorm"))
    assert verdict.verdict == "refuted"
    example = verdict.counterexample
    assert example is not None
    x0, eps = np.asarray(example["x"]), float(example["epsilon"])
    assert example["m"] == list(first_entries(x0.size, FIRST_K.default))
    # ||J||_2 from central differences of the forward map, not from the derived J.
    h = 1e-6 * max(1.0, float(np.abs(x0).max()))
    columns = [
        (prmsnorm.forward(x0 + h * e, eps) - prmsnorm.forward(x0 - h * e, eps)) / (2 * h) for e in np.eye(x0.size)
    ]
    assert np.linalg.norm(np.stack(columns, axis=1), 2) > 1 / np.sqrt(eps) * (1 + 1e-6)
    assert "confirmed numerically" in confirm(Claim("norm(J, 2) <= 1/sqrt(epsilon)", layer="prmsnorm"), example)


@pytest.mark.parametrize(
    ("text", "allowed"),
    [
        ("eigen_x == epsilon/s**3", {"proved"}),
        ("J @ x == eigen_x * x", {"proved"}),
        ("slope_at_zero == 1/sqrt(epsilon)", {"proved"}),
        ("norm(J, 2) <= norm_bound", {"proved", "supported"}),
        slow(("norm(J, 2) >= eigen_complement", {"proved", "supported"})),  # the path of the case above
        ("r_k <= n * r", {"proved", "supported"}),
        ("norm_bound >= 1/s", {"proved"}),
        ("second_moment <= 1", {"refuted"}),
        ("spectral_bound <= 1/sqrt(epsilon)", {"error"}),
        ("spectral_norm == 1/s", {"error"}),
        ("r_k == rmsnorm.r", {"error"}),  # a partial mean is no function of mean(x), mean(x**2)
        ("response == rmsnorm.response", {"refuted"}),
        # k = ceil(n/16) is 1 up to n = 16: the sample takes n = 17 too, where it is 2.
        ("kappa * n == 1", {"refuted"}),
    ],
)
def test_claims_never_get_a_wrong_verdict(text, allowed):
    verdict = check(Claim(text, layer="prmsnorm"))
    assert verdict.verdict in allowed, verdict.detail
    if verdict.verdict != "error":
        assert "p = 1/16" in verdict.quantifier
    if text == "kappa * n == 1":  # the counterexample, recomputed: kappa n = k = ceil(n/16) = 2 at n = 17
        size = len(verdict.counterexample["x"])
        assert size == 17
        assert sum(verdict.counterexample["m"]) == math.ceil(Fraction(size, 16)) == 2


@pytest.mark.parametrize("values", [[1.0, 1e200], [1e-300, 1e300], [1e-200, 3e-200, 1.0], [0.0, 5.0]])
def test_entries_far_from_the_first_k_keep_the_output_and_its_products(values):
    """The scale is set by the first k entries (and epsilon), not the largest: against mpmath."""
    x0, eps = np.array(values), 1e-5
    with mpmath.workdps(60):
        xs = [mpmath.mpf(v) for v in values]
        root = mpmath.sqrt(xs[0] ** 2 + mpmath.mpf(eps))  # k = 1 at p = 1/16 for these sizes
        y = [float(v / root) for v in xs]
        # J^T 1 = 1/s - (sum_i x_i) x_0 / s**3 at entry 0, 1/s elsewhere.
        dx = [float(1 / root - mpmath.fsum(xs) * xs[0] / root**3)] + [float(1 / root)] * (len(xs) - 1)
    assert_agree(prmsnorm.forward(x0, eps), y, rtol=1e-14, what="forward")
    assert_agree(prmsnorm.vjp(x0, eps, np.ones_like(x0)), dx, rtol=1e-13, atol=1e-300, what="vjp")


@pytest.mark.parametrize("claim", ["J == J.T", "J @ x == J.T @ x"])
def test_the_transpose_of_a_non_symmetric_jacobian_is_refuted_and_confirmed(claim):
    """J is not symmetric: a claim that it is (or acts as if it were) is refuted, and the numeric
    re-check takes .T as the transpose (a transpose that did nothing would leave it unconfirmed)."""
    verdict = check(Claim(claim, "prmsnorm"), confirm)
    assert verdict.verdict == "refuted"
    assert "confirmed numerically (numeric.prmsnorm.jacobian)" in verdict.detail
    assert "NOT" not in verdict.detail
