"""Verdicts on claims: proved, refuted (with a counterexample), supported, vacuous, or error.

A claim is read (`semantics`), given its one domain (`domain`: ranges,
assumptions, the input, the points where it is undefined, its limits), then
proved for every point of it (SymPy's tactics, then z3 for the algebraic
fragment), else sampled for a counterexample decided exactly.  Before it is
returned, every verdict is judged by the independent audit (`audit`), which
may refute a proof, withdraw a refutation, or overturn a vacuous verdict.
Every verdict says what it quantified over and what the audit did.  No input
gives a traceback: whatever goes wrong is an ``error`` verdict.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import itertools
from collections.abc import Callable, Generator, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from derivations import LAYERS, quantities
from derivations.catalog import CORE
from derivations.claims import audit, bounded, sampling, solver
from derivations.claims.domain import Domain, Vacuous, build_domain, entry_facts, settle
from derivations.claims.language import FREE_SCALARS, ClaimError, Relation
from derivations.claims.proof import prove
from derivations.claims.semantics import Matrix, OpaqueNorm, Vector, build, mean_statistic
from derivations.core.proof import is_zero
from derivations.derive.elementwise import Largest
from derivations.derive.sums import Indicator, PowerSum
from derivations.symbols import epsilon, gamma, gamma_max, i, k, n, t

VERDICTS = ("proved", "refuted", "supported", "vacuous", "error")


@dataclass(frozen=True)
class Claim:
    """One claim to check, as a reviewer writes it.  ``problem`` marks an entry that
    cannot be checked at all (a duplicate id, say): its verdict is an error."""

    text: str
    layer: str = CORE
    assumptions: tuple[str, ...] = ()
    expect: str | None = None
    id: str = "claim"
    problem: str | None = None

    def __repr__(self) -> str:
        """One line: ``<Claim norm(y) <= 1 [layernorm] assuming epsilon < 1>``."""
        from derivations.claims import render

        return render.claim_repr(self)


@dataclass
class Verdict:
    """The outcome for one claim: the verdict, what it quantified over (``quantifier``, and the
    points it ``excluded`` where the claim is undefined), and a counterexample if refuted."""

    claim: Claim
    verdict: str
    detail: str
    counterexample: dict[str, Any] | None = None
    quantities: tuple[str, ...] = field(default=())
    quantifier: str = ""
    excluded: tuple[str, ...] = ()
    audit: str = ""
    # The counterexample exactly (an `audit.Point`), for the audit; not part of what is printed.
    witness: Any = field(default=None, repr=False, compare=False)

    @property
    def met(self) -> bool:
        """Whether the verdict is what the claim expects (by default: proved or supported)."""
        if self.claim.expect is not None:
            return self.verdict == self.claim.expect
        return self.verdict in ("proved", "supported")

    def row(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.claim.id,
            "claim": self.claim.text,
            "layer": self.claim.layer,
            "verdict": self.verdict,
            "quantifier": self.quantifier,
            "detail": self.detail,
        }
        if self.excluded:
            out["excluded"] = list(self.excluded)
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample
        if self.audit:
            out["audit"] = self.audit
        if self.claim.expect is not None:
            out["expect"] = self.claim.expect
        return out

    def __repr__(self) -> str:
        """One line: ``<Verdict refuted: norm(y) <= 1 [layernorm]>``."""
        from derivations.claims import render

        return render.verdict_repr(self)

    def _repr_markdown_(self) -> str:
        """For Jupyter: the verdict, its quantifier, the counterexample as a table, the detail."""
        from derivations.claims import render

        return render.verdict_markdown(self)

    def _repr_html_(self) -> str:
        """For Jupyter, where a front end shows no Markdown: the same as HTML."""
        from derivations.claims import render

        return render.verdict_html(self)


Confirm = Callable[[Claim, dict[str, Any]], str]


def check(claim: Claim, confirm: Confirm | None = None, timeout: float | None = None) -> Verdict:
    r"""The verdict on a reviewer's claim about a layer: proved, refuted, supported, vacuous or error.

    The claim is a relation between quantities of the layer (``spectral_norm``,
    ``slope_at_zero``, ``norm(y)``, ``J``, ...) read by a whitelisted grammar,
    never evaluated.  It is decided for every input of its one domain
    (:math:`x \in \mathbb{R}^n`, :math:`n \ge 2`, :math:`\varepsilon > 0`, and the
    claim's assumptions), by SymPy and z3, else sampled for a counterexample
    decided exactly; an independent audit in ball arithmetic then judges the
    verdict.  A claim that cannot be decided is "supported" or "error", never
    "refuted".  For example, LayerNorm's Jacobian satisfies

    .. math::

        \|J\|_2 \le \frac{1}{\sqrt{\varepsilon}} \quad \text{(proved)}, \qquad
        \|J\|_2 = \frac{1}{\sqrt{q + \varepsilon}} \quad \text{(refuted at } n = 2\text{)}.

    Args:
      claim: the `Claim`: its text, its layer (default ``"layernorm"``), and
        assumptions (``("epsilon <= 1",)``) that narrow the domain.
      confirm: a function that re-checks a counterexample numerically (the
        command line passes ``derivations.claims.confirm.confirm``); its note is
        added to the detail.
      timeout: seconds; with it the claim is decided in a child process with a
        memory bound too, and one that does not finish gets an error verdict.

    Returns:
      The `Verdict`: ``verdict`` (one of `VERDICTS`), ``quantifier`` (what it was
      decided for), ``counterexample`` (a refutation's point), ``detail`` and
      ``audit``.  In Jupyter it shows as a table.

    Raises:
      Nothing for any claim text: whatever goes wrong is an ``error`` verdict.

    Example:
      >>> from derivations.claims import Claim, check
      >>> check(Claim("spectral_norm <= 1/sqrt(epsilon)"))
      <Verdict proved: spectral_norm <= 1/sqrt(epsilon) [layernorm]>
      >>> refuted = check(Claim("spectral_norm == 1/sqrt(q + epsilon)"))
      >>> refuted.verdict, refuted.counterexample
      ('refuted', {'epsilon': 0.25, 'n': 2, 'q': 1, 'x': [-1.0, 1.0]})

    References:
      Ba, Kiros and Hinton, *Layer Normalization*, 2016, https://arxiv.org/abs/1607.06450.
    """
    if claim.problem is not None:
        return Verdict(claim, "error", claim.problem)
    if timeout is not None:
        return next(check_each([claim], confirm, timeout, workers=1))
    try:
        return _check(claim, confirm)
    except Vacuous as conflict:
        vacuous = Verdict(claim, "vacuous", f"vacuous: the assumptions admit no input: {conflict}")
        return _audited(claim, vacuous, None)
    except ClaimError as error:
        return Verdict(claim, "error", str(error))
    except (RecursionError, MemoryError) as error:
        return Verdict(claim, "error", f"the claim is too large to decide ({type(error).__name__})")
    except Exception as error:
        return Verdict(claim, "error", f"undecided: {type(error).__name__}: {error}"[:500])


def check_each(
    claims: Sequence[Claim], confirm: Confirm | None = None, timeout: float = 60.0, workers: int | None = None
) -> Generator[Verdict, None, None]:
    """Each claim's verdict, in order, as `check` with ``timeout`` gives it: decided in children,
    up to ``workers`` at once (default: one per processor), that start with the layers loaded."""
    pending = [number for number, claim in enumerate(claims) if claim.problem is None]
    if len(pending) > 1:
        prepare({claims[number].layer for number in pending})
    done: dict[int, Verdict] = {}
    finished = bounded.each(
        [functools.partial(check, claims[number], confirm) for number in pending], timeout, workers=workers
    )
    for number, claim in enumerate(claims):
        while claim.problem is None and number not in done:
            index, result = next(finished)
            decided = claims[pending[index]]
            done[pending[index]] = (
                Verdict(decided, "error", str(result)) if isinstance(result, bounded.Exceeded) else result
            )
        yield done.pop(number) if claim.problem is None else Verdict(claim, "error", claim.problem)


# Imported by deciding a claim, on first use: loaded once before children are forked, not in each.
_USED = ("z3", "numeric", "derivations.claims.confirm", "derivations.derive.scaling", "sympy.physics.units")


def prepare(keys: Iterable[str]) -> None:
    """Load here what deciding a claim about each catalog layer of ``keys`` loads (modules, the
    layer's derivation), so that each child `check_each` forks starts with it instead of loading it."""
    for module in _USED:
        with suppress(ImportError):
            importlib.import_module(module)
    for key in keys:
        if key in LAYERS:
            with suppress(ClaimError, Vacuous):
                read_claim(Claim("norm(J @ y) >= 0", key))


@dataclass
class _Sides:
    """The claim's two sides in the domain's terms, and its relation."""

    lhs: Any
    op: str
    rhs: Any


def read_claim(claim: Claim) -> tuple[Domain, _Sides]:
    """The claim's domain, and its sides in the domain's terms: parsed, built, settled."""
    lhs, op, rhs, usage = build(claim.text, claim.layer)
    for key in sorted({*usage.layers, claim.layer}):
        if LAYERS[key].unclaimable:
            raise ClaimError(str(LAYERS[key].unclaimable))
    domain = build_domain(claim.layer, claim.assumptions, usage, lhs, rhs)
    lhs, rhs = settle(domain, [lhs, rhs], usage.requirements)
    sides = _Sides(lhs, op, rhs)
    for entry in _entries_of(lhs, rhs):
        if entry.has(sp.zoo) or (entry.has(sp.nan) and not domain.missing):
            raise ClaimError("a side of the claim is undefined (a division by zero) under the assumptions")
    if domain.pattern is not None and (usage.general or usage.vectors):
        _explicit_pattern(domain, sides)
    return domain, sides


def _check(claim: Claim, confirm: Confirm | None) -> Verdict:
    domain, sides = read_claim(claim)
    usage = domain.usage
    quantifier = domain.quantifier(claim.layer)
    used = tuple(dict.fromkeys(f"{key}.{name}" for key, name in usage.quantities))
    found = Verdict(claim, "error", "", quantities=used, quantifier=quantifier, excluded=domain.excluded)
    verdict = _audited(claim, _verdict(claim, domain, sides, found, confirm), domain)
    if domain.undecided and verdict.verdict in ("proved", "supported"):
        # A proof under assumptions that may admit no input at all holds vacuously there.
        note = "whether the assumptions admit any input at all was not decided"
        verdict = dataclasses.replace(verdict, detail=f"{verdict.detail}; {note}")
    return verdict


def _verdict(claim: Claim, domain: Domain, sides: _Sides, found: Verdict, confirm: Confirm | None) -> Verdict:
    if domain.missing:
        return _nonexistent(claim, domain, sides, found, confirm)
    how = _prove(domain, sides)
    if how is not None:
        how = f"{how}; {_second_engine(domain, sides)}"
        return dataclasses.replace(found, verdict="proved", detail=f"proved {found.quantifier}. {how}")
    decided, candidate = _decide(domain, sides, found)
    if decided is not None:
        return decided
    sampled = _sample(claim, domain, sides, found, confirm)
    if sampled.verdict == "refuted" or candidate is None:
        return sampled
    # No sampled point violates it, but z3 found one: decided again exactly before it refutes.
    return _refuted_at(claim, domain, sides, found, confirm, candidate, "found by z3, decided exactly") or sampled


# --- the audit ------------------------------------------------------------------------


def _audited(claim: Claim, verdict: Verdict, domain: Domain | None) -> Verdict:
    """The verdict once the independent audit has judged it (`derivations.claims.audit`): a
    proof or support contradicted at a point of the domain is refuted there, a refutation the
    audit does not confirm is withdrawn, a vacuous claim whose assumptions hold somewhere is an
    error; what the audit did is said in every verdict."""
    try:
        claimed = audit.Claimed(claim.text, claim.layer, claim.assumptions, verdict.excluded)
    except ClaimError:
        return verdict
    zero = domain.epsilon_zero if domain is not None else True
    if verdict.verdict == "refuted":
        if verdict.witness is None:
            return _withdrawn(verdict, "the counterexample was not kept exactly")
        confirmed, why = audit.at_counterexample(claimed, verdict.witness, zero)
        if confirmed is not True:
            return _withdrawn(verdict, why)
        return _noted(verdict, f"the independent audit confirms it there in ball arithmetic ({why})")
    ranges = _audit_ranges(domain, claimed)
    if verdict.verdict == "vacuous":
        inside = audit.admitted(claimed, ranges)
        if inside is not None:
            return dataclasses.replace(
                verdict,
                verdict="error",
                detail=f"INTERNAL ERROR: the checker found the assumptions vacuous, but the independent audit finds "
                f"them met at {_shown(inside)}; {verdict.detail}",
            )
        return verdict
    if verdict.verdict not in ("proved", "supported"):
        return verdict
    report = audit.run(claimed, ranges, zero)
    finding = next((f for f in report.findings if f.rigorous), report.findings[0] if report.findings else None)
    if finding is None:
        return _noted(verdict, report.text())
    internal = "INTERNAL ERROR: the prover had proved it. " if verdict.verdict == "proved" else ""
    if not finding.rigorous:
        return dataclasses.replace(
            verdict,
            verdict="error",
            detail=f"{internal}undecided: the independent audit finds it {finding.why} at {_shown(finding.point)}, "
            "by a step that is not rigorous (a limit, a derivative or an eigenvalue evaluated numerically); "
            f"{report.text()}",
        )
    return dataclasses.replace(
        verdict,
        verdict="refuted",
        counterexample=finding.point,
        detail=f"{internal}fails at {_shown(finding.point)} (claimed {verdict.quantifier}): the claim is "
        f"{finding.why}, by the independent audit in ball arithmetic; {report.text()}",
        audit=report.text(),
    )


def _noted(verdict: Verdict, text: str) -> Verdict:
    return dataclasses.replace(verdict, detail=f"{verdict.detail}; {text}", audit=text)


def _withdrawn(verdict: Verdict, why: str) -> Verdict:
    return dataclasses.replace(
        verdict,
        verdict="error",
        counterexample=None,
        detail=f"undecided: a refutation was withdrawn ({why}); {verdict.detail}",
        audit=f"refutation withdrawn: {why}",
    )


# The values the audit tries for each symbol, the simplest first, where the domain does not fix it.
_AUDIT_EPSILONS = tuple(map(sp.Rational, ("1/4", "1", "4", "1/1024", "1024")))
_AUDIT_TS = tuple(map(sp.Rational, ("0", "1", "-1", "1/2", "-2", "1/1024", "-1024", "3")))
_AUDIT_SCALARS = tuple(map(sp.Rational, ("1", "-1", "0", "1/2", "3")))


def _audit_ranges(domain: Domain | None, claimed: audit.Claimed) -> dict[str, Any]:
    """The values the audit's points take: each symbol's special values within its range in the
    domain (with the ends the assumptions give), n = 2, 3 and 4 where admitted."""
    if domain is None:
        return {
            "n": [2, 3, 4],
            "epsilon": [*_AUDIT_EPSILONS, sp.Integer(0)],
            "t": list(_AUDIT_TS),
        }
    allowed = (domain.assumed or domain.ranges)[n]
    sizes = [size for size in (2, 3, 4) if allowed.contains(size) is sp.true]
    if not sizes:
        low = int(allowed.inf)
        sizes = [size for size in (low, low + 1) if allowed.contains(size) is sp.true]
    out: dict[str, Any] = {"n": sizes}
    # epsilon = 0, where the domain admits it, is the end of its range: among the values already.
    out["epsilon"] = _audit_values(domain, epsilon, _AUDIT_EPSILONS)
    out["t"] = _audit_values(domain, t, _AUDIT_TS)
    for layer in domain.layers:
        for _, symbol in layer.scalars:
            out[str(symbol)] = _audit_values(domain, symbol, _AUDIT_SCALARS)
    for name in claimed.free:
        out[name] = _audit_values(domain, FREE_SCALARS[name], _AUDIT_SCALARS)
    if domain.pinned and not claimed.pattern:
        out["x"] = [_pinned_input(domain)]
    return out


def _audit_values(domain: Domain, symbol: sp.Symbol, defaults: tuple[sp.Expr, ...]) -> list[sp.Expr]:
    if symbol in domain.fixed:
        return [domain.fixed[symbol]]
    where = (domain.assumed or domain.ranges).get(symbol)
    if where is None:
        return list(defaults)
    if isinstance(where, sp.FiniteSet):
        return list(where)[:8]
    ends = [end for end in (where.inf, where.sup) if end.is_finite and where.contains(end) is sp.true]
    values = [value for value in (*ends, *defaults) if where.contains(value) is sp.true]
    inside = [where.inf + 1, where.sup - sp.Rational(1, 2)] if where.inf.is_finite and where.sup.is_finite else []
    return list(dict.fromkeys(values + [v for v in inside if where.contains(v) is sp.true])) or ends


def _pinned_input(domain: Domain) -> Callable[[int, int], list[sp.Expr]]:
    """Inputs with the statistics the assumptions fix (mu == 3, q == 1/100, r == 1/4), exactly."""
    values = {str(symbol): value for symbol, value in domain.pinned.items()}

    def make(size: int, kind: int) -> list[sp.Expr]:
        return exact_input(values, size, kind)

    return make


def _decide(domain: Domain, sides: _Sides, found: Verdict) -> tuple[Verdict | None, dict | None]:
    """The claim as a sentence of real arithmetic, decided by z3 where it is one: a proof, or a
    candidate violation (z3's point, to be decided again exactly); (None, None) otherwise."""
    if not (isinstance(sides.lhs, sp.Expr) and isinstance(sides.rhs, sp.Expr)):
        domain.outside = "an identity of vectors or matrices that SymPy does not reduce to 0 (z3 takes scalars)"
        return None, None
    if domain.inputs:
        return _decide_with_facts(domain, sides, found), None
    ranges = [sp.Contains(n, domain.n_set)] if n not in domain.fixed else []
    try:
        answer = solver.holds_everywhere(sides.lhs, sides.op, sides.rhs, [*domain.conditions, *ranges])
    except solver.Outside as outside:
        domain.outside = str(outside)
        return None, None
    if answer.status == "unsat":
        how = "decided by z3's nonlinear real arithmetic: no point of the domain violates it"
        return dataclasses.replace(found, verdict="proved", detail=f"proved {found.quantifier}. {how}"), None
    return None, answer.point if answer.status == "sat" else None


# Milliseconds z3 has to confirm a proof SymPy found: a second engine, not a second wait.
_SECOND_MS = 500


def _second_engine(domain: Domain, sides: _Sides) -> str:
    """Whether z3, the second engine, agrees with a proof SymPy found, and if not why not."""
    if not (isinstance(sides.lhs, sp.Expr) and isinstance(sides.rhs, sp.Expr)) or domain.inputs:
        return "z3 not asked (it takes scalars in the statistics)"
    ranges = [sp.Contains(n, domain.n_set)] if n not in domain.fixed else []
    try:
        answer = solver.holds_everywhere(
            sides.lhs, sides.op, sides.rhs, [*domain.conditions, *ranges], timeout_ms=_SECOND_MS
        )
    except solver.Outside as outside:
        return f"z3 not asked (outside its fragment: {outside})"
    if answer.status == "unsat":
        return "z3 agrees: engines SymPy and z3"
    if answer.status == "sat":
        return "z3 does not confirm it (its over-approximation of the domain admits a candidate)"
    return f"z3 undecided within {_SECOND_MS / 1000:g} s"


def _decide_with_facts(domain: Domain, sides: _Sides, found: Verdict) -> Verdict | None:
    """A claim on sums over the entries (|J v|, v^T J v, norm(M, 2)) proved by z3 from the facts
    the derived results give about them (`Usage.facts`), each sum and matrix norm a variable of
    its own: a proof where no values of them meet the facts and violate the claim."""
    opaque = any(side.has(OpaqueNorm) for side in (sides.lhs, sides.rhs))
    domain.outside = (
        "norm(M, 2) of a matrix with no closed form"
        if opaque
        else "sums over the entries that the statistics do not fix"
    )
    if not domain.usage.facts:
        return None
    facts = [domain.apply(fact) for fact, _ in domain.usage.facts]
    ranges = [sp.Contains(n, domain.n_set)] if n not in domain.fixed else []
    try:
        answer = solver.holds_everywhere(
            sides.lhs, sides.op, sides.rhs, [*domain.conditions, *facts, *ranges], opaque=(PowerSum, OpaqueNorm)
        )
    except solver.Outside:
        return None
    if answer.status != "unsat":
        return None
    used = "; ".join(dict.fromkeys(text for _, text in domain.usage.facts))
    how = f"decided by z3's nonlinear real arithmetic from the derived bounds {used}, each sum a variable"
    return dataclasses.replace(found, verdict="proved", detail=f"proved {found.quantifier}. {how}")


def _refuted_at(
    claim: Claim, domain: Domain, sides: _Sides, found: Verdict, confirm: Confirm | None, point: dict, how: str
) -> Verdict | None:
    """Refuted at ``point`` if it is in the domain and the claim fails there, decided exactly."""
    if n in point and not (point[n].is_Integer and domain.n_set.contains(point[n]) is sp.true):
        return None
    if not (_gain_consistent(point, domain) and all(sampling._holds(c, point) for c in domain.conditions)):
        return None
    left, right = sides.lhs.xreplace(point), sides.rhs.xreplace(point)
    if sampling.decide(left, sides.op, right, point) is not False:
        return None
    example = (_example(point, None, domain), _witness(point, None, domain))
    return _refutation(claim, found, example, (left, right), confirm, f"; {how}")


def _refutation(
    claim: Claim,
    found: Verdict,
    at: tuple[dict, audit.Point],
    sides: tuple[Any, Any],
    confirm: Confirm | None,
    how: str = "",
) -> Verdict:
    """Refuted at the point ``at`` (as shown, and exactly), its two sides shown apart; where
    ``confirm`` is given, only if an independent numeric evaluation fails there too."""
    example, witness = at
    shown = _apart(*sides)
    detail = f"fails at {_shown(example)} (claimed {found.quantifier}{how}): lhs = {shown[0]}, rhs = {shown[1]}"
    if confirm is not None:
        confirmation = confirm(claim, example)
        detail += "; " + confirmation
        if confirmation.startswith("NOT confirmed"):
            # A refutation stands only where an independent evaluation fails too.
            return dataclasses.replace(found, detail=f"undecided: {detail}")
    return dataclasses.replace(found, verdict="refuted", detail=detail, counterexample=example, witness=witness)


def _entries_of(*sides: Any) -> list[sp.Expr]:
    """The sides' expressions: each scalar itself, each vector's or matrix's entry."""
    entries = (value.entry if isinstance(value, (Vector, Matrix)) else value for value in sampling._flat(list(sides)))
    return [entry for entry in entries if isinstance(entry, sp.Expr)]


def _explicit_pattern(domain: Domain, sides: _Sides) -> None:
    """Vectors at the pattern's input become explicit lists of entries in t."""
    assert domain.pattern is not None
    size = len(domain.pattern.values)
    explicit = sampling.Explicit(tuple(domain.pattern.values))

    def expand(value: Any) -> Any:
        if isinstance(value, (Vector, Matrix)):
            return sampling.at(value, {n: size}, explicit)
        if isinstance(value, sp.Expr) and value.has(PowerSum):
            return sampling.at(value, {n: size}, explicit)
        return value

    sides.lhs, sides.rhs = expand(sides.lhs), expand(sides.rhs)
    domain.inputs = bool(domain.usage.vectors) or any(
        isinstance(e, sp.Expr) and e.has(OpaqueNorm) for e in sampling._flat([sides.lhs, sides.rhs])
    )


def _gain_entries(expr: sp.Expr) -> set[sp.Basic]:
    return {e for e in expr.atoms(sp.Indexed) if str(e.base) in ("gamma", "beta")}


# --- proof -------------------------------------------------------------------------


def _prove(domain: Domain, sides: _Sides) -> str | None:
    lhs, rhs = sides.lhs, sides.rhs
    entrywise = _entrywise(sides)
    if entrywise is not None:
        return _prove_entrywise(domain, *entrywise, sides.op)
    if isinstance(lhs, (Vector, Matrix)):
        how = is_zero(lhs.entry - rhs.entry)
        return None if how is None else f"entry by entry for symbolic n: {how}(lhs - rhs) = 0"
    if isinstance(lhs, list):
        hows = [is_zero(a - b) for a, b in zip(sampling._flat(lhs), sampling._flat(rhs), strict=True)]
        return None if None in hows else "entry by entry at the pattern's input"
    if lhs.has(OpaqueNorm) or rhs.has(OpaqueNorm):
        return None
    # gamma_max is the largest |gamma_i|, so at least |gamma| at the pattern's coordinate.
    largest, difference = domain.symbol(gamma_max), lhs - rhs
    entries = [e for e in difference.atoms(sp.Indexed) if str(e.base) == "gamma"]
    if largest in difference.free_symbols and len(entries) == 1:
        bound = sp.Abs(entries[0]) + sp.Dummy("u", nonnegative=True)
        lhs, rhs = lhs.xreplace({largest: bound}), rhs.xreplace({largest: bound})
    return prove(Relation(lhs, sides.op, rhs), domain.n_set, domain.conditions)


def _entrywise(sides: _Sides) -> tuple[sp.Expr, sp.Expr] | None:
    """The two sides at one entry i where the claim holds exactly when it holds at every entry:
    an entrywise relation (all(...)), or max_k f_k below a bound (max_k f_k <= b: f_i <= b for
    every i) and its mirror; None otherwise."""
    lhs, rhs, op = sides.lhs, sides.rhs, sides.op
    if isinstance(lhs, Vector) and isinstance(rhs, Vector):
        return (lhs.entry, rhs.entry) if op != "==" else None
    if not (isinstance(lhs, sp.Expr) and isinstance(rhs, sp.Expr)):
        return None
    for largest, other, below in ((lhs, rhs, ("<", "<=")), (rhs, lhs, (">", ">="))):
        if isinstance(largest, Largest) and op in below and not other.has(Largest):
            entry = largest.over(i)
            return (entry, other) if largest is lhs else (other, entry)
    return None


def _prove_entrywise(domain: Domain, lhs: sp.Expr, rhs: sp.Expr, op: str) -> str | None:
    """An entrywise relation at one entry x_i, by z3, with what any entry satisfies
    (`entry_facts`): true at every entry of every input of the domain where it is unsat."""
    ranges = [sp.Contains(n, domain.n_set)] if n not in domain.fixed else []
    facts = entry_facts(domain)
    try:
        answer = solver.holds_everywhere(lhs, op, rhs, [*domain.conditions, *facts, *ranges])
    except solver.Outside:
        return None
    if answer.status != "unsat":
        return None
    used = f", with {', '.join(sp.sstr(f) for f in facts)} for any entry" if facts else ""
    return f"at every entry x_i, decided by z3's nonlinear real arithmetic{used}"


# --- sampling -----------------------------------------------------------------------


def _nonexistent(claim: Claim, domain: Domain, sides: _Sides, found: Verdict, confirm: Confirm | None) -> Verdict:
    """A claim that states the value of a limit that does not exist: refuted at an admissible
    point where it does not, or undecided where no such point is found."""
    for point, inputs in _points(domain, sides, claim):
        for missing in domain.missing:
            where = missing.where.xreplace({**domain.fixed, **point})
            if where is sp.true or (where is not sp.false and sampling._holds(where, point)):
                example = _example(point, inputs, domain)
                detail = f"fails at {_shown(example)} (claimed {found.quantifier}): {missing.what}"
                witness = _witness(point, inputs, domain)
                return dataclasses.replace(
                    found, verdict="refuted", detail=detail, counterexample=example, witness=witness
                )
    return dataclasses.replace(
        found, detail=f"undecided: {domain.missing[0].what} somewhere, but no admissible point of it was found"
    )


def _sample(claim: Claim, domain: Domain, sides: _Sides, found: Verdict, confirm: Confirm | None) -> Verdict:
    checked = 0
    compiled = None
    quantifier = found.quantifier
    for point, inputs in _points(domain, sides, claim):
        matrices = domain.usage.matrices
        if inputs is None and not isinstance(sides.lhs, list):
            compiled = compiled or sampling.Compiled(sides.lhs, sides.rhs, list(point))
            result = compiled.decide(sides.op, point)
            # Shown only for a refutation, at the most digits a decision takes: a side that is a
            # cancellation (1 - response at t = 1e30 is 5e-63) keeps its value.
            left, right = (
                compiled.sides(point, sampling.DIGITS[-1]) or (None, None) if result is False else (None, None)
            )
        else:
            try:
                left = sampling.at(sides.lhs, point, inputs, matrices)
                right = sampling.at(sides.rhs, point, inputs, matrices)
            except (ZeroDivisionError, ValueError, TypeError, OverflowError):
                continue  # not evaluable exactly here (SymPy overflows on some huge powers): no decision
            result = sampling.decide(left, sides.op, right, point)
        if result is None:
            continue
        checked += 1
        if result is False:
            at = (_example(point, inputs, domain), _witness(point, inputs, domain))
            return _refutation(claim, found, at, (left, right), confirm)
    if checked == 0:
        return dataclasses.replace(found, detail=f"no admissible point where both sides are defined, {quantifier}")
    sampled = (
        f"explicit inputs x of {', '.join(map(str, _sizes(domain)))} entries, up to {_budget(domain)} points, "
        "the other symbols at simple and seeded random values"
        if domain.inputs
        else "0, tiny and huge values, 1e-300 .. 1e300, included"
    )
    outside = f"; outside the algebraic fragment z3 decides: {domain.outside}" if domain.outside else ""
    return dataclasses.replace(
        found,
        verdict="supported",
        detail=f"not proved; no violation at {checked} sampled points {quantifier} ({sampled}; "
        f"each decided exactly or at up to 240 digits){outside}",
    )


def _points(domain: Domain, sides: _Sides, claim: Claim):
    entries = _entries_of(sides.lhs, sides.rhs)
    symbols: set[sp.Basic] = set().union(*(_sampled(expr) for expr in entries))
    # A symbol only a held matrix has (epsilon in norm(J, oo) >= norm(J, 2)/sqrt(n)); its indices are its own.
    for matrix in domain.usage.matrices.values():
        symbols |= _sampled(matrix.entry) - {k}
    for condition in domain.conditions:
        symbols |= _sampled(condition)
    for missing in domain.missing:
        symbols |= _sampled(missing.where)
    symbols.discard(sp.Symbol("i", integer=True, nonnegative=True))
    if epsilon not in domain.fixed and any(name.endswith("(J)") for _, name in domain.usage.quantities):
        # rank(J) is n - 1 whatever epsilon > 0 is, but the audit evaluates J at one.
        symbols.add(domain.symbol(epsilon))
    symbols -= {sp.Symbol(name) for name in domain.usage.matrices}  # held matrices, not numbers
    if domain.usage.general and domain.pattern is None:
        # A statistic an assumption bounds is sampled even where the sides no longer name it:
        # the input shown must meet the assumption (q > 0), whatever the sides say.
        symbols |= {domain.symbol(s) for s in domain.statistics() if s in domain.ranges and s not in domain.fixed}
    if domain.inputs:
        yield from _explicit_points(domain, sorted(symbols, key=sp.default_sort_key), claim)
        return
    ordered = sorted(symbols, key=sp.default_sort_key)
    conditions = [*domain.conditions, *([sp.Contains(n, domain.n_set)] if n in symbols else [])]
    for point in sampling.points(ordered, conditions, ranges={domain.symbol(s): r for s, r in domain.ranges.items()}):
        if not _gain_consistent(point, domain):
            continue
        yield point, None


def _sampled(expr: sp.Basic) -> set[sp.Basic]:
    """The symbols a point of ``expr`` fixes: its free symbols outside indexed entries, and each
    gain or bias entry (gamma[i]) it names."""
    inside = {s for e in expr.atoms(sp.Indexed) for s in e.free_symbols}
    return (expr.free_symbols - inside) | _gain_entries(expr)


def _sizes(domain: Domain) -> list[int]:
    """The sizes n of the explicit inputs sampled: 2 to 5, and for a mean over a subset of k of the
    n entries that is one entry at all of them (k = ceil(n/16)), also the first n where it is two."""
    allowed = domain.n_set
    sizes = [size for size in (2, 3, 4, 5) if size in allowed] or [int(allowed.inf)]
    for subset in (subset for key in sorted(domain.usage.layers) for subset in LAYERS[key].subsets):
        if all(sum(subset.entries(size, subset.default)) < 2 for size in sizes):
            more = (size for size in range(sizes[-1] + 1, 65) if size in allowed)
            larger = next((size for size in more if sum(subset.entries(size, subset.default)) >= 2), None)
            sizes += [larger] if larger is not None else []
    return sizes


# Values of the other symbols tried at each explicit input: the nicest first, then seeded random ones.
_PER_INPUT = 6
# Points at a larger size (one input, the nicest values of the rest): an explicit matrix of 17
# entries a side costs a hundred times one of 5, and a claim has 10 s.
_LARGER = 1


def _groups(domain: Domain) -> tuple[tuple[list[int], int], ...]:
    """The sizes of the explicit inputs in the order they are sampled, each group with its budget
    of points: the small sizes first, with the whole budget; a larger size a partial mean needs,
    after them (where only larger sizes are admitted, they are the first group)."""
    sizes = _sizes(domain)
    small = [size for size in sizes if size <= 5] or sizes
    larger = [size for size in sizes if size not in small]
    return ((small, sampling.MAX_EXPLICIT), (larger, _LARGER))


def _budget(domain: Domain) -> int:
    """How many points the explicit inputs take at most: whole inputs until a group's budget is
    reached (`_groups`)."""
    total = 0
    for group, budget in _groups(domain):
        each = min(_PER_INPUT, budget)  # points per input, as `_explicit_points` takes them
        total += -(-budget // each) * each if group else 0
    return total


def _explicit_points(domain: Domain, symbols: list[sp.Basic], claim: Claim):
    rest = _sampled_scalars(domain, symbols)
    means = {mean_statistic(layer) for layer in domain.layers} - {None}
    ranges = {domain.symbol(s): r for s, r in domain.ranges.items()}
    for group, budget in _groups(domain):
        seen = 0
        for number, sampled in enumerate(sampling.explicit_inputs(group, domain.usage.vectors) if group else ()):
            prepared = _to_assumptions(domain, sampled, means)
            if prepared is None:
                continue
            inputs, statistics = prepared
            points = itertools.islice(sampling.points(rest, [], seed=number, ranges=ranges), min(_PER_INPUT, budget))
            for point in points:
                seen += 1
                full = {**point, **statistics, n: sp.Integer(inputs.size)}
                if inputs.gain:
                    full[domain.symbol(gamma_max)] = max(abs(value) for value in inputs.gain)
                if _gain_consistent(full, domain) and all(
                    sampling._holds(_sums_at(c, inputs), full) for c in domain.conditions
                ):
                    yield full, inputs
            if seen >= budget:
                break


def _sums_at(condition: sp.Basic, inputs: sampling.Explicit) -> sp.Basic:
    """A condition with its sums over the entries (of a layer at another input) taken at ``inputs``."""
    if not condition.has(PowerSum):
        return condition
    return condition.replace(lambda e: isinstance(e, PowerSum), lambda e: sampling.at(e, {}, inputs))


def _sampled_scalars(domain: Domain, symbols: list[sp.Basic]) -> list[sp.Basic]:
    """The claim's scalars sampled beside an explicit input: not a statistic (the input sets it),
    n, the largest gain, an entry or an index."""
    stats = {domain.symbol(stat.symbol) for layer in domain.layers for stat in layer.statistics}
    given = {domain.symbol(gamma_max)} if domain.usage.gains else set()
    return [
        s
        for s in symbols
        if s not in stats and s != n and s not in given and not isinstance(s, sp.Indexed) and not str(s).startswith("j")
    ]


def _to_assumptions(domain: Domain, inputs: Any, means: set[Any]) -> tuple[Any, dict[sp.Basic, sp.Expr]] | None:
    """A sampled input moved to what the assumptions fix (a mean, a statistic, the largest gain),
    with its statistics by the domain's symbols; None where no input of its kind can be."""
    for symbol, value in domain.pinned.items():
        if symbol in means:  # a fixed mean: shift the input to it, exactly
            inputs = sampling.shifted(inputs, value)
    inputs = _gains_to_fixed_largest(domain, _scaled_to_pinned(domain, inputs, means))
    if inputs is None:
        return None  # all-zero gains cannot have the largest |gamma_i| the assumptions fix
    statistics = sampling.statistics_of(domain.layers, inputs)
    if any(sp.simplify(statistics[s] - value) != 0 for s, value in domain.pinned.items() if s in statistics):
        return None  # no input of this kind has the statistics the assumptions fix
    return inputs, {domain.symbol(s): value for s, value in statistics.items()}


def _gains_to_fixed_largest(domain: Domain, inputs: Any) -> Any:
    """The sampled gains scaled, exactly, so that their largest |gamma_i| is the gamma_max an
    assumption fixes (gamma_max == 1); unchanged where none is fixed; None where it cannot be."""
    largest = domain.fixed.get(gamma_max)
    if largest is None or not inputs.gain:
        return inputs
    top = max(abs(value) for value in inputs.gain)
    if top == 0:
        return inputs if largest == 0 else None
    return dataclasses.replace(inputs, gain=tuple(value * largest / top for value in inputs.gain))


def _scaled_to_pinned(domain: Domain, inputs: Any, means: set[Any]) -> Any:
    """The input scaled so that a statistic the assumptions fix (r == 1/4) has that value, by the
    statistic's degree in x; unchanged where none is fixed, or a mean is fixed too (scaling would move it)."""
    from derivations.derive import scaling

    if len(domain.pinned) != 1 or any(s in means for s in domain.pinned):
        return inputs
    layers = domain.layers
    degrees = {symbol: d for layer in layers for symbol, d in scaling.statistic_degrees(layer).items()}
    fixed = [(s, value) for s, value in domain.pinned.items() if s in degrees]
    if not fixed or degrees[fixed[0][0]] == 0:
        return inputs
    (symbol, value), current = fixed[0], sampling.statistics_of(layers, inputs).get(fixed[0][0])
    if current is None or current == 0 or not (value / current).is_positive:
        return inputs
    factor = (value / current) ** sp.Rational(1, degrees[symbol])
    return dataclasses.replace(inputs, x=tuple(sp.nsimplify(factor) * e for e in inputs.x))


def _gain_consistent(point: dict, domain: Domain) -> bool:
    """gamma_max is the largest |gamma_i|: at least |gamma| at the pattern's coordinate (gamma_max
    sampled, or fixed by an assumption)."""
    largest = point.get(domain.symbol(gamma_max), domain.fixed.get(gamma_max))
    for symbol, value in point.items():
        if isinstance(symbol, sp.Indexed) and symbol.base == gamma and largest is not None and abs(value) > largest:
            return False
    return True


def _example(point: dict, inputs: sampling.Explicit | None, domain: Domain) -> dict[str, Any]:
    """A counterexample as printed: the point's named values, the input it was found at, and
    what the audit's witness fills in (the size, a gain)."""
    out = _named_values(point, domain)
    # The size the point samples, else the one the assumptions fix (n == 3), else 4.
    size = int(point.get(n, domain.fixed.get(n, 4)))
    x = _input_shown(point, inputs, domain, size)
    if x is not None:
        out.update(x)
    return _completed(out, point, inputs, domain)


def _number(value: sp.Expr) -> Any:
    return sampling.as_number(sp.N(value, 17)) if not value.is_Integer else int(value)


def _named_values(point: dict, domain: Domain) -> dict[str, Any]:
    """The point's numbers by name, then those the assumptions fix, then each subset's 0/1 vector."""
    out: dict[str, Any] = {}
    subsets: dict[str, dict[int, int]] = {}
    for symbol, value in point.items():
        if isinstance(symbol, sp.Indexed) and isinstance(symbol.base, Indicator):
            subsets.setdefault(str(symbol.base), {})[int(symbol.indices[0])] = int(value)
            continue
        if symbol == k:
            continue  # a matrix's column index: every entry is evaluated, whatever the point's k
        name = str(symbol.base) if isinstance(symbol, sp.Indexed) else str(symbol)
        if value.is_number:
            out[name] = _number(value)
    statistics = domain.statistics()
    for symbol, value in domain.fixed.items():
        if symbol not in statistics and value.is_number:
            out.setdefault(str(symbol), _number(value))
    for name, entries in subsets.items():  # a subset's indicator, as the 0/1 vector it is
        out[name] = [entries[m] for m in sorted(entries)]
    return out


def _input_shown(
    point: dict, inputs: sampling.Explicit | None, domain: Domain, size: int
) -> dict[str, list[float]] | None:
    """The input the point stands for, with its gain and vectors where explicit, or None."""
    if inputs is not None:
        shown = {"x": [float(e) for e in inputs.x]}
        if inputs.gain:
            shown["gain"] = [float(e) for e in inputs.gain]
            shown["bias"] = [float(e) for e in inputs.bias]
        if inputs.g:
            shown["g"] = [float(e) for e in inputs.g]
        if inputs.v:
            shown["v"] = [float(e) for e in inputs.v]
        return shown
    if domain.pattern is not None and t in point:
        return {"x": pattern_input(domain.pattern.values, point[t])}
    if t in point and any(quantities.at_constant_input(name) for _, name in domain.usage.quantities):
        return {"x": pattern_input((t,), point[t]) * size}  # the constant input t 1
    if domain.usage.general:
        # The statistics the assumptions fix (r == 1/4) are not in the point: they were substituted.
        return {"x": [float(e) for e in sampling.input_for({**domain.pinned, **point}, size)]}
    return None


def pattern_input(values: tuple[sp.Expr, ...], amplitude: Any) -> list[float]:
    """The pattern's entries at the amplitude, each the float nearest its exact value (a float of
    sp.N(e, 17) rounds twice, and misses it by an ulp at t = -6.66e-102)."""
    return [float(e.xreplace({t: amplitude})) for e in values]


def _completed(out: dict[str, Any], point: dict, inputs: sampling.Explicit | None, domain: Domain) -> dict[str, Any]:
    """A counterexample given in full: the size, and a gain whose largest |gamma_i| is the point's."""
    witness = _witness(point, inputs, domain).shown()
    usage = domain.usage
    if domain.pattern is None and (usage.general or usage.vectors or usage.gains):
        out.setdefault("n", witness["n"])
        if "x" in witness:
            out.setdefault("x", witness["x"])
    if domain.pattern is not None and usage.gains and "x" not in out:
        out["x"] = pattern_input(domain.pattern.values, point.get(t, 0))
    for name in ("gain", "bias"):
        if name in witness and out.get("x") is not None and len(witness[name]) == len(out["x"]):
            out.setdefault(name, witness[name])
    return out


def _witness(point: dict, inputs: sampling.Explicit | None, domain: Domain) -> audit.Point:
    """The counterexample exactly, as the audit evaluates it: the explicit input, or the
    pattern's t, or an x with the point's statistics (an exact algebraic number each)."""
    named = {str(s): v for s, v in {**domain.fixed, **domain.pinned}.items() if not isinstance(s, sp.Indexed)}
    named.update({str(s): v for s, v in point.items() if not isinstance(s, sp.Indexed)})
    entries = {str(s): v for s, v in {**domain.fixed, **point}.items() if isinstance(s, sp.Indexed)}
    size = _witness_size(named, inputs, domain)
    witness = audit.Point(n=size, epsilon=named.get("epsilon"), t=named.get("t"))
    _witness_input(witness, named, inputs, domain)
    if witness.gain is None and any(layer.parameters for layer in domain.layers):
        _witness_gains(witness, named, entries)
    scalars = [str(symbol) for layer in domain.layers for _, symbol in layer.scalars]
    for name in [*scalars, *(name for name in domain.usage.scalars if name in FREE_SCALARS)]:
        if name in named:
            witness.scalars[name] = named[name]
    return witness


def _witness_size(named: dict[str, Any], inputs: sampling.Explicit | None, domain: Domain) -> int:
    """n at the counterexample: the point's, else the pattern's size, else the explicit input's, else 4."""
    pattern = domain.pattern
    return int(named.get("n", len(pattern.values) if pattern is not None else (inputs.size if inputs else 4)))


def _witness_input(
    witness: audit.Point, named: dict[str, Any], inputs: sampling.Explicit | None, domain: Domain
) -> None:
    """Set the counterexample's x (and gain, bias, g and v where explicit): the explicit input's,
    the constant input t, or an x with the point's statistics; none at an input pattern."""
    if inputs is not None:
        witness.x = list(inputs.x)
        witness.gain, witness.bias = (list(inputs.gain), list(inputs.bias)) if inputs.gain else (None, None)
        witness.g, witness.v = (list(inputs.g) or None), (list(inputs.v) or None)
    elif domain.pattern is None and any(quantities.at_constant_input(name) for _, name in domain.usage.quantities):
        witness.x = [named.get("t", sp.Integer(0))] * witness.n
    elif domain.pattern is None:
        witness.x = exact_input(named, witness.n)


def _witness_gains(witness: audit.Point, named: dict[str, Any], entries: dict[str, Any]) -> None:
    """Set the counterexample's gain and bias from the point: each gain entry gamma[m] the point
    fixes at its place m, every other gain the largest |gamma_i| (gamma_max, else the largest
    |gamma[m]| fixed, else 1), and each bias beta[m] (else 0)."""
    size = witness.n
    gains = {m: entries[f"gamma[{m}]"] for m in range(size) if f"gamma[{m}]" in entries}
    largest = named.get("gamma_max")
    fill = largest if largest is not None else max((abs(value) for value in gains.values()), default=sp.Integer(1))
    witness.gain = [gains.get(m, fill) for m in range(size)]
    witness.bias = [entries.get(f"beta[{m}]", sp.Integer(0)) for m in range(size)]


def exact_input(values: dict[str, Any], size: int, kind: int = 0) -> list[sp.Expr]:
    """An x of ``size`` entries with the given mean mu and variance q (or mean square r), exactly:
    x = mu + sqrt(q) z with z of mean 0 and mean square 1 (reversed for an odd ``kind``)."""
    mean = values.get("mu", sp.Integer(0))
    variance = values["q"] if "q" in values else (values["r"] - mean**2 if "r" in values else sp.Integer(0))
    centre = sp.Rational(size - 1, 2)
    spread = sp.sqrt(sp.Rational(size**2 - 1, 12))
    order = range(size) if kind % 2 == 0 else range(size - 1, -1, -1)
    return [mean + sp.sqrt(variance) * (m - centre) / spread for m in order]


def _shown(example: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in example.items()) + "}"


def _apart(left: Any, right: Any) -> tuple[str, str]:
    """Both sides to 8 digits, or to as many more as it takes to tell them apart (at most 60)."""
    for digits in (8, 17, 30, 60):
        shown = _brief(left, digits), _brief(right, digits)
        if shown[0] != shown[1]:
            break
    return shown


def _brief(value: Any, digits: int = 8) -> str:
    if value is None:
        return "undefined"
    if isinstance(value, list):
        return "[" + ", ".join(_brief(e, digits) for e in value[:6]) + (", ..." if len(value) > 6 else "") + "]"
    if not isinstance(value, sp.Basic):
        return sp.N(sp.Float(value, digits + 22), digits).__str__()
    number = sampling._number(value, digits)
    return str(number) if number is not None else str(value)
