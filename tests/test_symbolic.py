"""Tier 1: symbolic identities, each checked by simplify(a - b) == 0 here,
independently of the tactics the derivations used."""

import dataclasses
import itertools

import pytest
import sympy as sp
from grids import DERIVED_LAYERS, ROW_LAYERS, tiered

from derivations import DerivationError, formula, formulas, quantities
from derivations.catalog import LAYERS
from derivations.derive import eigen, jacobian, moments, response, spectral
from derivations.derive.sums import PowerSum, reduce_sums
from derivations.symbols import c, epsilon, i, j, k, mu, n, q, s, t, w, x

LAYER = LAYERS["layernorm"]
STATED = LAYER.stated
ROOT = {s: sp.sqrt(q + epsilon)}


def is_zero(expr: sp.Expr) -> bool:
    return sp.simplify(expr) == 0


def test_core_names_in_stable_order():
    assert [f.name for f in formulas("layernorm")] == [
        "definition", "response", "slope", "slope_at_zero", "asymptote", "constant_response", "jacobian", "eigen_ones",
        "eigen_centered", "eigen_complement", "spectral_norm", "spectral_bound", "second_moment",
        "vjp", "jvp", "hvp", "homogeneity",
    ]  # fmt: skip


@pytest.mark.parametrize("name", ["response", "slope"])
def test_scalar_results_equal_stated(name):
    assert is_zero(getattr(response, name)(LAYER) - STATED[name])


def test_slope_is_the_derivative_of_the_response():
    assert is_zero(sp.diff(response.response(LAYER), t) - response.slope(LAYER))


def test_slope_at_zero_is_one_over_root_epsilon_from_both_sides():
    assert response.slope_at_zero(LAYER) == (1 / sp.sqrt(epsilon), 1 / sp.sqrt(epsilon))
    assert response.slope(LAYER).subs(t, 0) == 1 / sp.sqrt(epsilon)


# A slope that is not continuous at t = 0 once |t| and sign(t) are resolved: each side's limit.
ONE_SIDED = [
    (sp.Piecewise((t + 1, t > 0), (t - 1, True)), -1, 1),  # SymPy's own limit gives -1 from the right
    (sp.Heaviside(t) + t, 0, 1),
    (t**2 / (sp.sqrt(t**2 + 1) - 1), 2, 2),  # 0/0 at t = 0
    (sp.Abs(t) / t + sp.Piecewise((t, t < 0), (3, True)), -1, 4),
]


@pytest.mark.parametrize(("expr", "left", "right"), ONE_SIDED)
def test_a_one_sided_limit_at_zero_is_taken_on_its_side(expr, left, right):
    assert (response._one_sided(expr, -1), response._one_sided(expr, 1)) == (left, right)
    tiny = sp.Rational(1, 10**12)  # and the value just beside 0 is near it
    for side, value in ((-1, left), (1, right)):
        assert abs(float(expr.subs(t, side * tiny)) - value) < 1e-6


def test_a_case_that_does_not_settle_beside_zero_is_refused():
    with pytest.raises(DerivationError, match="does not settle on one side of t = 0"):
        response._one_sided(sp.Piecewise((1, t - t**3 > 0), (0, True)), 1)


def test_asymptotes_are_plus_minus_root_three_halves():
    upper, lower = response.asymptote(LAYER)
    assert upper == sp.sqrt(sp.Rational(3, 2))
    assert lower == -sp.sqrt(sp.Rational(3, 2))


def test_jacobian_entry_equals_projection_form():
    entry = LAYER.to_display(jacobian.entry(LAYER))
    stated = (sp.KroneckerDelta(i, k) - 1 / n) / s - c[i] * c[k] / (n * s**3)
    assert is_zero((entry - stated).subs(ROOT))


def test_matrix_form_entry_equals_derived_entry():
    assert is_zero(jacobian.entry_of(jacobian.matrix_form(LAYER)) - LAYER.to_display(jacobian.entry(LAYER)))


def test_jacobian_is_symmetric():
    assert jacobian.is_symmetric(LAYER)


@pytest.mark.parametrize("key", sorted(DERIVED_LAYERS))
@pytest.mark.parametrize("size", tiered([2, 3, 4, 5], fast=2))
def test_explicit_matrix_jacobian_equals_symbolic_n_form(key, size):
    assert "equals Matrix.jacobian" in jacobian.explicit_agrees(LAYERS[key], size)


@pytest.mark.parametrize("size", [2, 3])
def test_explicit_jacobian_eigenvectors(size):
    """For explicit n, J 1 = 0 and J c = eps/s^3 c, by direct matrix products."""
    direct = jacobian.explicit(LAYER, size)
    xs = sp.Matrix([x[m] for m in range(size)])
    centered = xs - sp.ones(size, 1) * sum(xs) / size
    var = (centered.T * centered)[0] / size
    assert all(is_zero(e) for e in direct * sp.ones(size, 1))
    expected = epsilon / (var + epsilon) ** sp.Rational(3, 2) * centered
    assert all(is_zero(e) for e in direct * centered - expected)


def test_eigenvalues_and_multiplicities():
    pairs = {p.direction.name: p for p in eigen.eigenpairs(LAYER)}
    assert pairs["ones"].value == 0
    assert is_zero(pairs["centered"].value - (STATED["eigen_centered"]).subs(ROOT))
    assert is_zero(pairs["complement"].value - (STATED["eigen_complement"]).subs(ROOT))
    assert [pairs[d].multiplicity for d in ("ones", "centered", "complement")] == [1, 1, n - 2]
    assert sum(p.multiplicity for p in pairs.values()) == n


def test_spectral_norm_cases():
    norm = spectral.spectral_norm(LAYER)
    assert is_zero(norm.subs(n, 2) - epsilon / (q + epsilon) ** sp.Rational(3, 2))
    for size in (3, 4, 100):
        assert is_zero(norm.subs(n, size) - 1 / sp.sqrt(q + epsilon))
    assert spectral.constant_input(LAYER) == 1 / sp.sqrt(epsilon)


def test_spectral_bound_and_where_it_is_attained():
    top, proofs, where = spectral.bound(LAYER)
    assert top == 1 / sp.sqrt(epsilon)
    assert where == sp.FiniteSet(0)
    assert len(proofs) == 2


def test_second_moment():
    assert is_zero(moments.second_moment(LAYER) - q / (q + epsilon))


def test_sum_reduction_rules():
    total = sp.Sum(sp.KroneckerDelta(j, k) * x[j] ** 2 + 3 * x[j] + mu, (j, 0, n - 1))
    p = sp.Symbol("p", integer=True, nonnegative=True)
    assert sp.expand(reduce_sums(total) - (x[k] ** 2 + 3 * PowerSum(x[p]) + n * mu)) == 0
    assert reduce_sums(sp.Sum(w[j] * x[j], (j, 0, n - 1))) == PowerSum(w[p] * x[p])


@pytest.mark.parametrize("size", [2, 3])
def test_a_sum_with_two_deltas_on_its_index_keeps_the_one_it_does_not_sift_by(size):
    """sum_j delta_jk delta_jm x_j is delta_km x_k: sifting by one delta leaves the other, as
    summing the n terms one by one shows at every k, m."""
    total = sp.Sum(sp.KroneckerDelta(j, k) * sp.KroneckerDelta(j, i) * x[j], (j, 0, n - 1))
    reduced = reduce_sums(total)
    for a, b in itertools.product(range(size), repeat=2):
        explicit = sum(sp.KroneckerDelta(e, a) * sp.KroneckerDelta(e, b) * x[e] for e in range(size))
        assert sp.expand(reduced.subs({n: size, k: a, i: b}) - explicit) == 0, (a, b)


_a, _b = sp.symbols("a b", real=True)
_CANCELLING = (_a**2 - 1) / (_a - 1) - _a - 1  # 0 once cancelled; together alone leaves it a fraction


@pytest.mark.parametrize(
    ("expr", "tactic"),
    [
        ((_a + 1) ** 2 - _a**2 - 2 * _a - 1, "expand"),
        (_CANCELLING, "cancel"),
        # Two functions by the same cases whose sum folds to one case, 0 once cancelled.
        (
            sp.Piecewise((_CANCELLING / 2 + sp.sin(_a), _b > 0), (_CANCELLING / 2 + sp.cos(_a), True))
            + sp.Piecewise((_CANCELLING / 2 - sp.sin(_a), _b > 0), (_CANCELLING / 2 - sp.cos(_a), True)),
            "piecewise_fold",
        ),
        (sp.sin(_a) ** 2 + sp.cos(_a) ** 2 - 1, "simplify"),
        (_a - _b, None),
    ],
)
def test_a_zero_is_proved_by_the_cheapest_tactic_that_reaches_it(expr, tactic):
    from derivations.core.proof import is_zero as proved_zero

    assert proved_zero(expr) == tactic


def test_a_wrong_stated_form_is_refused():
    wrong = dataclasses.replace(LAYER, stated={**STATED, "slope": 1 / sp.sqrt(2 * t**2 / 3 + epsilon)})
    with pytest.raises(DerivationError, match="slope"):
        quantities.formulas(wrong)


def _closed(condition):
    """A strict inequality with its equality case added."""
    return {sp.StrictGreaterThan: sp.GreaterThan, sp.StrictLessThan: sp.LessThan}[type(condition)](*condition.args)


@pytest.mark.parametrize("key", ["l2norm_clamped", "scalenorm"])
@pytest.mark.parametrize("kink", ["inside", "outside", "catch-all"])
def test_a_slope_stated_at_the_kink_where_it_does_not_exist_is_refused(key, kink):
    """The clamped layers' slope on the pattern has no value at the kink, where the regimes'
    slopes differ: a stated slope that gives it one there is not proved, though the two agree
    wherever both are defined."""
    layer = LAYERS[key]
    (inside, below), (outside, above) = layer.stated["slope"].args
    assert response.slope(layer).subs(t, epsilon / sp.sqrt(2)) is sp.nan  # no case holds at the kink
    cases = {
        "inside": (_closed(below), above),
        "outside": (below, _closed(above)),
        "catch-all": (below, sp.true),
    }[kink]
    wrong = sp.Piecewise((inside, cases[0]), (outside, cases[1]))
    assert wrong.subs(t, epsilon / sp.sqrt(2)) is not sp.nan
    changed = dataclasses.replace(layer, stated={**layer.stated, "slope": wrong})
    with pytest.raises(DerivationError, match=rf"{key}\.slope: derived "):
        quantities.formulas(changed)


def test_an_expression_is_defined_where_every_function_by_cases_in_it_has_a_case():
    from derivations.core.proof import defined, same_domain

    total = sp.Piecewise((1, t > 1), (2, True))
    partial = sp.Piecewise((1, t > 0), (0, t < 0))  # none at t = 0
    assert defined(t**2) == sp.true
    assert defined(total) == sp.true
    assert defined(partial) == sp.Or(t > 0, t < 0)
    assert defined(total + partial) == defined(partial)
    assert same_domain(total + partial, partial)
    assert not same_domain(total + partial, total + sp.Piecewise((1, t > 0), (0, True)))


def test_a_claimed_equality_is_proved_only_where_both_sides_are_defined():
    """The claims' equality tactic as the stated forms': a side defined at the kink where the
    other is not is no proof (it is left to the other engines)."""
    from derivations.claims.proof import _prove_case

    slope = response.slope(LAYERS["l2norm_clamped"])
    (inside, below), (outside, above) = slope.args
    assert _prove_case(slope, "==", sp.Piecewise((inside, below), (outside, above))) is not None
    assert _prove_case(slope, "==", sp.Piecewise((inside, below), (outside, True))) is None


def test_a_wrong_stated_jacobian_is_refused():
    from derivations.symbols import c_vec

    wrong = dataclasses.replace(LAYER, stated={**STATED, "jacobian": sp.Identity(n) / s - c_vec * c_vec.T / (n * s**3)})
    with pytest.raises(DerivationError, match="jacobian"):
        quantities.formulas(wrong)


def test_formula_renders_latex_for_jupyter():
    f = formula("slope_at_zero")
    assert f._repr_latex_() == r"$\displaystyle " + f.latex() + "$"
    assert f.latex().endswith(r"= \frac{1}{\sqrt{\varepsilon}}")
    assert f.established.value == "as a limit"
    assert formula("slope").established.value == "for explicit n"
    assert formula("jacobian").established.value == "for all n"
    assert formula("asymptote").established.value == "as a limit"


def test_unknown_formula_name_is_a_value_error():
    with pytest.raises(ValueError, match="name must be one of"):
        formula("slope_at_one")


def test_rmsnorm_eigenstructure_differs_from_layernorm():
    rms = LAYERS["rmsnorm"]
    pairs = {p.direction.name: p for p in eigen.eigenpairs(rms)}
    assert set(pairs) == {"x", "complement"}
    assert pairs["complement"].multiplicity == n - 1
    r = sp.Symbol("r", nonnegative=True)
    assert is_zero(pairs["x"].value - epsilon / (r + epsilon) ** sp.Rational(3, 2))
    assert is_zero(spectral.spectral_norm(rms) - 1 / sp.sqrt(r + epsilon))


def test_core_names_keep_working_and_qualified_names_reach_every_layer():
    assert formula("response") is formula("layernorm.response")
    assert formula("rmsnorm.eigen_x").layer == "rmsnorm"
    assert formula("rmsnorm_eps_outside.slope_at_zero_uniform").expr.rhs == 1 / epsilon
    with pytest.raises(ValueError, match="layer must be one of"):
        formula("instancenorm.response")


@pytest.mark.parametrize("key", sorted(DERIVED_LAYERS))
def test_degrees_obey_the_chain_rule(key):
    """Each degree is computed from its own expression; a derivative in x or t must lower it by one."""
    from derivations.derive import scaling

    layer = LAYERS[key]
    output = scaling.degree_of(layer, layer.output, "output")
    assert scaling.degree_of(layer, jacobian.entry(layer), "jacobian") == output - 1
    for pattern in layer.patterns:
        value = scaling.degree_of(layer, response.response(layer, pattern), "response")
        assert scaling.degree_of(layer, response.slope(layer, pattern), "slope") == value - 1


def test_a_non_homogeneous_expression_has_no_degree():
    from derivations.derive import scaling

    with pytest.raises(DerivationError, match="not homogeneous"):
        scaling.degree_of(LAYER, 1 + t, "one plus t")


@pytest.mark.parametrize("key", ROW_LAYERS)
def test_the_output_at_a_constant_input_is_the_derived_one(key):
    """The conventions table's column, against forward at x = t 1, for several n (exact reference)."""
    import numpy as np

    import numeric
    from numeric.checks.agreement import assert_agree, exact

    layer = LAYERS[key]
    value = response.at_constant(layer)
    rng = np.random.default_rng(3)
    for size in (2, 3, 7):
        params = [rng.normal(0, 2, size) for _ in layer.parameters]
        named = dict(zip((name for name, _ in layer.parameters), params, strict=True))
        scalars = {name: -1.5 for name, _ in layer.scalars}  # ScaleNorm's one gain
        for amplitude in (-3.0, 0.5, 2.0):
            for eps in (1e-3, 0.25):
                point = {t: amplitude, epsilon: eps, n: size}
                expected = [
                    exact(
                        value.xreplace({i: m}),
                        {
                            **point,
                            **{base[m]: named[name][m] for name, base in layer.parameters},
                            **{symbol: scalars[name] for name, symbol in layer.scalars},
                        },
                    )
                    for m in range(size)
                ]
                got = getattr(numeric, key).forward(np.full(size, amplitude), eps, **named, **scalars)
                assert_agree(got, expected, rtol=1e-14, atol=1e-15, what=f"{key} at {amplitude} * 1")
    assert not value.free_symbols & {stat.symbol for stat in layer.statistics}  # evaluated, not named


@pytest.mark.parametrize("key", DERIVED_LAYERS)
def test_a_degree_read_off_the_tree_is_the_simplified_ratios(key):
    """`scaling._structural` must agree with simplifying f(m x, m**e eps) / f(x, eps) on every value
    (of each layer that derives its own: the others restate a base's)."""
    from derivations.derive import scaling

    layer = LAYERS[key]
    values = scaling.scaled(layer, scaling.epsilon_degree(layer))
    for name, value in quantities.values(layer).items():
        for branch in (b for b, _ in value.args) if isinstance(value, sp.Piecewise) else (value,):
            if branch == 0 or isinstance(branch, sp.MatrixExpr):
                continue
            ratio = scaling.power_of_m(branch.xreplace(values) / branch, name)
            assert scaling._degree(branch, values, name) == ratio, name


def test_a_sum_whose_terms_cancel_to_one_degree_falls_back_to_simplifying():
    from derivations.derive import scaling

    # (t + eps)**2 - eps**2 - 2 t eps = t**2: no single degree in its tree, degree 2 once expanded.
    expr = sp.Add((t + epsilon) ** 2, -(epsilon**2), -2 * t * epsilon, evaluate=False)
    values = scaling.scaled(LAYER, 2)
    assert scaling._structural(expr, {atom: scaling._atom_degree(atom, v, "") for atom, v in values.items()}) is None
    assert scaling._degree(expr, values, "a sum that cancels") == 2


@pytest.mark.parametrize("key", sorted(LAYERS))
def test_the_printed_relation_is_the_derived_one_with_only_its_right_side_restated(key):
    """Where a stated form is proved and printed instead, it replaces the derived right side only:
    the relation and what it is about (J v, the slope, the response) are the derived ones (that the
    two right sides are equal is the derivation's own proof, `Formula.proof`)."""
    restated = [f for f in formulas(key) if f.shown is not None]
    for found in restated:
        assert type(found.shown) is type(found.expr), found.name
        if isinstance(found.expr, sp.Rel):
            assert found.shown.lhs == found.expr.lhs, found.name
