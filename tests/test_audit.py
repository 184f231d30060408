"""The independent audit: it agrees with the derivations where both are right, and it catches
a wrong verdict the prover would have printed (each fabricated here, as a broken prover would)."""

import dataclasses

import pytest
import sympy as sp
from flint import arb, fmpq

from derivations import LAYERS, quantities
from derivations.claims import Claim, audit, check
from derivations.claims import checker as claims_checker
from derivations.claims.audit.numbers import Undefined, Unknown, ball, compare

# Every claimable quantity of these layers, by name, at one point each.
LAYER_KEYS = ("layernorm", "layernorm_affine", "layernorm_std_eps", "rmsnorm", "rmsnorm_eps_outside", "l2norm_clamped")


def _audited(key: str, name: str, point: audit.Point) -> arb:
    claimed = audit.Claimed(f"{name} == 0", key, (), ())
    with audit.precision():
        return ball(audit.evaluate.Evaluator(key, point, claimed.pattern).value(claimed.tree.left))


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
    compared = []
    for name, (quantity, item) in quantities.names(layer).items():
        if not quantity.claim or not quantity.applies(layer, item):
            continue
        point = _point(layer, len(item.values) if quantity.over == "pattern" else 4)
        try:
            found = _audited(key, name, point)
            derived = _derived(key, name, point)
        except (quantities.NotApplicable, Unknown, Undefined, TypeError):
            continue
        if derived.free_symbols or not derived.is_number or derived.has(sp.zoo, sp.nan):
            continue
        with audit.precision():
            value = arb(str(sp.N(derived, 70)), 1e-60)
            assert compare(found, "==", value) is not False, (name, found, value)
        compared.append(name)
    assert len(compared) >= 4, compared


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


@pytest.mark.parametrize("assumption", ["x is not constant", "X is not constant.", "c != 0", "x != 0", "q != 0"])
def test_the_audit_reads_an_assumption_in_the_users_words_on_its_own(assumption):
    """Not through the checker's translation: a constant input is outside "x is not constant"
    and "c != 0" (and inside "x != 0" where nonzero), a varying one inside each."""
    claimed = audit.Claimed("1/sigma_u > 0", "layernorm_std_eps", (assumption,), ())
    constant = audit.Point(n=3, epsilon=sp.Rational(1, 3), x=[sp.Integer(2)] * 3)
    varying = audit.Point(n=3, epsilon=sp.Rational(1, 3), x=[sp.Integer(2), sp.Integer(-1), sp.Integer(5)])
    assert claimed.in_domain(varying, False) is True
    assert claimed.in_domain(constant, False) is (assumption == "x != 0")
