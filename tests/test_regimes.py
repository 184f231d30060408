"""Layers with regimes (a clamp max(||x||, epsilon)): the kink, both sides of it, and the numeric functions."""

import dataclasses

import numpy as np
import pytest
import sympy as sp

import numeric
from derivations import LAYERS, DerivationError, quantities
from derivations.core.layer import Pattern
from derivations.derive import response
from derivations.derive.regimes import jump, kink
from derivations.symbols import epsilon, g_s, i, k, norm_x, t, x
from numeric import l2norm_clamped
from numeric.checks import verify
from numeric.checks.agreement import assert_agree

LAYER = LAYERS["l2norm_clamped"]


def plain(values: np.ndarray, eps: float) -> np.ndarray:
    """torch.nn.functional.normalize written out: x / max(||x||_2, eps), an independent reference."""
    return values / np.maximum(np.linalg.norm(values, axis=-1, keepdims=True), eps)


def test_the_regimes_come_from_the_definition():
    clamped, unclamped = LAYER.regimes
    assert clamped.condition == sp.StrictLessThan(norm_x, epsilon)
    assert unclamped.condition == sp.StrictGreaterThan(norm_x, epsilon)
    assert sp.simplify(clamped.layer.output - LAYER.definition.xreplace({sp.Max(norm_x, epsilon): epsilon})) == 0
    assert LAYER.boundary == sp.Eq(norm_x, epsilon)


@pytest.mark.parametrize("pattern", range(2))
def test_kink_against_the_explicit_response_on_both_sides(pattern):
    """The response written out with Max, differentiated on either side of the derived t_k."""
    on = LAYER.patterns[pattern]
    t_k, below, above = kink(LAYER, on)
    values = on.values
    norm = sp.sqrt(sum(v**2 for v in values))
    u = values[on.coordinate] / sp.Max(norm, epsilon)
    for side, expected in ((sp.Rational(1, 2), below), (2, above)):
        at = {t: side * t_k}
        slope = sp.diff(u.subs(sp.Max(norm, epsilon), norm if side > 1 else epsilon), t).subs(at)
        assert sp.simplify(slope - expected) == 0
    # The derived t_k is where the norm meets epsilon.
    assert sp.simplify(norm.subs(t, t_k) - epsilon) == 0
    assert sp.simplify(below - above) != 0


def test_the_jacobian_jumps_across_the_boundary_at_explicit_n():
    """J from Matrix.jacobian of each side's output at n = 3, subtracted on ||x|| = epsilon."""
    xs = sp.Matrix([x[m] for m in range(3)])
    norm = sp.sqrt(sum(e**2 for e in xs))
    outside, inside = (xs / norm).jacobian(list(xs)), (xs / epsilon).jacobian(list(xs))
    difference = (outside - inside).subs(epsilon, norm)
    assert sp.simplify(difference + xs * xs.T / norm**3) == sp.zeros(3, 3)
    derived = sp.Matrix(3, 3, lambda a, b: jump(LAYER).xreplace({i: a, k: b}).subs(epsilon, norm))
    assert sp.simplify(derived - difference) == sp.zeros(3, 3)
    assert "jacobian_jump" in quantities.names(LAYER)


def test_slope_at_zero_lies_inside_the_clamp():
    assert response.slope_at_zero(LAYER) == (1 / epsilon, 1 / epsilon)


@pytest.mark.parametrize(("name", "wrong"), [("kink", epsilon), ("slope_above_kink", 1 / epsilon)])
def test_a_wrong_stated_kink_is_refused(name, wrong):
    broken = dataclasses.replace(LAYER, stated={**LAYER.stated, name: wrong})
    with pytest.raises(DerivationError, match=name):
        quantities.formulas(broken)


@pytest.mark.parametrize("size", [2, 3, 7, 64])
@pytest.mark.parametrize("eps", [1e-8, 1e-5, 0.25])
@pytest.mark.parametrize("side", [0.5, 2.0])
def test_forward_and_jacobian_on_both_sides_of_the_kink(size, eps, side, rng):
    direction = rng.standard_normal(size)
    values = direction * (side * eps / np.linalg.norm(direction))
    assert_agree(l2norm_clamped.forward(values, eps), plain(values, eps), rtol=4e-16, atol=4e-16, what="forward")
    jac = l2norm_clamped.jacobian(values, eps)
    h = 1e-7 * eps / np.sqrt(size)
    for _ in range(2):
        v = rng.standard_normal(size)
        differences = (plain(values + h * v, eps) - plain(values - h * v, eps)) / (2 * h)
        assert_agree(jac @ v, differences, rtol=1e-6, atol=1e-6 * np.linalg.norm(v) / eps, what="J v")
    expected = 1 / eps if side < 1 else 1 / np.linalg.norm(values)
    assert_agree(l2norm_clamped.spectral_norm(values, eps), expected, rtol=1e-14, what="spectral norm")


@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1.0, 1e150, 1e300])
def test_forward_is_accurate_across_the_range(scale, rng):
    values = rng.standard_normal((5, 4)) * scale
    for eps in (scale * 1e-3, scale * 1e3):
        assert_agree(
            l2norm_clamped.forward(values, eps),
            plain(values / scale, eps / scale),
            rtol=1e-15,
            atol=1e-15,
            what="forward",
        )


def test_float32_in_float32_out():
    values = np.array([[3.0, 4.0], [0.3, 0.4]], dtype=np.float32)
    out = l2norm_clamped.forward(values, np.float32(1.0))
    assert out.dtype == np.float32
    assert_agree(out, [[0.6, 0.8], [0.3, 0.4]], rtol=1e-7, what="float32")


def test_on_the_boundary_the_derivatives_do_not_exist():
    on = np.array([0.5, 0.0, 0.0, 0.0])  # ||x|| = 0.5 exactly, and 4 entries keep it exact
    assert l2norm_clamped.forward(on, 0.5)[0] == 1.0
    for function in (l2norm_clamped.jacobian, l2norm_clamped.spectral_norm, l2norm_clamped.eigenvalues):
        with pytest.raises(ValueError, match=r"x has a row on \|\|x\|\|_2 = epsilon"):
            function(on, 0.5)
    with pytest.raises(ValueError, match=r"x has a row on"):
        l2norm_clamped.vjp(on, 0.5, np.ones(4))
    # The side within rounding of the sphere is the rounded norm's (docs/conventions.md): (1, 0) at 1 is
    # computed as 1 + 2**-52, above; (1, 1) at fl(sqrt(2)), off the sphere, is on it as rounded.
    assert_agree(l2norm_clamped.jacobian(np.array([1.0, 0.0]), 1.0), [[0, 0], [0, 1]], rtol=1e-15, what="J above")
    for layer, named in ((l2norm_clamped, {}), (numeric.scalenorm, {"gain": 2.0})):
        with pytest.raises(ValueError, match=r"x has a row on \|\|x\|\|_2 = epsilon \(as rounded\), the kink,"):
            layer.jacobian(np.array([1.0, 1.0]), float(np.sqrt(2.0)), **named)
    t_k = float(l2norm_clamped.kink(0.25))
    assert t_k == pytest.approx(0.25 / np.sqrt(2), rel=1e-15)
    assert float(l2norm_clamped.slope(t_k * 0.999, 0.25)) == 4.0
    assert float(l2norm_clamped.slope(t_k * 1.001, 0.25)) == 0.0
    assert float(l2norm_clamped.slope_below_kink(0.25)) == 4.0
    assert float(l2norm_clamped.slope_above_kink(0.25)) == 0.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: l2norm_clamped.forward(np.array([1.0, np.nan]), 0.1), "x must be finite"),
        (lambda: l2norm_clamped.forward(np.array([1.0, 2.0]), -0.1), "epsilon must be positive"),
        (lambda: l2norm_clamped.jacobian(np.array([1.0]), 0.1), "x must have shape"),
        (lambda: l2norm_clamped.vjp(np.array([1.0, 2.0]), 0.1, np.ones(3)), "dy must have shape"),
    ],
)
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("side", [0.5, 2.0])
def test_backward_on_both_sides_against_the_jacobian(side, rng):
    direction = rng.standard_normal((3, 5))
    values = direction * (side * 0.25 / np.linalg.norm(direction, axis=-1, keepdims=True))
    dy, v = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    jac = l2norm_clamped.jacobian(values, 0.25)
    tol = {"rtol": 1e-13, "atol": 1e-13}
    assert_agree(l2norm_clamped.vjp(values, 0.25, dy), np.einsum("bik,bi->bk", jac, dy), **tol, what="vjp")
    assert_agree(l2norm_clamped.jvp(values, 0.25, v), np.einsum("bik,bk->bi", jac, v), **tol, what="jvp")
    h = 1e-6
    ahead = l2norm_clamped.vjp(values + h * v, 0.25, dy)
    behind = l2norm_clamped.vjp(values - h * v, 0.25, dy)
    assert_agree(l2norm_clamped.hvp(values, 0.25, dy, v), (ahead - behind) / (2 * h), rtol=1e-6, atol=1e-5, what="hvp")


# --- ScaleNorm: one scalar gain over the clamp --------------------------------------------

GAINS = (-2.5, 0.3, 8.0)


class AtGain:
    """numeric.scalenorm with its gain bound: the (x, epsilon) interface the generic checks take."""

    def __init__(self, gain: float) -> None:
        self.gain, self.layer = gain, numeric.scalenorm.LAYER
        self.definition = self.layer.definition

    def forward(self, values, eps):
        return numeric.scalenorm.forward(values, eps, gain=self.gain)

    def jacobian(self, values, eps):
        return numeric.scalenorm.jacobian(values, eps, gain=self.gain)

    def eigenvalues(self, values, eps):
        return numeric.scalenorm.eigenvalues(values, eps, gain=self.gain)

    def spectral_norm(self, values, eps):
        return numeric.scalenorm.spectral_norm(values, eps, gain=self.gain)

    def bound(self, eps):
        return numeric.scalenorm.bound(eps, gain=self.gain)

    def epsilon_root(self, eps):
        return self.layer.epsilon_root(eps)

    def statistics(self, values):
        return {**self.layer.base.statistics(values), g_s: self.gain}

    def direction(self, direction, values):
        return self.layer.base.direction(direction, values)


def scale_norm(values: np.ndarray, eps: float, gain: float) -> np.ndarray:
    """ScaleNorm as its authors' code writes it: x * (g / ||x||.clamp(min=eps)), in NumPy."""
    return values * (gain / np.maximum(np.linalg.norm(values, axis=-1, keepdims=True), eps))


@pytest.mark.parametrize("gain", GAINS)
@pytest.mark.parametrize("size", [2, 3, 7, 64])
@pytest.mark.parametrize("side", [0.5, 2.0])
def test_scalenorm_eigenstructure_and_differences_on_both_sides(gain, size, side, rng):
    layer = AtGain(gain)
    direction = rng.standard_normal(size)
    values = direction * (side * 0.25 / np.linalg.norm(direction))
    assert_agree(layer.forward(values, 0.25), scale_norm(values, 0.25, gain), rtol=1e-15, atol=1e-15, what="forward")
    explicit = 1  # the direction x
    # eigvalsh, the norm, J v along x and along the complement, and the two multiplicities
    expected = size + 1 + size * (explicit + (size > explicit)) + 2
    assert verify.eigenstructure(layer, values, 0.25, rng) == expected
    assert verify.jacobian_against_differences(layer, values, 0.25, rng) == 3 * size
    norm = abs(gain) / (0.25 if side < 1 else np.linalg.norm(values))
    assert_agree(layer.spectral_norm(values, 0.25), norm, rtol=1e-14, what="|g| / max(||x||, eps)")


@pytest.mark.parametrize("gain", GAINS)
def test_scalenorm_backward_against_its_jacobian_and_differences(gain, rng):
    values = rng.standard_normal((4, 6)) * np.array([[0.01], [0.02], [3.0], [5.0]])  # both regimes at eps = 0.1
    dy, v = rng.standard_normal((2, 4, 6))
    jac = numeric.scalenorm.jacobian(values, 0.1, gain=gain)
    tol = {"rtol": 1e-13, "atol": 1e-13 * abs(gain) / 0.1}
    assert_agree(numeric.scalenorm.vjp(values, 0.1, dy, gain=gain), np.einsum("bik,bi->bk", jac, dy), **tol, what="vjp")
    assert_agree(numeric.scalenorm.jvp(values, 0.1, v, gain), np.einsum("bik,bk->bi", jac, v), **tol, what="jvp")
    h = 1e-7
    ahead = numeric.scalenorm.vjp(values + h * v, 0.1, dy, gain=gain)
    behind = numeric.scalenorm.vjp(values - h * v, 0.1, dy, gain=gain)
    hvp = numeric.scalenorm.hvp(values, 0.1, dy, v, gain=gain)
    assert_agree(hvp, (ahead - behind) / (2 * h), rtol=1e-5, atol=1e-6 * np.abs(hvp).max(), what="hvp")


def test_scalenorm_gain_dependent_functions_take_the_gain():
    assert float(numeric.scalenorm.bound(0.25, gain=-3.0)) == 12.0
    assert float(numeric.scalenorm.slope_at_zero(0.25, gain=-3.0)) == -12.0
    assert float(numeric.scalenorm.kink(0.25)) == float(l2norm_clamped.kink(0.25))
    second = numeric.scalenorm.second_moment(np.array([3.0, 4.0]), 1.0, gain=2.0)
    assert_agree(second, 4.0 / 2, rtol=1e-15, what="g**2 / n outside the clamp")
    out = numeric.scalenorm.forward(np.array([3.0, 4.0], dtype=np.float32), np.float32(1.0), gain=np.float32(2))
    assert out.dtype == np.float32


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: numeric.scalenorm.forward(np.ones(3), 0.1), "gain is required by scalenorm"),
        (lambda: numeric.scalenorm.forward(np.ones(3), 0.1, gain=np.ones(3)), "gain must be one real number"),
        (lambda: numeric.scalenorm.jacobian(np.ones(3), 0.1, gain=np.inf), "gain must be finite"),
        (lambda: numeric.scalenorm.forward(np.ones(3), 0.1, 2.0, gain=2.0), "given both by position and by name"),
        (lambda: numeric.scalenorm.forward(np.ones(3), 0.1, bias=1.0), "takes one parameter, gain"),
    ],
)
def test_scalenorm_bad_gain_names_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_layer_that_is_no_multiple_of_its_base_is_refused():
    """The factor numeric applies must be a function of the gain alone: x-dependence is caught."""
    from derivations.derive.regimes import factor

    layer = LAYERS["scalenorm"]
    with pytest.raises(DerivationError, match="not l2norm_clamped's times a function of the gain"):
        factor(layer, g_s * norm_x, epsilon, "made up")
    assert factor(layer, g_s * norm_x, norm_x, "proportional") == g_s


@pytest.mark.parametrize(
    ("text", "layer", "verdict", "says"),
    [
        ("kink == epsilon/sqrt(2)", "l2norm_clamped", "proved", "at x = (-t, 0, t)"),
        ("slope_below_kink == slope_at_zero", "l2norm_clamped", "proved", "for all t in R"),
        ("slope_at_zero == 1/sqrt(epsilon)", "l2norm_clamped", "refuted", "confirmed numerically"),
        ("spectral_bound == abs(g_s)/epsilon", "scalenorm", "proved", "g_s in R"),
        ("slope_at_zero == 1/epsilon", "scalenorm", "refuted", "confirmed numerically (numeric.scalenorm"),
    ],
)
def test_claims_about_the_clamped_layers(text, layer, verdict, says):
    from derivations.claims import Claim, check
    from derivations.claims.confirm import confirm

    found = check(Claim(text, layer), confirm)
    assert found.verdict == verdict
    assert says in f"{found.quantifier} {found.detail}"


def test_a_case_missing_from_a_stated_form_or_a_pattern_is_a_derivation_error():
    """Nothing silently picks a case: a form stated for one regime of two, or a point where no
    regime's condition holds, or a pattern that never meets the boundary, is refused by name (not an
    IndexError or ValueError from an empty match)."""
    from derivations import DerivationError
    from derivations.derive import regimes

    layer = LAYERS["l2norm_clamped"]
    first = layer.regimes[0]
    with pytest.raises(DerivationError, match="no stated case"):
        regimes._by_regime(layer, sp.Piecewise((sp.Integer(1), first.condition)), "slope")
    with pytest.raises(DerivationError, match="no single regime holds"):
        regimes._regime_at(layer, layer.patterns[0], epsilon / sp.sqrt(2))  # on the kink: neither holds
    # A pattern that never meets the boundary (a fixed input, free of t) has no kink to take.
    fixed = Pattern((sp.Integer(1), sp.Integer(1)), 1)
    with pytest.raises(DerivationError, match=r"meets .* at \|t\| in \[\], not once"):
        regimes.kink(layer, fixed)


@pytest.mark.parametrize("key", ["l2norm_clamped", "scalenorm"])
def test_inequalities_about_a_clamped_layer_are_decided(key):
    """A clamp's regimes are conditions on the statistics, not on n: a proof goes branch by branch
    (it was an error, sympy having no set for a condition in several symbols)."""
    from derivations.claims import Claim, check

    proved = check(Claim("second_moment >= 0", layer=key))
    assert proved.verdict == "proved", proved.detail
    assert "where epsilon >= " in proved.detail
    assert "otherwise: " in proved.detail
    bound = "abs(g_s)/epsilon" if key == "scalenorm" else "1/epsilon"
    assert check(Claim(f"norm(J, 2) <= {bound}", layer=key)).verdict in {"proved", "supported"}
    refuted = check(
        Claim("norm(J, 2) <= 1/sqrt(epsilon)", layer=key, assumptions=("g_s == 1",) if key == "scalenorm" else ())
    )
    assert refuted.verdict == "refuted", refuted.detail
    # Recomputed: below the floor J = I/epsilon (times g), whose norm 1/epsilon exceeds 1/sqrt(epsilon) for epsilon < 1.
    x, eps = np.array(refuted.counterexample["x"], dtype=float), float(refuted.counterexample["epsilon"])
    named = {"gain": 1.0} if key == "scalenorm" else {}
    assert np.linalg.norm(x) <= eps
    assert np.linalg.norm(getattr(numeric, key).jacobian(x, eps, **named), 2) > 1 / np.sqrt(eps)


def test_a_sum_over_a_layer_with_regimes_is_taken_in_each_regime():
    """sum_k of a J entry by cases: each regime's delta is sifted (it was left inside the Piecewise, and
    sum(J @ ones) came to n**2/epsilon below the floor instead of n/epsilon)."""
    from derivations.claims import Claim, check
    from derivations.derive.sums import over_entries, reduce_sums
    from derivations.symbols import epsilon, i, k, n

    below = sp.Symbol("below")
    entry = sp.Piecewise((sp.KroneckerDelta(i, k) / epsilon, below > 0), (sp.Integer(1), True))
    assert reduce_sums(over_entries(entry, k)) == sp.Piecewise((1 / epsilon, below > 0), (n, True))
    false = check(Claim("sum(J @ ones) == n*(n-1)*eigen_complement + n*eigen_x", layer="l2norm_clamped"))
    assert false.verdict == "refuted", false.detail
    x, eps = np.array(false.counterexample["x"], dtype=float), float(false.counterexample["epsilon"])
    size = x.size
    lhs = l2norm_clamped.jacobian(x, eps).sum()
    rhs = size * (size - 1) * l2norm_clamped.eigen_complement(x, eps) + size * l2norm_clamped.eigen_x(x, eps)
    assert abs(lhs - rhs) > 1e-6
    assert check(Claim("dot(g, J @ x) == dot(x, J @ g)", layer="l2norm_clamped")).verdict == "proved"


def test_the_slope_across_scales_where_epsilon_is_below_the_rescaled_floats():
    """At t = 1e200 and epsilon = 1e-120, epsilon over the scale underflows; the value at that
    scale is compared with epsilon dropped, which must be an array operation, not 1/0.0.  Past
    the kink y = x/||x|| does not change with t (slope 0); inside it y = x/epsilon (slope 1/epsilon)."""
    slopes = l2norm_clamped.slope(np.array([1e200, 1e-200, 0.0, 1e-121]), 1e-120)
    assert_agree(slopes, np.array([0.0, 1e120, 1e120, 1e120]), rtol=4e-16, atol=0.0, what="slope")


# x[i] ||x|| / max(||x||, epsilon): below the kink ||x|| x / epsilon, whose slope along (-t, 0, t)
# grows with t (2 at the kink), above it x itself (slope 1).
GROWING = """\
key = "clamped_growing"
title = "x times its norm over the norm floored at epsilon"
output = "x[i] * norm_x / max(norm_x, epsilon)"
[statistics]
r = "mean(x[j]**2)"
norm_x = "sqrt(n * r)"
"""


@pytest.mark.parametrize(
    ("key", "name", "value"),
    [
        ("l2norm_clamped", "slope_below_kink", 4),  # 1/epsilon at epsilon = 1/4
        ("l2norm_clamped", "slope_above_kink", 0),
        ("clamped_growing", "slope_below_kink", 2),
        ("clamped_growing", "slope_above_kink", 1),
    ],
)
def test_the_audit_takes_each_one_sided_slope_at_the_kink_from_its_own_side(key, name, value):
    """The audit steps out from the bisection's bracket of the kink, never into the ball around it
    (where no case holds) and never far from it: the slope below the kink grows with t for
    ``clamped_growing``, so a point far inside gives another value.  A false claim about either
    slope is refuted with the audit's confirmation, not withdrawn as undecided."""
    from derivations import catalog, definition
    from derivations.claims import Claim, audit, check
    from derivations.claims.audit.numbers import ball

    catalog.register(definition.loads(GROWING).layer)
    claimed = audit.Claimed(f"{name} == 0", key, (), ())
    point = audit.Point(n=3, epsilon=sp.Rational(1, 4))
    with audit.precision():
        found = ball(audit.evaluate.Evaluator(key, point, claimed.pattern).value(claimed.tree.left))
    assert value in found
    assert found.rad() < 1e-20
    wrong = check(Claim(f"{name} == {value + 1}", key))
    assert wrong.verdict == "refuted", wrong.detail
    assert "the independent audit confirms it" in wrong.detail


@pytest.mark.parametrize("eps", [sp.Rational(1, 4), sp.Integer(4), sp.Integer(2) ** 40])
def test_the_audit_finds_the_kink_beyond_t_1_by_doubling_then_bisecting(eps):
    """The kink of l2norm_clamped along (-t, 0, t) is at t = epsilon/sqrt(2): below 1, or far
    beyond it (the search doubles t until the case switches), enclosed tightly either way."""
    from derivations.claims import audit
    from derivations.claims.audit.numbers import ball

    claimed = audit.Claimed("kink == 0", "l2norm_clamped", (), ())
    point = audit.Point(n=3, epsilon=eps)
    with audit.precision():
        found = ball(audit.evaluate.Evaluator("l2norm_clamped", point, claimed.pattern).value(claimed.tree.left))
        exact = ball(audit.evaluate.number(eps)) / ball(2).sqrt()
        assert (found - exact).rad() < exact * ball(2) ** -150
        assert 0 in found - exact


@pytest.mark.parametrize("name", ["forward", "jacobian", "jacobian_from_entry", "eigenvalues"])
def test_each_function_of_a_layer_with_a_scalar_gain_takes_the_gain(name):
    """ScaleNorm's output, J (from the eigenstructure or from its entry) and eigenvalues are its
    base's times the scalar gain g_s: doubling g_s doubles each."""
    layer = numeric.facade("scalenorm")
    x = np.array([0.3, -1.2, 2.0])
    one, two = (np.asarray(getattr(layer, name)(x, 0.25, gain=g)) for g in (1.0, 2.0))
    np.testing.assert_allclose(two, 2 * one, rtol=1e-15)
    assert np.abs(one).max() > 0.1


@pytest.mark.parametrize("key", ["l2norm_clamped", "scalenorm"])
def test_the_spectral_bound_says_how_it_holds_in_every_regime(key):
    """A clamp's bound on ||J||_2 is proved regime by regime, and its record says so for each,
    by name, with the proof's own words: a regime left out would be a bound asserted there."""
    from derivations import formula

    how = formula("spectral_bound", key).how
    for regime in LAYERS[key].regimes:
        assert f"{regime.name}: " in how, (regime.name, how)
    assert how.count("nonnegative under the assumptions") >= len(LAYERS[key].regimes)
