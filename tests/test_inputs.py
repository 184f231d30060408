"""Bad input gets a ValueError naming the argument; shapes and dtypes behave like NumPy."""

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import numeric
from derivations import LAYERS
from numeric import layernorm, response, slope
from numeric.kernels.compiled import compiled

X = np.array([0.3, -1.2, 2.0])
VECTOR_FUNCTIONS = (layernorm.forward, layernorm.jacobian, layernorm.eigenvalues, layernorm.spectral_norm)


@pytest.mark.parametrize("function", VECTOR_FUNCTIONS)
@pytest.mark.parametrize(
    ("x", "epsilon", "message"),
    [
        (X, 0.0, "epsilon must be positive"),
        (X, -1e-3, "epsilon must be positive"),
        (X, np.nan, "epsilon must be finite"),
        (X, np.inf, "epsilon must be finite"),
        (X, np.array([0.1, -0.1]), "epsilon must be positive"),
        (X, "0.1", "epsilon must be real numbers"),
        (X, None, "epsilon must be real numbers"),
        (np.array([1.0, np.nan, 2.0]), 0.1, "x must be finite"),
        (np.array([1.0, -np.inf]), 0.1, "x must be finite"),
        (np.array([1.0]), 0.1, "x must have shape"),
        (np.float64(2.0), 0.1, "x must have shape"),
        (np.zeros((4, 1)), 0.1, "x must have shape"),
        (["a", "b"], 0.1, "x must be real numbers"),
        ([[1.0, 2.0], [3.0]], 0.1, "x must be a real number"),
        (np.array([1 + 1j, 2]), 0.1, "x must be real numbers"),
        (np.ones((2, 3)), np.ones(3), "epsilon of shape"),
    ],
)
def test_vector_functions_reject(function, x, epsilon, message):
    with pytest.raises(ValueError, match=message):
        function(x, epsilon)


@pytest.mark.parametrize("function", [response, slope])
@pytest.mark.parametrize(
    ("t", "epsilon", "message"),
    [
        (0.5, 0.0, "epsilon must be positive"),
        (0.5, -2.0, "epsilon must be positive"),
        (0.5, float("nan"), "epsilon must be finite"),
        (float("nan"), 0.5, "t must be finite"),
        (np.array([0.0, np.inf]), 0.5, "t must be finite"),
        ("x", 0.5, "t must be real numbers"),
        (0.5, [0.1, "a"], "epsilon must be real numbers"),
    ],
)
def test_scalar_functions_reject(function, t, epsilon, message):
    with pytest.raises(ValueError, match=message):
        function(t, epsilon)


def test_python_scalars_give_a_numpy_float64_scalar():
    value = response(0.5, 0.25)
    assert isinstance(value, np.float64)
    assert isinstance(slope(1, 1), np.float64)


def test_t_and_epsilon_broadcast():
    t = np.linspace(-1, 1, 5)
    eps = np.array([[0.04], [0.25], [1.0]])
    assert response(t, eps).shape == (3, 5)
    np.testing.assert_array_equal(slope(t, eps)[1], slope(t, 0.25))


@pytest.mark.parametrize("function", [response, slope])
def test_float32_in_float32_out(function):
    assert function(np.float32(0.5), 0.25).dtype == np.float32
    assert function(np.ones(3, dtype=np.float32), np.float32(0.25)).dtype == np.float32
    assert function(np.ones(3, dtype=np.float32), np.float64(0.25)).dtype == np.float64
    assert function(np.arange(3), 1).dtype == np.float64


@pytest.mark.parametrize("function", VECTOR_FUNCTIONS)
def test_vector_dtypes(function):
    assert function(X.astype(np.float32), 0.1).dtype == np.float32
    assert function(np.array([1, 2, 4]), 1).dtype == np.float64


def test_shapes():
    batch = np.ones((4, 2, 6)) * np.arange(6)
    assert layernorm.forward(batch, 0.1).shape == (4, 2, 6)
    assert layernorm.jacobian(batch, 0.1).shape == (4, 2, 6, 6)
    assert layernorm.eigenvalues(batch, 0.1).shape == (4, 2, 6)
    assert layernorm.spectral_norm(batch, 0.1).shape == (4, 2)
    assert np.ndim(layernorm.spectral_norm(X, 0.1)) == 0


def test_eigenvalues_are_sorted_ascending(rng):
    values = layernorm.eigenvalues(rng.standard_normal((10, 7)), 0.3)
    assert (np.diff(values, axis=-1) >= 0).all()


def test_large_inputs_are_evaluated_in_chunks_without_changing_a_value():
    import seed_reference

    t = np.linspace(-3, 3, 100_003).reshape(1, -1)
    eps = np.array([[0.04], [0.25]])
    np.testing.assert_allclose(response(t, eps), seed_reference.response(t, eps), rtol=1e-14)
    np.testing.assert_allclose(slope(t, eps), seed_reference.slope(t, eps), rtol=1e-13)
    assert response(t, eps).shape == (2, 100_003)


@given(
    rows=st.integers(1, 300),
    size=st.integers(2, 800),
    where=st.floats(0, 1, exclude_max=True),
    bad=st.sampled_from([np.nan, np.inf, -np.inf]),
    dtype=st.sampled_from([np.float32, np.float64]),
    contiguous=st.booleans(),
)
def test_one_non_finite_entry_anywhere_is_refused(rows, size, where, bad, dtype, contiguous):
    """The finiteness check (a dot product of x with itself, or a sum where x is not contiguous)
    finds a single NaN or inf at any position of a large batch, and a batch of large finite
    entries whose squares overflow is not refused."""
    x = np.random.default_rng(rows * size).standard_normal((rows, 2 * size if not contiguous else size)).astype(dtype)
    x = x if contiguous else x[:, ::2]
    x[np.unravel_index(int(where * x.size), x.shape)] = bad
    with pytest.raises(ValueError, match="x must be finite"):
        numeric.rmsnorm.forward(x, 1e-5)
    x = np.clip(np.where(np.isfinite(x), x, 1.0), -1, 1) * (np.finfo(dtype).max / 2)
    assert np.isfinite(numeric.rmsnorm.forward(x, 1e-5)).all()


def _named(key: str, per_feature: np.ndarray) -> dict[str, Any]:
    """``key``'s parameters by name: each per-feature one at ``per_feature``, a scalar one
    (ScaleNorm's gain) at 1.5; one in epsilon's place (alpha) is the second argument."""
    layer = LAYERS[key]
    named: dict[str, Any] = {name: per_feature for name, _ in layer.parameters}
    return named | {name: 1.5 for name, _ in layer.scalars if layer.has_epsilon}


def _forward(key: str, x: np.ndarray, epsilon: Any = 0.5) -> np.ndarray:
    """``key``'s forward pass at x and epsilon (or alpha), every parameter at 1.5."""
    return getattr(numeric, key).forward(x, epsilon, **_named(key, np.full(x.shape[-1], 1.5)))


@pytest.mark.parametrize("key", list(LAYERS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_refuses_a_non_finite_entry_in_any_row_and_position(key, dtype):
    """The forward pass reads x's finiteness off a statistic that sees every entry, where the
    layer has one (`Compiled.witness`), instead of a pass of its own: a NaN or an inf at any
    entry of any row (beyond partial RMSNorm's first k entries too) is still refused, and
    finite entries whose squares overflow are not."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((5, 16)).astype(dtype)
    assert np.isfinite(_forward(key, x)).all()
    for row, column, bad in [(0, 0, np.nan), (3, 15, np.inf), (4, 9, -np.inf), (2, 7, np.nan)]:
        broken = x.copy()
        broken[row, column] = bad
        with pytest.raises(ValueError, match=f"x must be finite, got {bad}"):
            _forward(key, broken)
    huge = np.sign(x) * (np.finfo(dtype).max / 2)
    assert np.isfinite(_forward(key, huge)).all()
    empty = np.zeros((0, 1), dtype=dtype)  # x broadcast to no row at all: still refused
    with pytest.raises(ValueError, match="x must be finite, got nan"):
        _forward(key, np.where(np.arange(16) == 5, np.nan, x[0]), empty)


@pytest.mark.parametrize("key", list(LAYERS))
def test_the_jacobian_refuses_a_non_finite_entry_in_any_row_and_position(key):
    """The Jacobian checks x's finiteness only where a row is not safe for its direct path; a
    NaN or an inf at any entry is never safe, so it is refused, one row alone or in a batch."""
    x = np.random.default_rng(12).standard_normal((4, 6))
    function = getattr(numeric, key).jacobian
    assert np.isfinite(function(x, 0.5, **_named(key, np.full(6, 1.5)))).all()
    for row, column, bad in [(0, 0, np.nan), (3, 5, np.inf), (2, 3, -np.inf)]:
        broken = x.copy()
        broken[row, column] = bad
        for value in (broken, broken[row]):
            with pytest.raises(ValueError, match=f"x must be finite, got {bad}"):
                function(value, 0.5, **_named(key, np.full(6, 1.5)))


def test_only_a_statistic_that_sees_every_entry_stands_for_x_finiteness():
    """`Compiled.witness`, derived: a mean of x or of a polynomial in x_j over every entry;
    not partial RMSNorm's mean over its first k entries, and none for Dynamic Tanh (no
    statistic), which then checks x in a pass of its own."""
    found = {key: compiled(key).witness for key in ("layernorm", "rmsnorm", "prmsnorm", "dyt")}
    names = {key: None if m is None else str(compiled(key).statistics[m]) for key, m in found.items()}
    assert names == {"layernorm": "mu", "rmsnorm": "r", "prmsnorm": "r", "dyt": None}


@pytest.mark.parametrize("key", list(LAYERS))
def test_an_epsilon_per_row_broadcasts_against_one_x_in_the_jacobian(key):
    """x of shape (n,) and epsilon (or alpha) of shape (3,): three Jacobians, each the one at its
    own epsilon, whichever way the layer assembles J (eigenstructure or entry)."""
    layer = getattr(numeric, key)
    x = np.array([0.3, -1.0, 2.0, 0.5])
    named = _named(key, np.linspace(0.5, 1.5, x.size))
    epsilons = np.array([0.1, 1.0, 10.0])
    together = layer.jacobian(x, epsilons, **named)
    assert together.shape == (3, x.size, x.size)
    for row, e in zip(together, epsilons, strict=True):
        np.testing.assert_array_equal(row, layer.jacobian(x, e, **named))


# Training-mode BatchNorm normalizes each feature across the batch: its rows are not independent.
PER_ROW = [key for key in LAYERS if not LAYERS[key].parameters and not LAYERS[key].scalars and key != "batchnorm_train"]


@pytest.mark.parametrize("key", PER_ROW)
@pytest.mark.parametrize("shape", [(5, 4), (2, 6)])
def test_each_row_of_a_batch_is_computed_as_it_would_be_alone(key, shape):
    """A function of x on a batch of rows gives, row by row, what it gives on that row alone:
    the feature count is the last axis, never the batch's length."""
    from numeric.checks import accuracy

    layer = numeric.facade(key)
    rows = np.random.default_rng(5).standard_normal(shape)
    for name in accuracy.vector_functions(key):
        whole = getattr(layer, name)(rows, 0.3)
        alone = np.stack([getattr(layer, name)(row, 0.3) for row in rows])
        np.testing.assert_allclose(whole, alone, rtol=1e-13, atol=0, err_msg=f"{key}.{name}")


WITH_PARAMETERS = [key for key in LAYERS if LAYERS[key].parameters]


@pytest.mark.parametrize("key", WITH_PARAMETERS)
def test_a_parameter_s_gradient_over_a_batch_is_the_sum_of_its_rows_on_numpy_s_path(key, numpy_backend):
    """vjp on a batch returns dx row by row and each parameter's gradient summed over the rows:
    the sum of what each row alone gives (0.3 is epsilon, or DyT's alpha)."""
    layer = numeric.facade(key)
    rng = np.random.default_rng(11)
    rows, dy = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    named = {name: rng.uniform(0.5, 1.5, 5) for name, _ in LAYERS[key].parameters}
    whole = layer.vjp(rows, 0.3, dy, **named)
    alone = [layer.vjp(row, 0.3, d, **named) for row, d in zip(rows, dy, strict=True)]
    assert isinstance(whole, tuple)
    assert len(whole) == len(alone[0])
    np.testing.assert_allclose(whole[0], np.stack([a[0] for a in alone]), rtol=1e-13)
    for position in range(1, len(whole)):
        np.testing.assert_allclose(whole[position], sum(a[position] for a in alone), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("size", [3, 1024, 1025])
def test_a_non_finite_parameter_is_refused_by_either_finiteness_check(size):
    """Up to 1024 entries the check is one isfinite, above it a dot product: a NaN or an inf in
    a gain is refused either way, and a gain whose squares overflow is not."""
    x = np.random.default_rng(size).standard_normal(size)
    for bad in (np.nan, np.inf):
        gain = np.ones(size)
        gain[size // 2] = bad
        with pytest.raises(ValueError, match=f"gain must be finite, got {bad}"):
            numeric.layernorm_affine.forward(x, 1e-5, gain, np.zeros(size))
    huge = np.full(size, np.finfo(np.float64).max / 2)
    assert np.isfinite(numeric.layernorm_affine.jacobian(x, 1e-5, huge, np.zeros(size))).all()


def test_a_validated_parameter_is_read_only_and_the_callers_array_untouched():
    """A per-feature parameter comes back read-only whether it had x's shape or was broadcast to
    it, so that nothing downstream can write to the caller's array through it."""
    from numeric import _validate

    for shape in [(4,), (3, 4)]:
        gain = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
        found = _validate.parameter(gain, "gain", (3, 4))
        assert not found.flags.writeable, shape
        np.testing.assert_array_equal(found, np.broadcast_to(gain, (3, 4)))
        assert gain.flags.writeable
        assert np.shares_memory(found, gain), shape  # a view: no copy the size of x, whatever the shape


@pytest.mark.parametrize("shape", [(1, 6), (4, 6), (5, 1, 6)])
def test_a_gain_of_any_shape_that_broadcasts_to_x_is_taken_and_one_with_another_feature_count_is_named(shape):
    """A gain of shape (1, n), or with batch axes of its own, is x's batch's gain broadcast; its
    last axis must be the n features (not its first), else a ValueError names it."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 4, 6))
    gain = rng.standard_normal(shape)
    found = numeric.layernorm_affine.forward(x, 1e-3, gain, np.zeros(6))
    expected = numeric.layernorm_affine.forward(x, 1e-3, np.broadcast_to(gain, x.shape).copy(), np.zeros(6))
    np.testing.assert_array_equal(found, expected)
    with pytest.raises(ValueError, match=r"gain must have one entry per feature, shape \(6,\)"):
        numeric.layernorm_affine.forward(x, 1e-3, rng.standard_normal((*shape[:-1], 7)), np.zeros(6))


@pytest.mark.parametrize("function", ["forward", "vjp"])
def test_an_epsilon_array_names_its_first_entry_that_is_not_positive(function):
    """Beside positive entries below 1 (0.5, 0.25), the value named is the first that is <= 0."""
    epsilons = np.array([0.5, 0.25, -2.0, 0.0])
    args = (np.ones((4, 3)),) if function == "vjp" else ()
    with pytest.raises(ValueError, match=r"^epsilon must be positive, got -2\.0$"):
        getattr(layernorm, function)(np.tile(X, (4, 1)), epsilons, *args)
