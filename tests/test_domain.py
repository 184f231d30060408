"""The claim's domain, step by step: natural ranges, fixed values, narrowing, properties,
definedness and limits, each on its own."""

import pytest
import sympy as sp

from derivations.claims import Claim, ClaimError, check
from derivations.claims.domain import (
    Assumption,
    Domain,
    Vacuous,
    build_domain,
    claim_text,
    fixed_values,
    natural_ranges,
    renamed,
    settle,
    substitute,
)
from derivations.claims.language import RIGHT, TWO_SIDED, Lim
from derivations.claims.limits import take
from derivations.claims.semantics import build
from derivations.symbols import epsilon, gamma_max, n, q, t


def _domain(text: str, layer: str = "layernorm", assumptions: tuple[str, ...] = ()) -> tuple[Domain, list]:
    lhs, _, rhs, usage = build(text, layer)
    domain = build_domain(layer, assumptions, usage, lhs, rhs)
    sides = settle(domain, [lhs, rhs], usage.requirements)
    return domain, sides


@pytest.mark.parametrize(
    ("relation", "zero"),
    [
        # As assumptions are read: unevaluated (epsilon is positive to SymPy).
        (sp.Eq(epsilon, 0, evaluate=False), True),
        (sp.Ge(epsilon, 0, evaluate=False), True),
        (sp.Le(epsilon, 0, evaluate=False), True),
        (sp.Le(epsilon, 1, evaluate=False), False),  # 0 is inside, not what the assumption is about
        (sp.Gt(epsilon, 0, evaluate=False), False),
        (sp.Ge(q, 0, evaluate=False), False),
    ],
)
def test_epsilon_is_positive_unless_an_assumption_is_about_zero(relation, zero):
    ranges = natural_ranges([], [Assumption("a", relation)])
    assert (0 in ranges[epsilon]) == zero
    assert ranges[n] == sp.Range(2, sp.oo)
    assert ranges[gamma_max] == sp.Interval(0, sp.oo)  # max|gamma_i| is 0 at a zero gain


def test_two_fixed_values_that_differ_leave_no_input():
    domain, _ = _domain("slope_at_zero == 1")
    with pytest.raises(Vacuous, match=r"epsilon == 1 and epsilon == 2 contradict each other"):
        fixed_values(
            domain, [Assumption("epsilon == 1", sp.Eq(epsilon, 1)), Assumption("epsilon == 2", sp.Eq(epsilon, 2))]
        )


def test_one_feature_is_outside_what_is_derived_not_vacuous():
    domain, _ = _domain("slope_at_zero == 1")
    # The layer exists at n = 1 (LayerNorm is 0 there): a refusal that names it, not "no input".
    with pytest.raises(ClaimError, match=r"n == 1: n = 1 is outside what the derivations cover"):
        fixed_values(domain, [Assumption("n == 1", sp.Eq(n, 1))])


@pytest.mark.parametrize(
    ("assumptions", "message"),
    [
        (("epsilon < 0",), "epsilon < 0, but epsilon > 0"),
        (("q < 0",), "q < 0, but q >= 0 (mean square of the centered entries); q does not appear in the claim"),
        (("n >= 3", "n <= 2"), "n >= 3 and n <= 2, but n is an integer >= 2"),
        (("1 > 2",), "the assumption 1 > 2 is false"),
    ],
)
def test_narrowing_a_range_to_nothing_names_the_assumptions(assumptions, message):
    with pytest.raises(Vacuous, match=message.replace("(", r"\(").replace(")", r"\)")):
        _domain("slope_at_zero == 1", assumptions=assumptions)


def test_a_statistic_assumed_at_the_pattern_is_a_condition_on_t():
    domain, _ = _domain("response**2 > 1", assumptions=("q > 3*epsilon",))
    assert domain.pattern is not None
    assert domain.conditions == [sp.Gt(2 * t**2 / 3, 3 * epsilon)]
    assert "(q = 2*t**2/3 at this input)" in domain.quantifier("layernorm")


def test_a_symbol_gets_exactly_the_properties_its_range_guarantees():
    domain, _ = _domain("gamma_max >= 0", "layernorm_affine")
    (new,) = [s for old, s in domain.rename.items() if old == gamma_max]
    assert new.is_nonnegative
    assert new.is_positive is None
    positive, _ = _domain("slope >= 0", assumptions=("t > 0",))
    assert renamed(positive, {t})[t].is_positive


def test_definedness_is_read_before_sympy_cancels():
    domain, sides = _domain("q**-1 * q == 1")
    assert sides == [sp.Integer(1), sp.Integer(1)]  # what SymPy made of it
    assert domain.excluded == ("q != 0",)


def test_epsilon_zero_excludes_where_the_layer_is_undefined():
    domain, _ = _domain("slope == 0", assumptions=("epsilon == 0",))
    assert domain.excluded == ("t != 0",)
    general, _ = _domain("second_moment == 1", assumptions=("epsilon == 0",))
    assert general.excluded == ("q != 0",)


def test_a_claim_undefined_everywhere_is_an_error():
    with pytest.raises(ClaimError, match="undefined everywhere"):
        _domain("constant_response == 0", assumptions=("epsilon == 0",))


def test_a_limit_s_own_variable_is_never_substituted():
    limit = Lim(epsilon * t, epsilon, sp.Integer(0), RIGHT)
    replaced = substitute(limit + epsilon, {epsilon: sp.Integer(5), t: sp.Integer(2)})
    assert replaced == Lim(2 * epsilon, epsilon, sp.Integer(0), RIGHT) + 5


@pytest.mark.parametrize(
    ("expr", "variable", "point", "value", "missing"),
    [
        (sp.Abs(t) / t, t, 0, sp.nan, 1),  # two-sided: no limit
        (1 / t**2, t, 0, sp.oo, 0),
        (epsilon / (epsilon + t**2), epsilon, 0, sp.Piecewise((1, sp.Eq(t, 0)), (0, True)), 0),
    ],
)
def test_limits_are_two_sided_and_pointwise(expr, variable, point, value, missing):
    found, lost = take(Lim(expr, variable, sp.Integer(point), TWO_SIDED))
    assert found == value or (found is sp.nan and value is sp.nan)
    assert len(lost) == missing


def test_conditions_print_in_the_claim_language():
    assert claim_text(sp.Ne(sp.Abs(t), 0)) == "abs(t) != 0"
    assert claim_text(sp.Or(epsilon > 1, epsilon < 1)) == "(epsilon > 1) or (epsilon < 1)"


def test_a_limit_is_refused_where_the_roots_it_splits_at_cannot_all_be_found():
    """exp(epsilon) - 1 - epsilon**3 vanishes at one epsilon near 1.9 that SymPy cannot name: the
    limit in t is oo there and 0 elsewhere, so a limit taken as if it had no root would prove
    the false claim that it is 0 everywhere."""
    body = t / (t**2 + sp.exp(epsilon) - 1 - epsilon**3)
    with pytest.raises(ClaimError, match="cannot find every epsilon where"):
        take(Lim(body, t, sp.Integer(0), TWO_SIDED))
    verdict = check(Claim("limit(t/(t**2 + exp(epsilon) - 1 - epsilon**3), t, 0) == 0", layer="layernorm"))
    assert verdict.verdict == "error"


@pytest.mark.parametrize("failure", [NotImplementedError, ValueError, TypeError])
def test_a_limit_is_refused_where_sympy_gives_up_on_the_roots(monkeypatch, failure):
    """Each way SymPy's solver says it cannot solve is a refusal of the limit, never a limit
    taken as if the denominator had no root (0 at t = 0 here, where the limit is oo)."""

    def gives_up(*args, **kwargs):
        raise failure("cannot solve")

    monkeypatch.setattr(sp, "solveset", gives_up)
    with pytest.raises(ClaimError, match="cannot find every t where t\\*\\*2 is 0"):
        take(Lim(epsilon / (epsilon + t**2), epsilon, sp.Integer(0), TWO_SIDED))


# Ways papers say "x is not constant" for a layer that centers x; each is the same domain.
NOT_CONSTANT = [
    "q > 0",
    "q != 0",
    "0 != q",
    "sigma_u > 0",
    "sigma_u != 0",
    "x is not constant",
    "norm(c) != 0",
    "c != 0",
]


@pytest.mark.parametrize("assumption", NOT_CONSTANT)
def test_an_assumption_in_the_users_words_is_the_relation_it_means(assumption):
    """Each is read as a relation the checker decides (!= as > where a side cannot be below the
    other); the verdict names the assumption as written, and the domain is that of q > 0."""
    domain, _ = _domain("1/sigma_u > 0", "layernorm_std_eps", (assumption,))
    reference, _ = _domain("1/sigma_u > 0", "layernorm_std_eps", ("q > 0",))
    assert [a.text for a in domain.assumptions] == [assumption]
    assert domain.ranges == reference.ranges or sp.Gt(q, 0) not in [a.relation for a in domain.assumptions]
    verdict = check(Claim("1/sigma_u > 0", "layernorm_std_eps", (assumption,)))
    assert verdict.verdict == "proved"
    assert assumption in verdict.detail
    # The translation keeps the meaning: a false claim under it is still refuted.
    refuted = check(Claim("1/sigma_u < 1", "layernorm_std_eps", (assumption,)))
    assert refuted.verdict == "refuted"
    assert 0 < refuted.counterexample["q"] < 1 if "q" in refuted.counterexample else refuted.counterexample


@pytest.mark.parametrize(
    ("layer", "assumption", "message"),
    [
        ("layernorm", "mu != 0", "write mu > 0 or mu < 0"),
        ("layernorm", "epsilon != 1", "write epsilon > 1 or epsilon < 1"),
        ("rmsnorm", "x is not constant", "rmsnorm does not center x"),
    ],
)
def test_an_assumption_that_means_no_one_relation_is_an_error_saying_what_to_write(layer, assumption, message):
    verdict = check(Claim("slope_at_zero > 0", layer, (assumption,)))
    assert verdict.verdict == "error"
    assert message in verdict.detail


def test_a_nonzero_vector_is_a_positive_norm():
    domain, _ = _domain("1/sqrt(r) > 0", "rmsnorm", ("x != 0",))
    assert [str(a.relation) for a in domain.assumptions] == [
        str(_domain("r > 0", "rmsnorm", ("norm(x) > 0",))[0].assumptions[0].relation)
    ]
    assert check(Claim("1/sqrt(r) > 0", "rmsnorm", ("x != 0",))).verdict == "proved"


@pytest.mark.parametrize(
    ("assumption", "message"),
    [
        ("epsilon ==", "assumption 'epsilon ==': cannot parse it: invalid syntax"),
        ("foo > 0", "assumption 'foo > 0': unknown name 'foo' at column 1; known names:"),
        ("epsilno > 0", "assumption 'epsilno > 0': unknown name 'epsilno' at column 1; did you mean 'epsilon'?"),
    ],
)
def test_a_bad_assumption_is_named_as_the_assumption_not_the_claim(assumption, message):
    verdict = check(Claim("slope == 1", "layernorm", (assumption,)))
    assert verdict.verdict == "error"
    assert verdict.detail.startswith(message), verdict.detail


def test_a_claim_cut_short_has_no_column_zero():
    verdict = check(Claim("slope =="))
    assert verdict.detail == "cannot parse the claim: invalid syntax"


def test_an_algebraic_model_value_becomes_its_first_40_decimals():
    """z3 gives sqrt(2) as an algebraic number: the point takes its first 40 decimals, exactly."""
    import z3

    from derivations.claims.solver import _rational

    x = z3.Real("x")
    solver = z3.Solver()
    solver.add(x * x == 2, x > 0)
    assert solver.check() == z3.sat
    found = _rational(solver.model().eval(x))
    assert found == sp.Rational("1.4142135623730950488016887242096980785696")
    assert _rational(z3.RealVal("3/7")) == sp.Rational(3, 7)  # a rational stays exact
