"""Dynamic Tanh, gamma * tanh(alpha x) + beta: no statistics and no epsilon, alpha in epsilon's place.

The shared grids (tests/grids.py) are epsilon grids; this file runs the same
tiers for the one layer without epsilon: symbolic identities, lambdified
against exactly evaluated SymPy, central differences in random directions,
the eigenstructure through properties, mpmath through `numeric.checks.accuracy`,
and what claims about it say.
"""

import dataclasses

import numpy as np
import pytest
import sympy as sp
from grids import tiered

import numeric
from derivations import LAYERS, formula, formulas, quantities
from derivations.claims import Claim, check
from derivations.claims.confirm import confirm
from derivations.codegen import emit
from derivations.core.proof import DerivationError, is_zero
from derivations.derive import backward, jacobian, response, spectral
from derivations.derive.elementwise import Largest, diagonal, elementwise_affine
from derivations.layers.dyt import BASE
from derivations.symbols import alpha, beta, epsilon, g, gamma, gamma_max, i, k, t, v, x
from numeric.checks import accuracy, verify
from numeric.checks.agreement import assert_agree, exact

LAYER = LAYERS["dyt"]
DYT = numeric.dyt.LAYER
# The paper's initial 0.5, small and large, and negative (alpha is a learnable real).
ALPHAS = (-1.5, 0.05, 0.5, 2.0, 40.0)
SIZES = (2, 3, 7, 64)


def _sech2(at):
    return sp.sech(alpha * at) ** 2


# --- symbolic identities ---------------------------------------------------------


def test_every_stated_form_is_proved_and_printed():
    printed = {f.name: f for f in formulas("dyt")}
    assert set(LAYER.stated) <= set(printed)
    for name in LAYER.stated:
        assert printed[name].proof, f"dyt.{name} is stated but records no proof"


def test_the_jacobian_is_diagonal_with_sech_squared_on_it():
    assert is_zero(jacobian.entry(LAYER) - gamma[i] * alpha * _sech2(x[i]) * sp.KroneckerDelta(i, k))
    assert is_zero(diagonal(LAYER) - gamma[k] * alpha * _sech2(x[k]))
    assert jacobian.is_symmetric(LAYER)
    assert "J = diag(gain) J_dyt_base" in jacobian.proof(LAYER, "jacobian")


def test_sech_squared_is_the_derivative_of_tanh():
    assert sp.simplify(sp.diff(sp.tanh(alpha * t), t) - alpha * _sech2(t)) == 0


@pytest.mark.parametrize("size", [2, 3, 4])
def test_symbolic_n_forms_equal_the_explicit_matrices(size):
    assert "equals Matrix.jacobian" in jacobian.explicit_agrees(LAYER, size)
    assert "equal the explicit products" in backward.explicit_agrees(LAYER, size)
    assert "explicit Hessian" in backward.explicit_hessian_agrees(LAYER, size)


def test_results_on_the_pattern_and_at_zero():
    assert is_zero(response.response(LAYER) - (gamma[2] * sp.tanh(alpha * t) + beta[2]))
    assert formula("dyt.slope_at_zero").expr.rhs == alpha * gamma[2]  # whatever the input's spread
    assert is_zero(response.at_constant(LAYER) - (gamma[i] * sp.tanh(alpha * t) + beta[i]))


@pytest.mark.parametrize("value", [sp.Integer(-3), sp.Integer(0)])
def test_the_asymptote_holds_for_either_sign_of_alpha(value):
    upper, lower = response.asymptote(LAYER)
    at = gamma[2] * sp.tanh(value * t) + beta[2]
    assert sp.limit(at, t, sp.oo) == upper.subs(alpha, value)
    assert sp.limit(at, t, -sp.oo) == lower.subs(alpha, value)


@pytest.mark.parametrize("sign", [1, -1])
def test_a_limit_by_sign_that_misses_the_value_at_zero_is_refused(sign):
    """-tanh(alpha t)**2 tends to -1 for either sign of alpha but to 0 at alpha = 0 (and +tanh**2 to +1
    and 0): no formula in sign(alpha) holds at all three, so none is returned."""
    from derivations.derive.elementwise import _at_infinity_by_sign

    assert _at_infinity_by_sign(sign * sp.tanh(alpha * t) ** 2, 1) is None
    assert _at_infinity_by_sign(sp.tanh(alpha * t), 1) == sp.sign(alpha)  # where one does, it is returned


def test_eigenpair_norm_and_bound():
    (pair,) = quantities.names(LAYER)["eigen_coordinate"][0].items(LAYER)
    assert pair.name == "coordinate"
    assert is_zero(quantities.value(LAYER, "eigen_coordinate") - gamma[k] * alpha * _sech2(x[k]))
    norm = quantities.value(LAYER, "spectral_norm")
    assert norm == sp.Abs(alpha) * Largest(sp.Abs(gamma[k]) * _sech2(x[k]))
    assert spectral.bound_value(LAYER) == sp.Abs(alpha) * gamma_max
    assert spectral.bound_value(BASE) == sp.Abs(alpha)


def test_no_formula_assumes_or_holds_epsilon():
    for f in formulas("dyt"):
        assert not f.expr.has(epsilon), f.qualified
        assert not any("epsilon" in a for a in f.assumptions), f.qualified
    assert "alpha by m**-1" in formula("dyt.homogeneity").statement
    # Built now, not read from the derivation cache: a scale that is not epsilon is assumed real.
    from derivations.derive import scaling

    built = scaling.homogeneity_formula(LAYER, quantities.values(LAYER), "dyt.homogeneity")
    assert built.assumptions == ("m > 0", "alpha real", "n >= 2")
    assert built.statement == formula("dyt.homogeneity").statement
    assert "numeric evaluates" not in built.statement


@pytest.mark.parametrize(
    ("name", "wrong"),
    [
        ("slope", gamma[2] * alpha * sp.sech(alpha * t)),  # the square dropped
        ("vjp", alpha * _sech2(x[k]) * g[k]),  # the gain forgotten
        ("hvp", 2 * alpha**2 * gamma[k] * sp.tanh(alpha * x[k]) * _sech2(x[k]) * g[k] * v[k]),  # the sign flipped
        ("spectral_bound", sp.Abs(alpha)),  # the gain forgotten
    ],
)
def test_a_wrong_stated_form_is_refused(name, wrong):
    layer = elementwise_affine(BASE, key=f"dyt_wrong_{name}", title="wrong", stated={name: wrong})
    row = next(q for q in quantities.QUANTITIES if q.stem == name)
    with pytest.raises(DerivationError):
        row.formula(layer, layer.patterns[0], name)


def test_a_jacobian_term_that_is_not_a_multiple_of_the_identity_is_refused():
    # Before elementwise layers, delta_ik f(x_i) would have been printed as f I.
    from derivations.core.layer import Layer

    plain = Layer(
        key="plain_tanh",
        title="tanh without the elementwise registrations",
        statistics=(),
        output=sp.tanh(alpha * x[i]),
        patterns=BASE.patterns,
        directions=(),
        display=(),
        spread=BASE.spread,
    )
    with pytest.raises(DerivationError, match="not a multiple of I"):
        jacobian.matrix_form(plain)


@pytest.mark.parametrize("off", [x[i] * x[k], sp.Integer(1), sp.KroneckerDelta(i, k) * x[k] + x[i]])
def test_an_elementwise_jacobian_with_a_term_off_the_diagonal_is_refused(off):
    """J_ik = J_kk delta_ik is proved, not assumed: the derived entry passes, with its diagonal;
    a term without delta_ik (an output depending on another entry's input) is refused."""
    layer = LAYERS["dyt"]
    entry = jacobian.entry(layer)
    assert is_zero(diagonal(layer, entry * sp.KroneckerDelta(i, k)) - diagonal(layer))
    with pytest.raises(DerivationError, match="not a diagonal entry times delta_ik"):
        diagonal(layer, entry + off)


# --- lambdified against exactly evaluated SymPy -----------------------------------


def test_functions_of_t_against_exact_sympy():
    ts = np.array([-30.0, -3.0, -0.8, 0.0, 0.2, 0.7, 3.0, 30.0])
    for name, _ in verify.functions_of_t(DYT):
        assert verify.scalar_against_symbolic(DYT, name, ts, np.array(ALPHAS)) == ts.size * len(ALPHAS)


def _exact_entries(expr, values, size):
    return np.array([exact(expr.xreplace({k: m, i: m}), values) for m in range(size)])


@pytest.mark.parametrize("size", tiered([2, 3, 7], fast=2))
@pytest.mark.parametrize("a", ALPHAS)
def test_every_function_of_x_against_exact_sympy(size, a, rng):
    xs = rng.standard_normal(size) * rng.uniform(0.1, 5)
    gain, bias, dy, w = (rng.standard_normal(size) for _ in range(4))
    values = {alpha: a, **{x[m]: xs[m] for m in range(size)}, **{gamma[m]: gain[m] for m in range(size)}}
    values |= {beta[m]: bias[m] for m in range(size)} | {g[m]: dy[m] for m in range(size)}
    values |= {v[m]: w[m] for m in range(size)}
    expected = {name: _exact_entries(quantities.value(LAYER, name), values, size) for name in ("vjp", "jvp", "hvp")}
    forward = _exact_entries(LAYER.output, values, size)
    diag = _exact_entries(diagonal(LAYER), values, size)
    tol = {"rtol": 1e-13, "atol": 1e-300}
    assert_agree(DYT.forward(xs, a, gain, bias), forward, **tol, what="forward")
    assert_agree(DYT.jacobian(xs, a, gain, bias), np.diag(diag), **tol, what="jacobian")
    assert_agree(DYT.eigen_coordinate(xs, a, gain, bias), diag, **tol, what="eigen_coordinate")
    assert_agree(DYT.eigenvalues(xs, a, gain, bias), np.sort(diag), **tol, what="eigenvalues")
    assert_agree(DYT.spectral_norm(xs, a, gain, bias), np.max(np.abs(diag)), **tol, what="spectral_norm")
    dx, dgain, dbias = DYT.vjp(xs, a, dy, gain, bias)
    assert_agree(dx, expected["vjp"], **tol, what="vjp")
    assert_agree(dgain, dy * np.tanh(a * xs), rtol=1e-13, what="dgain")
    assert_agree(dbias, dy, rtol=0, what="dbias")
    assert_agree(DYT.jvp(xs, a, w, gain, bias), expected["jvp"], **tol, what="jvp")
    assert_agree(DYT.hvp(xs, a, dy, w, gain, bias), expected["hvp"], **tol, what="hvp")


# --- central differences in random directions ----------------------------------------


@pytest.mark.parametrize("a", ALPHAS)
def test_slope_matches_differences_of_the_response(a):
    ts = np.linspace(-3, 3, 61) / abs(a)
    assert verify.derivative_against_differences(DYT, "slope", "response", ts, a) == ts.size


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("a", ALPHAS)
def test_jacobian_matches_differences_in_random_directions(size, a, rng):
    xs = rng.standard_normal(size) / abs(a) + rng.standard_normal() / abs(a)
    gain, bias = rng.normal(0, 2, size), rng.standard_normal(size)
    assert verify.jacobian_against_differences(DYT, xs, a, rng, gain, bias) == 3 * size


@pytest.mark.parametrize("size", [2, 7])
@pytest.mark.parametrize("a", ALPHAS)
def test_products_and_gradients_match_differences(size, a, rng):
    rows = rng.standard_normal((3, size)) / abs(a)
    gain, bias = rng.normal(0, 2, size), rng.standard_normal(size)
    dy, w = rng.standard_normal((3, size)), rng.standard_normal((3, size))
    h = 1e-6 / abs(a)
    # <dy, J w> from vjp and from jvp, against differences of <dy, y> along w.
    moved = np.sum(dy * (DYT.forward(rows + h * w, a, gain, bias) - DYT.forward(rows - h * w, a, gain, bias))) / (2 * h)
    dx, dgain, dbias = DYT.vjp(rows, a, dy, gain, bias)
    assert_agree(np.sum(dx * w), moved, rtol=1e-7, atol=1e-9, what="<vjp, w>")
    assert_agree(np.sum(dy * DYT.jvp(rows, a, w, gain, bias)), moved, rtol=1e-7, atol=1e-9, what="<dy, jvp>")
    # The Hessian product: differences of vjp along w.
    ahead, behind = DYT.vjp(rows + h * w, a, dy, gain, bias)[0], DYT.vjp(rows - h * w, a, dy, gain, bias)[0]
    scale = np.abs(a) ** 2 * np.abs(gain).max()
    assert_agree(
        DYT.hvp(rows, a, dy, w, gain, bias), (ahead - behind) / (2 * h), rtol=1e-5, atol=1e-7 * scale, what="hvp"
    )
    # The parameters' gradients, summed over the batch: differences of <dy, y> in gain and bias.
    for parameter, given, value in (("gain", gain, dgain), ("bias", bias, dbias)):
        direction = rng.standard_normal(size)
        step = 1e-6

        def pairing(p, parameter=parameter):
            named = {"gain": gain, "bias": bias, parameter: p}
            return np.sum(dy * DYT.forward(rows, a, named["gain"], named["bias"]))

        moved = (pairing(given + step * direction) - pairing(given - step * direction)) / (2 * step)
        assert_agree(np.sum(value * direction), moved, rtol=1e-7, atol=1e-9, what=f"d{parameter}")


# --- eigenstructure through properties --------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("a", ALPHAS)
def test_eigenstructure_and_norm(size, a, rng):
    xs = rng.standard_normal(size) / abs(a)
    # eigenvalues, norm, J e_k, and the coordinate vectors' multiplicity
    assert verify.eigenstructure(DYT, xs, a, rng) == size + 1 + size**2 + 1
    gain, bias = rng.normal(0, 2, size), rng.standard_normal(size)
    matrix = DYT.jacobian(xs, a, gain, bias)
    assert np.array_equal(matrix, np.diag(np.diag(matrix)))  # diagonal: e_k are its eigenvectors
    assert_agree(DYT.eigenvalues(xs, a, gain, bias), np.linalg.eigvalsh(matrix), rtol=1e-13, what="eigvalsh")
    norm = DYT.spectral_norm(xs, a, gain, bias)
    assert_agree(norm, np.linalg.norm(matrix, 2), rtol=1e-13, what="norm")
    bound = DYT.bound(a, gain)
    assert norm <= bound
    # The bound |alpha| max|gain| is attained at x = 0.
    assert_agree(DYT.spectral_norm(np.zeros(size), a, gain, bias), bound, rtol=1e-15, what="bound at x = 0")


# --- mpmath, through numeric.checks.accuracy ---------------------------------------------------


def test_dyt_is_measured_by_the_accuracy_machinery():
    assert "dyt" in accuracy.layer_keys()
    assert set(accuracy.backward_functions("dyt")) == {"vjp", "jvp", "hvp"}
    assert accuracy.parameter(LAYER.key) == alpha
    assert list(accuracy.parameter_values("dyt", np.array([0.5, 2.0]))) == [0.5, 2.0, -0.5, -2.0]


def test_the_slope_keeps_its_digits_where_sech_is_ill_conditioned():
    # alpha t = -109, rounded in float64: sech**2 amplifies its rounding by 2 |alpha t| tanh, about
    # 200 ulp, unless the product is taken exactly (cosh_of_product).
    result = accuracy.scalar(
        "dyt", "slope", np.float64, np.array([-1.09e102, 8.92e296, 3.0]), np.array([1e-100, 1e-300])
    )
    assert result.points >= 3
    assert result.worst <= result.bound, f"{result.worst:.2f} ulp at {result.where}"


def test_the_hessian_product_does_not_overflow_where_alpha_squared_does():
    value = DYT.hvp(np.array([1e-300, -2e-300]), 1e200, np.ones(2), np.ones(2))
    assert_agree(value, np.array([-2e300, 4e300]), rtol=1e-15, what="hvp at alpha = 1e200")


# --- the numeric interface --------------------------------------------------------------


def test_gain_and_bias_default_to_one_and_zero():
    xs = np.array([-1.0, 0.5, 2.0])
    assert np.array_equal(DYT.forward(xs, 0.5), np.tanh(0.5 * xs))
    assert np.array_equal(DYT.forward(xs, 0.5, None, None), DYT.forward(xs, 0.5, gain=np.ones(3), bias=np.zeros(3)))
    assert np.array_equal(DYT.forward(xs, 0.5, np.full(3, 2.0)), DYT.forward(xs, 0.5, gain=np.full(3, 2.0)))
    assert DYT.bound(0.5) == 0.5
    assert DYT.bound(-0.5, np.array([1.0, -3.0])) == 1.5
    assert DYT.slope_at_zero(0.5) == 0.5
    assert DYT.slope_at_zero(0.5, gain=3.0) == 1.5
    assert DYT.asymptote(-2.0, gain=3.0, bias=1.0) == -2.0


def test_float32_stays_float32_and_alpha_broadcasts_per_row():
    xs = np.array([[1.0, 2.0], [3.0, -4.0]], dtype=np.float32)
    assert DYT.forward(xs, np.float32(0.5)).dtype == np.float32
    assert DYT.vjp(xs, np.float32(0.5), np.ones_like(xs))[0].dtype == np.float32
    per_row = DYT.forward(xs.astype(np.float64), np.array([0.5, 2.0]))
    assert_agree(per_row, np.tanh(np.array([[0.5], [2.0]]) * xs), rtol=1e-15, what="alpha per row")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: DYT.forward(np.ones(3), np.nan), "alpha must be finite"),
        (lambda: DYT.forward(np.ones(3), "a"), "alpha must be real"),
        (lambda: DYT.forward(np.ones((2, 3)), np.ones(3)), "alpha of shape"),
        (lambda: DYT.forward(np.ones(3), 0.5, np.ones(2)), "gain must have one entry per feature"),
        (lambda: DYT.forward(np.ones(3), 0.5, weight=np.ones(3)), "weight is not a parameter of dyt"),
        (lambda: DYT.forward(np.ones(1), 0.5), "n >= 2"),
        (lambda: DYT.vjp(np.ones(3), 0.5), "takes \\(x, alpha, dy\\)"),
    ],
)
def test_bad_arguments_name_what_is_wrong(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


def test_codegen_refuses_it_and_says_why():
    with pytest.raises(ValueError, match="takes the scalar alpha"):
        emit("dyt", "numpy")


# --- claims ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "assume", "verdict", "says"),
    [
        ("slope_at_zero == gamma*alpha", (), "proved", "alpha in R"),
        ("slope_at_zero == alpha", ("gamma == 1",), "proved", "alpha in R"),
        ("slope_at_zero == alpha", (), "refuted", "confirmed numerically (numeric.dyt.slope_at_zero(alpha))"),
        # The bound is a function of the gain: evaluated at the counterexample's.
        (
            "spectral_bound <= 1",
            (),
            "refuted",
            "confirmed numerically (numeric.dyt.bound(alpha, gain)): lhs = 2, rhs = 1",
        ),
        ("slope_at_zero == 1/sqrt(epsilon)", (), "error", "dyt has no epsilon (its scale is set by alpha)"),
        ("slope_at_zero == 1", ("epsilon == 0",), "error", "dyt has no epsilon"),
        ("eigen_coordinate <= abs(alpha)", (), "error", "one value per entry k"),
        ("spectral_norm <= abs(alpha)*gamma_max", (), "supported", "alpha in R"),
        ("spectral_norm <= abs(alpha)*gamma_max/2", (), "refuted", "numpy.linalg.norm(J, 2)"),
        ("norm(J, 2) < abs(alpha)*gamma_max", (), "refuted", "confirmed numerically"),
        ("J @ ones == 0", (), "refuted", "confirmed numerically"),
        ("asymptote == beta + gamma", (), "refuted", "alpha: 0"),
        ("dyt.slope_at_zero == layernorm.slope_at_zero", (), "refuted", "epsilon > 0"),
    ],
)
def test_claims_about_dyt_are_decided_or_refused(text, assume, verdict, says):
    found = check(Claim(text, "dyt", assume), confirm)
    assert found.verdict == verdict, found.detail
    assert says in f"{found.detail} {found.quantifier} {found.counterexample}"
    if verdict != "error" and not text.startswith("dyt."):
        assert "epsilon" not in found.quantifier


def test_a_counterexample_giving_only_the_largest_gain_is_confirmed_at_a_constant_gain():
    """A counterexample may name gamma_max without a gain vector: NumPy evaluates it at the gain
    with every entry gamma_max (and a zero bias), where ||J||_2 at x = 0 is |alpha| gamma_max."""
    example = {"alpha": 1, "gamma_max": 2, "n": 3, "x": [0.0, 0.0, 0.0]}
    assert confirm(Claim("spectral_norm <= 1", "dyt"), example) == (
        "confirmed numerically (numeric.dyt.spectral_norm(x, alpha); numpy.linalg.norm(J, 2)): lhs = 2, rhs = 1"
    )


def test_the_length_scale_alpha_sets_is_positive_whatever_alpha_s_sign():
    """DyT's alpha in epsilon's place sets the scale 1/|alpha| of x that the accuracy and
    verification scale by: a negative alpha (a learnable real) sets a positive one."""
    found = DYT.epsilon_root(np.array([-2.0, -0.5, 0.0, 2.0]))
    np.testing.assert_array_equal(found, [0.5, 2.0, np.inf, 0.5])


@pytest.mark.parametrize("text", ["slope_at_zero == alpha", "asymptote == beta + gamma"])
def test_a_counterexample_s_gain_holds_its_gamma_at_the_pattern_s_coordinate(text):
    """A claim at the input pattern is about one coordinate c: the counterexample's gain is its
    gamma there and gamma_max elsewhere, its bias beta there, so that NumPy's check and the
    audit evaluate the layer the checker refuted."""
    example = check(Claim(text, "dyt"), confirm).counterexample
    c = LAYER.patterns[0].coordinate
    gain, bias = example["gain"], example["bias"]
    assert len(gain) == len(bias) == example["n"] > c
    assert gain[c] == example["gamma"]
    assert bias[c] == example.get("beta", 0)
    assert [value for m, value in enumerate(gain) if m != c] == [example["gamma_max"]] * (example["n"] - 1)
    if text == "slope_at_zero == alpha":  # refuted at a gamma below gamma_max: a gain that is not constant
        assert example["gamma"] != example["gamma_max"]


@pytest.mark.parametrize("name", sorted(BASE.stated))
def test_a_wrong_form_stated_by_the_unregistered_base_is_refused_when_dyt_is_derived(name):
    """DyT's base (tanh(alpha x), not a catalog layer) has every form it states proved when a
    layer built on it is derived: one stated wrong (alpha for |alpha|, a factor 2) is refused."""
    from derivations.catalog import _formulas

    stated = BASE.stated[name]
    wrong = stated.xreplace({sp.Abs(alpha): alpha}) if stated.has(sp.Abs(alpha)) else 2 * stated
    base = dataclasses.replace(BASE, key="dyt_base_wrong", stated={**BASE.stated, name: wrong})
    layer = elementwise_affine(base, key="dyt_wrong", title="DyT over a base stating a wrong form")
    with pytest.raises(DerivationError, match=rf"dyt_base_wrong\.{name}"):
        _formulas(layer)
