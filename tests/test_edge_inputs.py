"""Issue 10, numerics: constant and offset inputs, input edge cases, parameter errors.

Each case here was found by trying the toolkit as a user would, and failed before its fix.
"""

import warnings

import numpy as np
import pytest
from grids import SYMMETRIC_LAYERS, module

import numeric
from derivations import LAYERS
from numeric import layernorm, layernorm_affine, rmsnorm_affine
from numeric.checks.agreement import assert_agree


@pytest.mark.parametrize("key", SYMMETRIC_LAYERS)
@pytest.mark.parametrize("value", [3.0, -1e200, 1e-200, 7e-310])
@pytest.mark.parametrize("epsilon", [1e-300, 1e-170, 1e-5, 1e150])
def test_constant_inputs_give_finite_values_everywhere(key, value, epsilon):
    layer = module(key)
    x = np.full(3, value)
    for name in ("forward", "jacobian", "eigenvalues", "spectral_norm"):
        result = np.asarray(getattr(layer, name)(x, epsilon))
        assert np.isfinite(result).all(), f"{key}.{name} at x = {value} * 1, epsilon = {epsilon}: {result}"


def test_the_reported_constant_input_cases():
    assert np.isfinite(numeric.layernorm_std_eps.jacobian(np.full(3, 3.0), 1e-170)).all()
    assert np.isfinite(layernorm.eigenvalues(np.full(3, 3.0), 1e-300)).all()
    assert layernorm.eigenvalues(np.full(3, 3.0), 1e-300)[-1] == pytest.approx(1e150, rel=1e-15)
    assert (layernorm.forward(np.full(3, 1e200), 1e-160) == 0).all()


@pytest.mark.parametrize("offset", [1e4, 1e8, 1e12, 1e15])
def test_a_large_offset_does_not_lose_the_signal(offset):
    spread = np.array([1.0, -1.0, 2.0, 0.0])
    got = layernorm.forward(offset + spread, 1e-5)
    # The exact input is offset + spread only where float64 holds it exactly; the
    # reference is LayerNorm of the rounded input, centered exactly (Fractions).
    from fractions import Fraction

    rounded = [Fraction(float(v)) for v in offset + spread]
    mean = sum(rounded) / 4
    centered = [v - mean for v in rounded]
    variance = sum(c * c for c in centered) / 4
    expected = np.array([float(c) for c in centered]) / np.sqrt(float(variance) + 1e-5)
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=0)


def test_longdouble_beyond_float64_is_refused():
    huge = np.array([1.0, 2.0], dtype=np.longdouble) * np.longdouble(10) ** 400
    if not np.isfinite(huge).all() or np.finfo(np.longdouble).max <= np.finfo(np.float64).max:
        pytest.skip("this platform's longdouble is float64")
    with pytest.raises(ValueError, match=r"x has entries beyond float64"):
        layernorm.forward(huge, 1e-5)


def test_longdouble_below_float64_is_refused_and_zero_is_not():
    """A non-zero entry too small for float64 would be flushed to 0 silently: refused, naming the
    argument; an exact 0 beside normal entries is read as it is."""
    tiny = np.array([1.0, 2.0], dtype=np.longdouble) * np.longdouble(10) ** -400
    if not (tiny != 0).all() or np.finfo(np.longdouble).tiny >= np.finfo(np.float64).tiny:
        pytest.skip("this platform's longdouble is float64")
    with pytest.raises(ValueError, match=r"^x has non-zero entries below float64's range"):
        layernorm.forward(tiny, 1e-5)
    with pytest.raises(ValueError, match=r"^epsilon has non-zero entries below float64's range"):
        layernorm.forward(np.array([1.0, 2.0]), np.longdouble(10) ** -400)
    zero = np.array([0.0, 1.0, 2.0], dtype=np.longdouble)
    assert np.array_equal(layernorm.forward(zero, 1e-5), layernorm.forward(zero.astype(np.float64), 1e-5))


def test_masked_arrays_are_refused():
    masked = np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])
    with pytest.raises(ValueError, match="x must not be a masked array"):
        layernorm.forward(masked, 1e-5)
    with pytest.raises(ValueError, match="epsilon must not be a masked array"):
        layernorm.response(1.0, np.ma.masked_array([0.1], mask=[True]))


@pytest.mark.parametrize(
    "call",
    [
        lambda: layernorm.response(np.array([1.0, 2.0]), 0.25),
        lambda: layernorm.slope(np.array([1.0, 2.0]), 0.25),
        lambda: layernorm.spectral_norm(np.ones((2, 3)) * [[1], [2]] + np.arange(3), 0.25),
        lambda: layernorm.bound(np.array([0.25, 1.0])),
        lambda: layernorm_affine.bound(np.array([0.25, 1.0]), np.ones(3)),
    ],
)
def test_array_results_are_writable(call):
    result = call()
    assert isinstance(result, np.ndarray)
    assert result.flags.writeable


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: layernorm_affine.forward(np.ones(3), 0.1, np.ones((2, 3)), np.zeros(3)), r"gain .*shape \(3,\)"),
        (lambda: layernorm_affine.jacobian(np.ones(3), 0.1, np.ones((2, 3)), np.zeros(3)), r"gain .*shape \(3,\)"),
        (lambda: layernorm_affine.forward(np.ones(3), 0.1, np.ones(3), bias=np.zeros(4)), r"bias .*\(3,\)"),
        (lambda: layernorm_affine.forward(np.ones(3), 0.1, np.ones(3), gain=np.ones(3)), "gain is given both"),
        (lambda: layernorm_affine.bound(0.1, []), "gain must have at least one entry"),
        (lambda: rmsnorm_affine.bound(np.ones(3) * 0.1, np.ones((4, 2))), "epsilon .* gain"),
        (lambda: layernorm_affine.forward(np.ones((2, 3)), np.ones(3) * 0.1, np.ones(3), np.zeros(3)), "epsilon"),
        # Gemma's stored weight given by position: say that it goes by keyword.
        (
            lambda: numeric.rmsnorm_gemma.forward(np.ones(3), 0.1, np.ones(3)),
            r"weight is required by rmsnorm_gemma, by keyword: forward\(x, epsilon, weight=\.\.\.\)",
        ),
        (
            lambda: numeric.rmsnorm_gemma.vjp(np.ones(3), 0.1, np.ones(3)),
            r"weight is required by rmsnorm_gemma, by keyword: vjp\(x, epsilon, dy, weight=\.\.\.\)",
        ),
        # The bound takes its per-feature parameter by position, and one entry per feature, as the base's does.
        (lambda: numeric.rmsnorm_gemma.bound(0.1), r"^weight is required by rmsnorm_gemma: bound\(epsilon, weight\)$"),
        (
            lambda: numeric.rmsnorm_gemma.bound(0.1, 2.0),
            r"^weight must have one entry per feature, shape \(n,\); got \(\)$",
        ),
        (lambda: layernorm_affine.bound(0.1, 2.0), r"^gain must have one entry per feature, shape \(n,\); got \(\)$"),
        (
            lambda: layernorm_affine.bound(np.full(3, 0.1), np.ones((2, 4))),
            r"^epsilon of shape \(3,\) does not broadcast with the batch shape \(2,\) of gain$",
        ),
    ],
)
def test_parameter_errors_name_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_entries_near_the_largest_float_give_the_scaled_output_without_a_warning():
    """Found by a review: at x near float64's largest, the true scale (after centering) exceeds
    float64, and its product warned of an overflow though the output was right."""
    m = np.finfo(np.float64).max
    x = np.array([[m, -m, m / 2, 0.0], [m, 0.9 * m, -m, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for key in ("layernorm", "layernorm_std_eps", "rmsnorm"):
            layer = getattr(numeric, key)
            assert_agree(layer.forward(x, 1e-5), layer.forward(x / 4, 1e-5), rtol=1e-15, what=f"{key} scaled")
            assert np.isfinite(layer.jacobian(x[0], 1e-5)).all()


def test_a_zero_entry_stays_zero_where_the_scale_overflows():
    """Found by a review: 0 * inf gave NaN where the true value is 0 (epsilon subnormal)."""
    jac = numeric.rmsnorm_eps_outside.jacobian(np.zeros(3), 1e-310)
    assert (jac[~np.eye(3, dtype=bool)] == 0).all()
    assert np.isinf(np.diag(jac)).all()  # 1/epsilon overflows: the true value is beyond float64
    eigenvalues = numeric.layernorm_std_eps.eigenvalues(np.ones(3), 1e-310)
    assert eigenvalues[0] == 0
    assert not np.isnan(eigenvalues).any()


def test_longdouble_below_float64_is_refused():
    tiny = np.longdouble("1e-400")
    if tiny == 0:
        pytest.skip("this platform's longdouble is float64")
    with pytest.raises(ValueError, match="epsilon has non-zero entries below float64"):
        layernorm.slope_at_zero(tiny)
    with pytest.raises(ValueError, match="x has non-zero entries below float64"):
        layernorm.forward(np.array([tiny, 1], dtype=np.longdouble), 1e-5)


def test_a_scalar_function_called_with_parameters_says_what_it_takes():
    with pytest.raises(TypeError, match=r"eigen_ones\(\) takes \(x, epsilon\); got 4 arguments"):
        layernorm_affine.eigen_ones(np.ones(3), 1e-5, np.ones(3), np.zeros(3))


@pytest.mark.parametrize("key", sorted(numeric.LAYERS))
def test_a_product_called_without_its_vectors_says_what_it_takes(key):
    """vjp, jvp and hvp given fewer vectors than they take (none, or dy alone), with every
    parameter given by name, name what they take, for every layer: a TypeError, as Python's own
    for a call."""
    layer, definition = module(key), LAYERS[key]
    named = {name: np.ones(4) for name, _ in definition.parameters}
    second = "epsilon"
    for name, _ in definition.scalars:
        if definition.has_epsilon:
            named[name] = 1.0
        else:
            second = name  # Dynamic Tanh's alpha, in epsilon's place
    x = np.linspace(-1.0, 2.0, 4)
    for function, takes in [("vjp", "dy"), ("jvp", "v"), ("hvp", "dy, v")]:
        for given in range(takes.count(",") + 1):
            expected = rf"^{function}\(\) takes \(x, {second}, {takes}\); got {2 + given} arguments$"
            with pytest.raises(TypeError, match=expected):
                getattr(layer, function)(x, 1e-3, *[np.ones(4)] * given, **named)


def test_the_affine_jacobian_does_not_need_the_bias():
    x, gain = np.array([1.0, 2.0, 4.0]), np.array([0.5, -1.0, 2.0])
    np.testing.assert_array_equal(
        layernorm_affine.jacobian(x, 1e-5, gain), layernorm_affine.jacobian(x, 1e-5, gain, np.ones(3))
    )
