"""Tier 2: lambdified functions against the symbolic expressions, at seeded points."""

import numpy as np
import pytest
import sympy as sp
from grids import EPSILONS
from numeric.layernorm import LAYER

from derivations.derive import eigen, jacobian
from derivations.symbols import epsilon as EPS
from derivations.symbols import i, k, mu, n, q, x
from numeric import layernorm
from numeric.checks import verify
from numeric.checks.agreement import AgreementError, assert_agree, exact

T_GRID = np.concatenate([[0.0, -0.0], -np.logspace(-4, 2, 7), np.logspace(-4, 2, 7), [-0.8, -0.1, 0.2, 0.7]])


@pytest.mark.parametrize("name", ["response", "slope"])
@pytest.mark.parametrize("epsilon", [1e-6, 1e-4, 1e-2, 1.0, 1e2])
def test_scalar_function_matches_symbolic(name, epsilon):
    assert verify.scalar_against_symbolic(LAYER, name, T_GRID, np.array([epsilon])) == T_GRID.size


def test_symbolic_check_catches_a_wrong_function(monkeypatch):
    monkeypatch.setattr(LAYER, "slope", lambda t, e: e / (2 * t**2 / 3 + e) ** 1.4999)
    with pytest.raises(AgreementError, match="slope vs symbolic"):
        verify.scalar_against_symbolic(LAYER, "slope", T_GRID, np.array([0.25]))


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_jacobian_entries_match_symbolic(epsilon, rng):
    values = rng.standard_normal(4)
    entry = jacobian.entry(LAYER.definition)
    m, v = float(np.mean(values)), float(np.var(values))
    expected = np.array(
        [
            [
                exact(
                    entry.subs({i: r, k: col, n: 4}), {x[r]: values[r], x[col]: values[col], mu: m, q: v, EPS: epsilon}
                )
                for col in range(4)
            ]
            for r in range(4)
        ]
    )
    assert_agree(layernorm.jacobian(values, epsilon), expected, rtol=1e-12, atol=1e-15 / np.sqrt(epsilon), what="J")


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_forward_matches_definition(epsilon, rng):
    values = rng.standard_normal(5)
    m = sp.Rational(float(np.mean(values)))
    expected = [
        exact(
            LAYER.definition.output.subs(x[i], x[r]),
            {x[r]: values[r], mu: float(m), q: float(np.var(values)), EPS: epsilon},
        )
        for r in range(5)
    ]
    assert_agree(layernorm.forward(values, epsilon), np.array(expected), rtol=1e-12, atol=1e-15, what="forward")


@pytest.mark.parametrize("size", [2, 3, 7])
def test_eigenvalues_match_symbolic_values(size, rng):
    values = rng.standard_normal(size)
    point = {mu: float(np.mean(values)), q: float(np.var(values)), EPS: 0.25}
    expected = sorted(
        exact(p.value, point)
        for p in eigen.eigenpairs(LAYER.definition)
        for _ in range(int(p.multiplicity.subs(n, size)))
    )
    assert_agree(layernorm.eigenvalues(values, 0.25), np.array(expected), rtol=1e-13, atol=1e-16, what="eigenvalues")


def test_agreement_helper_refuses_shape_mismatch_and_nan():
    with pytest.raises(AgreementError, match="shape"):
        assert_agree(np.ones(3), np.ones((3, 1)), rtol=1e-3, what="shapes")
    with pytest.raises(AgreementError, match="non-finite"):
        assert_agree(np.array([np.nan]), np.array([1.0]), rtol=1e-3, what="nan")
    assert assert_agree(np.ones(3), np.ones(3), rtol=0, what="equal") == 3


ROUTED = ["layernorm", "rmsnorm", "layernorm_std_eps", "rmsnorm_eps_outside"]


@pytest.mark.parametrize("key", ROUTED)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_each_row_takes_its_own_path(key, dtype):
    # A batch mixing rows the fused program takes as they are with rows it must
    # rescale (an offset, a huge and a tiny scale) gives each row what it gives alone.
    import numeric

    layer = getattr(numeric, key)
    rng = np.random.default_rng(7)
    z = rng.standard_normal((5, 16))
    top = np.finfo(dtype).max ** 0.5
    rows = np.stack([z[0], 1e4 + z[1], top * z[2], 1e-30 * z[3], z[4]]).astype(dtype)
    dy = rng.standard_normal((5, 16)).astype(dtype)
    for name, args in (("forward", ()), ("vjp", (dy,)), ("jvp", (dy,))):
        function = getattr(layer, name)
        together = function(rows, dtype(1e-5), *args)
        assert together.dtype == dtype
        alone = np.stack([function(rows[m], dtype(1e-5), *(a[m] for a in args)) for m in range(5)])
        np.testing.assert_array_equal(together, alone)


@pytest.mark.parametrize("key", ROUTED)
def test_float32_fused_path_agrees_with_float64(key):
    import numeric

    layer = getattr(numeric, key)
    rng = np.random.default_rng(8)
    x, dy = rng.standard_normal((64, 768)), rng.standard_normal((64, 768))
    for name, args in (("forward", ()), ("vjp", (dy,)), ("jvp", (dy,))):
        wide = getattr(layer, name)(x, 1e-5, *args)
        narrow = getattr(layer, name)(x.astype(np.float32), np.float32(1e-5), *(a.astype(np.float32) for a in args))
        assert narrow.dtype == np.float32
        # Normwise, per row: a few float32 ulp of the row's largest entry.
        error = np.max(np.abs(narrow - wide), axis=-1) / np.max(np.abs(wide), axis=-1)
        assert np.max(error) < 64 * np.finfo(np.float32).eps, np.max(error)


def test_max_and_min_compile_to_numpy():
    """A user's definition may use max and min: the printer's functools.reduce has its module."""
    from numeric.kernels.lambdify import compile

    a, b, c = sp.symbols("a b c", real=True)
    values = [np.array([1.0, -2.0]), np.array([0.5, 3.0]), np.array([2.0, 0.0])]
    np.testing.assert_array_equal(compile(sp.Max(a, b, c), [a, b, c])(*values), np.maximum.reduce(values))
    np.testing.assert_array_equal(compile(sp.Min(a, b), [a, b, c])(*values), np.minimum(values[0], values[1]))


def test_a_private_name_is_no_function_and_compiles_nothing(monkeypatch):
    """pytest's doctest finder probes every module for _mock_name and __wrapped__: no layer is
    compiled for that (collection compiled all of them, 2 s a worker)."""
    import numeric.rmsnorm_eps_outside as module

    def compiling(*_):
        raise AssertionError("a private name was looked up among the layer's functions")

    monkeypatch.setattr(type(module.LAYER), "names", compiling)
    monkeypatch.setattr(type(module.LAYER), "function", compiling)
    for name in ("_mock_name", "__wrapped__", "_anything"):
        assert not hasattr(module, name)
    monkeypatch.undo()
    assert callable(module.response)  # a public name still is


def test_sympy_keeps_the_results_a_derivation_revisits():
    """`derivations` sets SymPy's cache size before SymPy is imported (a user's own setting is kept)."""
    from conftest import USER_SYMPY_CACHE_SIZE as user
    from sympy.core import cache

    if user is None:
        assert cache.SYMPY_CACHE_SIZE == 100_000
    else:  # as SymPy reads it: "none" is unbounded
        assert (None if user.lower() == "none" else int(user)) == cache.SYMPY_CACHE_SIZE


def test_no_cache_size_is_set_where_sympy_came_first():
    """The size SymPy read at its import cannot change: `derivations` then leaves the environment alone (and
    imported first, it sets the size for SymPy alone: os.environ is left as it was)."""
    import os
    import subprocess
    import sys

    environment = {name: value for name, value in os.environ.items() if name != "SYMPY_CACHE_SIZE"}
    shown = "print(os.environ.get('SYMPY_CACHE_SIZE'), sympy.core.cache.SYMPY_CACHE_SIZE)"
    for imports, expected in (("sympy, derivations", ["None", "1000"]), ("derivations, sympy", ["None", "100000"])):
        code = f"import os, {imports}, sympy.core.cache; {shown}"
        run = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True)
        assert run.stdout.split() == expected, imports


@pytest.mark.parametrize("power", [1, 2, 3, 4, 5, 6, 7, 8, -1, -7, -8, 0.5, 1.5, 3.5, -3.5])
def test_powers_up_to_eight_and_their_halves_compile_to_products(power):
    """a**k for |k| <= 8 and k a half-integer below 4 is products of a (and one sqrt): a multiply
    is several times cheaper than numpy.power. Above that order numpy's power is called."""
    from numeric.kernels.lambdify import compile

    a = sp.Symbol("a", positive=True)
    body = compile(a ** sp.nsimplify(power), [a]).__doc__.split("return", 1)[1]
    assert "**" not in body, body
    assert "power" not in body, body
    values = np.array([0.3, 1.7, 2.0])
    np.testing.assert_allclose(compile(a ** sp.nsimplify(power), [a])(values), values**power, rtol=1e-15)
    assert "**" in compile(a ** (abs(sp.nsimplify(power)) + 8), [a]).__doc__.split("return", 1)[1]


@pytest.mark.parametrize("listed", [False, True])
def test_a_compound_base_of_a_half_integer_power_is_named_once(listed):
    """(q + epsilon)**(3/2) prints as b*sqrt(b): its base is a shared value b0, computed once,
    in one expression or in a program's several; a symbol's power is left alone."""
    from numeric.kernels.lambdify import _shared_subexpressions

    base = q + EPS
    expr = [base ** sp.Rational(3, 2) + q ** sp.Rational(5, 2), q] if listed else base ** sp.Rational(-3, 2) * q
    replacements, reduced = _shared_subexpressions(expr)
    named = [name for name, value in replacements if value == base]
    assert len(named) == 1
    first = reduced[0] if listed else reduced
    assert first.has(named[0] ** sp.Rational(3 if listed else -3, 2))
    assert not first.has(base)
    if listed:
        assert first.has(q ** sp.Rational(5, 2))
