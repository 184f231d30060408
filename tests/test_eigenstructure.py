"""Tier 4: eigenstructure through properties, against numpy.linalg."""

import numpy as np
import pytest
from grids import EPSILONS, SIZES, SYMMETRIC_LAYERS, module
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from derivations import LAYERS
from numeric import layernorm, rmsnorm
from numeric.checks import verify
from numeric.checks.agreement import assert_agree


@pytest.mark.parametrize("key", SYMMETRIC_LAYERS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_eigenstructure(key, size, epsilon, rng):
    layer = module(key).LAYER
    values = rng.standard_normal(size) * rng.uniform(0.1, 10)
    explicit = sum(1 for p in layer.eigenpairs if not p.direction.complement)
    # eigvalsh (n values), the norm (1), then n values of J v for each explicit
    # direction and for the complement when it is not empty, and each pair's multiplicity
    expected = size + 1 + size * (explicit + (size > explicit)) + len(layer.eigenpairs)
    assert verify.eigenstructure(layer, values, epsilon, rng) == expected


@pytest.mark.parametrize("key", SYMMETRIC_LAYERS)
@pytest.mark.parametrize("size", SIZES)
def test_batched_functions_match_one_at_a_time(key, size, rng):
    functions = module(key)
    batch = rng.standard_normal((3, 2, size))
    eps = np.array([[0.1], [1.0], [10.0]])
    for function in (functions.forward, functions.jacobian, functions.eigenvalues, functions.spectral_norm):
        stacked = function(batch, eps)
        single = np.array([[function(batch[a, b], eps[a, 0]) for b in range(2)] for a in range(3)])
        assert_agree(stacked, single, rtol=1e-15, what=function.__name__)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_constant_input_has_norm_one_over_root_epsilon(size, epsilon):
    constant = np.full(size, 1.7)
    assert_agree(layernorm.spectral_norm(constant, epsilon), 1 / np.sqrt(epsilon), rtol=1e-15, what="norm at c = 0")
    expected = np.r_[0.0, np.full(size - 1, 1 / np.sqrt(epsilon))]
    assert_agree(layernorm.eigenvalues(constant, epsilon), expected, rtol=1e-15, what="eigenvalues at c = 0")


def test_two_features_norm_is_the_centered_eigenvalue():
    values = np.array([-1.0, 1.0])  # q = 1
    assert_agree(layernorm.spectral_norm(values, 0.5), 0.5 / 1.5**1.5, rtol=1e-15, what="n = 2 norm")


vectors = st.integers(2, 9).flatmap(
    lambda size: arrays(np.float64, size, elements=st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False))
)


@given(values=vectors, epsilon=st.floats(1e-4, 1e2))
@example(values=np.full(4, 3.0), epsilon=0.25)  # constant input
@example(values=np.array([1.0, 1.0 + 1e-9, 1.0]), epsilon=1e-4)  # tiny variance
@example(values=np.array([-2.0, 5.0]), epsilon=1.0)  # n = 2
def test_properties(values, epsilon):
    jac = layernorm.jacobian(values, epsilon)
    bound = 1 / np.sqrt(epsilon)
    tol = {"rtol": 1e-9, "atol": 1e-12 * bound}
    assert_agree(jac, jac.T, **tol, what="symmetry")
    assert_agree(jac @ np.ones(values.size), np.zeros(values.size), **tol, what="J 1 = 0")
    assert_agree(layernorm.eigenvalues(values, epsilon), np.linalg.eigvalsh(jac), **tol, what="eigenvalues")
    norm = layernorm.spectral_norm(values, epsilon)
    assert_agree(norm, np.linalg.norm(jac, 2), **tol, what="norm")
    assert norm <= bound * (1 + 1e-14)
    u = layernorm.forward(values, epsilon)
    q = np.var(values)
    assert_agree(np.mean(u**2), q / (q + epsilon), rtol=1e-12, atol=1e-15, what="second moment")


@pytest.mark.parametrize("size", SIZES)
def test_rmsnorm_at_zero_input_has_norm_one_over_root_epsilon(size):
    zero = np.zeros(size)
    assert_agree(rmsnorm.spectral_norm(zero, 0.04), 5.0, rtol=1e-15, what="RMS norm at x = 0")
    assert_agree(rmsnorm.eigenvalues(zero, 0.04), np.full(size, 5.0), rtol=1e-15, what="RMS eigenvalues at x = 0")


def test_rmsnorm_two_features_norm_is_one_over_s():
    """Unlike LayerNorm, RMSNorm's complement is never empty: the norm is 1/s already at n = 2."""
    values = np.array([3.0, 4.0])  # r = 12.5
    assert_agree(rmsnorm.spectral_norm(values, 0.5), 1 / np.sqrt(13.0), rtol=1e-15, what="RMS n = 2 norm")


@pytest.mark.parametrize("key", SYMMETRIC_LAYERS)
def test_derived_bound_holds_and_is_attained_at_the_degenerate_input(key, rng):
    layer = module(key).LAYER
    eps = np.array([1e-4, 0.25, 9.0])
    # epsilon inside the root bounds |J| by 1/sqrt(epsilon); added to a standard
    # deviation, by 1/epsilon: far larger for small epsilon.
    # With epsilon a floor on a norm, by 1/epsilon too: the length scale epsilon sets.
    expected = 1 / layer.epsilon_root(eps)
    assert_agree(layer.bound(eps), expected, rtol=1e-15, what="bound")
    norms = layer.spectral_norm(rng.standard_normal((3, 5)), eps)
    # Attained on a whole regime for a clamp (every ||x|| < epsilon), hence <=.
    assert (norms <= layer.bound(eps)).all()
    degenerate = np.zeros(5)  # constant for LayerNorm, zero for RMSNorm
    assert_agree(layer.spectral_norm(degenerate, eps[1]), layer.bound(eps[1]), rtol=1e-15, what="equality")


@pytest.mark.parametrize("key", SYMMETRIC_LAYERS)
@pytest.mark.parametrize("size", SIZES)
def test_spectral_assembly_and_entry_route_agree(key, size, rng):
    """Two routes to J: Sum lambda_d Pi_d (the public one) and the derived entry J_ik."""
    layer = module(key).LAYER
    values = rng.standard_normal((4, size)) * rng.uniform(0.1, 10)
    eps = np.array([1e-3, 0.1, 1.0, 30.0])
    assert_agree(
        layer.jacobian(values, eps),
        layer.jacobian_from_entry(values, eps),
        rtol=1e-9,
        atol=1e-12 * float(np.max(layer.bound(eps))),
        what="spectral assembly vs entry",
    )


# `_assemble.direct` takes layers without subsets (a subset's indicator picks the spread's entries).
DIRECT_LAYERS = [key for key in SYMMETRIC_LAYERS if not LAYERS[key].subsets]


@pytest.mark.parametrize("key", DIRECT_LAYERS)
def test_the_eigen_assembly_normalizes_each_direction_so_its_square_does_not_underflow(key, rng):
    """`_assemble.from_eigen` at rows of 1e-100 taken as they are (no rescaling first): a
    direction's squared length, 1e-200, would be fine, but a direction scaled down once more
    would not; each is divided by its largest entry first, so J agrees with the public one."""
    from numeric.kernels import assemble as _assemble
    from numeric.kernels import kernel as _kernel

    layer = module(key).LAYER
    rows = rng.standard_normal((3, 5)) * 1e-100
    eps = np.array([[1e-200], [3e-201], [1e-199]])
    assembled = _assemble.from_eigen(layer._c, rows, _kernel.statistics(layer, rows), eps)
    public = layer.jacobian(rows, eps[:, 0])
    assert_agree(assembled, public, rtol=1e-12, atol=1e-14 * np.max(np.abs(public)), what=key)


@pytest.mark.parametrize("key", DIRECT_LAYERS)
@pytest.mark.parametrize("size", [2, 3, 8, 64, 129])
def test_the_direct_jacobian_agrees_with_the_rescaled_one_and_knows_where_it_is_not_safe(key, size, rng):
    """`_assemble.direct` takes rows at a safe scale in a few NumPy calls; the general path
    rescales each row first.  On safe rows they agree to rounding; rows that are not safe (far
    from epsilon's scale, a large offset, a vanishing direction) are flagged, and the public
    Jacobian of a batch mixing both agrees with each row taken alone.  Past 128 entries
    (`PRODUCT`) the direct path adds its rank-one updates one outer product each."""
    from numeric.kernels import assemble as _assemble

    layer = module(key).LAYER
    rows = rng.standard_normal((4, size)) * np.array([[1e-3], [1.0], [30.0], [1e4]])
    eps = np.array([[1e-5], [0.25], [3.0], [1e-2]])
    direct, safe = _assemble.direct(layer._c, rows, eps)
    assert safe.all()
    general = layer._at_scale(  # the general path: each row rescaled, J assembled from the eigenpairs
        lambda scaled, e_scaled, stats: _assemble.from_eigen(layer._c, scaled, stats, e_scaled),
        rows,
        eps[:, 0],
        layer._c.entry.degree,
        layer._subsets(None, rows.shape),
    )
    assert_agree(direct, general, rtol=1e-12, atol=1e-14 * np.max(np.abs(general)), what=f"{key} direct vs general")
    offset = rows[1] + 1e10 if layer._c.centered else rows[1] * 1e-200  # an offset only a centered layer drops
    unsafe = np.stack([rows[0] * 1e200, offset, np.zeros(size), rows[2]])
    e_unsafe = np.array([[0.25], [0.25], [0.25], [1e-250]])
    _, flagged = _assemble.direct(layer._c, unsafe, e_unsafe)
    assert not flagged.any()
    mixed = np.concatenate([rows, unsafe])
    e_mixed = np.concatenate([eps, e_unsafe])[:, 0]
    together = layer.jacobian(mixed, e_mixed)
    alone = np.stack([layer.jacobian(row, e) for row, e in zip(mixed, e_mixed, strict=True)])
    assert_agree(together, alone, rtol=1e-15, what=f"{key} batch vs each row")


@pytest.mark.parametrize("key", DIRECT_LAYERS)
def test_a_direction_that_vanishes_in_a_safe_row_leaves_that_row_to_the_general_path(key, rng):
    """A direction of length 0 has no rank-one update (its weight divides by the length): the
    direct path flags the row as not safe even where x and epsilon are at a safe scale.  The
    catalog's directions vanish only where x is constant or 0, already not safe; a layer whose
    direction vanishes elsewhere is here the catalog's with every direction 0 in the rows
    whose first entry is positive."""
    import dataclasses

    from numeric.kernels import assemble as _assemble

    compiled = module(key).LAYER._c

    def vanishing(pair):
        def entry(x, *stats):
            return np.where(x[..., :1] > 0, 0.0, pair.entry(x, *stats))

        return pair if pair.entry is None else dataclasses.replace(pair, entry=entry)

    class Vanishing:
        def __init__(self):
            self.eigen = [vanishing(pair) for pair in compiled.eigen]

        def __getattr__(self, name):
            return getattr(compiled, name)

    rows = rng.standard_normal((6, 5)) * 2.0 + np.arange(6)[:, None] * 0.1
    rows[:, 0] = [1.0, -1.0, 2.0, -2.0, 0.5, -0.5]
    eps = np.full((6, 1), 0.25)
    _, safe = _assemble.direct(compiled, rows, eps)
    assert safe.all()
    _, safe = _assemble.direct(Vanishing(), rows, eps)
    np.testing.assert_array_equal(safe[:, 0], rows[:, 0] < 0)


@pytest.mark.parametrize("key", DIRECT_LAYERS)
@pytest.mark.parametrize("size", [2, 5, 64])
def test_the_direct_jacobian_of_one_row_is_that_of_a_batch_of_one(key, size, rng):
    """One row and one epsilon take NumPy scalars for the statistics and eigenvalues; the
    arithmetic is the same, so the Jacobian and the safety flag are those of a batch of one."""
    from numeric.kernels import assemble as _assemble

    layer = module(key).LAYER
    row = rng.standard_normal(size) * 3.0 + 0.5
    flags = []
    for x, e in [(row, 0.1), (row * 1e200, 0.25), (row + 1e10, 0.25), (np.zeros(size), 0.25), (row, 1e-250)]:
        one, safe_one = _assemble.direct(layer._c, x, np.array([e]))
        batch, safe_batch = _assemble.direct(layer._c, x[None, :], np.array([[e]]))
        assert safe_one.shape == (1,)
        assert safe_one[0] == safe_batch[0, 0]
        if safe_one[0]:
            np.testing.assert_array_equal(one, batch[0])
        flags.append(bool(safe_one[0]))
    assert flags[0]
    assert not any(flags[i] for i in (1, 3, 4))


def test_a_direction_enters_the_spectral_norm_from_the_n_where_its_multiplicity_turns_positive(monkeypatch):
    """Three explicit directions leave a complement of multiplicity n - 3: it exists from n = 4 on,
    and at n = 2 and 3 (multiplicity -1 and 0) its eigenvalue bounds nothing."""
    import dataclasses

    import sympy as sp

    from derivations.cache import ENVIRONMENT
    from derivations.derive import eigen, jacobian, spectral
    from derivations.symbols import epsilon, n

    monkeypatch.setenv(ENVIRONMENT, "1")  # nothing read from or written to the derivation cache
    layer = dataclasses.replace(LAYERS["layernorm"], key="three_directions", title="three explicit directions")
    explicit = [d for d in layer.directions if not d.complement]
    complement = next(d for d in layer.directions if d.complement)
    pairs = (
        eigen.Eigen(explicit[0], sp.Integer(0), sp.Integer(1)),
        eigen.Eigen(explicit[1], 1 / (1 + epsilon), sp.Integer(1)),
        eigen.Eigen(explicit[1], 2 / (2 + epsilon), sp.Integer(1)),
        eigen.Eigen(complement, 4 / epsilon, n - 3),
    )
    monkeypatch.setattr(eigen, "eigenpairs", lambda _: pairs)
    monkeypatch.setattr(jacobian, "is_symmetric", lambda _: True)
    found = spectral.cases(layer)
    assert found == ((2, 2 / (2 + epsilon)), (4, 4 / epsilon))


@pytest.mark.parametrize("name", ["eigenvalues", "spectral_norm"])
@pytest.mark.parametrize("key", ["layernorm", "rmsnorm"])
def test_the_eigenstructure_check_fails_on_a_value_off_by_one_part_in_a_hundred_million(name, key, monkeypatch, rng):
    """The check can fail: derived eigenvalues, or a norm, off by 1e-8 of themselves (far below
    the bound on J) are refused, naming what disagreed."""
    layer = module(key).LAYER
    values = rng.standard_normal(5)
    right = getattr(layer, name)
    assert verify.eigenstructure(layer, values, 0.1, rng) > 0
    monkeypatch.setattr(layer, name, lambda *args: right(*args) * (1 + 1e-8))
    with pytest.raises(AssertionError, match=name):
        verify.eigenstructure(layer, values, 0.1, rng)


@pytest.mark.parametrize(
    ("key", "direction", "wrong"), [("layernorm", "centered", 2), ("layernorm", "ones", 0), ("dyt", "", 0)]
)
def test_the_eigenstructure_check_fails_on_a_wrong_multiplicity(key, direction, wrong, monkeypatch, rng):
    """The check can fail: a derived multiplicity other than the eigenspace's dimension (c's value
    claimed twice at n = 5, 1 claimed no times, a coordinate vector's value claimed no times) is
    refused, whether numpy's eigenvalues hold it fewer times or the multiplicities miss n."""
    import dataclasses

    import sympy as sp

    from derivations.derive import eigen

    layer = module(key).LAYER
    values = rng.standard_normal(5)
    right = eigen.eigenpairs(layer.definition)
    assert verify.eigenstructure(layer, values, 0.1, rng) > 0

    def changed(definition):
        return tuple(
            dataclasses.replace(pair, multiplicity=sp.Integer(wrong))
            if pair.direction.name == direction or not direction
            else pair
            for pair in right
        )

    monkeypatch.setattr(eigen, "eigenpairs", changed)
    with pytest.raises(AssertionError, match="multiplicit"):
        verify.eigenstructure(layer, values, 0.1, rng)


@pytest.mark.parametrize("factor", [1 + 1e-4, 1 - 1e-4, -1.0])
def test_the_jacobian_check_against_differences_fails_on_a_jacobian_off_by_a_little(factor, monkeypatch, rng):
    """The check can fail: J scaled by 1 +- 1e-4 (or of the wrong sign) disagrees with the central
    differences in the first direction tried."""
    layer = module("layernorm").LAYER
    values = rng.standard_normal(5)
    right = layer.jacobian
    assert verify.jacobian_against_differences(layer, values, 0.1, rng) == 15
    monkeypatch.setattr(layer, "jacobian", lambda *args: right(*args) * factor)
    with pytest.raises(AssertionError, match="J v vs differences"):
        verify.jacobian_against_differences(layer, values, 0.1, rng)


@pytest.mark.parametrize("key", ["layernorm", "rmsnorm"])
def test_each_eigenpairs_multiplicity_is_a_pair_of_python_ints(key):
    """`eigenpairs` gives each multiplicity as a * n + b in Python ints, as it is annotated; the
    coefficients SymPy's Poly gives are SymPy Integers, and a count made of one is no int."""
    pairs = module(key).LAYER.eigenpairs
    assert pairs
    for pair in pairs:
        assert all(type(value) is int for value in pair.multiplicity), pair.multiplicity
        assert type(pair.count(7)) is int
