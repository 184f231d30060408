"""The backward pass: J^T g, J v, the Hessian product and the parameter gradients.

Symbolic identities, explicit sizes, then the generated NumPy functions against
the Jacobian, against central differences in random directions, and on bad input.
"""

import dataclasses
import tracemalloc

import numpy as np
import pytest
import sympy as sp
from grids import ROW_LAYERS, module, tiered

import numeric
from derivations import LAYERS, DerivationError, formula, formulas, quantities
from derivations.derive import backward, jacobian
from derivations.derive.sums import Mean, mean, p
from derivations.symbols import epsilon, g, gamma, j, k, mu, q, v, x
from numeric.checks.agreement import assert_agree

KEYS = list(ROW_LAYERS)
AFFINE = [key for key in KEYS if LAYERS[key].parameters]
KINKED = [key for key in KEYS if LAYERS[key].approach]


def is_zero(expr: sp.Expr) -> bool:
    return sp.simplify(expr) == 0


# --- symbolic --------------------------------------------------------------------


def test_layernorm_vjp_is_the_kernel_form():
    """dx = (g - mean(g) - y_hat mean(g y_hat)) / s, checked here by simplify."""
    s = sp.sqrt(q + epsilon)
    y_hat = (x[k] - mu) / s
    kernel = (g[k] - Mean(g[p]) - y_hat * (Mean(g[p] * x[p]) - mu * Mean(g[p])) / s) / s
    assert is_zero(backward.vjp(LAYERS["layernorm"]) - kernel)


def test_rmsnorm_vjp_is_the_kernel_form():
    r = LAYERS["rmsnorm"].statistics[0].symbol
    s = sp.sqrt(r + epsilon)
    assert is_zero(backward.vjp(LAYERS["rmsnorm"]) - (g[k] / s - Mean(g[p] * x[p]) * x[k] / s**3))


@pytest.mark.parametrize("key", KEYS)
def test_every_layer_proves_its_backward_formulas(key):
    for name in ("vjp", "jvp", "hvp"):
        assert formula(f"{key}.{name}").proof, f"{key}.{name} has no proof"
    assert "stated" in formula(f"{key}.vjp").proof or "cancel" in formula(f"{key}.vjp").proof


@pytest.mark.parametrize("key", AFFINE)
def test_affine_vjp_takes_the_gain_into_the_upstream_gradient(key):
    layer = LAYERS[key]
    assert "gain * g" in formula(f"{key}.vjp").proof
    assert formula(f"{key}.dgain").proof
    assert formula(f"{key}.dbias").expr.rhs == g[k]
    # The historical bug: the base's gradient for g, not gain * g, is not the layer's.
    forgot = backward.vjp(layer.base)
    assert not is_zero(backward.vjp(layer) - forgot)


def test_a_stated_vjp_that_forgets_the_gain_is_refused():
    layer = LAYERS["rmsnorm_affine"]
    s = sp.Symbol("s", positive=True)
    wrong = g[k] / s - mean(g[j] * x[j], j) * x[k] / s**3
    broken = dataclasses.replace(layer, stated={**layer.stated, "vjp": wrong})
    with pytest.raises(DerivationError, match="vjp"):
        backward.vjp_proof(broken, "vjp")


def test_a_stated_vjp_with_a_sign_error_is_refused():
    layer = LAYERS["rmsnorm"]
    wrong = layer.stated["vjp"].subs(x[k], -x[k])
    broken = dataclasses.replace(layer, stated={**layer.stated, "vjp": wrong})
    with pytest.raises(DerivationError, match="vjp"):
        quantities.formulas(broken)


@pytest.mark.parametrize("key", KEYS)
def test_jvp_is_vjp_exactly_where_the_jacobian_is_symmetric(key):
    layer = LAYERS[key]
    same = is_zero(backward.jvp(layer) - backward.swap(backward.vjp(layer), g, v))
    assert same == jacobian.is_symmetric(layer)


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("size", [2, 3])
def test_vjp_jvp_and_gradients_equal_explicit_products(key, size):
    assert "equal the explicit products" in backward.explicit_agrees(LAYERS[key], size)


def test_hvp_equals_the_explicit_hessian_at_n_2():
    assert "explicit Hessian" in backward.explicit_hessian_agrees(LAYERS["rmsnorm"], 2)


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("size", tiered([2, 3, 4], fast=2))
def test_hvp_equals_the_explicit_hessian_at_a_rational_point(key, size, rng):
    """sum_i g_i hessian(y_i) v at explicit n, evaluated exactly at a seeded rational point."""
    layer = LAYERS[key]
    pairing = sum(g[m] * layer.explicit_entry(size, m) for m in range(size))
    point: dict[sp.Basic, sp.Expr] = {epsilon: sp.Rational(1, 7)}
    for base in (x, g, v, *(b for _, b in layer.parameters)):
        point.update({base[m]: sp.Rational(int(rng.integers(-40, 40)), 16) for m in range(size)})
    # Only x stays symbolic while differentiating: every other input is a number already.
    fixed = {key: value for key, value in point.items() if not (isinstance(key, sp.Indexed) and key.base == x)}
    # (H v)_m is d/dt of the gradient's entry m at x + t v, at t = 0: the same exact number
    # as row m of the explicit Hessian times v, with one derivative in x instead of n.
    t = sp.Symbol("t")
    line = pairing.xreplace(fixed)
    moved = {x[j]: point[x[j]] + t * point[v[j]] for j in range(size)}
    direct = [sp.diff(sp.diff(line, x[m]).xreplace(moved), t).xreplace({t: 0}) for m in range(size)]
    values = layer.explicit_statistics(size)
    for m in range(size):
        general = backward.hvp(layer).xreplace({k: m, sp.Symbol("n", integer=True, positive=True): size})
        general = sp.Add(
            *(
                term.replace(
                    lambda e: isinstance(e, Mean),
                    lambda e: sp.Add(*(e.args[0].xreplace({p: i}) for i in range(size))) / size,
                )
                for term in sp.Add.make_args(general)
            )
        )
        at = general.xreplace(values).xreplace(point)
        assert abs(sp.N(at - direct[m], 40)) < sp.Float(10) ** -30, (key, size, m)


@pytest.mark.parametrize("key", [key for key in KEYS if not LAYERS[key].parameters and LAYERS[key].directions])
@pytest.mark.parametrize("size", [2, 3])
def test_the_hessian_product_along_eigen_directions_is_the_general_one_there(key, size, rng):
    """backward.hvp_along(d, e) against the general product with g = d and v = e, exactly at a rational point."""
    from derivations.derive import eigen
    from derivations.derive.sums import explicit_means

    layer = LAYERS[key]
    n = sp.Symbol("n", integer=True, positive=True)
    point = {epsilon: sp.Rational(1, 7), **{x[m]: sp.Rational(int(rng.integers(-40, 40)), 16) for m in range(size)}}
    values = {s: e.xreplace(point) for s, e in layer.explicit_statistics(size).items()}
    explicit = [pair.direction for pair in eigen.eigenpairs(layer) if not pair.direction.complement]
    assert explicit
    for first in explicit:
        for second in explicit:
            along = backward.hvp_along(layer, first, second)
            general = backward.hvp(layer).xreplace(
                {
                    g[k]: first.entry,
                    v[k]: second.entry,
                    g[p]: first.entry.xreplace({k: p}),
                    v[p]: second.entry.xreplace({k: p}),
                }
            )
            # Along the unit vectors: divided by |first| |second|, computed here entry by entry.
            lengths = [
                sp.sqrt(sum(d.entry.xreplace({k: m}).xreplace(values).xreplace(point) ** 2 for m in range(size)))
                for d in (first, second)
            ]
            for m in range(size):
                want = explicit_means(general.xreplace({k: m, n: size}), size).xreplace(point).xreplace(values)
                want = want / (lengths[0] * lengths[1])
                got = along.xreplace({k: m, n: size}).xreplace(point).xreplace(values)
                assert abs(sp.N(got - want.xreplace(point), 40)) < sp.Float(10) ** -30, (
                    key,
                    first.name,
                    second.name,
                    m,
                )


@pytest.mark.parametrize("key", KEYS)
def test_hvp_is_symmetric(key):
    assert "<u, H v> = <v, H u>" in formula(f"{key}.hvp").proof


def test_the_symmetry_check_can_fail():
    layer = LAYERS["rmsnorm"]
    uhv = backward.pairing(layer, backward.u, backward.vjp(layer) * Mean(v[p] * x[p]))
    assert not is_zero(uhv - backward.swap(uhv, backward.u, v))


def test_kinked_layers_have_a_vjp_at_the_degenerate_input():
    assert is_zero(backward.vjp_at_degenerate(LAYERS["layernorm_std_eps"]) - (g[k] - Mean(g[p])) / epsilon)
    assert is_zero(backward.vjp_at_degenerate(LAYERS["rmsnorm_eps_outside"]) - g[k] / epsilon)


def test_gain_gradient_is_gradient_times_normalized_output():
    layer = LAYERS["layernorm_affine"]
    assert is_zero(backward.parameter_gradient(layer, gamma) - g[k] * (x[k] - mu) / sp.sqrt(q + epsilon))


# --- numeric ---------------------------------------------------------------------


def _parameters(key, size, rng):
    if LAYERS[key].scalars:  # ScaleNorm's one gain
        return tuple(np.float64(rng.normal(0, 2)) for _ in LAYERS[key].scalars)
    if not LAYERS[key].parameters:
        return ()
    return rng.normal(0, 2, size), rng.standard_normal(size)


def _dx(result):
    return result[0] if isinstance(result, tuple) else result


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("size", [2, 3, 7, 64])
@pytest.mark.parametrize("eps", [1e-6, 0.25, 100.0])
def test_vjp_and_jvp_equal_products_with_the_jacobian(key, size, eps, rng):
    m = module(key)
    values = rng.standard_normal((3, size)) * rng.uniform(0.1, 10) + rng.standard_normal()
    dy, direction = rng.standard_normal((2, 3, size))
    params = _parameters(key, size, rng)
    jac = m.jacobian(values, eps, *params)
    # The closed forms add terms of size |g| / s that cancel where J is small
    # (n = 2, q >> epsilon): the error scales with those terms, not with J.
    gain = np.abs(params[0]).max() if params else 1.0
    terms = gain * np.abs(dy).max() / np.sqrt(np.var(values, axis=-1, keepdims=True) + eps)
    dx = _dx(m.vjp(values, eps, dy, *params))
    assert_agree(dx, np.einsum("bi,bik->bk", dy, jac), rtol=1e-10, atol=1e-14 * size * terms, what="J^T g")
    jv = m.jvp(values, eps, direction, *params)
    assert_agree(jv, np.einsum("bik,bk->bi", jac, direction), rtol=1e-10, atol=1e-14 * size * terms, what="J v")


def _central(f, h):
    return (f(h) - f(-h)) / (2 * h)


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("size", [2, 5, 33])
@pytest.mark.parametrize("eps", [1e-3, 0.25, 4.0])
def test_products_match_central_differences_in_random_directions(key, size, eps, rng):
    """<vjp, w> = d<g, y(x + h w)>/dh, J v = dy(x + h v)/dh, H v = d vjp(x + h v)/dh."""
    m = module(key)
    values = rng.standard_normal(size) + 0.3
    dy, w, direction = rng.standard_normal((3, size))
    params = _parameters(key, size, rng)
    h = 1e-5 * max(1.0, np.sqrt(eps))

    def pairing(step):
        return dy @ m.forward(values + step * w, eps, *params)

    gradient = _dx(m.vjp(values, eps, dy, *params))
    assert_agree(gradient @ w, _central(pairing, h), rtol=1e-6, atol=1e-8, what="<vjp, w> vs differences")
    jv = m.jvp(values, eps, direction, *params)
    forward = _central(lambda step: m.forward(values + step * direction, eps, *params), h)
    assert_agree(jv, forward, rtol=1e-6, atol=1e-8 * np.abs(forward).max(), what="J v vs differences")
    hv = m.hvp(values, eps, dy, direction, *params)
    slope = _central(lambda step: _dx(m.vjp(values + step * direction, eps, dy, *params)), h)
    assert_agree(hv, slope, rtol=1e-5, atol=1e-7 * max(1.0, np.abs(slope).max()), what="H v vs differences")


@pytest.mark.parametrize("key", AFFINE)
def test_parameter_gradients_match_differences_and_sum_over_the_batch(key, rng):
    m = module(key)
    size = 6
    values, dy = rng.standard_normal((2, 2, 3, size))
    gain, bias = _parameters(key, size, rng)
    dx, dgain, dbias = m.vjp(values, 0.1, dy, gain=gain, bias=bias)
    assert dx.shape == values.shape
    assert dgain.shape == dbias.shape == (size,)
    for e in np.eye(size):
        by_gain = _central(lambda h, e=e: np.sum(dy * m.forward(values, 0.1, gain + h * e, bias)), 1e-6)
        by_bias = _central(lambda h, e=e: np.sum(dy * m.forward(values, 0.1, gain, bias + h * e)), 1e-6)
        assert_agree(dgain @ e, by_gain, rtol=1e-7, atol=1e-9, what="dgain")
        assert_agree(dbias @ e, by_bias, rtol=1e-7, atol=1e-9, what="dbias")


@pytest.mark.parametrize("key", KINKED)
def test_vjp_at_the_degenerate_input_is_the_derived_limit(key, rng):
    m = module(key)
    base = np.full(4, 0.7) if key.startswith("layernorm") else np.zeros(4)
    dy = rng.standard_normal(4)
    assert_agree(m.vjp(base, 0.25, dy), dy @ m.jacobian(base, 0.25), rtol=1e-14, atol=1e-15, what="vjp at the kink")
    with pytest.raises(ValueError, match="not twice differentiable"):
        m.hvp(base, 0.25, dy, dy)


@pytest.mark.parametrize("key", KEYS)
def test_float32_stays_float32_and_batches_broadcast(key, rng):
    m = module(key)
    values = rng.standard_normal((2, 3, 8)).astype(np.float32)
    dy = rng.standard_normal(8).astype(np.float32)
    params = [a.astype(np.float32) for a in _parameters(key, 8, rng)]
    dx = _dx(m.vjp(values, np.float32(0.1), dy, *params))
    assert dx.dtype == np.float32
    assert dx.shape == (2, 3, 8)
    exact = _dx(m.vjp(values.astype(np.float64), 0.1, np.broadcast_to(dy, values.shape), *params))
    assert_agree(dx, exact, rtol=1e-5, atol=1e-5 * np.abs(exact).max(), what="float32 vjp")
    assert m.hvp(values, np.float32(0.1), dy, values, *params).dtype == np.float32


def test_no_n_by_n_matrix_is_formed():
    size = 4096
    values = np.random.default_rng(0).standard_normal((2, size))
    numeric.layernorm.vjp(values[:, :4], 0.1, values[:, :4])  # compiled before measuring
    tracemalloc.start()
    numeric.layernorm.vjp(values, 0.1, values)
    numeric.layernorm.hvp(values, 0.1, values, values)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < size * size * 8 / 16, peak


@pytest.mark.parametrize("op", ["forward", "vjp"])
def test_numpys_path_holds_one_block_of_rows_however_many_rows_there_are(op, monkeypatch):
    """No temporaries of the input's size (issue 33): NumPy's path goes over blocks of rows, a
    row longer than a block taking a block of its own, and reduces the gain's and the bias's
    gradients block by block.  So beyond its outputs a call holds the same at 32 rows as at 2, and
    at 32 rows at most a fifth of its inputs (x, and dy for the vjp)."""
    from numeric.kernels import kernel, native

    monkeypatch.setattr(kernel, "FUSED_BLOCK", 1 << 12)
    size, rng = 1 << 14, np.random.default_rng(5)
    layer = numeric.facade("layernorm_affine")
    gain, bias = rng.standard_normal((2, size))

    def held(rows: int) -> float:
        """Peak traced memory beyond the outputs, in rows of x."""
        x, dy = rng.standard_normal((2, rows, size))
        args = (x, 0.1, dy, gain, bias) if op == "vjp" else (x, 0.1, gain, bias)
        getattr(layer, op)(*args)  # anything made once, before measuring
        tracemalloc.start()
        out = getattr(layer, op)(*args)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return (peak - sum(array.nbytes for array in (out if op == "vjp" else [out]))) / (size * 8)

    with native.off():
        two, many = held(2), held(32)
    assert many <= 1.1 * two, (two, many)
    assert many <= 0.2 * 32 * (2 if op == "vjp" else 1), many


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: numeric.layernorm.vjp(np.ones(3), 0.1, np.ones(4)), "dy must have shape"),
        (
            lambda: numeric.layernorm.vjp(np.ones((5, 3)), 0.1, np.ones((5, 4))),
            r"^dy must have shape \(\.\.\., 3\), one entry per feature of x; got \(5, 4\)$",
        ),
        (lambda: numeric.layernorm.vjp(np.ones((2, 3)), 0.1, np.ones((3, 3))), "dy of shape"),
        (lambda: numeric.layernorm.vjp(np.ones(3), 0.1, [1.0, np.nan, 0.0]), "dy must be finite"),
        (lambda: numeric.layernorm.jvp(np.ones(3), 0.1, [1.0, np.inf, 0.0]), "v must be finite"),
        (lambda: numeric.layernorm.hvp(np.ones(3), 0.1, np.ones(3), np.ones(2)), "v must have shape"),
        (lambda: numeric.layernorm.vjp([1.0, np.nan], 0.1, np.ones(2)), "x must be finite"),
        (lambda: numeric.rmsnorm.vjp(np.ones(3), 0.0, np.ones(3)), "epsilon must be positive"),
        (lambda: numeric.rmsnorm.vjp(np.ones(3), -1.0, np.ones(3)), "epsilon must be positive"),
        (lambda: numeric.rmsnorm_affine.vjp(np.ones(3), 0.1, np.ones(3)), "gain is required"),
        (lambda: numeric.rmsnorm_affine.vjp(np.ones(3), 0.1, np.ones(3), gain=np.ones(2)), "gain must have"),
    ],
)
def test_bad_input_is_a_value_error_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_missing_vector_is_a_type_error():
    with pytest.raises(TypeError, match=r"takes \(x, epsilon, dy, v\)"):
        numeric.layernorm.hvp(np.ones(3), 0.1, np.ones(3))


@pytest.mark.parametrize("key", ROW_LAYERS)
@pytest.mark.parametrize("epsilon", [1e-8, 1e-5])
def test_vjp_at_two_features_is_accurate_where_the_entry_formula_cancels(key, epsilon):
    """At n = 2 with q >> epsilon the derived entry of J^T g subtracts terms of size |g|/s to
    leave epsilon/s**3; through the eigenstructure (the base's, for a gained layer) it is
    accurate to rounding, against the explicit Jacobian of the written-out definition at 50 digits."""
    import sympy as sp

    from derivations.symbols import beta, gamma
    from derivations.symbols import epsilon as eps_symbol
    from derivations.symbols import x as xs

    point, gradient = [sp.Rational(3, 2), sp.Rational(-1, 4)], [sp.Rational(3, 10), sp.Rational(7, 10)]
    layer = LAYERS[key]
    outputs = sp.Matrix([layer.explicit_entry(2, m) for m in range(2)])
    gains = {gamma[0]: sp.Rational(-3, 2), gamma[1]: sp.Rational(1, 2), beta[0]: 1, beta[1]: 2}
    gains |= {symbol: sp.Rational(-3, 2) for _, symbol in layer.scalars}  # ScaleNorm's one gain
    values = {xs[0]: point[0], xs[1]: point[1], eps_symbol: sp.Rational(epsilon), **gains}
    jac = outputs.jacobian([xs[0], xs[1]]).xreplace(values)
    exact = [float(sp.N(sum(jac[r, c] * gradient[r] for r in range(2)), 50)) for c in range(2)]
    named = {"gain": np.array([-1.5, 0.5]), "bias": np.array([1.0, 2.0])} if layer.parameters else {}
    scalars = {name: -1.5 for name, _ in layer.scalars}
    x, dy = np.array([float(v) for v in point]), np.array([float(v) for v in gradient])
    got = getattr(numeric, key).vjp(x, epsilon, dy, **named, **scalars)
    np.testing.assert_allclose(got[0] if named else got, exact, rtol=1e-13, atol=0)


def test_a_row_says_proved_equal_to_the_stated_form_only_where_a_form_is_stated(capsys):
    """A jvp or hvp row of a layer that states no jvp or hvp proved something else (J v = J^T v,
    the Hessian's symmetry): `make derive` says which, never "equal to the stated form"."""
    from derivations.__main__ import main

    assert main(["--layer", "layernorm", "--no-cache"]) == 0
    blocks = {block.split("\n", 1)[0]: block for block in capsys.readouterr().out.split("\n\n")}
    assert "no stated form; proved instead: J symmetric" in blocks["layernorm.jvp"]
    assert "no stated form; proved instead: H symmetric" in blocks["layernorm.hvp"]
    assert "proved equal to the stated form" in blocks["layernorm.vjp"]
    for f in formulas("layernorm"):
        assert f.stated == (f.name in LAYERS["layernorm"].stated)


@pytest.mark.parametrize("key", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize(
    "row", [[2.0, 2.0, 2.0, 2.0], [0.0, 0.0, 0.0, 0.0], [-3.0, -3.0, -3.0], [0.0, 5.0], [0.0, -0.5, 0.0, 0.0]]
)
def test_the_hessian_product_at_a_constant_or_zero_row_is_the_vjps_derivative(key, row):
    """H(g, v) = d/dh J(x + h v)^T g at h = 0, by central differences of the vjp, where a direction
    of the split vanishes (the centred input of a constant row, x itself at 0) or is one entry
    (x a multiple of a coordinate vector: a unit vector once divided by its largest entry)."""
    layer = getattr(numeric, key)
    rng = np.random.default_rng(len(row) + int(row[0]) + 10)
    x = np.array(row)
    g, v = rng.standard_normal(x.size), rng.standard_normal(x.size)
    eps = 0.3
    h = 1e-5
    expected = (layer.vjp(x + h * v, eps, g) - layer.vjp(x - h * v, eps, g)) / (2 * h)
    found = layer.hvp(x, eps, g, v)
    np.testing.assert_allclose(found, expected, rtol=1e-6, atol=1e-8 * np.max(np.abs(expected)))


def test_common_factors_in_a_root_cancel():
    """A factor such as (sqrt(r) + epsilon)**3 cancels only once the value is a rational function
    of the root (s**(a/q) as (s**(1/q))**a): SymPy's cancel alone leaves it in place, and its
    terms then leave the float range at every scale."""
    r = sp.Symbol("r", positive=True)
    root = sp.sqrt(r)
    assert backward._cancel_roots((r - epsilon**2) / (root - epsilon)) == root + epsilon
    assert backward._cancel_roots((r + 2 * root * epsilon + epsilon**2) ** 2 / (root + epsilon) ** 3) == root + epsilon
    cube = sp.cbrt(r)
    assert backward._cancel_roots(cube * (r - 1) / (cube - 1)) == cube * (cube**2 + cube + 1)


def test_a_float32_hessian_product_on_the_fused_path_is_the_float64_one_rounded_once():
    """A product of two vectors (the Hessian's) on the fused program is computed in float64 for
    float32 inputs, then rounded once: pRMSNorm's, which has no direction pairs to split along,
    is bit for bit its float64 product rounded (computed in float32 it was 31 ulp off)."""
    rng = np.random.default_rng(3)
    layer = numeric.facade("prmsnorm")
    assert not layer._c.hvp_pairs
    x, g, v = (rng.standard_normal((64, 48)).astype(np.float32) for _ in range(3))
    found = layer.hvp(x, 0.1, g, v)
    assert found.dtype == np.float32
    wide = layer.hvp(x.astype(np.float64), 0.1, g.astype(np.float64), v.astype(np.float64))
    np.testing.assert_array_equal(found, wide.astype(np.float32))
