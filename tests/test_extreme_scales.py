"""Rows whose input and epsilon are too far apart in scale for one float64 scale to hold them both.

The references are computed independently of the derivations: the layer written out at n = 3 in
SymPy, differentiated there and evaluated at 40 digits.
"""

from __future__ import annotations

import contextlib
import sys
import warnings

import numpy as np
import pytest
import sympy as sp

import numeric
from numeric.kernels import rescale as _rescale

X = sp.symbols("x0:3", real=True)
E = sp.Symbol("E", positive=True)


def _explicit(output):
    """The layer at n = 3 from ``output(entries, r, epsilon)``, r the mean of squares."""
    r = sum(entry**2 for entry in X) / 3
    return sp.Matrix([output(entry, r, E) for entry in X])


def _hvp_reference(y: sp.Matrix, x: np.ndarray, eps: float, g: np.ndarray, v: np.ndarray) -> np.ndarray:
    """d/dx_k <g, J v>, at 40 digits."""
    pairing = (sp.Matrix(g).T * y.jacobian(sp.Matrix(X)) * sp.Matrix(v))[0]
    at = {**{s: sp.Float(value, 60) for s, value in zip(X, x, strict=True)}, E: sp.Float(eps, 60)}
    return np.array([float(sp.diff(pairing, s).evalf(40, subs=at)) for s in X])


G = np.array([1.0, 0.5, -0.25])
V = np.array([0.3, -0.7, 0.2])
OUTSIDE = 'key = "outside"\ntitle = "O"\noutput = "x[i] / (sqrt(r) + epsilon)"\n[statistics]\nr = "mean(x[j]**2)"\n'


@pytest.mark.parametrize("size", [5e-324, 1e-300, 1e-220, 1e-160, 1e-150, 1e-120, 1e-20])
def test_the_hessian_product_where_the_input_is_far_below_epsilon(size):
    """rmsnorm_eps_outside.hvp at |x| = 1e-160: the mean of squares is subnormal there, and the
    product had 4e-5 of relative error; at the balanced scale it is normal.  At 1e-220 and below,
    the parts of the product off the explicit directions were 0, unchecked (silently wrong)."""
    x = size * np.array([1.0, -2.0, 3.0])
    want = _hvp_reference(_explicit(lambda xi, r, e: xi / (sp.sqrt(r) + e)), x, 0.3, G, V)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = numeric.rmsnorm_eps_outside.hvp(x, 0.3, G, V)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_user_layers_hessian_product_where_the_input_is_far_below_epsilon(tmp_path):
    """x / (sqrt(r) + epsilon) at |x| = 1e-150: its product along x was derived as a ratio of
    sums of ten-fold products, which leave the float range at every scale (35% wrong).  The
    common factor (sqrt(r) + epsilon)**3 is now cancelled."""
    path = tmp_path / "outside.toml"
    path.write_text(OUTSIDE)
    layer = numeric.from_definition(path)
    x = 1e-150 * np.array([1.0, -2.0, 3.0])
    want = _hvp_reference(_explicit(lambda xi, r, e: xi / (sp.sqrt(r) + e)), x, 0.3, G, V)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = layer.hvp(x, 0.3, G, V)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _homogeneous(broken_at: float | None, flagged: bool = False):
    """An ``at`` for `_rescale.at_scale`: epsilon / (r + epsilon) per entry (degree 0, epsilon of
    degree 2), which, where ``broken_at`` is set, gives 0 at any scale whose scaled epsilon lies
    below it, as an intermediate underflowing there would; ``flagged``: every evaluation also
    raises IEEE's overflow flag, as one whose intermediates leave the range at every scale."""

    def at(scaled: np.ndarray, e_scaled: np.ndarray, m: np.ndarray) -> np.ndarray:
        r = np.mean(scaled * scaled, axis=-1, keepdims=True)
        value = np.broadcast_to(e_scaled / (r + e_scaled), scaled.shape)
        if broken_at is not None:
            value = np.where(e_scaled < broken_at, 0.0, value)
        if flagged:
            np.multiply(np.float64(1e308), 10.0)
        return value

    return at


X_FAR = np.array([[1.0, -2.0, 0.5], [3.0, 1.0, -1.0]]) * 1e100
E_FAR = np.array([[1e-100], [1e-100]])  # root of epsilon 1e-50: 150 decades below the input


def test_a_value_lost_at_the_scale_it_was_taken_at_is_taken_at_a_clean_scale():
    """Where the scales `at_scale` takes a row at lose its value (0, as a product beyond the range
    gives), it is taken at a scale between the input's and epsilon's where no intermediate raised
    an IEEE flag, with no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = _rescale.at_scale(_homogeneous(None), X_FAR, E_FAR, 2, False, None)
        repaired = _rescale.at_scale(_homogeneous(1e-100), X_FAR, E_FAR, 2, False, None)
    assert np.all(kept > 0)
    np.testing.assert_allclose(repaired, kept, rtol=1e-14)


def test_a_value_lost_where_no_scale_is_clean_is_warned_about():
    """The check itself can fail: where every scale raises a flag, a value lost where it was taken
    but kept at another scale gets a RuntimeWarning; where the caller assembles the value from
    parts (``checked=False``), nothing is said."""
    with pytest.warns(RuntimeWarning, match="too far apart in scale") as caught, np.errstate(over="ignore"):
        lost = _rescale.at_scale(_homogeneous(1e-100, flagged=True), X_FAR, E_FAR, 2, False, None)
    assert np.all(lost == 0)
    assert {record.filename for record in caught} == {__file__}  # the caller's line, not numeric's
    with warnings.catch_warnings(), np.errstate(over="ignore"):
        warnings.simplefilter("error")
        _rescale.at_scale(_homogeneous(1e-100, flagged=True), X_FAR, E_FAR, 2, False, None, checked=False)


def test_a_value_kept_at_every_scale_is_not_warned_about_though_every_scale_raises_a_flag():
    """The other side of the check above: where every scale raises a flag but the value taken
    agrees with the values at the other scales, it stands, with no warning."""
    with warnings.catch_warnings(), np.errstate(over="ignore"):
        warnings.simplefilter("error")
        kept = _rescale.at_scale(_homogeneous(None, flagged=True), X_FAR, E_FAR, 2, False, None)
    assert np.all(kept > 0)


@pytest.mark.parametrize("key", ["layernorm_std_eps", "layernorm_std_eps_biased"])
def test_the_far_apart_warning_points_at_the_line_that_called_numeric(key):
    """x of order 1 and epsilon = 1e200: the vjp along g = 1 (exactly 0: the outputs sum to 0) is
    not confirmed at any scale, and the warning names the caller's file and line, however deep in
    `numeric` it was raised (it named numeric/kernels/kernel.py)."""
    layer = getattr(numeric, key)
    line = sys._getframe().f_lineno + 2
    with pytest.warns(RuntimeWarning, match="too far apart in scale") as caught:
        gradient = layer.vjp(np.array([[1.0, -2.0, 0.5]]), 1e200, np.ones(3))
    assert np.all(gradient == 0)
    assert [(record.filename, record.lineno) for record in caught] == [(__file__, line)]


DAMPED = (
    'key = "damped"\ntitle = "D"\noutput = "x[i] * sqrt(epsilon) / (r + epsilon)"\n[statistics]\nr = "mean(x[j]**2)"\n'
)


def test_a_user_layers_jacobian_where_its_fourth_powers_overflow_at_the_balanced_scale(tmp_path):
    """x sqrt(epsilon) / (r + epsilon) at |x| = 1e30, epsilon = 1e-300 (x / sqrt(epsilon) = 1e180):
    epsilon is lost at the input's scale, and (r + epsilon)**2 overflows at the balanced one, which
    gave J = sqrt(epsilon) / (r + epsilon) I without its rank-one term (84% wrong, silently)."""
    path = tmp_path / "damped.toml"
    path.write_text(DAMPED)
    layer = numeric.from_definition(path)
    x = 1e30 * np.array([1.0, -2.0, 0.5])
    y = _explicit(lambda xi, r, e: xi * sp.sqrt(e) / (r + e))
    at = {**{s: sp.Float(value, 60) for s, value in zip(X, x, strict=True)}, E: sp.Float(1e-300, 60)}
    want = np.array(y.jacobian(sp.Matrix(X)).evalf(40, subs=at).tolist(), dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = layer.jacobian(x, 1e-300)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_layernorm_at_two_features_where_epsilon_is_far_below_the_spread():
    """At n = 2 the centered eigenvalue is eps / s**3, and J's entries are sums that cancel to it:
    at eps = 1.78e-259 the spectral norm was 46% off, and J at x = 1.3e29, eps = 1e-200 was 13% off,
    silently.  A scale where an intermediate underflowed (raising no overflow flag) had been
    taken as clean; underflow now counts."""
    eps = 1.7782794100389229e-259
    assert numeric.layernorm.spectral_norm(np.array([1.0, -1.0]), eps) == pytest.approx(
        eps / (1 + eps) ** 1.5, rel=1e-12, abs=0
    )
    x = np.array([1.25730221e29, -1.32104863e29])
    c = [sp.Float(value, 400) for value in x]  # the entries cancel over some 260 digits
    mean = (c[0] + c[1]) / 2
    centered = [value - mean for value in c]
    q = (centered[0] ** 2 + centered[1] ** 2) / 2
    s = sp.sqrt(q + sp.Float(1e-200, 400))
    # J = I/s - 11^T/(n s) - c c^T/(n s^3) at n = 2, entry (0, 0), at 400 digits.
    want = float(1 / s - 1 / (2 * s) - centered[0] ** 2 / (2 * s**3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = numeric.layernorm.jacobian(x, 1e-200)
    assert got[0, 0] == pytest.approx(want, rel=1e-9, abs=0)


@pytest.mark.parametrize(
    ("output", "x", "eps", "expected"),
    [
        # x / sqrt(eps) = 1e300: no scale holds both; the balanced one holds x at 1.4e150, past the
        # old limit of 1e150 on the scales tried, though no intermediate there leaves the range.
        ("epsilon * x[i]", [1e200, -2e200], 1e-200, [1.0, -2.0]),
        (
            "epsilon**2 * x[i] / (r + epsilon)",
            [1e300, -2e300, 1e299],
            1e300,
            [5.98802395e299, -1.19760479e300, 5.98802395e298],
        ),
        ("x[i] * sqrt(epsilon) / (r + epsilon)", [1e200, -2e200], 1e-200, [4e-301, -8e-301]),
        (
            "x[i] * sqrt(epsilon) / (r + epsilon)",
            [1e300, -1e300],
            0.3,
            [5.477225575051661e-301, -5.477225575051661e-301],
        ),
    ],
)
def test_a_user_layers_value_where_it_is_a_product_of_the_two_extremes(output, x, eps, expected, tmp_path):
    """Each gave 0, silently: epsilon was lost at the input's scale, and no scale tried could hold
    the input.  The expected values are the definitions evaluated by hand."""
    np.testing.assert_allclose(_user_forward(tmp_path, output, x, eps), expected, rtol=1e-8)


def _user_forward(folder, output: str, x: list[float], eps: float) -> np.ndarray:
    """The forward of the user layer ``output`` (r the mean of squares), with no warning."""
    path = folder / "layer.toml"
    path.write_text(f'key = "extremes"\ntitle = "E"\noutput = "{output}"\n[statistics]\nr = "mean(x[j]**2)"\n')
    layer = numeric.from_definition(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return layer.forward(np.array(x), eps)


# x far below the root of epsilon, or far above it: no one float64 scale holds every intermediate.
FARTHEST = [
    # epsilon x: x / sqrt(eps) = 1e-450; at x's own scale eps overflows, at eps's x underflows.
    ("epsilon * x[i]", [1e-300, 2e-300], 1e300),
    # eps**2 x / (r + eps): r overflows at any scale where eps**2 x / r does not underflow.
    ("epsilon**2 * x[i] / (r + epsilon)", [1e200, -2e200], 0.3),
    ("epsilon**2 * x[i] / (r + epsilon)", [1e-300, 3e-300, -2e-300], 1e300),
]


def _forward_reference(output: str, x: list[float], eps: float) -> list[float]:
    """The definition at 40 digits: r the mean of squares, written out apart from the parser."""
    entries = [sp.Float(value, 60) for value in x]
    r = sum(entry**2 for entry in entries) / len(entries)
    e = sp.Float(eps, 60)
    forms = {
        "epsilon * x[i]": lambda xi: e * xi,
        "epsilon**2 * x[i] / (r + epsilon)": lambda xi: e**2 * xi / (r + e),
    }
    return [float(forms[output](entry).evalf(40)) for entry in entries]


@pytest.mark.skipif(not _rescale.EXTENDED, reason="this platform's longdouble has float64's exponent range")
@pytest.mark.parametrize(("output", "x", "eps"), FARTHEST)
def test_a_user_layers_value_where_no_float64_scale_holds_every_intermediate(output, x, eps, tmp_path):
    """Each gave 0, silently: no float64 scale holds every intermediate.  The row is evaluated in
    a float with a wider exponent (x87's 80 bits), where the platform has one (x86-64 Linux, CI's)."""
    got = _user_forward(tmp_path, output, x, eps)
    np.testing.assert_allclose(got, _forward_reference(output, x, eps), rtol=1e-14)


CENTERED_EXTREMES = [
    # The centered row's scale was 2**-1074 * 0.75, which rounds to 2**-1074: a third too large.
    ([5e-324, 0.0, 0.0, 0.0], 1e-300),
    # The scale of x times that of its centered entries passed float64's largest: epsilon / inf
    # gave 0, and epsilon was lost (the std-eps layers up to 151% off; found from outside).
    ([1e308, -1.7e308, 1e307, 0.0], 1e308),
    ([1e308, -1.7e308, 1e307, 0.0], 2.0**1023),
    ([1e308, -1.7e308, 1e307, 0.0], 1e306),
]


@pytest.mark.parametrize(("x", "eps"), CENTERED_EXTREMES)
@pytest.mark.parametrize("key", ["layernorm", "layernorm_std_eps", "layernorm_std_eps_biased"])
def test_a_centered_layer_at_the_ends_of_the_float_range(key, x, eps):
    """Reference: the definition at 40 digits."""
    entries = [sp.Float(value, 60) for value in x]
    mean = sum(entries) / 4
    variance = sum((entry - mean) ** 2 for entry in entries) / (3 if key == "layernorm_std_eps" else 4)  # unbiased
    e = sp.Float(eps, 60)
    scale = sp.sqrt(variance + e) if key == "layernorm" else sp.sqrt(variance) + e
    want = [float(((entry - mean) / scale).evalf(40)) for entry in entries]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = getattr(numeric, key).forward(np.array(x), eps)
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_a_user_layers_jacobian_far_below_epsilon_is_right_and_quiet(tmp_path):
    """x / (sqrt(r) + epsilon) at |x| = 1e-250 and 1e-300: J = I / epsilon up to terms of relative
    size |x| / epsilon.  It was NaN at 1e-250; at 1e-300 NumPy warned of an invalid value on the
    way to a right one.  Normwise: the off-diagonal terms are rounding of the eigen-assembly."""
    path = tmp_path / "outside.toml"
    path.write_text(OUTSIDE)
    layer = numeric.from_definition(path)
    for size in (1e-200, 1e-250, 1e-300):
        x = size * np.array([0.3, -1.2, 0.5])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = layer.jacobian(x, 0.3)
        np.testing.assert_allclose(got, np.eye(3) / 0.3, rtol=0, atol=1e-14 / 0.3)


@pytest.mark.parametrize(("size", "eps"), [(1e-300, 1e100), (1e-250, 1e100), (1e-120, 1e100), (1e-20, 1e172)])
def test_the_hessian_product_at_two_features_where_the_input_is_far_below_epsilon(size, eps):
    """layernorm_std_eps.hvp at n = 2, x = 1e-300, epsilon = 1e100: the directions the product is
    split along were taken at a scale that also held epsilon, where the input vanished, and the
    product was 0 (truth 3.5e-201).  At x = 1e-20, epsilon = 1e172 the truth (about 1e-345)
    underflows, quietly, to 0.  Reference: the layer written out at n = 2 in SymPy."""
    x = size * np.array([0.7, -0.4])
    g, v = np.array([0.3, -0.7]), np.array([1.0, 0.5])
    entries = sp.symbols("x0:2", real=True)
    mean = sum(entries) / 2
    sigma = sp.sqrt(sum((entry - mean) ** 2 for entry in entries))  # unbiased at n = 2: divided by 1
    y = sp.Matrix([(entry - mean) / (sigma + E) for entry in entries])
    pairing = (sp.Matrix(g).T * y.jacobian(sp.Matrix(entries)) * sp.Matrix(v))[0]
    at = {**{s: sp.Float(value, 60) for s, value in zip(entries, x, strict=True)}, E: sp.Float(eps, 60)}
    want = np.array([float(sp.diff(pairing, s).evalf(40, subs=at)) for s in entries])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = numeric.layernorm_std_eps.hvp(x, eps, g, v)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_the_hessian_product_far_above_the_input_is_quiet_and_right():
    """layernorm.hvp at x ~ 1 against epsilon = 1e200: the product's parts off the explicit
    directions are rounding residue there, on which no two scales agree; checking them warned
    on a right value (found from outside).  Reference: the layer at n = 3 in SymPy, 40 digits."""
    x = np.random.default_rng(3).standard_normal(3)
    mean = sum(X) / 3
    y = sp.Matrix([(entry - mean) / sp.sqrt(sum((e - mean) ** 2 for e in X) / 3 + E) for entry in X])
    want = _hvp_reference(y, x, 1e200, x, V)  # the cotangent along x: all but rounding is along it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = numeric.layernorm.hvp(x, 1e200, x, V)
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_a_backward_product_is_undone_one_factor_of_the_scale_at_a_time():
    """layernorm_std_eps.vjp at x = g 1e-310 (subnormal) with epsilon = 5e-324: the product at
    the row's scale is 1e-13, and 1 / m alone overflows at m = 3.5e-310; the product was inf,
    silently, where the truth is 3e296 (found from outside).  Reference: SymPy, 40 digits."""
    g = np.array([1.0, -2.0, 0.5])
    x = g * 1e-310
    mean = sum(X) / 3
    sigma = sp.sqrt(sum((e - mean) ** 2 for e in X) / 2)
    y = sp.Matrix([(entry - mean) / (sigma + E) for entry in X])
    at = {**{s: sp.Float(value, 60) for s, value in zip(X, x, strict=True)}, E: sp.Float(5e-324, 60)}
    jacobian = y.jacobian(sp.Matrix(X))
    want = list((sp.Matrix(g).T * jacobian).evalf(40, subs=at))
    # g along x cancels all but 1e-14 of |g| |J| (beyond float64 itself): the error is measured
    # against that scale, in SymPy's floats.
    natural = sum(abs(sp.Float(v)) for v in g) * max(abs(v) for v in jacobian.evalf(40, subs=at))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = numeric.layernorm_std_eps.vjp(x, 5e-324, g)
    assert np.isfinite(got).all()
    assert max(abs(sp.Float(float(a), 40) - b) for a, b in zip(got, want, strict=True)) <= 1e-14 * natural


def test_a_user_layers_jacobian_at_subnormal_input_and_epsilon(tmp_path):
    """x epsilon / (sqrt(r) + epsilon)**2 at x = 1e-310, epsilon = 1e-320: J is about 5e299, and
    was inf, silently (found from outside).  Reference: SymPy, 40 digits, normwise."""
    path = tmp_path / "layer.toml"
    path.write_text(
        'key = "subnormal"\ntitle = "S"\noutput = "x[i] * epsilon / (sqrt(r) + epsilon)**2"\n'
        '[statistics]\nr = "mean(x[j]**2)"\n'
    )
    layer = numeric.from_definition(path)
    x = np.array([1.0, -2.0, 0.5]) * 1e-310
    y = _explicit(lambda xi, r, e: xi * e / (sp.sqrt(r) + e) ** 2)
    at = {**{s: sp.Float(value, 60) for s, value in zip(X, x, strict=True)}, E: sp.Float(1e-320, 60)}
    want = y.jacobian(sp.Matrix(X)).evalf(40, subs=at)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = layer.jacobian(x, 1e-320)
    assert np.isfinite(got).all()
    scale = max(abs(v) for v in want)
    assert max(abs(sp.Float(float(a), 40) - b) for a, b in zip(got.ravel(), want, strict=True)) <= 1e-13 * scale


@pytest.mark.parametrize(("dtype", "bits"), [(np.float64, 128), (np.float32, 16)])
def test_a_row_is_computed_as_it_is_exactly_where_its_scales_are_ordinary(dtype, bits):
    """docs/numeric.md: a row is computed as it is where its statistics are finite, the root of
    epsilon and the spread's length lie within 2^±L (L = 128 for float64, an eighth of its
    exponent range) and its mean within 4 spreads of 0, as is the largest entry of each vector
    a backward product takes; else it is rescaled.  Each bound holds at its end, not past it."""
    low, high = 2.0**-bits, 2.0**bits
    rows = [  # (spread, mean, root of epsilon, largest entry of a vector), computed as it is
        ((1.0, 0.0, 1.0, 1.0), True),
        ((low, 0.0, low, low), True),
        ((high, 0.0, high, high), True),
        ((1.0, 4.0, 1.0, 1.0), True),
        ((1.0, -4.0, 1.0, 1.0), True),
        ((low / 2, 0.0, 1.0, 1.0), False),
        ((2 * high, 0.0, 1.0, 1.0), False),
        ((1.0, 4.0 + 2.0**-20, 1.0, 1.0), False),
        ((1.0, 0.0, low / 2, 1.0), False),
        ((1.0, 0.0, 2 * high, 1.0), False),
        ((1.0, 0.0, 1.0, low / 2), False),
        ((1.0, 0.0, 1.0, 2 * high), False),
        ((1.0, 0.0, 1.0, np.inf), False),
        ((np.nan, 0.0, 1.0, 1.0), False),
    ]
    spread, mean, root, top = (np.array([[row[m]] for row, _ in rows]) for m in range(4))
    found = _rescale.fits(spread, [mean], root, [top], np.dtype(dtype))
    assert found.tolist() == [plain for _, plain in rows]


def test_a_scalar_function_at_a_moderate_scale_is_evaluated_as_it_is():
    """A function of (t, epsilon) (the response, the slope) is plain where its scale m =
    max(|t|, root of epsilon) lies within 1e-100 .. 1e100: bit for bit the lambdified value,
    not a rescaled one an ulp away; beyond, rescaled, it stays finite where the plain one is not."""
    rng = np.random.default_rng(5)
    t = rng.choice([-1.0, 1.0], 2000) * 10.0 ** rng.uniform(-90, 90, 2000)
    e = 10.0 ** rng.uniform(-180, 180, 2000)

    def length(t, e):  # sqrt(t^2 + epsilon): of degree 1 in the scale, epsilon of degree 2
        return np.sqrt(t * t + e)

    np.testing.assert_array_equal(_rescale.elementwise(length, 1, 2, t, e), length(t, e))
    with np.errstate(over="ignore"):
        assert np.isinf(length(1e200, 1.0))
    assert _rescale.elementwise(length, 1, 2, np.array([1e200]), np.array([1.0]))[0] == 1e200


@pytest.mark.parametrize("bad", [[0], [3], [1, 6], [0, 2, 5, 7]])
def test_rows_that_raise_a_flag_are_found_by_halves_and_every_other_row_is_clean(bad):
    """`_clean` tries the rows at once, then by halves: each row that raises no IEEE flag is found
    clean, whichever half it falls in, and only the rows that raise one are left out."""
    rows = np.ones((8, 1), dtype=bool)
    x = np.ones((8, 3))
    x[bad] = 7.0  # 1 / (x - 7) divides by zero at these rows only; the benign row holds no 7
    there = _rescale.Scaled(x, np.ones((8, 1)), np.ones((8, 1)))

    def at(x, e, m):
        return 1.0 / (x - 7.0)

    found = _rescale._clean(at, rows, there, x)
    expected = np.ones((8, 1), dtype=bool)
    expected[bad] = False
    np.testing.assert_array_equal(found, expected)


def test_the_float64_scales_are_tried_balanced_first_then_outwards_by_eighths(monkeypatch):
    """After the wider float, nine float64 scales between the input's own and epsilon's root: the
    balanced one (1/2), then outwards by eighths to both ends, each a fraction in [0, 1]."""
    tried = []

    def at_fraction(at, first, own, fraction, apart, degree):
        tried.append(fraction)
        return np.zeros((1, 1), dtype=bool), [], np.zeros((1, 1), dtype=bool)

    monkeypatch.setattr(_rescale, "_at_fraction", at_fraction)
    monkeypatch.setattr(_rescale, "EXTENDED", False)
    _rescale._tried(None, None, None, None, None, 2)
    assert tried == [0.5, 0.375, 0.625, 0.25, 0.75, 0.125, 0.875, 0.0, 1.0]


@pytest.mark.parametrize("degree", [1, 2])
def test_each_float64_scale_lies_its_fraction_of_the_way_from_the_inputs_own_to_epsilons(degree):
    """x near 2**-300 against epsilon whose root is near 2**150: 450 binades apart.  At fraction
    f the row is evaluated with x near 2**(-450 f) and the root of epsilon near 2**(450 (1 - f)):
    at 0 the input's own scale, at 1 epsilon's, and between them in proportion."""
    array = np.array([[3.0, -1.5, 0.75]]) * 2.0**-300
    e = np.array([[2.0 ** (150 * degree)]])
    first = _rescale.Scaled(*_rescale.normalized(array, e, degree, centered=False))
    own = _rescale._own_scale(array, e, degree, False, None, (1, 1))
    gap = float(own.gap[0, 0])
    assert abs(gap - 450) <= 2
    for fraction in (0.0, 0.25, 0.5, 0.875, 1.0):
        seen = []

        def at(x, eps, m, seen=seen):
            seen.append((x, eps))
            return x / (np.abs(x).max(axis=-1, keepdims=True) + eps)

        valid, _, _ = _rescale._at_fraction(at, first, own, fraction, np.ones((1, 1), dtype=bool), degree)
        assert valid.all(), fraction
        x, eps = seen[0]
        assert abs(np.log2(np.abs(x).max()) + fraction * gap) <= 2, (fraction, x)
        assert abs(np.log2(eps[0, 0]) / degree - (1 - fraction) * gap) <= 2, (fraction, eps)


@pytest.mark.parametrize("taken", [[0, 1, 2, 3], [0, 1], [1, 2], [2, 0, 3]])
def test_a_hessian_product_over_rows_at_extreme_scales_each_with_its_epsilon_is_each_rows_own(taken):
    """Rows the fused program cannot take (x near 1e150 against epsilon 1e290, x near 1e-160) are
    computed again on their own, each with its own epsilon: the batch equals the rows one by one,
    in a batch of two rows too."""
    rng = np.random.default_rng(3)
    x = np.array([[1e150, -2e150, 3e150], [0.5, -1.0, 2.0], [1e-160, 3e-160, -2e-160], [1.0, 1.0 + 1e-12, 1.0 - 1e-12]])
    eps = np.array([1e290, 0.1, 1e-300, 1e-30])
    g, v = rng.standard_normal((2, *x.shape))
    x, eps, g, v = x[taken], eps[taken], g[taken], v[taken]
    whole = numeric.layernorm.hvp(x, eps, g, v)
    rows = np.stack([numeric.layernorm.hvp(x[r], eps[r], g[r], v[r]) for r in range(len(x))])
    np.testing.assert_array_equal(whole, rows)


@pytest.mark.parametrize("key", ["layernorm_std_eps", "rmsnorm_eps_outside", "l2norm_clamped"])
def test_a_row_the_split_cannot_take_is_taken_with_its_own_epsilon_in_a_batch_of_two(key):
    """x = 1e-300 z against epsilon = 1e200 leaves the float range along the split directions:
    that row is taken again by the general form, with its own epsilon, beside a moderate row
    with another: the batch of two equals its rows one by one."""
    rng = np.random.default_rng(8)
    x = np.array([[1e-300, -2e-300, 3e-300], [0.5, 1.0, -1.5]])
    eps = np.array([1e200, 0.1])
    g, v = rng.standard_normal((2, *x.shape))
    layer = numeric.facade(key)
    whole = layer.hvp(x, eps, g, v)
    rows = np.stack([layer.hvp(x[r], eps[r], g[r], v[r]) for r in range(2)])
    assert np.isfinite(rows).all()
    np.testing.assert_array_equal(whole, rows)


@pytest.mark.parametrize("path", ["numpy", "default"])
@pytest.mark.parametrize("key", ["layernorm", "rmsnorm", "layernorm_std_eps", "l2norm_clamped"])
def test_an_epsilon_lost_beside_the_inputs_square_does_not_move_a_bit(key, path):
    """x of 1e60 .. 1e200 against epsilon of 1e-300, 1e-290 and 1e-250: epsilon changes the
    true value by far less than a rounding, so the three results are the same bits (NumPy's
    path keeps such a row at its own scale, where epsilon is found to change nothing)."""
    from numeric.kernels import native

    layer = getattr(numeric, key)
    x = np.random.default_rng(3).standard_normal((5, 4))
    with native.off() if path == "numpy" else contextlib.nullcontext(), np.errstate(all="ignore"):
        for scale in (1e60, 1e100, 1e200):
            first, *rest = (layer.forward(scale * x, epsilon) for epsilon in (1e-300, 1e-290, 1e-250))
            for other in rest:
                assert np.array_equal(first, other), (scale, first, other)


def test_the_clean_rows_are_found_by_halves_within_32_evaluations():
    """`_clean` tries the rows all at once, then by halves, at most PROBES = 32 evaluations: 17
    rows whose even ones raise a flag take exactly 32, and every odd row is found clean."""
    from types import SimpleNamespace

    calls = []
    bad = list(range(0, 17, 2))

    def at(x, e, m):
        calls.append(1)
        if np.any(x[bad, 0] == 7.0):
            raise FloatingPointError

    x = np.ones((17, 3))
    x[bad, 0] = 7.0
    there = SimpleNamespace(x=x, e=np.ones((17, 1)), m=np.ones((17, 1)))
    found = _rescale._clean(at, np.ones((17, 1), dtype=bool), there, x)
    assert _rescale.PROBES == 32
    assert len(calls) == 32
    assert found.ravel().tolist() == [row % 2 == 1 for row in range(17)]
