"""GroupNorm and training-mode BatchNorm: the base layer applied block by block.

Every number here is recomputed independently of numeric/_grouped.py: the
whole map's Jacobian by central differences in random directions, its norm
and eigenvalues by numpy.linalg, the blocks by slicing x by hand.
"""

import numpy as np
import pytest

import numeric
from derivations import LAYERS, formulas
from derivations.__main__ import main
from derivations.codegen import emit
from derivations.derive.grouped import Grouped
from numeric.checks.agreement import assert_agree

GROUPED = [key for key, layer in LAYERS.items() if isinstance(layer, Grouped)]
EPSILONS = (1e-6, 0.04, 1.0)


def test_the_catalog_has_groupnorm_and_batchnorm_as_blocked_layernorm():
    assert {key: LAYERS[key].base.key for key in GROUPED} == {"groupnorm": "layernorm", "batchnorm_train": "layernorm"}


@pytest.mark.parametrize("key", GROUPED)
def test_every_base_result_holds_per_block_and_the_block_structure_is_added(key):
    layer = LAYERS[key]
    base = {f.name: f for f in formulas(layer.base.key)}
    own = {f.name: f for f in formulas(key)}
    assert set(own) - set(base) == {"block_structure"}
    for name, found in base.items():
        assert own[name].expr == found.expr, name
        assert own[name].layer == key
        assert own[name].statement.endswith(f"Per {layer.blocks}: n is {layer.size}.")
    assert "every entry outside the diagonal blocks is 0" in own["block_structure"].detail


def _differences(function, x: np.ndarray, v: np.ndarray) -> np.ndarray:
    h = 1e-6 * max(1.0, float(np.abs(x).max())) / np.linalg.norm(v)
    return (function(x + h * v) - function(x - h * v)) / (2 * h)


@pytest.mark.parametrize("groups", [1, 2, 3])
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_groupnorm_is_layernorm_of_each_group(groups, epsilon):
    rng = np.random.default_rng(groups)
    x = rng.standard_normal((4, 6 * groups)) * 3 + 1
    by_hand = np.concatenate(
        [numeric.layernorm.forward(part, epsilon) for part in np.split(x, groups, axis=-1)], axis=-1
    )
    assert_agree(numeric.groupnorm.forward(x, epsilon, groups=groups), by_hand, rtol=1e-15, what="groupnorm")


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_batchnorm_normalizes_each_feature_over_the_batch(epsilon):
    x = np.random.default_rng(5).standard_normal((5, 3)) * 2 - 1
    columns = np.stack([numeric.layernorm.forward(x[:, f], epsilon) for f in range(3)], axis=1)
    assert_agree(numeric.batchnorm_train.forward(x, epsilon), columns, rtol=1e-15, what="batchnorm")


@pytest.mark.parametrize(
    ("key", "shape", "named"), [("batchnorm_train", (6, 3), {}), ("groupnorm", (2, 6), {"groups": 2})]
)
def test_an_upstream_gradient_broadcasts_against_x_as_told(key, shape, named, rng):
    """dy of one row (one entry per feature) is every row's, in the caller's layout, not the blocks'."""
    layer, x = getattr(numeric, key), rng.standard_normal(shape)
    dy = rng.standard_normal(shape[-1])
    whole = np.broadcast_to(dy, shape)
    assert_agree(layer.vjp(x, 0.1, dy, **named), layer.vjp(x, 0.1, whole, **named), rtol=0, what="vjp")
    assert_agree(layer.jvp(x, 0.1, dy, **named), layer.jvp(x, 0.1, whole, **named), rtol=0, what="jvp")


def test_a_batch_takes_one_epsilon_per_feature(rng):
    x, eps = rng.standard_normal((6, 4)), np.array([1e-6, 0.01, 0.25, 4.0])
    columns = [numeric.batchnorm_train.forward(x[:, [f]], eps[f])[:, 0] for f in range(4)]
    for given in (eps, eps[None, :]):
        assert_agree(numeric.batchnorm_train.forward(x, given), np.stack(columns, axis=1), rtol=0, what="forward")
        jacobian = numeric.batchnorm_train.jacobian(x, given)
        assert jacobian.shape == (4, 6, 6)
        for f in range(4):
            assert_agree(jacobian[f], numeric.layernorm.jacobian(x[:, f], eps[f]), rtol=1e-14, what=f"J of {f}")
    # Any other shape broadcasts with the features, its own axes in front (it came back transposed,
    # the batch behind them): one evaluation per row of epsilon.
    stacked = np.stack([eps, 10 * eps])
    assert numeric.batchnorm_train.forward(x, stacked).shape == (2, 6, 4)
    assert numeric.batchnorm_train.forward(x, stacked[:, :1]).shape == (2, 6, 4)
    for row, e in enumerate(stacked):
        assert_agree(
            numeric.batchnorm_train.forward(x, stacked)[row], numeric.batchnorm_train.forward(x, e), rtol=0, what="row"
        )
        assert_agree(
            numeric.batchnorm_train.vjp(x, stacked, x)[row], numeric.batchnorm_train.vjp(x, e, x), rtol=0, what="vjp"
        )


@pytest.mark.parametrize("shape", [(), (1,), (3,), (1, 5), (2, 1)])
def test_one_feature_is_layernorm_over_the_batch_at_any_epsilon_shape(shape, rng):
    """x of shape (B,) is one feature normalized over its B examples: LayerNorm of x, with
    epsilon broadcast as every layer broadcasts it against x of shape (n,), its axes in front."""
    x, dy = rng.standard_normal(5), rng.standard_normal(5)
    eps = np.full(shape, 0.25) * (1 + np.arange(int(np.prod(shape)))).reshape(shape)
    batch, row = numeric.batchnorm_train, numeric.layernorm
    assert_agree(batch.forward(x, eps), row.forward(x, eps), rtol=0, what="forward")
    assert batch.forward(x, eps).shape == (*shape, 5)
    assert_agree(batch.vjp(x, eps, dy), row.vjp(x, eps, dy), rtol=0, what="vjp")
    assert_agree(batch.jacobian(x, eps), row.jacobian(x, eps), rtol=0, what="jacobian")


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_groupnorm_jacobian_is_block_diagonal_and_matches_differences(epsilon):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(12) * 2
    jac = numeric.groupnorm.jacobian(x, epsilon, groups=3)
    assert jac.shape == (12, 12)
    for a in range(3):
        for b in range(3):
            if a != b:
                assert not jac[4 * a : 4 * a + 4, 4 * b : 4 * b + 4].any()
    for _ in range(3):
        v = rng.standard_normal(12)
        fd = _differences(lambda z: numeric.groupnorm.forward(z, epsilon, groups=3), x, v)
        assert_agree(jac @ v, fd, rtol=1e-6, atol=1e-7 * np.linalg.norm(v) / np.sqrt(epsilon), what="J v")
    assert np.isclose(numeric.groupnorm.spectral_norm(x, epsilon, groups=3), np.linalg.norm(jac, 2), rtol=1e-10)
    assert_agree(
        numeric.groupnorm.eigenvalues(x, epsilon, groups=3),
        np.linalg.eigvalsh(jac),
        rtol=1e-9,
        atol=1e-12 / np.sqrt(epsilon),
        what="eigenvalues",
    )
    y = numeric.groupnorm.forward(x, epsilon, groups=3)
    assert np.isclose(numeric.groupnorm.second_moment(x, epsilon, groups=3), np.mean(y**2), rtol=1e-12)
    assert numeric.groupnorm.eigen_centered(x, epsilon, groups=3).shape == (3,)  # one per group


def test_groupnorm_eigenvalues_of_a_batch_are_each_rows_own():
    """A batch of inputs gives one ascending spectrum per input, of the whole block-diagonal J of
    that input alone (numpy.linalg's), not the batch's spectra pooled."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 8)) * np.array([[[1.0]], [[30.0]]])
    found = numeric.groupnorm.eigenvalues(x, 0.04, groups=2)
    assert found.shape == (2, 3, 8)
    for index in np.ndindex(2, 3):
        jac = numeric.groupnorm.jacobian(x[index], 0.04, groups=2)
        assert_agree(found[index], np.linalg.eigvalsh(jac), rtol=1e-9, atol=1e-12, what=f"eigenvalues {index}")


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_batchnorm_jacobian_couples_the_examples_of_each_feature(epsilon):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 3))
    jac = numeric.batchnorm_train.jacobian(x, epsilon)
    assert jac.shape == (3, 4, 4)
    for _ in range(3):
        v = rng.standard_normal(x.shape)
        fd = _differences(lambda z: numeric.batchnorm_train.forward(z, epsilon), x, v)
        by_feature = np.stack([jac[f] @ v[:, f] for f in range(3)], axis=1)
        assert_agree(by_feature, fd, rtol=1e-6, atol=1e-7 * np.linalg.norm(v) / np.sqrt(epsilon), what="J v")
    norms = [np.linalg.norm(jac[f], 2) for f in range(3)]
    assert np.isclose(numeric.batchnorm_train.spectral_norm(x, epsilon), max(norms), rtol=1e-10)


@pytest.mark.parametrize(
    ("key", "shape", "named"), [("groupnorm", (3, 8), {"groups": 2}), ("batchnorm_train", (5, 3), {})]
)
def test_backward_products_are_the_jacobian_products(key, shape, named):
    rng = np.random.default_rng(13)
    module = getattr(numeric, key)
    x, dy, v = (rng.standard_normal(shape) for _ in range(3))
    eps = 0.01
    vjp, jvp = module.vjp(x, eps, dy, **named), module.jvp(x, eps, v, **named)
    assert vjp.shape == jvp.shape == shape
    # <dy, J v> = <J^T dy, v>, and J v by central differences of forward.
    fd = _differences(lambda z: module.forward(z, eps, **named), x, v)
    assert_agree(jvp, fd, rtol=1e-6, atol=1e-6, what="jvp vs differences")
    assert np.isclose(np.sum(dy * jvp), np.sum(vjp * v), rtol=1e-12)
    # The Hessian product: differences of the input gradient along v.
    second = _differences(lambda z: module.vjp(z, eps, dy, **named), x, v)
    assert_agree(module.hvp(x, eps, dy, v, **named), second, rtol=1e-5, atol=1e-5, what="hvp vs differences")


def test_float32_stays_float32():
    x = np.random.default_rng(1).standard_normal((2, 6)).astype(np.float32)
    assert numeric.groupnorm.forward(x, np.float32(1e-5), groups=3).dtype == np.float32
    assert numeric.batchnorm_train.forward(x, np.float32(1e-5)).dtype == np.float32


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: numeric.groupnorm.forward(np.ones((2, 6)), 1e-5, groups=4), "multiple of groups=4"),
        (lambda: numeric.groupnorm.forward(np.ones(6), 1e-5, groups=0), "groups must be a positive integer"),
        (lambda: numeric.groupnorm.forward(np.ones(6), 1e-5, groups=2.0), "groups must be a positive integer"),
        (lambda: numeric.groupnorm.forward(np.ones(6), 1e-5, groups=True), "groups must be a positive integer"),
        (lambda: numeric.groupnorm.jacobian(np.ones(6), 1e-5, group=2), "group is not an argument"),
        (lambda: numeric.groupnorm.spectral_norm(np.ones(6), 1e-5, groups=4), "multiple of groups=4"),
        (lambda: numeric.batchnorm_train.forward(np.ones((2, 3, 4)), 1e-5), "shape \\(B, features\\)"),
        (lambda: numeric.groupnorm.vjp(np.ones((2, 6)), 1e-5, np.ones((2, 5)), groups=2), "dy"),
        (
            lambda: numeric.batchnorm_train.vjp(np.ones((4, 3)), 1e-5, np.ones((4, 2))),
            r"dy of shape \(4, 2\) does not broadcast with x's shape \(4, 3\)",  # the caller's layout
        ),
        (lambda: numeric.batchnorm_train.forward(np.ones((4, 3)), -1.0), "epsilon"),
        # Told in the caller's terms, not as a block of one entry.
        (
            lambda: numeric.groupnorm.forward(np.ones((2, 5)), 0.1, groups=5),
            r"groups=5 leaves 1 entry per group of x's 5; a group needs 2",
        ),
        (
            lambda: numeric.batchnorm_train.forward(np.ones((1, 3)), 0.1),
            r"x must have shape \(B, features\) with B >= 2 examples; got shape \(1, 3\)",
        ),
        (
            lambda: numeric.groupnorm.forward(np.ones((4, 6)), np.full((1, 6), 0.1), groups=2),
            r"epsilon of shape \(1, 6\) does not broadcast with the batch shape \(4,\) of x",  # the caller's layout
        ),
        (
            lambda: numeric.groupnorm.forward(np.ones((2, 3, 6)), np.full(2, 0.1), groups=2),
            r"epsilon of shape \(2,\) does not broadcast with the batch shape \(2, 3\) of x",  # every batch axis
        ),
        (
            lambda: numeric.batchnorm_train.forward(np.ones((4, 3)), np.full(2, 0.1)),
            r"epsilon of shape \(2,\) does not broadcast with the features \(3,\) of x",  # one per feature
        ),
        (
            lambda: numeric.batchnorm_train.vjp(np.ones((4, 3)), np.full((3, 2), 0.1), np.ones((4, 3))),
            r"epsilon of shape \(3, 2\) does not broadcast with the features \(3,\) of x",
        ),
    ],
)
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("key", GROUPED)
def test_codegen_points_to_the_base_layer(key, capsys):
    with pytest.raises(ValueError, match=f"emit --layer {LAYERS[key].base.key}"):
        emit(key, "numpy")
    with pytest.raises(SystemExit) as stop:
        main(["codegen", "--layer", key, "--target", "c"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "Traceback" not in err


@pytest.mark.parametrize("sign", [1, -1])
def test_an_entry_that_couples_two_blocks_is_refused_whatever_its_sign(sign, monkeypatch):
    """block_structure proves J block-diagonal: an output of block 0 that also moves with an entry
    of block 1 (by +1 or by -1) is refused, not taken as a block of the base."""
    from derivations import DerivationError
    from derivations.derive import grouped
    from derivations.symbols import x

    real = grouped._blocked_output

    def coupled(layer, count, size):
        outputs = real(layer, count, size)
        return [outputs[0] + sign * x[size], *outputs[1:]]

    monkeypatch.setattr(grouped, "_blocked_output", coupled)
    with pytest.raises(DerivationError, match=r"J\[0, 2\] couples two blocks"):
        grouped.block_structure.__wrapped__(LAYERS["groupnorm"])


def test_an_epsilon_per_row_of_a_batch_of_several_axes_is_each_row_s_own():
    """x of shape (2, 3, n): epsilon of shape (3,) or (2, 3) broadcasts against the batch shape
    (2, 3), one value per row, each row's result the one of its own call."""
    rng = np.random.default_rng(29)
    x = rng.standard_normal((2, 3, 6))
    for eps in (np.array([0.1, 0.2, 0.3]), np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])):
        found = numeric.groupnorm.forward(x, eps, groups=2)
        full = np.broadcast_to(eps, (2, 3))
        for b, r in np.ndindex(2, 3):
            np.testing.assert_array_equal(found[b, r], numeric.groupnorm.forward(x[b, r], full[b, r], groups=2))
