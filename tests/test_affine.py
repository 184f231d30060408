"""LayerNorm with gain and bias: J = diag(gain) J_LN, and its norm bound on random gains."""

import numpy as np
import pytest
from grids import EPSILONS, SIZES

from numeric import layernorm, layernorm_affine
from numeric.checks import verify
from numeric.checks.agreement import AgreementError, assert_agree


def _parameters(rng, size):
    return rng.normal(0, 2, size), rng.standard_normal(size)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_gain_and_bias_act_entrywise_on_layernorm(size, epsilon, rng):
    x = rng.standard_normal((3, size))
    gain, bias = _parameters(rng, size)
    assert_agree(
        layernorm_affine.forward(x, epsilon, gain, bias),
        gain * layernorm.forward(x, epsilon) + bias,
        rtol=1e-14,
        atol=1e-15,
        what="forward",
    )
    assert_agree(
        layernorm_affine.jacobian(x, epsilon, gain=gain, bias=bias),
        gain[:, None] * layernorm.jacobian(x, epsilon),
        rtol=1e-14,
        atol=1e-15 / np.sqrt(epsilon),
        what="jacobian",
    )


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("epsilon", [1e-3, 0.25, 4.0])
def test_jacobian_matches_differences(size, epsilon, rng):
    x = rng.standard_normal(size)
    assert (
        verify.jacobian_against_differences(layernorm_affine.LAYER, x, epsilon, rng, *_parameters(rng, size))
        == 3 * size
    )


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_norm_is_bounded_by_max_gain_over_root_epsilon(size, epsilon, rng):
    gains = rng.normal(0, 3, (20, size))
    x = rng.standard_normal((20, size)) * rng.uniform(1e-3, 10, (20, 1))
    norms = np.linalg.norm(layernorm_affine.jacobian(x, epsilon, gains, np.zeros(size)), 2, axis=(-2, -1))
    bounds = layernorm_affine.bound(epsilon, gains)
    assert_agree(bounds, np.max(np.abs(gains), axis=-1) / np.sqrt(epsilon), rtol=1e-15, what="bound")
    assert (norms <= bounds * (1 + 1e-12)).all()


def test_bound_is_attained_by_a_uniform_gain_at_a_constant_input():
    gain = np.full(5, -3.0)
    jac = layernorm_affine.jacobian(np.full(5, 2.0), 0.25, gain, np.zeros(5))
    assert_agree(np.linalg.norm(jac, 2), layernorm_affine.bound(0.25, gain), rtol=1e-14, what="equality")


def test_jacobian_is_not_symmetric_for_a_varied_gain(rng):
    jac = layernorm_affine.jacobian(rng.standard_normal(4), 0.1, np.array([1.0, 2.0, 3.0, 4.0]), np.zeros(4))
    with pytest.raises(AgreementError):
        assert_agree(jac, jac.T, rtol=1e-6, what="symmetry")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((), "gain is required"),
        ((np.ones(3),), "bias is required"),
        ((np.ones(2), np.ones(3)), "gain must have one entry per feature"),
        ((np.ones(3), np.array([0.0, np.nan, 1.0])), "bias must be finite"),
        ((np.ones(3), "abc"), "bias must be real numbers"),
        ((np.ones(3), np.ones(3), np.ones(3)), "takes parameters"),
    ],
)
def test_bad_parameters_are_refused(arguments, message):
    with pytest.raises(ValueError, match=message):
        layernorm_affine.forward(np.arange(3.0), 0.1, *arguments)


def test_layers_without_parameters_refuse_them():
    with pytest.raises(ValueError, match="takes parameters"):
        layernorm.forward(np.arange(3.0), 0.1, np.ones(3))
    with pytest.raises(ValueError, match="gain is not a parameter"):
        layernorm.jacobian(np.arange(3.0), 0.1, gain=np.ones(3))


@pytest.mark.parametrize("size", [2, 5])
def test_the_hessian_product_is_the_bases_at_the_gain_times_dy_bit_for_bit(size, rng):
    """H(g) = H_LN(gain g), proved: numeric takes it down LayerNorm's own path (its eigen
    directions, the explicit form at n = 2), so at n = 2 with q >> epsilon, where the symbolic-n
    form cancels, the affine product keeps LayerNorm's digits; the same bits at n = 5."""
    for x, eps in [(rng.standard_normal(size), 1e-200), (rng.standard_normal(size), 0.3)]:
        gain, bias = _parameters(rng, size)
        dy, v = rng.standard_normal((2, size))
        found = layernorm_affine.hvp(x, eps, dy, v, gain=gain, bias=bias)
        np.testing.assert_array_equal(found, layernorm.hvp(x, eps, gain * dy, v))


@pytest.mark.parametrize("gain_dtype", [np.float16, np.float32, np.float64, np.int64])
def test_a_float32_jacobian_is_each_float64_product_rounded_once(gain_dtype, rng):
    """diag(gain) J_LN for float32 x: each entry the float64 product of J_LN's float32 entry and
    the gain, rounded once to float32, whatever dtype the gain comes in (float32 holds a float16
    or float32 gain exactly, not a float64 one)."""
    x = rng.standard_normal((3, 7)).astype(np.float32)
    gain = (rng.normal(0, 3, 7) * (100 if gain_dtype == np.int64 else 1)).astype(gain_dtype)
    bias = rng.standard_normal(7)
    found = layernorm_affine.jacobian(x, 1e-3, gain, bias)
    want = (layernorm.jacobian(x, 1e-3).astype(np.float64) * gain.astype(np.float64)[:, None]).astype(np.float32)
    assert found.dtype == np.float32
    np.testing.assert_array_equal(found, want)
    if gain_dtype == np.float64:  # a float32 product of the rounded gain differs somewhere
        assert not np.array_equal(found, layernorm.jacobian(x, 1e-3) * gain.astype(np.float32)[:, None])


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((), "gain is required"),
        ((np.ones(2), np.ones(3)), "gain must have one entry per feature"),
        ((np.ones(3), np.array([0.0, np.nan, 1.0])), "bias must be finite"),
        ((np.array([1.0, np.inf, 1.0]), np.ones(3)), "gain must be finite"),
        ((np.ones((2, 3)), np.ones(3)), "gain must have shape"),
        ((np.ones(3), np.ones(3), np.ones(3)), "takes parameters"),
    ],
)
def test_the_jacobian_refuses_the_parameters_the_forward_refuses(arguments, message):
    for function in (layernorm_affine.forward, layernorm_affine.jacobian):
        with pytest.raises(ValueError, match=message):
            function(np.arange(3.0), 0.1, *arguments)


def test_a_gain_float32_cannot_hold_raises_no_floating_point_flag_of_its_own():
    """A float64 gain beyond float32's range or below its subnormals, on a float32 J: the
    products in float64, rounded once, with no warning the call did not have before."""
    for x, eps, gain in [
        ([0.0, 1e10, 2e10], 1e-3, np.array([1e39, 1.0, 1.0])),  # J about 1e-10: products near 1e29
        ([1e-20, 2e-20, 4e-20], 1e-42, np.full(3, 1e-46)),  # J about 1e21: products near 1e-25
    ]:
        x = np.array(x, dtype=np.float32)
        with np.errstate(all="raise"):
            found = layernorm_affine.jacobian(x, eps, gain, np.zeros(3))
        want = (layernorm.jacobian(x, eps).astype(np.float64) * gain[:, None]).astype(np.float32)
        np.testing.assert_array_equal(found, want)


def test_the_jacobian_takes_a_gain_per_row_of_epsilon_s_broadcast_as_the_forward_does(rng):
    """One x and four epsilons are four rows: a gain of one row each is taken by the Jacobian,
    as by the forward, each row's J the one of its own call (it was refused as not x's shape)."""
    x, eps, gain, bias = (
        np.array([0.0, 1.0, 4.0]),
        np.array([1e-3, 1e-2, 1e-1, 1.0]),
        rng.normal(0, 2, (4, 3)),
        np.zeros(3),
    )
    found = layernorm_affine.jacobian(x, eps, gain, bias)
    assert found.shape == (4, 3, 3)
    assert layernorm_affine.forward(x, eps, gain, bias).shape == (4, 3)
    for row in range(4):
        np.testing.assert_array_equal(found[row], layernorm_affine.jacobian(x, eps[row], gain[row], bias))
