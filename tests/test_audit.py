"""The independent audit: it agrees with the derivations where both are right, and it catches
a wrong verdict the prover would have printed (each fabricated here, as a broken prover would)."""

import ast
import dataclasses
from typing import Any

import numpy as np
import pytest
import sympy as sp
from docs_text import docs_words
from flint import arb, fmpq

from derivations import LAYERS, quantities
from derivations.claims import Claim, audit, check
from derivations.claims import checker as claims_checker
from derivations.claims.audit import numbers
from derivations.claims.audit.numbers import AtLeast, Undefined, Unknown, ball, compare

# Every claimable quantity of these layers, by name, at one point each.
LAYER_KEYS = ("layernorm", "layernorm_affine", "layernorm_std_eps", "rmsnorm", "rmsnorm_eps_outside", "l2norm_clamped")


def _audited(key: str, name: str, point: audit.Point) -> arb:
    claimed = audit.Claimed(f"{name} == 0", key, (), ())
    with audit.precision():
        value = audit.evaluate.Evaluator(key, point, claimed.pattern).value(claimed.tree.left)
        if isinstance(value, AtLeast):  # a bound over all inputs: known from below only, no value to compare
            raise Unknown(f"{name} is a bound over all inputs")
        return ball(value)


def _derived(key: str, name: str, point: audit.Point) -> sp.Expr:
    """The derived formula at the point, with the statistics written out at the point's x."""
    layer = LAYERS[key]
    value = quantities.value(layer, name)
    size = point.n
    x = point.x if point.x is not None else None
    if quantities.names(layer)[name][0].over == "pattern":
        item = quantities.names(layer)[name][1]
        x = [entry.xreplace({sp.Symbol("t", real=True): point.t}) for entry in item.values]
    entries = {sp.IndexedBase("x", real=True)[m]: v for m, v in enumerate(x or [])}
    statistics = {s: v.xreplace(entries) for s, v in layer.explicit_statistics(size).items()}
    named = {sp.Symbol("epsilon", positive=True): point.epsilon, sp.Symbol("t", real=True): point.t}
    if point.gain is not None:
        named[sp.Symbol("gamma_max", positive=True)] = max(abs(v) for v in point.gain)
        named.update({sp.IndexedBase("gamma", real=True)[m]: v for m, v in enumerate(point.gain)})
        named.update({sp.IndexedBase("beta", real=True)[m]: v for m, v in enumerate(point.bias)})
    return value.xreplace(statistics).xreplace({sp.Symbol("n", integer=True, positive=True): size, **named})


_X = [sp.Rational(3, 2), sp.Rational(-1, 4), sp.Rational(5, 8), sp.Integer(2)]
_GAIN = [sp.Rational(3, 2), sp.Rational(-1, 2), sp.Integer(2), sp.Rational(1, 4)]
_BIAS = [sp.Integer(1), sp.Integer(0), sp.Rational(-1, 2), sp.Integer(3)]


def _point(layer, size: int) -> audit.Point:
    gains = {"gain": _GAIN[:size], "bias": _BIAS[:size]} if layer.parameters else {}
    return audit.Point(n=size, epsilon=sp.Rational(1, 3), t=sp.Rational(7, 5), x=_X[:size], **gains)


@pytest.mark.parametrize("key", LAYER_KEYS)
def test_the_audit_agrees_with_every_derived_quantity_at_a_point(key):
    """Two evaluations that share no code: the audit's, from the definition, and the derived
    formula's, substituted exactly; they agree wherever the audit can evaluate the quantity."""
    layer = LAYERS[key]
    compared, eigen = [], []
    for name, (quantity, item) in quantities.names(layer).items():
        if not quantity.claim or not quantity.applies(layer, item):
            continue
        eigen += [name] if name.startswith("eigen_") else []
        point = _point(layer, len(item.values) if quantity.over == "pattern" else 4)
        try:
            found = _audited(key, name, point)
            derived = _derived(key, name, point)
        except (quantities.NotApplicable, Unknown, Undefined):
            continue
        if derived.free_symbols or not derived.is_number or derived.has(sp.zoo, sp.nan):
            continue
        with audit.precision():
            value = arb(str(sp.N(derived, 70)), 1e-60)
            assert compare(found, "==", value) is not False, (name, found, value)
        compared.append(name)
    assert len(compared) >= 4, compared
    # Each eigenvalue is evaluated, its direction checked an eigenvector (J d = lambda d) here.
    assert set(eigen) <= set(compared), (eigen, compared)


@pytest.mark.parametrize(("key", "name"), [("rmsnorm", "eigen_x"), ("layernorm", "eigen_centered")])
def test_an_eigenvalue_along_a_direction_that_vanishes_is_its_limit_from_nearby_inputs(key, name):
    """At x = 0 the direction (x, or the centred c) is 0: the audit takes the eigenvalue along it
    as the limit of its values at inputs tending to 0, epsilon / s**3 at s = sqrt(epsilon), that is
    1/sqrt(epsilon) = 2 at epsilon = 1/4; and says it is not rigorous."""
    point = audit.Point(n=4, epsilon=sp.Rational(1, 4), t=sp.Integer(0), x=[sp.Integer(0)] * 4)
    claimed = audit.Claimed(f"{name} == 0", key, (), ())
    with audit.precision():
        evaluator = audit.evaluate.Evaluator(key, point, claimed.pattern)
        found = ball(evaluator.value(claimed.tree.left))
    assert abs(float(found.mid()) - 2.0) < 1e-12
    assert not evaluator.rigorous


@pytest.mark.parametrize("key", LAYER_KEYS)
def test_the_audit_s_value_far_out_is_the_derived_asymptote(key):
    """The limit as t -> oo, by the audit's extrapolation from the definition, agrees with the
    derived asymptote to many digits at every pattern the layer has one for (none is skipped)."""
    layer = LAYERS[key]
    far = [
        name for name, (q, item) in quantities.names(layer).items() if q.stem == "asymptote" and q.applies(layer, item)
    ]
    assert far
    for name in far:
        point = _point(layer, len(quantities.names(layer)[name][1].values))
        found, derived = _audited(key, name, point), _derived(key, name, point)
        assert abs(float(found.mid()) - float(derived)) < 1e-9 * max(1.0, abs(float(derived))), (name, found, derived)


def _layernorm_by_hand(x: np.ndarray, epsilon: float) -> dict[str, Any]:
    """LayerNorm's numbers at x, by NumPy from the definition (y = c / s), and J by central
    differences: no code shared with the audit."""
    c = x - x.mean()
    s = np.sqrt(np.mean(c * c) + epsilon)
    step = 1e-6
    columns = []
    for m in range(x.size):
        e = np.zeros(x.size)
        e[m] = step
        ahead, behind = x + e, x - e
        columns.append(
            (
                (ahead - ahead.mean()) / np.sqrt(np.var(ahead) + epsilon)
                - (behind - behind.mean()) / np.sqrt(np.var(behind) + epsilon)
            )
            / (2 * step)
        )
    return {"c": c, "s": s, "y": c / s, "J": np.stack(columns, axis=1)}


_EXPRESSIONS = {
    # One expression per construct the audit evaluates: each must evaluate (a crash is "not
    # evaluable" in a verdict's audit, and would pass unseen there) to the value NumPy gives.
    "s": lambda h, g, v: h["s"],
    "s**2": lambda h, g, v: h["s"] ** 2,
    "q**(1/2)": lambda h, g, v: np.sqrt(h["s"] ** 2 - 1 / 3),
    "sqrt(q + epsilon)": lambda h, g, v: h["s"],
    "norm(J @ v)": lambda h, g, v: np.linalg.norm(h["J"] @ v),
    "dot(g, J @ v)": lambda h, g, v: g @ h["J"] @ v,
    "norm(diag(g) @ v)": lambda h, g, v: np.linalg.norm(g * v),
    "trace(J)": lambda h, g, v: np.trace(h["J"]),
    "trace(3 * J)": lambda h, g, v: 3 * np.trace(h["J"]),
    "sum(2 * y)": lambda h, g, v: 2 * np.sum(h["y"]),
    "sum(y)": lambda h, g, v: np.sum(h["y"]),
    "dot(c, c) / n": lambda h, g, v: np.mean(h["c"] ** 2),
    "norm(y)": lambda h, g, v: np.linalg.norm(h["y"]),
    "norm(y.T)": lambda h, g, v: np.linalg.norm(h["y"]),
    "norm(y, 1)": lambda h, g, v: np.linalg.norm(h["y"], 1),
    "norm(y, oo)": lambda h, g, v: np.linalg.norm(h["y"], np.inf),
    "norm(J, oo)": lambda h, g, v: np.linalg.norm(h["J"], np.inf),
    "max(abs(c))": lambda h, g, v: np.max(np.abs(h["c"])),
    "det(J + I)": lambda h, g, v: np.linalg.det(h["J"] + np.eye(3)),
    "norm(J, 2)": lambda h, g, v: np.linalg.norm(h["J"], 2),
    "lipschitz": lambda h, g, v: None,  # the bound over all inputs: at least the norm at x
    "rank(J)": lambda h, g, v: np.linalg.matrix_rank(h["J"], tol=1e-6),
    "multiplicity(0, J)": lambda h, g, v: np.sum(np.abs(np.linalg.eigvals(h["J"])) < 1e-6),
    # A limit in epsilon, from the right: s at epsilon = 0 is the root of q.
    "limit(s, epsilon, 0)": lambda h, g, v: np.sqrt(h["s"] ** 2 - 1 / 3),
    "limit(s**2, epsilon, 1/3)": lambda h, g, v: h["s"] ** 2,
}


@pytest.mark.parametrize("text", sorted(_EXPRESSIONS))
def test_every_construct_the_audit_evaluates_gives_the_value_numpy_gives(text):
    x, g, v = [sp.Rational(3, 2), sp.Rational(-1, 4), sp.Rational(5, 8)], [1, -2, 3], [2, 1, -1]
    point = audit.Point(n=3, epsilon=sp.Rational(1, 3), x=x, g=g, v=v)
    claimed = audit.Claimed(f"{text} == 0", "layernorm", (), ())
    with audit.precision():
        value = audit.evaluate.Evaluator("layernorm", point, claimed.pattern).value(claimed.tree.left)
        bound = isinstance(value, AtLeast)
        found = ball(value.value if bound else value)
    by_hand = _layernorm_by_hand(np.array([float(e) for e in x]), 1 / 3)
    expected = _EXPRESSIONS[text](by_hand, np.array(g, float), np.array(v, float))
    if expected is None:  # at least ||J||_2 at x, which is among the inputs sampled
        assert bound
        assert float(found.mid()) >= np.linalg.norm(by_hand["J"], 2) - 1e-6, (text, found)
    else:
        assert not bound
        assert abs(float(found.mid()) - expected) < 1e-6 * max(1.0, abs(expected)), (text, found, expected)


@pytest.mark.parametrize(
    ("text", "value"), [("q**(1/2)", 0), ("q**(3/2)", 0), ("(q + epsilon)**(1/2)", 1), ("s**(-2)", 1)]
)
def test_a_half_integer_power_is_a_square_root_even_of_zero(text, value):
    """At a constant input q is exactly 0: its square root is 0, not a fractional power of a number
    not known to be positive (which the audit could not evaluate)."""
    point = audit.Point(n=3, epsilon=sp.Integer(1), x=[sp.Integer(2)] * 3)
    claimed = audit.Claimed(f"{text} == 0", "layernorm", (), ())
    with audit.precision():
        found = audit.evaluate.Evaluator("layernorm", point, claimed.pattern).value(claimed.tree.left)
        assert compare(found, "==", fmpq(value)) is True, (text, found)


def test_the_audit_decides_exactly_where_the_numbers_are_rational():
    assert compare(fmpq(1, 100), "==", fmpq(1, 100)) is True
    assert compare(fmpq(1, 10**40), "==", fmpq(0)) is False
    assert compare(arb(2).sqrt() ** 2, "==", fmpq(2)) is None  # a ball: open, never "equal"


@pytest.mark.parametrize(
    ("text", "key", "assumptions"),
    [
        ("slope_at_zero == 1/epsilon", "layernorm", ()),
        ("gamma_max > 0", "layernorm_affine", ()),
        ("slope == 0", "layernorm", ("epsilon == 0",)),  # undefined at t = 0, which it does not exclude
        ("q**-1 * q == 1", "layernorm", ()),  # undefined at q = 0
    ],
)
def test_a_wrong_proof_is_refuted_by_the_audit_loudly(text, key, assumptions, monkeypatch):
    """A prover that proves anything: every printed "proved" above would be wrong; the audit
    refutes each at a point of the domain and says the prover erred."""
    monkeypatch.setattr(claims_checker, "_prove", lambda domain, sides: "a broken prover")
    monkeypatch.setattr(claims_checker.Domain, "excluded", property(lambda self: ()))
    verdict = check(Claim(text, key, assumptions))
    assert verdict.verdict == "refuted", verdict.detail
    assert "INTERNAL ERROR: the prover had proved it" in verdict.detail
    assert "independent audit" in verdict.detail


@pytest.mark.parametrize(("points", "decided", "found", "consistent"), [(7, 3, 1, 3), (12, 0, 4, 8), (5, 5, 0, 0)])
def test_the_audits_summary_counts_each_point_once(points, decided, found, consistent):
    """Every audited point is decided, a finding, or consistent (or not evaluable): the summary's
    counts and the findings add up to the points."""
    report = audit.Report(points, decided, [audit.Finding({"n": 2}, "false", True)] * found)
    assert report.text() == (
        f"audited at {points} points of the domain in ball arithmetic: {decided} decided, "
        f"{consistent} consistent or not evaluable there"
    )


def test_a_refutation_outside_the_domain_is_withdrawn(monkeypatch):
    """A sampler that shows a point the assumptions exclude (x = 0 under q > 3 epsilon): withdrawn."""
    original = claims_checker._witness

    def outside(point, inputs, domain):
        witness = original(point, inputs, domain)
        return dataclasses.replace(witness, t=sp.Integer(0))

    monkeypatch.setattr(claims_checker, "_witness", outside)
    verdict = check(Claim("response <= 1", "layernorm", ("q > 3*epsilon",)))
    assert verdict.verdict == "error", verdict.detail
    assert "withdrawn" in verdict.detail
    assert "outside the domain" in verdict.detail


def test_a_refutation_where_the_claim_holds_is_withdrawn(monkeypatch):
    """A sampler that decides wrongly (the claim holds at its point): withdrawn."""
    monkeypatch.setattr(claims_checker.sampling.Compiled, "decide", lambda self, op, point: False)
    verdict = check(Claim("exp(response) <= exp(sqrt(3/2))", "layernorm"))
    assert verdict.verdict == "error", verdict.detail
    assert "the claim holds at the counterexample" in verdict.detail


def test_a_wrong_vacuous_verdict_is_an_error(monkeypatch):
    def vacuous(*args, **kwargs):
        raise claims_checker.Vacuous("a broken satisfiability check")

    monkeypatch.setattr(claims_checker, "build_domain", vacuous)
    verdict = check(Claim("slope_at_zero == 1/sqrt(epsilon)", "layernorm", ("epsilon <= 1",)))
    assert verdict.verdict == "error"
    assert "INTERNAL ERROR" in verdict.detail
    assert "met at" in verdict.detail


def test_the_audit_reaches_the_boundary_points():
    """t = 0, a constant x (q = 0), x = 0, a zero gain, n = 2 and 3: among the first points."""
    claimed = audit.Claimed("spectral_bound >= 0", "layernorm_affine", (), ())
    ranges = {"n": [2, 3, 4], "epsilon": [sp.Rational(1, 4)], "t": [sp.Integer(0)]}
    points = list(audit.points(claimed, ranges))
    assert {p.n for p in points} == {2, 3, 4}
    assert any(p.x is not None and len(set(p.x)) == 1 and p.x[0] != 0 for p in points)  # q = 0
    assert any(p.x is not None and all(v == 0 for v in p.x) for p in points)
    assert any(p.gain is not None and all(v == 0 for v in p.gain) for p in points)


@pytest.mark.parametrize("size", [2, 3, 5])
def test_a_bound_over_all_inputs_is_audited_at_least_at_a_unit_input(size):
    """At epsilon = 0 the zero and constant inputs have no Jacobian, so the bound's lower end
    is ||J||_2 at e_1 = (1, 0, ..., 0), where sigma = sqrt(n - 1)/n: n/sqrt(n - 1) (J is P - y y^T/n
    over sigma, and y is orthogonal to the constants), and 0 at n = 2, where P = y y^T/n."""
    point = audit.Point(n=size, epsilon=sp.Integer(0))
    with audit.precision():
        found = ball(audit.evaluate.Evaluator("layernorm", point).largest_norm("layernorm"))
    expected = size / arb(size - 1).sqrt() if size > 2 else arb(0)
    assert abs(float((found - expected).mid())) < 1e-12


def test_a_kink_has_no_derivative_by_quotients_and_both_sides_are_named():
    """|v| at 0: the difference quotients tend to 1 from the right and to -1 from the left."""
    from derivations.claims.audit.numbers import derivative_by_quotients

    with audit.precision(), pytest.raises(Undefined, match=r"from the right 1\.0+, from the left -1\.0+$"):
        derivative_by_quotients(lambda v: abs(ball(v)), fmpq(0))


@pytest.mark.parametrize("stem", ["slope_below_kink", "slope_above_kink"])
def test_the_slope_beside_a_switch_enclosed_to_2_to_the_minus_105_is_still_taken(stem, monkeypatch):
    """Beside the switch, the audit steps out by 2^-20, 2^-40, ... of the amplitude, each step at
    least 2^20 times the bracket's width: a bracket only 2^-105 wide (the balls could not tell the
    side any closer) still leaves three steps, and the same limit as the 2^-200 bracket."""
    from derivations.claims.audit import evaluate

    layer = LAYERS["l2norm_clamped"]
    names = [name for name, (q, item) in quantities.names(layer).items() if q.stem == stem and q.applies(layer, item)]
    assert names
    point = audit.Point(n=3, epsilon=sp.Rational(1, 3), t=sp.Rational(7, 5))
    values = {name: _audited("l2norm_clamped", name, point) for name in names}
    real = evaluate.kink_bracket

    def wider(*arguments):
        low, high = real(*arguments)
        assert (high - low) / high < fmpq(1, 2**190)
        wide = fmpq(1, 2**105)
        return (high * (1 - wide), high) if stem == "slope_below_kink" else (low, low * (1 + wide))

    monkeypatch.setattr(evaluate, "kink_bracket", wider)
    for name in names:
        found = _audited("l2norm_clamped", name, point)
        assert abs(float(found.mid()) - float(values[name].mid())) < 1e-12, (name, found, values[name])


@pytest.mark.parametrize("assumption", ["x is not constant", "X is not constant.", "c != 0", "x != 0", "q != 0"])
def test_the_audit_reads_an_assumption_in_the_users_words_on_its_own(assumption):
    """Not through the checker's translation: a constant input is outside "x is not constant"
    and "c != 0" (and inside "x != 0" where nonzero), a varying one inside each."""
    claimed = audit.Claimed("1/sigma_u > 0", "layernorm_std_eps", (assumption,), ())
    constant = audit.Point(n=3, epsilon=sp.Rational(1, 3), x=[sp.Integer(2)] * 3)
    varying = audit.Point(n=3, epsilon=sp.Rational(1, 3), x=[sp.Integer(2), sp.Integer(-1), sp.Integer(5)])
    assert claimed.in_domain(varying, False) is True
    assert claimed.in_domain(constant, False) is (assumption == "x != 0")


@pytest.mark.parametrize("product", ["epsilon @ x", "x @ epsilon", "J @ epsilon", "epsilon @ J"])
def test_a_matrix_product_the_audit_cannot_form_is_not_evaluable_there(product):
    """`@` of a number and a vector or matrix has no value: the audit says it cannot evaluate the
    claim there (Unknown), never takes a value for it (a None would decide nothing, silently)."""
    point = _point(LAYERS["layernorm"], 3)
    with audit.precision(), pytest.raises(Unknown, match="@"):
        audit.evaluate.Evaluator("layernorm", point).value(ast.parse(product, mode="eval").body)


def test_a_limit_is_taken_only_where_the_sequence_has_settled_or_grows_as_a_power():
    """The last step tiny (2^-60 of the value, of either sign) and shrinking: the last value; |v| growing by
    a power of the distance, the steps doubling: an infinity of its sign; anything else
    (halving steps that are still large, growth that is not a power) does not settle."""
    from derivations.claims.audit.numbers import Inf, extrapolated

    assert extrapolated([fmpq(1), fmpq(1), fmpq(1)]) == 1
    with audit.precision():
        close = extrapolated([arb(3) + arb(2) ** -30, arb(3) + arb(2) ** -70, arb(3) + arb(2) ** -150])
    assert 3 in close
    assert close.rad() < arb(2) ** -60
    for sign in (1, -1):
        # Tiny against the value, not against 1: steps of 2^31 and 2^30 settle at +-2^100.
        large = sign * fmpq(2) ** 100
        with audit.precision():
            settled = extrapolated([large + 2**32, large + 2**31, large + 2**30])
        assert large in settled
        assert settled.rad() <= arb(2) ** 33
        found = extrapolated([fmpq(sign * 2**20), fmpq(sign * 2**40), fmpq(sign * 2**80)])
        assert isinstance(found, Inf)
        assert found.sign == sign
    for values in ([fmpq(1), fmpq(1, 2), fmpq(1, 4)], [fmpq(2**20), fmpq(2**40), fmpq(2**60)]):
        with pytest.raises(Unknown, match="does not settle"):
            extrapolated(values)


@pytest.mark.parametrize("text", ["layernorm.response <= norm(y)", "response <= norm(y)"])
def test_a_quantity_named_with_its_layer_sets_the_audits_input_to_its_pattern(text):
    """layernorm.response is taken at x = (-t, 0, t), and so is y beside it: the audit's points
    follow the pattern the quantity names, with or without its layer's name, never a random x
    (where |y_3| <= ||y|| need not be compared to the pattern's response, and was refuted)."""
    verdict = check(Claim(text, layer="layernorm"))
    assert verdict.verdict == "proved", verdict.detail
    assert "at x = (-t, 0, t)" in verdict.quantifier
    assert "28 decided, 0 consistent" in verdict.detail


def test_the_audits_random_inputs_are_sixteenths_at_the_scales_the_docs_state():
    """docs/claims.md: entries k/16, |k| <= 64, at the scales 1, 2^+-30 and 2^+-100, 1 most often."""
    import random

    text = docs_words("claims.md")
    assert "entries k/16, |k| ≤ 64, at the scales 1, 2^±30 and 2^±100, 1 most often" in text
    rng, seen = random.Random(3), []
    for kind in range(4, 400):
        x = audit._input(4, kind, rng, {})
        scales = [s for s in (0, 30, -30, 100, -100) if all((v * 16 / sp.Integer(2) ** s).is_integer for v in x)]
        fitting = [s for s in scales if all(abs(v * 16 / sp.Integer(2) ** s) <= 64 for v in x)]
        assert fitting, x
        seen.append(min(fitting, key=abs) if any(v != 0 for v in x) else 0)
    assert set(seen) == {0, 30, -30, 100, -100}
    assert seen.count(0) > 2 * max(seen.count(s) for s in (30, -30, 100, -100))


def test_the_audits_first_inputs_are_the_special_ones_the_docs_state():
    """docs/claims.md: a constant x, x = 0, the ramp m - floor(n/2) and the alternating signs
    (-1)^m come before the random inputs, at every size."""
    import random

    assert "a constant x (q = 0), x = 0, the ramp x_m = m − ⌊n/2⌋ and the signs x_m = (−1)^m" in docs_words("claims.md")
    for size in (2, 3, 5):
        first = [audit._input(size, kind, random.Random(0), {}) for kind in range(4)]
        assert first == [
            [sp.Rational(1, 2)] * size,
            [0] * size,
            [m - size // 2 for m in range(size)],
            [(-1) ** m for m in range(size)],
        ]


def test_the_audits_gains_and_biases_are_eighths_and_quarters_as_the_docs_state():
    """docs/claims.md: a layer's gain k/8 and bias k/4, |k| <= 16 and <= 8, one gain entry 0,
    every fifth gain all 0 and every fifth all 1."""

    text = docs_words("claims.md")
    assert "a layer's gain k/8 and bias k/4, |k| ≤ 16 and ≤ 8, one gain entry 0, and every fifth" in text
    claimed = audit.Claimed("spectral_bound >= 0", "layernorm_affine", (), ())
    points = list(audit.points(claimed, {"n": [2, 3, 4], "epsilon": [sp.Rational(1, 4)], "t": [sp.Integer(0)]}))
    assert len(points) > 20
    biases = [v for p in points for v in p.bias]
    gains = [p.gain for p in points]
    assert all((4 * v).is_integer and abs(4 * v) <= 8 for v in biases)
    assert len({4 * v for v in biases}) > 8  # drawn, not one value
    assert all((8 * v).is_integer and abs(8 * v) <= 16 for gain in gains for v in gain)
    drawn = {8 * v for gain in gains if set(gain) - {0, 1} for v in gain}
    assert len(drawn) > 8  # drawn, not one value
    assert min(drawn) < 0 < max(drawn)  # of both signs
    # The cotangent g and the direction v are eighths within 2 as well.
    assert all((8 * e).is_integer and abs(8 * e) <= 16 for p in points for e in (*p.g, *p.v))
    assert all(0 in gain for gain in gains if set(gain) != {1})
    kinds = [count // 3 for count in range(len(points))]  # the three sizes take turns
    fifth = [set(gain) for gain, kind in zip(gains, kinds, strict=True) if kind % 5 == 0]
    assert fifth == [{0}] * len(fifth)
    assert len(fifth) >= 6  # kinds 0 and 5, each at n = 2, 3, 4
    assert all(set(gain) == {1} for gain, kind in zip(gains, kinds, strict=True) if kind % 5 == 1)
    assert sum(set(gain) == {1} for gain in gains) < len(gains) // 5 + 3  # every fifth, not more


def test_infinities_compare_with_each_other_and_with_numbers():
    """oo equals oo and -oo equals -oo; -oo < any number < oo; an infinity is no number."""
    from derivations.claims.audit.numbers import Inf

    up, down, five = Inf(1), Inf(-1), fmpq(5)
    for op, want in (("==", True), ("!=", False), ("<=", True), (">=", True), ("<", False), (">", False)):
        assert compare(up, op, Inf(1)) is want
        assert compare(down, op, Inf(-1)) is want
    assert compare(down, "<", up) is True
    assert compare(up, ">", down) is True
    assert compare(up, "==", down) is False
    for number in (five, -five, fmpq(0)):
        assert compare(down, "<", number) is True
        assert compare(number, "<", up) is True
        assert compare(up, "!=", number) is True
        assert compare(number, ">", down) is True


@pytest.mark.parametrize(
    ("text", "sign"),
    [("2*oo", 1), ("-oo", -1), ("-2*oo", -1), ("oo/(-3)", -1), ("-slope_at_zero*oo", -1), ("0*oo", None)],
)
def test_an_infinity_times_a_number_takes_the_product_s_sign_and_times_zero_is_not_evaluated(text, sign):
    point = audit.Point(n=3, epsilon=sp.Rational(1, 4), x=[sp.Integer(1), sp.Integer(2), sp.Integer(4)])
    tree = ast.parse(text, mode="eval").body
    with audit.precision():
        if sign is None:
            with pytest.raises(Unknown, match="an infinity times a number that may be zero"):
                audit.evaluate.Evaluator("layernorm", point).value(tree)
            return
        found = audit.evaluate.Evaluator("layernorm", point).value(tree)
    assert found == audit.numbers.Inf(sign)


def test_the_square_root_of_oo_is_oo_and_of_minus_oo_is_undefined():
    point = audit.Point(n=3, epsilon=sp.Rational(1, 4), x=[sp.Integer(1), sp.Integer(2), sp.Integer(4)])
    with audit.precision():
        evaluator = audit.evaluate.Evaluator("layernorm", point)
        assert evaluator.value(ast.parse("sqrt(oo)", mode="eval").body) == audit.numbers.Inf(1)
        with pytest.raises(Undefined, match="the square root of -oo"):
            evaluator.value(ast.parse("sqrt(-oo)", mode="eval").body)


def test_an_audited_point_is_shown_with_every_coordinate_it_was_evaluated_at():
    """What the audit reports (a point where a claim fails, one meeting the assumptions) can be
    evaluated again: its size, epsilon, t, vectors and scalars, each as a plain number."""
    point = audit.Point(
        n=2,
        epsilon=sp.Rational(1, 4),
        t=sp.Integer(-3),
        x=[sp.Integer(1), sp.Rational(1, 2)],
        gain=[fmpq(3, 2), sp.Integer(2)],
        scalars={"alpha": sp.Rational(1, 8)},
    )
    assert point.shown() == {"n": 2, "epsilon": 0.25, "t": -3, "x": [1, 0.5], "gain": [1.5, 2], "alpha": 0.125}
    assert audit.Point(n=3).shown() == {"n": 3}  # what the point leaves out, it does not show


@pytest.mark.parametrize(("extra", "zero"), [(0, True), ("x", False), ("q", False)])
def test_a_zero_gain_zeroes_the_output_s_dependence_on_x_only_where_no_term_escapes_it(extra, zero):
    """With gamma = 0, layernorm_affine's output is beta: its bound over all inputs is 0. A layer
    with a term the gain does not multiply, in x itself or in a statistic, still varies with x."""
    from derivations.claims.audit.definition import gain_is_zero
    from derivations.symbols import i, q, x

    base = LAYERS["layernorm_affine"]
    term = {0: sp.Integer(0), "x": x[i], "q": q}[extra]
    LAYERS["audit_gain_probe"] = dataclasses.replace(base, key="audit_gain_probe", output=base.output + term)
    try:
        assert gain_is_zero("audit_gain_probe", [fmpq(0)] * 3) is zero
        assert gain_is_zero("audit_gain_probe", [fmpq(0), fmpq(1), fmpq(0)]) is False
    finally:
        del LAYERS["audit_gain_probe"]


@pytest.mark.parametrize(
    ("text", "assumptions"),
    [
        ("epsilon != 1/4", ()),
        ("epsilon != 1", ("epsilon >= 1",)),
        ("epsilon != 1/2", ("epsilon <= 1/2", "epsilon > 1/4")),
        ("epsilon != 2", ("epsilon > 1",)),
        ("epsilon > 0", ("epsilon <= 0",)),
    ],
)
def test_a_counterexample_without_epsilon_is_audited_at_the_first_epsilon_the_domain_admits(text, assumptions):
    """A counterexample whose sides do not depend on epsilon holds for every epsilon: the audit
    takes the first of 1/4, 1, 1/2, 2 and 0 that the assumptions admit. Each claim here is false
    at exactly that epsilon, so the audit confirms the refutation only if it took that one."""
    claimed = audit.Claimed(text, "layernorm", assumptions, ())
    assert audit.at_counterexample(claimed, audit.Point(n=3), True) == (True, "false there")
    elsewhere = audit.Claimed("epsilon != 1/5", "layernorm", (), ())
    holds = (False, "the claim holds at the counterexample")
    assert audit.at_counterexample(elsewhere, audit.Point(n=3), True) == holds


@pytest.mark.parametrize(
    ("diagonal", "norm"),
    [((-3, 1), 3), ((1, -2, 0), 2), ((0, 0, fmpq(-5, 2)), fmpq(5, 2)), ((fmpq(7, 4),), fmpq(7, 4))],
)
def test_the_audit_s_spectral_norm_of_a_diagonal_matrix_is_its_largest_entry_in_size_exactly(diagonal, norm):
    """Where M is diagonal, ||M||_2 = max |M_rr| as an exact number, whichever row holds it; else
    the root of the top eigenvalue of M^T M, enclosed: [[1, 2], [0, 1]] has norm 1 + sqrt(2)."""
    from derivations.claims.audit.definition import spectral_norm

    size = len(diagonal)
    matrix = [[fmpq(diagonal[r]) if r == c else fmpq(0) for c in range(size)] for r in range(size)]
    with audit.precision():
        found = spectral_norm(matrix)
        assert isinstance(found, fmpq)
        assert found == norm
        sheared = ball(spectral_norm([[fmpq(1), fmpq(2)], [fmpq(0), fmpq(1)]]))
        assert (1 + arb(2).sqrt()) in sheared
        assert sheared.rad() < 1e-60


def test_a_spectral_norm_whose_enclosure_falls_below_zero_is_unknown(monkeypatch):
    """The top eigenvalue of J^T J is at least 0; an enclosure entirely below 0 (which correct
    ball arithmetic never gives) is reported as `Unknown`, which the audit turns into "cannot
    tell", never a crash or a number."""
    from derivations.claims.audit import definition

    matrix = [[fmpq(1), fmpq(2)], [fmpq(3), fmpq(4)]]
    assert definition.spectral_norm(matrix) > 0
    monkeypatch.setattr(definition, "_top_eigenvalue", lambda balls: arb(-1, 0.5))
    with pytest.raises(Unknown, match="negative eigenvalue"):
        definition.spectral_norm(matrix)


@pytest.mark.parametrize(("at", "case"), [("1/2", 1), ("2", 3), ("5", 2), ("-2", 2), ("-1", 3)])
def test_a_definitions_cases_join_their_conditions_by_and_and_or(at, case):
    """A case of a definition (a clamp's regimes) taken where all its conditions hold (And) or any
    one does (Or), in exact arithmetic; the last case where none of the others does."""
    from derivations.claims.audit import definition
    from derivations.claims.audit.numbers import Jet, exact

    a = sp.Symbol("a", real=True)
    cases = sp.Piecewise((1, sp.And(a > 0, a < 1)), (2, sp.Or(a < -1, a > 3)), (3, True))
    value = definition.compiled(cases)({"a": Jet(exact(sp.Rational(at)))}).value
    assert value == case


@pytest.mark.parametrize(
    "text",
    ["spectral_bound / (n - 2) >= 0", "trace(J) / (n - 2) >= 0", "norm(y / (n - 2)) >= 0", "lipschitz / (n - 2) >= 0"],
)
def test_a_division_by_an_exact_zero_is_undefined_whatever_it_divides(text):
    """A bound over all inputs (known only from below) divided by n - 2 at n = 2 is undefined, as a
    number or a vector divided by it is: it was "not evaluable", so a verdict that kept n = 2 in its
    quantifier passed the audit."""
    ranges = {"n": [2, 3], "epsilon": [sp.Rational(1, 4)], "t": [sp.Integer(0)]}
    report = audit.run(audit.Claimed(text, "layernorm", (), ()), ranges, False)
    assert report.findings
    assert {(f.point["n"], f.why) for f in report.findings} == {(2, "undefined there (a division by zero)")}
    assert audit.run(audit.Claimed(text, "layernorm", (), ("n - 2 != 0",)), ranges, False).findings == []


@pytest.mark.parametrize(
    ("raised", "verdict"),
    [(TypeError("a defect"), "error"), (KeyError("a defect"), "error"), (Unknown("a wide ball"), "proved")],
)
def test_a_defect_of_the_audit_is_an_error_never_a_point_it_cannot_evaluate(monkeypatch, raised, verdict):
    """Only what the balls' arithmetic raises (Unknown, ArithmeticError, ValueError, flint's errors)
    leaves a point not evaluable; any other exception is a defect of the audit, and the verdict it
    audits is an error, not a proof the audit never looked at."""
    from derivations.claims.audit import evaluate

    def broken(self, node):
        raise raised

    monkeypatch.setattr(evaluate.Evaluator, "decide", broken)
    found = check(Claim("spectral_bound >= 0", "layernorm"))
    assert found.verdict == verdict, found.detail
    if verdict == "error":
        assert type(raised).__name__ in found.detail


_JETS = {
    # The audit's forward-mode jets, each against NumPy's function and a central difference.
    "abs": (lambda j: numbers.jet_abs(j), np.abs),
    "sign": (lambda j: numbers.jet_sign(j), np.sign),
    "sqrt": (lambda j: numbers.jet_sqrt(j), np.sqrt),
    "tanh": (lambda j: numbers.jet_tanh(j), np.tanh),
    "exp": (lambda j: numbers.jet_exp(j), np.exp),
    "sech": (lambda j: numbers.jet_sech(j), lambda u: 1 / np.cosh(u)),
    "u**3": (lambda j: numbers.jet_power(j, sp.Integer(3)), lambda u: u**3),
    "u**-2": (lambda j: numbers.jet_power(j, sp.Integer(-2)), lambda u: u**-2.0),
    "u**(3/2)": (lambda j: numbers.jet_power(j, sp.Rational(3, 2)), lambda u: u**1.5),
    "u**(1/2)": (lambda j: numbers.jet_power(j, sp.Rational(1, 2)), np.sqrt),
    "u**(-1/2)": (lambda j: numbers.jet_power(j, sp.Rational(-1, 2)), lambda u: u**-0.5),
    "u**(1/3)": (lambda j: numbers.jet_power(j, sp.Rational(1, 3)), np.cbrt),
    "1/u": (lambda j: j.reciprocal(), lambda u: 1 / u),
    "max(u, 1/2)": (lambda j: numbers.jet_extreme([j, numbers.constant(fmpq(1, 2), 2)], True), lambda u: max(u, 0.5)),
    "min(u, 1/2)": (lambda j: numbers.jet_extreme([j, numbers.constant(fmpq(1, 2), 2)], False), lambda u: min(u, 0.5)),
}


@pytest.mark.parametrize("name", sorted(_JETS))
@pytest.mark.parametrize("u", [fmpq(-3, 2), fmpq(5, 4), fmpq(1, 4)])
def test_every_jet_gives_numpys_value_and_the_chain_rules_derivatives(name, u):
    """f(u) and f'(u) u' along two tangents (u' = 1 and -3): the derivatives of a layer's
    definition (its J, its slopes) are these jets', so a wrong sign or branch in one would make
    the audit judge every verdict by a wrong Jacobian."""
    jet, function = _JETS[name]
    where = float(u)
    if name in ("sqrt", "u**(3/2)", "u**(1/2)", "u**(-1/2)", "u**(1/3)") and where < 0:  # outside the domain
        with audit.precision(), pytest.raises((Undefined, Unknown)):
            jet(numbers.Jet(u, [fmpq(1), fmpq(-3)]))
        return
    with audit.precision():
        found = jet(numbers.Jet(u, [fmpq(1), fmpq(-3)]))
        value = float(ball(found.value).mid())
        slopes = [float(ball(d).mid()) for d in found.d]
    step = 1e-6
    slope = (function(where + step) - function(where - step)) / (2 * step)
    assert abs(value - function(where)) < 1e-12 * max(1.0, abs(function(where))), (name, u, value)
    assert abs(slopes[0] - slope) < 1e-6 * max(1.0, abs(slope)), (name, u, slopes, slope)
    assert abs(slopes[1] + 3 * slope) < 3e-6 * max(1.0, abs(slope)), (name, u, slopes, slope)


def test_positive_definiteness_by_ldl_pivots_agrees_with_numpys_eigenvalues():
    """The audit brackets ||J||_2 by asking whether c I - J^T J is positive definite, by the pivots
    of its LDL^T: for symmetric matrices of sizes 1 to 5, definite or not by a margin, the answer
    is NumPy's smallest eigenvalue > 0."""
    from derivations.claims.audit.definition import _positive_definite

    rng = np.random.default_rng(11)
    seen = set()
    for size in range(1, 6):
        for shift in (-2.0, -0.5, 0.5, 2.0, 6.0):
            a = rng.integers(-4, 5, size=(size, size)) / 4
            matrix = (a + a.T) / 2 + shift * np.eye(size)
            smallest = np.linalg.eigvalsh(matrix)[0]
            if abs(smallest) < 1e-3:
                continue  # too near singular to be a fair case
            with audit.precision():
                found = _positive_definite([[arb(str(e)) for e in row] for row in matrix])
            assert found == (smallest > 0), (matrix, smallest)
            seen.add(found)
    assert seen == {True, False}


def test_a_layer_without_cases_has_no_kink_to_bracket():
    """A switch is looked for only in a definition by cases: elsewhere the audit cannot evaluate
    the kink's slopes (Unknown), never a defect (an IndexError would make the verdict an error)."""
    from derivations.claims.audit.definition import kink_bracket

    with pytest.raises(Unknown, match=r"^layernorm has no case to switch$"):
        kink_bracket("layernorm", lambda t: [], {})


@pytest.mark.parametrize(
    ("text", "sign"), [("1 - oo", -1), ("1 + oo", 1), ("oo - 1", 1), ("1 - (-oo)", 1), ("s - oo", -1), ("-oo + s", -1)]
)
def test_a_number_plus_or_minus_an_infinity_is_that_infinity_signed(text, sign):
    point = audit.Point(n=3, epsilon=sp.Rational(1, 4), x=[sp.Integer(1), sp.Integer(2), sp.Integer(4)])
    with audit.precision():
        found = audit.evaluate.Evaluator("layernorm", point).value(ast.parse(text, mode="eval").body)
    assert found == audit.numbers.Inf(sign)


@pytest.mark.parametrize(
    ("values", "found"),
    [
        ((2**10, 2**20, 2**40), 1),  # |v| grows as a power of the distance, one sign: oo
        ((-(2**10), -(2**20), -(2**40)), -1),
        ((-(2**10), 2**20, 2**40), None),  # a sign that changes among the last three: no limit told
        ((2**10, -(2**20), 2**40), None),
    ],
)
def test_a_sequence_growing_as_a_power_tends_to_an_infinity_of_its_one_sign(values, found):
    with audit.precision():
        sequence = [fmpq(v) for v in values]
        if found is None:
            with pytest.raises(Unknown, match="does not settle"):
                numbers.extrapolated(sequence)
        else:
            assert numbers.extrapolated(sequence) == numbers.Inf(found)


@pytest.mark.parametrize(
    ("left", "op", "want"), [(0, "<=", True), (0, "<", True), (5, ">=", None), (5, "==", None), (0, ">", False)]
)
def test_a_number_against_a_bound_known_from_below_is_decided_from_the_bounds_side(left, op, want):
    """n op AtLeast(1): the bound is at least 1, so 0 < it for certain, 0 > it never, and 5 against
    it is open: decided as the flipped relation of the bound to the number."""
    assert audit.evaluate.relate(fmpq(left), op, AtLeast(fmpq(1))) is want


@pytest.mark.parametrize("stem", ["slope_below_kink", "slope_above_kink"])
def test_a_switch_enclosed_too_loosely_to_step_beside_it_is_not_evaluated(stem, monkeypatch):
    """Each step beside the switch must be at least 2^20 times the bracket's width: a bracket
    2^-90 wide leaves the steps 2^-20 and 2^-40 only, fewer than the three a limit needs, and the
    audit cannot evaluate the slope there (it never steps inside the bracket's margin)."""
    from derivations.claims.audit import evaluate

    layer = LAYERS["l2norm_clamped"]
    names = [name for name, (q, item) in quantities.names(layer).items() if q.stem == stem and q.applies(layer, item)]
    point = audit.Point(n=3, epsilon=sp.Rational(1, 3), t=sp.Rational(7, 5))
    real = evaluate.kink_bracket

    def loose(*arguments):
        low, high = real(*arguments)
        wide = fmpq(1, 2**90)
        return (high * (1 - wide), high) if stem == "slope_below_kink" else (low, low * (1 + wide))

    monkeypatch.setattr(evaluate, "kink_bracket", loose)
    for name in names:
        with pytest.raises(Unknown, match="not enclosed closely enough"):
            _audited("l2norm_clamped", name, point)


@pytest.mark.parametrize("value", [fmpq(1), fmpq(10**10), fmpq(1, 10**10)])
def test_two_sides_agree_to_2_to_the_minus_180_of_the_larger_side_or_of_1(value):
    """An equation's or a tie's two sides agree (54 digits) where their balls overlap and the gap's
    radius is under 2**-180 times max(|side|, 1): three quarters of it agree, twice it does not."""
    with audit.precision():
        unit = arb(2) ** -180 * max(arb(value), arb(1))
        assert numbers.agree(arb(arb(value), unit * 3 / 4), value)
        assert numbers.agree(value, arb(arb(value), unit * 3 / 4))
        assert not numbers.agree(arb(arb(value), unit * 2), value)


@pytest.mark.parametrize("sign", [1, -1])
def test_a_limit_toward_an_infinity_is_taken_on_that_infinity_s_side(sign):
    """The response on (-t, 0, t) is t / sqrt(2 t**2 / 3 + epsilon), odd in t: toward oo it tends to
    sqrt(3/2), toward -oo to -sqrt(3/2), taken at t = sign * 2**step (not at 2**step + sign)."""
    infinity = "oo" if sign > 0 else "-oo"
    claimed = audit.Claimed(f"limit(response, t, {infinity}) == 0", "layernorm", (), ())
    point = audit.Point(n=3, epsilon=sp.Rational(1, 3))
    with audit.precision():
        found = ball(audit.evaluate.Evaluator("layernorm", point, claimed.pattern).value(claimed.tree.left))
    assert abs(float(found.mid()) - sign * np.sqrt(1.5)) < 1e-12, found


def test_the_slope_beside_a_switch_is_taken_on_its_own_side():
    """Clamped L2 normalization is x / eps below its kink and x / |x| above it: along both patterns
    the audit's slope below the kink is 1/eps and above it 0, the derived values.  Stepping out of
    the bracket on the wrong side would give each the other's."""
    layer = LAYERS["l2norm_clamped"]
    point = audit.Point(n=3, epsilon=sp.Rational(1, 3), t=sp.Rational(7, 5))
    taken = {}
    for name, (quantity, item) in quantities.names(layer).items():
        if quantity.stem in ("slope_below_kink", "slope_above_kink") and quantity.applies(layer, item):
            found, derived = _audited("l2norm_clamped", name, point), _derived("l2norm_clamped", name, point)
            assert abs(float(found.mid()) - float(derived)) < 1e-12, (name, found, derived)
            taken[name] = float(derived)
    assert taken == {
        "slope_below_kink": 3.0,
        "slope_below_kink_uniform": 3.0,
        "slope_above_kink": 0.0,
        "slope_above_kink_uniform": 0.0,
    }


def test_a_refutation_through_a_limit_says_the_audit_took_the_limit_numerically():
    """A limit is taken by values tending to its point, which is not rigorous: the audit's
    confirmation says so for a limit, and not for the same kind of claim without one."""
    through_limit = check(Claim('limit(slope, t, 0, "+") == 1/epsilon', "layernorm"))
    assert through_limit.verdict == "refuted", through_limit.detail
    assert "the independent audit confirms it" in through_limit.detail
    assert "a limit, a derivative or an eigenvalue evaluated numerically" in through_limit.detail
    exact = check(Claim("slope_at_zero == 1/epsilon", "layernorm"))
    assert exact.verdict == "refuted", exact.detail
    assert "the independent audit confirms it there in ball arithmetic (false there)" in exact.detail
    assert "evaluated numerically" not in exact.detail


@pytest.mark.parametrize(
    ("values", "found"),
    [
        (
            (fmpq(5), numbers.Inf(1), numbers.Inf(1), numbers.Inf(1)),
            1,
        ),  # the last three infinite: what went before is not read
        ((numbers.Inf(-1), numbers.Inf(1), numbers.Inf(1), numbers.Inf(1)), 1),
        ((fmpq(5), numbers.Inf(-1), numbers.Inf(-1), numbers.Inf(-1)), -1),
        ((numbers.Inf(1), numbers.Inf(1), numbers.Inf(-1), numbers.Inf(-1)), None),  # a sign changes among them
        ((fmpq(5), numbers.Inf(1), fmpq(5), numbers.Inf(1)), None),  # one of the last three is finite
    ],
)
def test_a_sequence_whose_last_three_values_are_infinite_tends_to_their_one_sign(values, found):
    if found is None:
        with pytest.raises(Unknown, match="does not settle"):
            numbers.extrapolated(list(values))
    else:
        assert numbers.extrapolated(list(values)) == numbers.Inf(found)


@pytest.mark.parametrize(
    ("value", "shown"),
    [(numbers.Inf(1), "oo"), (numbers.Inf(-1), "-oo"), (fmpq(-3, 4), "-3/4"), (arb(2) / 3, "0.6666666667")],
)
def test_an_audit_finding_shows_each_kind_of_number_as_the_claim_language_writes_it(value, shown):
    assert numbers.short(value) == shown


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("norm(layernorm(x, 2*epsilon)) >= norm(y)", "refuted"),  # more epsilon, a shorter output
        ("norm(layernorm(x, epsilon/4)) <= norm(y)", "refuted"),
        ("norm(layernorm(x, 2*epsilon)) <= norm(y)", "proved"),
    ],
)
def test_the_audit_takes_a_layer_at_the_epsilon_the_claim_gives_it(text, verdict):
    """layernorm(x, e) at another epsilon: the audit evaluates the layer at e, so it confirms the
    refutation (at the claim's own epsilon both sides would be one value, and true)."""
    found = check(Claim(text))
    assert found.verdict == verdict, found.detail
    if verdict == "refuted":
        assert "the independent audit confirms it there in ball arithmetic (false there)" in found.detail


@pytest.mark.parametrize("text", ["diff(slope_at_zero, epsilon) >= 0", "diff(response, t) <= 0"])
def test_an_audit_through_difference_quotients_says_it_evaluated_numerically(text):
    """diff() is audited by the limits of difference quotients, not in rigorous ball arithmetic: the
    refutation says so."""
    found = check(Claim(text))
    assert found.verdict == "refuted"
    assert found.detail.endswith(
        "the independent audit confirms it there in ball arithmetic (false there; a limit, a derivative "
        "or an eigenvalue evaluated numerically)"
    ), found.detail


@pytest.mark.parametrize("epsilon", [sp.Rational(1, 3), sp.Integer(16), sp.Integer(2) ** 40])
def test_the_audits_kink_is_found_beyond_an_amplitude_of_one_too(epsilon):
    """The switch of torch's normalize along (-t, 0, t) is where sqrt(2) t = epsilon: the bisection's
    bracket is first widened by doubling from t = 1, as far as epsilon puts it."""
    from derivations.claims.audit.evaluate import Evaluator

    point = audit.Point(n=3, epsilon=epsilon)
    pattern = LAYERS["l2norm_clamped"].patterns[0]
    with audit.precision():
        found = Evaluator("l2norm_clamped", point, pattern).switch(pattern, "l2norm_clamped")
    expected = float(epsilon / sp.sqrt(2))
    assert abs(float(ball(found).mid()) - expected) <= 1e-12 * expected


@pytest.mark.parametrize(
    ("small", "rank"),
    [("1e-49", 2), ("3e-51", None), ("3e-50", 2), ("1e-99", None), ("3e-101", 1), ("1e-120", 1)],
)
def test_a_numeric_rank_counts_singular_values_above_1e50_and_1e100_and_is_unknown_between(small, rank):
    """J - lambda I's singular values, relative to the largest: above 1e-50 at 100 digits and above
    1e-100 at 200 count; where the two counts differ (one in between), the rank is not known."""
    from derivations.claims.audit.evaluate import numeric_rank

    matrix = sp.diag(1, sp.Rational(small))
    if rank is None:
        with pytest.raises(Unknown, match="too small to tell from 0"):
            numeric_rank(matrix, "0")
    else:
        assert numeric_rank(matrix, "0") == rank


@pytest.mark.parametrize(
    ("entries", "norm"), [([[1, 1], [1, 1]], 0.5), ([[12, 4], [4, 12]], 4), ([[0, 1], [-1, 0]], 0.25)]
)
def test_the_audits_spectral_norm_of_a_full_matrix_holds_its_value_below_one_and_above(entries, norm):
    """||M||_2 from the largest eigenvalue of M^T M, in balls: 1/4 of [[1, 1], [1, 1]] has norm
    1/2, [[3, 1], [1, 3]] norm 4, a quarter-turn scaled by 1/4 norm 1/4."""
    from derivations.claims.audit.definition import spectral_norm

    found = spectral_norm([[fmpq(value, 4) for value in row] for row in entries])
    assert found.contains(arb(norm))
    assert found.rad() < 1e-12


def test_a_counterexample_that_meets_an_assumed_equation_to_54_digits_is_confirmed_and_says_so():
    """q == 2 holds at the counterexample only to the digits of its irrational entries: the audit
    confirms the refutation there and says the equation is met to 54 digits."""
    verdict = check(Claim("all(y == 0)", "layernorm", assumptions=("q == 2",)))
    assert verdict.verdict == "refuted"
    assert verdict.detail.endswith(
        "the independent audit confirms it there in ball arithmetic (false there; it meets the assumed "
        "equations to 54 digits)"
    )


def test_a_numeric_rank_judges_a_matrix_of_tiny_singular_values_on_the_scale_of_1():
    """The scale of the thresholds is the largest singular value or 1, whichever is larger: a
    matrix whose singular values are all about 1e-60 (between 1e-100 and 1e-50 of 1) has no
    rank the two precisions agree on; scaled up to order 1, its rank is 2."""
    from derivations.claims.audit.evaluate import numeric_rank

    with pytest.raises(Unknown, match="too small to tell from 0"):
        numeric_rank(sp.diag(sp.Rational(2, 10**60), sp.Rational(1, 10**60)), "0")
    assert numeric_rank(sp.diag(2, 1), "0") == 2


def test_an_infinity_and_a_lower_bound_are_values_that_never_change():
    """The audit's +-oo and "at least" are values: equal by content, usable as keys, and not
    changed after they are made (a verdict's evidence cannot be edited on its way out)."""
    from derivations.claims.audit.numbers import AtLeast, Inf

    for made, again in ((Inf(1), Inf(1)), (AtLeast(fmpq(2)), AtLeast(fmpq(2)))):
        assert made == again
        assert {made: "seen"}[again] == "seen"
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.sign = -1  # type: ignore[misc]
    assert Inf(1) != Inf(-1)
