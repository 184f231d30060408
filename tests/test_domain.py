"""The claim's domain, step by step: natural ranges, fixed values, narrowing, properties,
definedness and limits, each on its own."""

import itertools

import pytest
import sympy as sp

from derivations.claims import Claim, ClaimError, check, checker, sampling
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
from derivations.core.proof import DerivationError
from derivations.symbols import epsilon, gamma_max, mu, n, q, r, t, x


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


@pytest.mark.parametrize("second", ["1/4", "0.25", "2/8"])
def test_one_value_stated_twice_is_no_contradiction(second):
    assumptions = ("epsilon == 1/4", f"epsilon == {second}")
    verdict = check(Claim("slope_at_zero > 0", layer="layernorm", assumptions=assumptions))
    assert verdict.verdict == "proved", verdict.detail


def test_a_value_and_its_negation_contradict_each_other():
    verdict = check(Claim("slope_at_zero > 0", layer="layernorm", assumptions=("t == 1", "t == -1")))
    assert verdict.verdict == "vacuous"
    assert "t == 1 and t == -1 contradict each other" in verdict.detail


def test_one_feature_is_outside_what_is_derived_not_vacuous():
    domain, _ = _domain("slope_at_zero == 1")
    # The layer exists at n = 1 (LayerNorm is 0 there): a refusal that names it, not "no input".
    with pytest.raises(ClaimError, match=r"n == 1: n = 1 is outside what the derivations cover"):
        fixed_values(domain, [Assumption("n == 1", sp.Eq(n, 1))])


@pytest.mark.parametrize("assumption", ["n <= 2", "n < 3", "n <= 2.5"])
def test_a_bound_on_n_that_admits_two_is_decided_at_two_not_refused_as_one_feature(assumption):
    """n <= 2 admits n = 1 and n = 2: the claim is decided at n = 2, the one the derivations cover,
    and only a bound that admits no n >= 2 is refused as about one feature."""
    verdict = check(Claim("norm(J, 2) <= 1/sqrt(epsilon)", layer="layernorm", assumptions=(assumption,)))
    assert verdict.verdict == "proved"
    assert verdict.quantifier == "for all x in R^n, n = 2, epsilon > 0"


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


@pytest.mark.parametrize(
    ("body", "excluded"),
    [
        ("abs(t) / abs(t) == 1", "t != 0"),
        ("abs(t)**2 / abs(t)**2 == 1", "t != 0"),
        ("1 / (abs(t) - 1) == 1 / (abs(t) - 1)", "t != -1 and t != 1"),
    ],
)
def test_a_condition_on_the_absolute_value_of_a_variable_is_stated_on_the_variable(body, excluded):
    """|t| != 0 is t != 0: a condition polynomial in |t| is solved for t, and the claim proved
    where it holds (this raised IndexError inside the solver's guard once)."""
    domain, _ = _domain(body)
    assert domain.excluded == (excluded,)
    verdict = check(Claim(body, layer="rmsnorm"))
    assert verdict.verdict == "proved"
    assert verdict.quantifier == f"for all t, where {excluded}"


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


@pytest.mark.parametrize(
    ("body", "side", "at_root", "elsewhere"),
    [
        (t / (t + gamma_max - 1), TWO_SIDED, 1, 0),  # a reciprocal: 1/(t + g - 1)
        (sp.sqrt((gamma_max - 1) ** 2 + t**2) / t, RIGHT, 1, sp.oo),  # a root: sqrt(...)
    ],
)
def test_a_root_of_a_denominator_or_radicand_away_from_zero_is_a_case_of_its_own(body, side, at_root, elsewhere):
    """At gamma_max = 1 the body's reciprocal, or its square root, loses its constant term at
    t = 0, and the limit there differs from the limit at every other gamma_max: the root is
    found as a case (a sign case finds only gamma_max = 0)."""
    found, lost = take(Lim(body, t, sp.Integer(0), side))
    assert not lost
    assert found.subs(gamma_max, 1) == at_root
    assert found.subs(gamma_max, 3) == elsewhere
    assert found.subs(gamma_max, sp.Rational(1, 2)) == elsewhere


def test_one_sided_limits_that_differ_by_a_symbol_that_may_be_zero_are_undecided():
    """q |t|/t tends to q from the right and -q from the left: they agree at q = 0 (where the limit
    is 0) and differ elsewhere, so neither "no limit" nor a value holds for every q."""
    with pytest.raises(ClaimError, match=r"cannot tell whether the limits from the left \(-q\) and right \(q\) agree"):
        take(Lim(q * sp.Abs(t) / t, t, sp.Integer(0), TWO_SIDED))
    assert check(Claim("limit(q*abs(t)/t, t, 0) == 0", layer="layernorm")).verdict == "error"


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("limit(response, t, oo) == asymptote", "proved"),
        ("limit(response, t, 0) == 0", "proved"),
        ("limit(slope, t, 0) == slope_at_zero", "proved"),
        ("limit(response, t, oo) == 2", "refuted"),
    ],
)
def test_a_limit_through_a_clamp_takes_the_regime_that_holds_near_its_point(text, verdict):
    """The clamped layer's response is a function of t by cases (|t| below or above the kink):
    near 0 and near oo one case holds, and its limit is the limit."""
    assert check(Claim(text, layer="l2norm_clamped")).verdict == verdict


@pytest.mark.parametrize(
    ("assumptions", "values"),
    [
        ((), ["1/4", "1", "4", "1/1024", "1024"]),
        (("epsilon >= 0",), ["0", "1/4", "1", "4", "1/1024", "1024"]),
        (("epsilon <= 1",), ["1", "1/4", "1/1024", "1/2"]),
        (("epsilon >= 0", "epsilon <= 1"), ["0", "1", "1/4", "1/1024", "1/2"]),
        (("epsilon == 0",), ["0"]),
    ],
)
def test_the_audit_takes_epsilon_at_its_special_values_within_the_claim_s_range(assumptions, values):
    """The audit's epsilons: the range's ends it holds (0 where an assumption admits it), the
    special values inside, and a value inside a bounded range; none outside the range."""
    from derivations.claims.audit import Claimed
    from derivations.claims.checker import _audit_ranges

    domain, _ = _domain("second_moment <= 1", assumptions=assumptions)
    ranges = _audit_ranges(domain, Claimed("second_moment <= 1", "layernorm", assumptions, ()))
    assert ranges["epsilon"] == [sp.Rational(value) for value in values]


@pytest.mark.parametrize(
    ("assumption", "verdict"), [("1 < 2", "proved"), ("2 - 2 == 0", "proved"), ("2 < 1", "vacuous")]
)
def test_an_assumption_without_symbols_is_no_restriction_where_true_and_vacuous_where_false(assumption, verdict):
    found = check(Claim("slope_at_zero == 1/sqrt(epsilon)", "layernorm", (assumption,)))
    assert found.verdict == verdict, found.detail
    if verdict == "vacuous":
        assert f"the assumption {assumption} is false" in found.detail


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


@pytest.mark.parametrize("count", [4, 5])
def test_a_limit_splits_at_up_to_four_roots_a_symbol_and_refuses_more(count):
    """t / (t**2 + (epsilon - 1)...(epsilon - count)) at t -> 0 does not exist at each root (-oo
    from the left, oo from the right) and is 0 between them: four roots are cases of their own,
    as docs/claims.md says; a fifth refuses the limit."""
    body = t / (t**2 + sp.prod(epsilon - k for k in range(1, count + 1)))
    limit = Lim(body, t, sp.Integer(0), TWO_SIDED)
    if count > 4:
        with pytest.raises(ClaimError, match="cannot find every epsilon where"):
            take(limit)
        return
    value, missing = take(limit)
    assert {m.where for m in missing} == {sp.Eq(epsilon, k) for k in range(1, count + 1)}
    assert value.subs(epsilon, sp.Rational(3, 2)) == 0


@pytest.mark.parametrize("failure", [NotImplementedError, ValueError, TypeError])
def test_a_limit_is_refused_where_sympy_gives_up_on_the_roots(monkeypatch, failure):
    """Each way SymPy's solver says it cannot solve is a refusal of the limit, never a limit
    taken as if the denominator had no root (0 at t = 0 here, where the limit is oo)."""

    def gives_up(*args, **kwargs):
        raise failure("cannot solve")

    monkeypatch.setattr(sp, "solveset", gives_up)
    with pytest.raises(ClaimError, match="cannot find every t where t\\*\\*2 is 0"):
        take(Lim(epsilon / (epsilon + t**2), epsilon, sp.Integer(0), TWO_SIDED))


@pytest.mark.parametrize("failure", [NotImplementedError, ValueError, TypeError, AttributeError, RecursionError])
def test_a_limit_sympy_fails_on_is_refused_by_name(monkeypatch, failure):
    """Each way sympy.limit is known to fail (a recursion too deep included) is a ClaimError
    naming it, so the claim is an error verdict, never a crash or a guessed value."""

    def fails(*args, **kwargs):
        raise failure("no")

    monkeypatch.setattr(sp, "limit", fails)
    with pytest.raises(ClaimError, match=rf"SymPy cannot take this limit \({failure.__name__}\)"):
        take(Lim(t / (1 + t**2), t, sp.Integer(0), TWO_SIDED))


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


@pytest.mark.parametrize("error", [NotImplementedError, TypeError, ValueError])
def test_an_assumption_on_epsilon_sympy_cannot_turn_into_a_set_leaves_epsilon_positive(error, monkeypatch):
    """SymPy's as_set raises each of these for some relations (periodic solutions, a comparison
    it cannot order, "Only Integer Powers are allowed on Abs"): the assumption is then not read
    as admitting epsilon = 0, and the claim is decided over epsilon > 0, not left to the error."""
    from derivations.claims import domain as claims_domain

    real = sp.core.relational.Relational.as_set

    def as_set(relation: sp.Basic) -> sp.Set:
        if {str(s) for s in relation.free_symbols} == {"epsilon"}:
            raise error("as SymPy raises it")
        return real(relation)

    monkeypatch.setattr(sp.core.relational.Relational, "as_set", as_set)
    claims_domain._admits_zero.cache_clear()
    try:
        verdict = check(Claim("slope_at_zero == 1/sqrt(epsilon)", assumptions=("epsilon >= 0",)))
    finally:
        claims_domain._admits_zero.cache_clear()
    assert verdict.verdict == "proved", verdict.detail
    assert "epsilon > 0" in verdict.quantifier


@pytest.mark.parametrize(
    ("text", "condition"),
    [
        ("1/(n - 1 + q) > 0", "n + q - 1 != 0"),
        ("sqrt(n - 2 + q) >= 0", "n + q - 2 >= 0"),
        ("1/(n - 1 + epsilon) > 0", "epsilon + n - 1 != 0"),
        ("sqrt((n - 2) * epsilon) >= 0", "epsilon*(n - 2) >= 0"),
    ],
)
def test_a_condition_that_holds_from_n_2_on_is_no_exclusion_even_without_z3(text, condition, monkeypatch):
    """SymPy alone decides it, with n written as 2 + m for an integer m >= 0 beside q >= 0 and
    epsilon > 0: the quantifier needs no "where" for it, whatever z3 says (read from m >= 0, it
    was listed as an exclusion)."""
    from derivations.claims import solver

    monkeypatch.setattr(solver, "satisfiable", lambda *args, **kwargs: solver.Answer("unknown"))
    verdict = check(Claim(text))
    assert verdict.verdict == "proved", verdict.detail
    assert "where" not in verdict.quantifier, (condition, verdict.quantifier)


_A, _B = sp.symbols("a b", real=True)


@pytest.mark.parametrize(
    "expr",
    [
        sp.Max(_A, _B),
        sp.Min(_A, _B),
        sp.Max(_A, _B, 1),
        sp.Min(-_B, _A, 0),
        sp.Abs(_A - _B),
        sp.sign(_A - 1),
        sp.sign(_A),  # 1 at 1/3 and at 1 too: positive, however small
        sp.Piecewise((_A, _A > _B), (_B - 1, True)),
        (_A - _B) ** 3,
        1 / (_A**2 + 1),
        sp.sqrt(_A**2 + _B**2),
        (_A**2 + 1) ** sp.Rational(-3, 2),
    ],
    ids=str,
)
def test_the_solvers_translation_takes_each_term_at_its_exact_value(expr):
    """The decision procedure's translation is exact: at each point, z3's value of each term
    (max, min, abs, sign, cases, powers, roots) is SymPy's, to the 40 digits of an algebraic one."""
    import z3

    from derivations.claims.solver import _rational, _Translation

    points = [sp.Rational(v) for v in ("-2", "-1/2", "0", "1/3", "1", "3")]
    for a, b in itertools.product(points, points[::2]):
        translation = _Translation()
        value = translation.term(expr)
        solver = z3.Solver()
        given = [translation.variable(_A) == z3.RealVal(str(a)), translation.variable(_B) == z3.RealVal(str(b))]
        solver.add(*given, *translation.extra)
        assert solver.check() == z3.sat
        found = _rational(solver.model().eval(value, model_completion=True))
        exact = expr.subs({_A: a, _B: b})
        assert abs(found - exact) < sp.Rational(1, 10**35), (expr, a, b, found, exact)


@pytest.mark.parametrize("value", ["1/100", "1", "100"])
def test_a_pinned_statistic_keeps_every_sampled_input_scaled_to_it_from_either_side(value):
    """r == value: each sampled input of moderate size with r != 0 is scaled, up or down, to have
    r = value exactly, so the counterexample search keeps the shapes it draws whatever their scale."""
    domain, _ = _domain("norm(y) <= 1/2", "rmsnorm", (f"r == {value}",))
    drawn = list(itertools.islice(sampling.explicit_inputs([2, 3, 4], domain.usage.vectors), 48))
    moderate = [inputs for inputs in drawn if 0 < max(abs(e) for e in inputs.x) <= 10**6]
    assert len(moderate) >= 36
    below = [inputs for inputs in moderate if sum(e**2 for e in inputs.x) / len(inputs.x) < sp.Rational(value)]
    assert 0 < len(below) < len(moderate) or value != "1"  # at r == 1, inputs on both sides
    for inputs in moderate:
        prepared = checker._to_assumptions(domain, inputs, set())
        assert prepared is not None, inputs.x
        scaled, statistics = prepared
        assert sum(e**2 for e in scaled.x) / len(scaled.x) == sp.Rational(value)
        assert statistics[domain.symbol(r)] == sp.Rational(value)


@pytest.mark.parametrize("mean", [2, -3, sp.Rational(1, 2)])
def test_an_explicit_input_has_the_points_mean_and_spread_and_is_constant_without_one(mean):
    """x = mu + sqrt(q) z: the point's mean and variance, or mean square r (variance r - mu**2);
    a point that gives only a mean is the constant input at it."""
    from derivations.symbols import mu

    assert all(abs(e - mean) == 0 for e in sampling.input_for({mu: sp.sympify(mean)}, 3))
    for given in ({mu: mean, q: 4}, {mu: mean, r: mean**2 + 4}):
        x = sampling.input_for(given, 4)
        assert abs(sum(x) / 4 - mean) < 1e-25
        assert abs(sum((e - mean) ** 2 for e in x) / 4 - 4) < 1e-25


def test_a_side_mpmath_cannot_evaluate_at_a_point_is_no_sample_there():
    """max(sqrt(t), 1) at t = -1 compares a complex root with 1 (a TypeError in mpmath): the point
    gives no sample, as a division by zero does, and the sampler goes on."""
    compiled = sampling.Compiled(sp.Max(sp.sqrt(t), 1), sp.Integer(1), [t])
    assert compiled.sides({t: sp.Integer(-1)}) is None
    assert sampling.Compiled(1 / t, sp.Integer(1), [t]).sides({t: sp.Integer(0)}) is None
    assert compiled.sides({t: sp.Integer(4)}) == (2, 1)
    # A side mpmath evaluates to a complex number (the principal cube root of -1/2) is no sample
    # either: never an error, never compared.
    root = sampling.Compiled((t - 1) ** sp.Rational(1, 3), t, [t])
    assert root.sides({t: sp.Rational(1, 2)}) is None
    assert root.decide("<=", {t: sp.Rational(1, 2)}) is None
    assert root.sides({t: sp.Integer(9)}) == (2, 9)


def test_the_statistics_at_a_constant_input_are_functions_of_t_or_none():
    """At x = t 1 a mean over the entries is its summand at t; a partial mean (pRMSNorm's) is not
    read so, and the claim gets no constant-input statistics."""
    from derivations import LAYERS
    from derivations.claims.semantics import constant_input_statistics

    assert constant_input_statistics(LAYERS["layernorm"]) == {LAYERS["layernorm"].statistics[0].symbol: t, q: 0}
    assert constant_input_statistics(LAYERS["rmsnorm"]) == {r: t**2}
    assert constant_input_statistics(LAYERS["prmsnorm"]) is None


@pytest.mark.parametrize(
    ("condition", "value"),
    [
        (sp.Or(t < -1, t > 1), 2),  # neither part holds near 0: the other case
        (sp.Or(t < -1, t > -sp.Rational(1, 2)), 1),  # one part does
        (sp.And(t > -1, t < 1), 1),
        (sp.And(t > 1, t < 2), 2),
        (sp.And(t > -1, t < 1 + epsilon), 1),  # epsilon > 0: both parts hold near 0
    ],
)
def test_a_limit_through_cases_takes_the_case_whose_and_or_or_condition_holds_near_its_point(condition, value):
    """Near t = 0 an Or holds where one of its parts does and fails where all fail; an And holds
    where all its parts do: the limit is the value of the case that holds there."""
    body = sp.Piecewise((1, condition), (2, True))
    found, lost = take(Lim(body, t, sp.Integer(0), TWO_SIDED))
    assert (found, lost) == (value, [])


@pytest.mark.parametrize("text", ["spectral_bound / (n - 2) >= 0", "1/(n**2 - 4) >= 0", "trace(J) / (n - 2) >= 0"])
def test_a_division_by_zero_at_n_2_leaves_n_2_out_of_the_quantifier(text):
    """n >= 2 is every size z3 is told of: a requirement that fails only at n = 2 is not dropped as
    always holding, and the verdict says it leaves n = 2 out."""
    found = check(Claim(text, "layernorm"))
    assert found.verdict == "proved", found.detail
    assert found.quantifier.endswith("where n - 2 != 0"), found.quantifier


def test_a_set_of_n_whose_emptiness_cannot_be_told_is_never_called_empty():
    """The vacuous verdict needs the set of n to be known empty: a Range SymPy cannot size (its end
    symbolic, `size` raises ValueError) is not, and neither is a set whose is_empty is None."""
    from derivations.claims import domain

    end = sp.Symbol("a", integer=True)
    assert domain._no_integer(sp.Range(2, end)) is False
    assert domain._no_integer(sp.Range(2, 2)) is True
    assert domain._no_integer(sp.Range(2, 5)) is False


@pytest.mark.parametrize(
    ("where", "said"),
    [
        (sp.Range(3, sp.oo), "n >= 3"),
        (sp.FiniteSet(4), "n = 4"),
        (sp.Range(4, 5), "n = 4"),
        (sp.Range(2, 6), "2 <= n <= 5"),
        (sp.FiniteSet(2, 5, 9), "n in {2, 5, 9}"),
    ],
)
def test_a_set_of_feature_counts_is_said_as_a_verdict_says_it(where, said):
    from derivations.claims.proof import describe_n

    assert describe_n(where) == said


def test_a_limit_in_epsilon_toward_zero_is_taken_from_above():
    """epsilon > 0: limit(e, epsilon, 0) is the limit from the right, decided as that one is;
    from the left it is refused with the reason."""
    for text in (
        "limit(slope_at_zero * sqrt(epsilon), epsilon, 0)",
        'limit(slope_at_zero * sqrt(epsilon), epsilon, 0, "+")',
    ):
        assert check(Claim(f"{text} == 1", layer="layernorm")).verdict == "proved"
        assert check(Claim(f"{text} == 2", layer="layernorm")).verdict == "refuted"
    left = check(Claim('limit(slope_at_zero * sqrt(epsilon), epsilon, 0, "-") == 1', layer="layernorm"))
    assert left.verdict == "error"
    assert "epsilon tends to 0 from above only (epsilon > 0)" in left.detail


@pytest.mark.parametrize(
    ("condition", "admitted", "decided"),
    [
        (n >= 25, sp.Range(25, sp.oo), sp.true),  # every n from 25 on, however large: an integer past 24
        (n >= 26, sp.Range(25, sp.oo), n >= 26),  # false at n = 25 only
        (sp.Ne(2 * n, 49), sp.Range(2, sp.oo), sp.true),  # 2 n is even
        (n <= 23, sp.Range(24, sp.oo), sp.false),
        (n >= 3, sp.Range(2, sp.oo), n >= 3),
    ],
)
def test_a_condition_on_n_alone_is_decided_over_the_admitted_integers(condition, admitted, decided):
    """True (or false) where it is at every admitted n: the small n one by one, the rest as 24
    plus a positive integer (not a positive real: n = 24.5 is no feature count)."""
    from derivations.claims.domain import _on_n

    assert _on_n(condition, admitted) == decided


_J = sp.Symbol("j", integer=True, nonnegative=True)


@pytest.mark.parametrize(
    "summand",
    [x[_J] ** 2 + 1, (x[_J] - mu) ** 2, 3 * x[_J] - 2, mu, (x[_J] + 1) ** 2 / 2],
    ids=["square_plus_one", "centred_square", "affine", "constant", "shifted_square"],
)
def test_a_statistic_of_another_layer_is_its_mean_over_the_entries_of_x(summand):
    """Statistics of several layers meet in mu and q: the mean of a polynomial in x_j, written in
    them, is the mean taken entry by entry (a constant term's mean is the constant)."""
    from derivations.claims.domain import _canonical_mean

    values = [sp.Integer(1), sp.Integer(2), sp.Integer(4), sp.Rational(-3, 2)]
    mean = sum(values) / len(values)
    variance = sum((v - mean) ** 2 for v in values) / len(values)
    entrywise = sum(summand.subs({x[_J]: v, mu: mean}) for v in values) / len(values)
    assert _canonical_mean(summand).subs({mu: mean, q: variance}) == entrywise


def test_beside_an_explicit_input_no_point_is_checked_twice_and_gamma_max_is_the_inputs():
    """The largest gain is the input's own, never a scalar sampled beside it: sampled too (as the
    derivation's positive gamma_max where the domain's is nonnegative), it was overwritten by the
    input's, and the same input and epsilon were checked up to four times out of six."""
    domain, sides = _domain("norm(J, oo) <= gamma_max * norm(J.T, oo) + 100", "layernorm_affine")
    assert domain.inputs
    assert domain.symbol(gamma_max) != gamma_max  # renamed: 0 is in its range
    drawn = list(itertools.islice(checker._points(domain, checker._Sides(sides[0], "<=", sides[1]), None), 36))
    assert len(drawn) == 36
    seen = set()
    for point, inputs in drawn:
        assert point[domain.symbol(gamma_max)] == max(abs(value) for value in inputs.gain)
        key = (tuple(inputs.x), tuple(inputs.gain), tuple(sorted(point.items(), key=str)))
        assert key not in seen, point
        seen.add(key)


def test_the_sampled_powers_of_ten_are_as_many_above_one_as_below_it_each_mirrored():
    """ε and the statistics are log-spaced from 1e-300 to 1e300 (docs/claims.md): each power of ten
    sampled below 1 has its mirror above it, so a claim is tried as far from 1 on either side."""
    powers = [sp.log(value, 10) for value in sampling._LOG]
    assert min(powers) == -300
    assert max(powers) == 300
    assert sorted(powers) == sorted(-p for p in powers)
    assert 0 not in powers  # 1 is among the nicest values, not the log-spaced ones


def test_a_condition_is_on_the_entries_only_where_it_names_an_entry_of_x():
    """Only conditions on x_i are left to the audit; one on another vector's entry, or on none, is not."""
    from derivations.claims.semantics import _on_entries, g
    from derivations.symbols import i

    assert _on_entries(sp.Ne(x[i], 0))
    assert _on_entries(sp.Or(sp.Ne(g[i], 0), sp.Gt(x[i] + epsilon, 0)))
    assert not _on_entries(sp.Ne(g[i], 0))
    assert not _on_entries(sp.Gt(q + epsilon, 0))


@pytest.mark.parametrize(
    ("text", "assumptions", "verdict"),
    [
        ("gamma_max >= 2", ("gamma == 2",), "proved"),
        ("gamma_max >= gamma", ("gamma >= 1",), "proved"),
        ("gamma_max >= 3", ("gamma == 2",), "refuted"),
    ],
)
def test_a_gain_entry_named_only_in_an_assumption_still_bounds_gamma_max(text, assumptions, verdict):
    """|gamma_i| <= gamma_max couples a gain entry to the largest wherever the entry is named, in
    the claim or only in an assumption: gamma == 2 makes gamma_max >= 2 true, not undecided."""
    found = check(Claim(text, "layernorm_affine", assumptions))
    assert found.verdict == verdict, found.detail


def test_a_quantity_piecewise_in_n_is_proved_on_sets_of_n_that_each_keep_one_branch():
    """The cases a proof splits n into each keep one branch of every Piecewise, which is then
    taken as it is there; a set of n that keeps none whole is a DerivationError, never a guess."""
    from derivations.claims.proof import _partition, _restrict

    value = sp.Piecewise((1, sp.Eq(n, 2)), (2, n >= 3))
    parts = _partition(value, sp.Range(2, sp.oo))
    assert parts == [sp.FiniteSet(2), sp.Range(3, sp.oo)]
    assert [_restrict(value, part) for part in parts] == [1, 2]
    with pytest.raises(DerivationError, match=r"^no single branch of Piecewise\(.*\) on Range\(2, oo, 1\)$"):
        _restrict(value, sp.Range(2, sp.oo))


@pytest.mark.parametrize(
    ("text", "layer", "assumptions", "sizes"),
    [
        ("norm(y) <= 2", "layernorm", (), [2, 3, 4, 5]),
        ("norm(y) <= 2", "prmsnorm", (), [2, 3, 4, 5, 17]),  # k = ceil(n/16) is 2 first at n = 17
        ("norm(y) <= 2", "prmsnorm", ("n >= 20",), [20]),  # k = 2 from the first admitted size on
        ("norm(y) <= 2", "layernorm", ("n >= 7",), [7]),
    ],
)
def test_the_sampled_sizes_reach_one_where_a_partial_mean_runs_over_two_entries(text, layer, assumptions, sizes):
    """2 to 5 as admitted; for a mean over the first k = ceil(n/16) entries (pRMSNorm), which is one
    entry at all of them, also the first n where it is two: a claim true only of one-entry means
    is then met by an input where it is false."""
    domain, _ = _domain(text, layer, assumptions)
    assert checker._sizes(domain) == sizes


@pytest.mark.parametrize(
    ("factors", "where"),
    [
        ("(t**2-1)*(t**2-4)", "where t != -2 and t != -1 and t != 1 and t != 2."),
        ("t*(t**2-1)*(t**2-4)", "where t*(t - 2)*(t - 1)*(t + 1)*(t + 2) != 0."),
    ],
)
def test_a_claim_undefined_at_up_to_four_points_names_them_and_at_five_keeps_the_condition(factors, where):
    """The points a claim is undefined at are named one by one up to four; from five on, the
    condition is shown as it is, factored."""
    verdict = check(Claim(f"1/({factors}) == 1/({factors})", "layernorm"))
    assert verdict.verdict == "proved"
    assert f"proved for all t, {where} n >= 2" in verdict.detail


@pytest.mark.parametrize("assumed", ["epsilon >= 0", "0 <= epsilon", "0<=epsilon"])
def test_an_assumed_epsilon_ge_0_is_said_once_by_the_quantifier(assumed):
    """epsilon >= 0, however spelled, is what the quantifier says ("epsilon >= 0"): the verdict
    does not repeat it as an assumption."""
    verdict = check(Claim("slope_at_zero >= 0", "layernorm", assumptions=(assumed,)))
    assert verdict.verdict == "proved"
    assert "proved for all t in R, epsilon >= 0, at x = (-t, 0, t) (n = 3), where epsilon != 0. n = 3" in verdict.detail
    assert verdict.detail.count("epsilon >= 0") == 1
    assert "0 <= epsilon" not in verdict.detail
    assert "0<=epsilon" not in verdict.detail


def test_conditions_outside_z3s_fragment_are_left_undecided_not_an_error():
    """An assumption z3 cannot read (exp) leaves open whether any input satisfies them all, and
    says so; a point where the claim is undefined that z3 cannot read stays excluded."""
    assumed = check(Claim("slope_at_zero >= 0", "layernorm", assumptions=("exp(t) > 2",)))
    assert assumed.verdict == "proved"
    assert assumed.detail.endswith("whether the assumptions admit any input at all was not decided")
    excluded = check(Claim("1/(exp(t) - 1) == 1/(exp(t) - 1)", "layernorm"))
    assert excluded.verdict == "proved"
    assert "proved for all t, where exp(t) - 1 != 0. n >= 2" in excluded.detail


@pytest.mark.parametrize(
    ("condition", "symbol", "plain"),
    [
        (sp.Gt(t**4 - t, 1), t, True),
        (sp.Gt(t**5, 1), t, False),  # beyond the fourth degree
        (sp.Gt(sp.Abs(t) ** 2, 1), t, True),  # a polynomial in |t|
        (sp.Gt(sp.exp(t), 1), t, False),
        (sp.Gt(t ** sp.Float(2.0), 1), t, False),  # SymPy's degree refuses a float power
        (sp.Gt(x[0] ** 2, 1), x[0], True),
        (sp.And(t > 0, t < 1), t, False),
    ],
)
def test_a_condition_is_solved_for_its_symbol_where_it_is_a_polynomial_of_degree_4_at_most(condition, symbol, plain):
    """`domain._plain_enough`: what the domain solves for its one symbol's values (quickly), and
    what it keeps as written."""
    from derivations.claims.domain import _plain_enough

    assert _plain_enough(condition, symbol) is plain


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("sqrt(exp(t)) >= 0", None),  # outside z3's fragment, but SymPy knows exp(t) > 0
        ("sqrt(exp(t) + q) >= 0", None),
        ("sqrt(n - 2) >= 0", None),  # n = 2 + m, m >= 0
        ("sqrt(n - 3) >= 0", "where n - 3 >= 0"),
        ("sqrt(exp(q) - 1) >= 0", "where exp(q) - 1 >= 0"),  # true, but neither engine shows it
    ],
)
def test_a_requirement_that_holds_everywhere_is_no_exclusion(text, where):
    """What a claim needs to be defined is an exclusion ("where ...") only where neither SymPy's
    judgment nor z3 shows that it holds at every point of the domain."""
    found = check(Claim(text, "layernorm"))
    assert found.verdict in ("proved", "supported"), found.detail
    if where is None:
        assert " where " not in found.detail.split(".")[0], found.detail
    else:
        assert where in found.detail, found.detail


@pytest.mark.parametrize(
    ("text", "root"),
    [
        ("limit(t/((a - 1)*t + t**2), t, 0) * (a - 1) == 1", 1),  # the root behind the factor t
        ("limit(t**2/((a - 3)*t**2 + t**3), t, 0) * (a - 3) == 1", 3),
        ("limit(t/(a*t + t**2), t, 0) * a == 1", 0),
    ],
)
def test_a_limit_whose_denominator_vanishes_for_one_value_of_a_scalar_is_refuted_there(text, root):
    """The limit of 1/(a - root + t) at 0 is 1/(a - root) except at a = root, where it does not
    exist: the claim is refuted there (it was proved once the common factor of t hid the root)."""
    found = check(Claim(text, "layernorm"))
    assert found.verdict == "refuted", found.detail
    assert found.witness.scalars["a"] == root
    assert "the limit does not exist" in found.detail


@pytest.mark.parametrize("root", [1, -2, sp.Rational(1, 2)])
def test_a_limit_that_exists_at_a_root_of_its_generic_form_is_taken_there(root):
    """(a - c)/((a - c)**2 + t**2) tends to 1/(a - c) for a != c and to 0 at a = c: the claim
    (a - c) times the limit == 1 is refuted at a = c, where the left side is 0 (it was proved
    once: z3 read the case a != c's denominator as nonzero at every point)."""
    found = check(Claim(f"limit((a - ({root}))/((a - ({root}))**2 + t**2), t, 0) * (a - ({root})) == 1", "layernorm"))
    assert found.verdict == "refuted", found.detail
    assert found.witness.scalars["a"] == root
    assert "lhs = 0, rhs = 1" in found.detail, found.detail


_HOLDS = {"==": sp.Eq, ">=": sp.Ge, ">": sp.Gt, "<=": sp.Le}


@pytest.mark.parametrize(
    ("expr", "op", "rhs", "violated_at"),
    [
        (sp.Piecewise((0, sp.Eq(_A, 1)), (1 / (_A - 1), True)) * (_A - 1), "==", 1, {_A: 1}),
        (sp.Piecewise((sp.sqrt(_A), _A >= 0), (-1, True)), ">=", 0, {_A: -1}),
        (sp.Piecewise((1 / _A**2, sp.Ne(_A, 0)), (0, True)), ">", 0, {_A: 0}),
        # At a = 3 the second case's condition holds too, but the first is the one taken.
        (sp.Piecewise(((_A - 3) ** 2, _A > 2), (1 / (_A - 3) ** 2, _A > 1), (1 + _B**2, True)), ">", 0, {_A: 3}),
        # A root in a condition is read only where the earlier conditions fail.
        (sp.Piecewise((0, _A < 0), (1, sp.sqrt(_A) > 1), (2, True)), ">=", 1, {_A: -1}),
    ],
    ids=str,
)
def test_the_solver_reads_a_cases_side_conditions_only_where_the_case_is_taken(expr, op, rhs, violated_at):
    """A denominator or a root inside a case (its value or its condition) constrains z3 only
    where that case is reached: otherwise the points where it is undefined, but another case
    holds, are lost, and a false claim is proved.  Each claim is false at ``violated_at``: z3
    finds a violation, and the exact value there confirms it; |expr| + 1 > 0 is still proved."""
    from derivations.claims import solver

    assert _HOLDS[op](expr.subs({_B: 0, **violated_at}), rhs) is sp.false
    answer = solver.holds_everywhere(expr, op, sp.Integer(rhs), [])
    assert answer.status == "sat", answer
    assert _HOLDS[op](expr.subs({_B: 0, **answer.point}), rhs) is sp.false, answer
    assert solver.holds_everywhere(sp.Abs(expr) + 1, ">", sp.Integer(0), []).status == "unsat"
    translation = solver._Translation()
    translation.term(expr)
    assert translation.guard is None  # the terms read after the cases are read at every point


@pytest.mark.parametrize("value", ["1/2", "2", "7"])
def test_sampled_gains_are_scaled_exactly_to_the_largest_gain_an_assumption_fixes(value):
    """gamma_max == value: each sampled gain vector is multiplied by value / max|gamma_i|, exactly,
    so its largest entry is value and the ratios between entries are kept; a zero gain cannot be."""
    domain, _ = _domain("norm(y) <= gamma_max * sqrt(n)", "layernorm_affine", (f"gamma_max == {value}",))
    fixed = sp.Rational(value)
    for inputs in itertools.islice(sampling.explicit_inputs([2, 3], {"gamma", "beta"}), 30):
        top = max(abs(e) for e in inputs.gain)
        scaled = checker._gains_to_fixed_largest(domain, inputs)
        if top == 0:
            assert scaled is None
            continue
        assert max(abs(e) for e in scaled.gain) == fixed
        assert all(b * top == a * fixed for a, b in zip(inputs.gain, scaled.gain, strict=True))


def test_a_limit_of_27_cases_is_taken_pointwise_and_one_of_81_is_refused():
    """Each real symbol entangled with the variable is split by sign (3 cases): three symbols make
    27 limits, taken (sqrt(s**2 + t**2) tends to |s| in each); four make 81, refused by name."""
    syms = sp.symbols("a b d e", real=True)
    body = sum(sp.sqrt(s**2 + t**2) for s in syms[:3])
    value, missing = take(Lim(body, t, sp.Integer(0), TWO_SIDED))
    assert missing == []
    for point in itertools.product((-2, 0, 3), repeat=3):
        at = dict(zip(syms, point, strict=False))
        assert value.subs(at) == sum(abs(p) for p in point), point
    with pytest.raises(ClaimError, match="depends on too many symbols to be taken pointwise"):
        take(Lim(body + sp.sqrt(syms[3] ** 2 + t**2), t, sp.Integer(0), TWO_SIDED))


@pytest.mark.parametrize(
    ("bound", "cases"),
    [
        (sp.Le(q, 2), ["0", "2/(_u + 1)"]),  # q >= 0: 0, and 2/(1 + u) for u >= 0 covers (0, 2]
        (sp.Lt(q, 2), ["0", "2/(_u + 1)"]),  # u > 0: (0, 2), and 0
        (sp.Ge(sp.Integer(2), q), ["0", "2/(_u + 1)"]),  # the same bound written the other way round
        (sp.Le(mu, 2), ["2 - _u"]),  # a real symbol: 2 - u for u >= 0
        (sp.Ge(q, 2), ["_u + 2"]),
    ],
)
def test_a_bound_on_one_symbol_becomes_substitutions_covering_exactly_its_range(bound, cases):
    """The prover's reparametrization: every value the bound admits is one of the cases at some
    u >= 0 (u > 0 where the bound is strict), and no case leaves the range: a nonnegative q below
    2 is 0 or 2/(1 + u), never 2 - u (negative for u > 2)."""
    from derivations.claims.proof import reparametrized

    symbol, values, _ = reparametrized(bound)
    assert [str(value) for value in values] == cases
    (u,) = set().union(*(value.free_symbols for value in values)) or {sp.Dummy()}
    for at in (0, sp.Rational(1, 3), 1, 7, 10**6):
        for value in values:
            point = value.subs(u, at)
            strict = isinstance(bound, (sp.StrictLessThan, sp.StrictGreaterThan))
            assert point.is_real
            assert bound.subs(symbol, point) is sp.true or (at == 0 and strict and value != 0), (value, at)


@pytest.mark.parametrize(
    ("text", "key", "spread"),
    [
        ("norm(y)**2 == n", "rmsnorm", "r"),
        ("0 * y == 0 * x", "rmsnorm", "r"),  # no division left in the claim: the layer's own
        ("trace(0 * J) == 0", "rmsnorm", "r"),
        ("0 * rmsnorm(2*x) == 0 * x", "rmsnorm", "r"),
        ("sum(hvp(g, v)) == 0", "layernorm", "q"),
    ],
)
def test_a_claim_about_the_layer_holds_only_where_the_layer_is_defined(text, key, spread):
    """With epsilon = 0 the layer divides by the root of its spread: a claim on its output, its
    Jacobian, the layer at another input or its Hessian product is proved where the spread is
    not 0 and says so, never at the input where the layer does not exist."""
    verdict = check(Claim(text, layer=key, assumptions=("epsilon == 0",)))
    assert verdict.verdict == "proved", verdict.detail
    assert verdict.quantifier.endswith(f"where {spread} != 0")
    assert f"{spread} != 0" in verdict.excluded


@pytest.mark.parametrize(
    ("assumption", "message"),
    [("epsilon == -1", "epsilon == -1, but epsilon > 0"), ("n == 5/2", "n == 5/2, but n is an integer >= 2")],
)
def test_a_fixed_value_outside_its_symbols_range_leaves_no_input(assumption, message):
    """A value an assumption fixes is checked against the symbol's range, as a bound is: epsilon
    = -1 or n = 5/2 leaves no input (a claim at such a value was decided as if it had one)."""
    verdict = check(Claim("slope_at_zero > 0", layer="layernorm", assumptions=(assumption,)))
    assert verdict.verdict == "vacuous", verdict.detail
    assert message in verdict.detail
