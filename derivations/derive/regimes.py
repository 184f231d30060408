r"""A layer made of smooth pieces switched by a condition on its statistics: a clamp.

A definition such as :math:`y = x / \max(\|x\|_2, \varepsilon)` holds one
``Max`` of a statistic and a floor.  `clamped` derives the two regimes from
it: where the statistic exceeds the floor the clamp is off (x / ||x||), where
it is below the clamp is on (x / epsilon).  Each regime is a smooth `Layer`
of its own, so every result is derived for it by the generic machinery; the
registrations below put the regimes' results together as a ``Piecewise``.

- Values (the output, the response, the second moment) are continuous across
  the boundary, proved: the clamped regime takes the boundary itself.
- Derivatives (the slope, J, its eigenvalues, J^T g, ...) are given on the
  open regimes only.  On the boundary they do not exist: `jump` derives the
  difference of the one-sided Jacobians there and proves it is not zero, and
  `kink` gives, on each input pattern, the amplitude where the pattern
  crosses the boundary and the one-sided slopes there.

>>> from derivations import LAYERS
>>> kink(LAYERS["l2norm_clamped"], LAYERS["l2norm_clamped"].patterns[0])
(sqrt(2)*epsilon/2, 1/epsilon, 0)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

import sympy as sp

from derivations.core.formula import Established, Formula
from derivations.core.layer import Direction, Layer, Pattern, Statistic
from derivations.core.proof import DerivationError, equal, is_zero, less_equal
from derivations.derive import backward, eigen, jacobian, moments, response, scaling, spectral
from derivations.symbols import epsilon, n, norm_J, t, x


@dataclass(frozen=True, eq=False)
class Regime:
    """Where ``condition`` (strict, in the statistics and epsilon) holds, the output is ``layer``'s."""

    name: str
    condition: sp.Basic
    layer: Layer


@dataclass(frozen=True, eq=False)
class Regimes(Layer):
    """A layer whose output is one of its ``regimes``' smooth outputs, by a condition on the statistics.

    ``definition`` is the output as the literature writes it (with ``Max``);
    ``boundary`` is the equation on which the regimes meet; ``output`` is the
    ``Piecewise`` derived from the definition.  Build it with `clamped`.
    """

    definition: sp.Expr = field(kw_only=True)
    regimes: tuple[Regime, ...] = field(kw_only=True)
    boundary: sp.Equality = field(kw_only=True)
    named: Mapping[str, sp.Expr] = field(default_factory=dict, kw_only=True)
    twins: Mapping[sp.Symbol, sp.Symbol] = field(default_factory=dict, kw_only=True)

    @property
    def named_symbols(self) -> dict[str, sp.Expr]:
        return dict(self.named)


class MatrixCases(sp.MatrixExpr):
    """A matrix given by cases, ``(matrix, condition)`` pairs: J of a layer with regimes.

    SymPy's ``Piecewise`` holds scalars; this holds matrix expressions and
    prints as the same ``cases`` block.
    """

    def __new__(cls, *pairs: tuple[sp.MatrixExpr, sp.Basic]) -> MatrixCases:
        return sp.Basic.__new__(cls, *(sp.Tuple(matrix, condition) for matrix, condition in pairs))

    @property
    def shape(self) -> tuple[sp.Expr, sp.Expr]:
        return self.args[0][0].shape

    @property
    def pairs(self) -> list[tuple[sp.MatrixExpr, sp.Basic]]:
        return [(pair[0], pair[1]) for pair in self.args]

    def _latex(self, printer: sp.printing.latex.LatexPrinter) -> str:
        rows = [rf"{printer._print(m)} & \text{{for}}\: {printer._print(c)}" for m, c in self.pairs]
        return r"\begin{cases} " + r" \\ ".join(rows) + r" \end{cases}"


def cases(*pairs: tuple[sp.Basic, sp.Basic]) -> sp.Basic:
    """Values by condition: a ``Piecewise`` for scalars, `MatrixCases` for matrices."""
    if isinstance(pairs[0][0], sp.MatrixExpr):
        return MatrixCases(*pairs)
    return sp.Piecewise(*pairs)


def say(relation: sp.Basic) -> str:
    """A condition or equation on the statistics in words, for statements: ||x||_2 = epsilon."""
    names = {s: sp.Symbol(_SPOKEN.get(s.name, s.name)) for s in relation.free_symbols if isinstance(s, sp.Symbol)}
    named = relation.xreplace(names)
    if isinstance(named, sp.Equality):
        return f"{named.lhs} = {named.rhs}"
    return str(named)


_SPOKEN = {"norm_x": "||x||_2"}


def clamped(
    key: str,
    title: str,
    statistics: tuple[Statistic, ...],
    definition: sp.Expr,
    patterns: tuple[Pattern, ...],
    directions: tuple[Direction, ...],
    stated: Mapping[str, sp.Basic] | None = None,
    named: Mapping[str, sp.Expr] | None = None,
    used_by: tuple[str, ...] = (),
) -> Regimes:
    """The layer ``definition``, which holds one max(statistic, floor), split into its two regimes.

    The floor is the argument free of the statistics (epsilon); the clamp is
    on where the statistic is below it.
    """
    (clamp,) = definition.atoms(sp.Max)
    symbols = {stat.symbol for stat in statistics}
    (value,) = [a for a in clamp.args if a.free_symbols & symbols]
    (floor,) = [a for a in clamp.args if not a.free_symbols & symbols]
    if value not in symbols:
        raise DerivationError(f"{key}: the clamped argument {value} must be one of the statistics")
    pieces = (
        ("clamped", sp.StrictLessThan(value, floor), definition.xreplace({clamp: floor})),
        ("unclamped", sp.StrictGreaterThan(value, floor), definition.xreplace({clamp: value})),
    )
    # Above a positive floor the statistic is positive: the unclamped regime
    # names it by a positive twin, so that 1/||x|| >= 0 is known there.
    twin = sp.Symbol(value.name, positive=True)
    renamed = {"clamped": {}, "unclamped": {value: twin} if floor.is_positive else {}}
    base = Layer(key, title, statistics, definition, patterns, directions, display=(), spread=value)
    layers = {name: _regime(base, name, condition, output, renamed[name]) for name, condition, output in pieces}
    boundary = sp.Eq(value, floor)
    # The outputs meet on the boundary by construction: both are then the definition with the clamp
    # and the value at the floor (a proof of it here could not fail; the derived values' continuity
    # is proved where they are put together, `_closed`).
    return Regimes(
        key=key,
        title=title,
        statistics=statistics,
        output=sp.Piecewise((pieces[0][2], sp.LessThan(value, floor)), (pieces[1][2], True)),
        patterns=patterns,
        directions=directions,
        display=(),
        spread=value,
        stated=dict(stated or {}),
        used_by=used_by,
        definition=definition,
        regimes=tuple(Regime(name, condition, layers[name]) for name, condition, _ in pieces),
        boundary=boundary,
        named=dict(named or {}),
        twins={twin: value},
    )


def _regime(base: Layer, name: str, condition: sp.Basic, output: sp.Expr, renamed: dict) -> Layer:
    """``base`` in the regime ``name``, where ``condition`` holds and its output is ``output``,
    with the statistics ``renamed`` by their twins."""
    return Layer(
        key=f"{base.key}[{name}]",
        title=f"{base.title}, where {condition}",
        statistics=tuple(
            dataclasses.replace(stat, symbol=renamed.get(stat.symbol, stat.symbol)) for stat in base.statistics
        ),
        output=output.xreplace(renamed),
        patterns=base.patterns,
        directions=base.directions,
        display=(),
        spread=renamed.get(base.spread, base.spread),
    )


@dataclass(frozen=True, eq=False)
class Scaled(Regimes):
    """``gain`` times a layer with regimes, one scalar gain for every entry (ScaleNorm); build it with `scaled`."""

    base: Regimes = field(kw_only=True)
    gain: sp.Symbol = field(kw_only=True)

    @property
    def requires(self) -> tuple[Layer, ...]:
        return (self.base,)

    @property
    def scalars(self) -> tuple[tuple[str, sp.Symbol], ...]:
        return ((GAIN, self.gain),)


# The argument name of a scaled layer's gain in the numeric functions.
GAIN = "gain"


def scaled(
    base: Regimes,
    key: str,
    title: str,
    gain: sp.Symbol,
    stated: Mapping[str, sp.Basic] | None = None,
    used_by: tuple[str, ...] = (),
) -> Scaled:
    """The layer ``gain * base``, defined from the base's definition; every result derived anew."""
    layer = clamped(
        key,
        title,
        base.statistics,
        gain * base.definition,
        base.patterns,
        base.directions,
        stated=stated,
        named={str(gain): gain},
        used_by=used_by,
    )
    fields = {f.name: getattr(layer, f.name) for f in dataclasses.fields(layer) if f.init}
    return Scaled(**fields, base=base, gain=gain)


def factor(layer: Scaled, mine: sp.Expr, theirs: sp.Expr, what: str) -> sp.Expr:
    """c(gain) with ``mine`` = c(gain) * ``theirs`` (a result of the layer and the same of its base),
    in every regime, proved: the factor numeric applies to the base's function.  A regime
    where both are zero constrains nothing."""
    pairs = [(mine, theirs)]
    if isinstance(mine, sp.Piecewise) and isinstance(theirs, sp.Piecewise):
        if [c for _, c in mine.args] != [c for _, c in theirs.args]:
            raise DerivationError(f"{layer.key}.{what}: its cases are not {layer.base.key}'s")
        pairs = [(a, b) for (a, _), (b, _) in zip(mine.args, theirs.args, strict=True)]
    found = set()
    for a, b in pairs:
        if is_zero(b) is not None:
            equal(a, sp.Integer(0), f"{layer.key}.{what}: zero where {layer.base.key}'s is")
            continue
        found.add(sp.factor(sp.cancel(sp.together(a / b))))
    if len(found) != 1 or not next(iter(found)).free_symbols <= {layer.gain}:
        raise DerivationError(f"{layer.key}.{what}: not {layer.base.key}'s times a function of the gain: {found}")
    return found.pop()


def is_regimes(layer: Layer, _: object = None) -> bool:
    """Whether ``layer`` switches between regimes (a registry row's ``applies``)."""
    return isinstance(layer, Regimes)


# --- the regimes' results put together ---------------------------------------------


def _open(layer: Regimes, values: list[sp.Expr], conditions: list[sp.Basic] | None = None) -> sp.Expr:
    """A derivative by regime, on the open regimes only (undefined on the boundary)."""
    conditions = conditions or [regime.condition for regime in layer.regimes]
    return cases(*zip((v.xreplace(layer.twins) for v in values), conditions, strict=True))


def _closed(layer: Regimes, values: list[sp.Expr], conditions: list[sp.Basic], what: Callable[..., sp.Expr]) -> sp.Expr:
    """A continuous value by regime: the first regime takes the boundary too, proved continuous there."""
    first, second = (v.xreplace(layer.twins) for v in values)
    closed = conditions[0]
    on_boundary = sp.Eq(closed.lhs, closed.rhs)
    solved = sp.solve(on_boundary, layer.boundary.lhs) if layer.boundary.lhs in closed.free_symbols else []
    if solved:
        at = {layer.boundary.lhs: solved[0]}
        equal(first.xreplace(at), second.xreplace(at), f"{layer.key}: {what.__name__} on the boundary")
    return sp.Piecewise((first, sp.LessThan(closed.lhs, closed.rhs)), (second, True))


def on_pattern(layer: Regimes, condition: sp.Basic, pattern: Pattern) -> sp.Basic:
    """A condition on the statistics, on the input pattern (a condition in t)."""
    size = len(pattern.values)
    values = {stat: value.xreplace({n: size}) for stat, value in layer.explicit_statistics(size).items()}
    return condition.xreplace(values).xreplace({x[m]: value for m, value in enumerate(pattern.values)})


def _conditions(layer: Regimes, pattern: Pattern) -> list[sp.Basic]:
    return [on_pattern(layer, regime.condition, pattern) for regime in layer.regimes]


@response.response.register
@cache
def _(layer: Regimes, pattern: Pattern | None = None) -> sp.Expr:
    pattern = pattern or layer.patterns[0]
    values = [response.response(regime.layer, pattern) for regime in layer.regimes]
    return _closed(layer, values, _conditions(layer, pattern), response.response)


@response.slope.register
@cache
def _(layer: Regimes, pattern: Pattern | None = None) -> sp.Expr:
    pattern = pattern or layer.patterns[0]
    values = [response.slope(regime.layer, pattern) for regime in layer.regimes]
    return _open(layer, values, _conditions(layer, pattern))


def _regime_at(layer: Regimes, pattern: Pattern, at: sp.Expr) -> Regime:
    """The regime the pattern is in at t = ``at`` (0, or +-oo)."""
    found = [r for r, c in zip(layer.regimes, _conditions(layer, pattern), strict=True) if c.subs(t, at) == sp.true]
    if len(found) != 1:
        raise DerivationError(f"{layer.key}: no single regime holds at t = {at} on {pattern}")
    return found[0]


@response.slope_at_zero.register
@cache
def _(layer: Regimes, pattern: Pattern | None = None) -> tuple[sp.Expr, sp.Expr]:
    # t = 0 lies inside one open regime: the slope there is that regime's.
    pattern = pattern or layer.patterns[0]
    return response.slope_at_zero(_regime_at(layer, pattern, sp.Integer(0)).layer, pattern)


@response.asymptote.register
@cache
def _(layer: Regimes, pattern: Pattern | None = None) -> tuple[sp.Expr, sp.Expr]:
    pattern = pattern or layer.patterns[0]
    upper = response.asymptote(_regime_at(layer, pattern, sp.oo).layer, pattern)[0]
    lower = response.asymptote(_regime_at(layer, pattern, -sp.oo).layer, pattern)[1]
    return upper, lower


@response.definition_formula.register
def _(layer: Regimes, item: object, name: str) -> Formula:
    # As the literature writes it, with the max; the regimes are derived from it.
    generic = response.definition_formula.dispatch(Layer)(layer, item, name)
    regimes = "; ".join(f"{say(regime.condition)}: {regime.name}" for regime in layer.regimes)
    return dataclasses.replace(
        generic,
        expr=sp.Eq(generic.expr.lhs, layer.definition),
        detail=f"{generic.detail}; regimes derived from the max: {regimes}",
    )


# --- the kink --------------------------------------------------------------------


@cache
def kink(layer: Regimes, pattern: Pattern) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """(t_k, slope as |t| -> t_k from below, slope as |t| -> t_k from above) on ``pattern``.

    t_k > 0 is where the pattern meets the boundary.  Each one-sided limit
    is the slope of the regime on that side, continuous at t_k; it is taken
    at t_k and at -t_k, which must agree (the slope is even in t).
    """
    amplitude = sp.Dummy("a", positive=True)
    crossing = on_pattern(layer, layer.boundary, pattern).xreplace({t: amplitude})
    roots = sp.solve(crossing, amplitude)
    if len(roots) != 1:
        raise DerivationError(f"{layer.key}: {pattern} meets {layer.boundary} at |t| in {roots}, not once")
    (t_k,) = roots
    conditions = _conditions(layer, pattern)
    below = [r for r, c in zip(layer.regimes, conditions, strict=True) if c.subs(t, t_k / 2) == sp.true]
    above = [r for r, c in zip(layer.regimes, conditions, strict=True) if c.subs(t, 2 * t_k) == sp.true]
    if len(below) != 1 or len(above) != 1:
        raise DerivationError(f"{layer.key}: the regimes on either side of |t| = {t_k} are not one each")
    limits = []
    for regime in (below[0], above[0]):
        slope = response.slope(regime.layer, pattern)
        right, left = sp.factor(slope.subs(t, t_k)), sp.factor(slope.subs(t, -t_k))
        equal(right, left, f"{layer.key}: slope of the {regime.name} regime at t = +-{t_k}")
        limits.append(right)
    return t_k, limits[0], limits[1]


def kink_amplitude(layer: Layer, pattern: Pattern) -> sp.Expr:
    assert isinstance(layer, Regimes)
    return kink(layer, pattern)[0]


def slope_below_kink(layer: Layer, pattern: Pattern) -> sp.Expr:
    assert isinstance(layer, Regimes)
    return kink(layer, pattern)[1]


def slope_above_kink(layer: Layer, pattern: Pattern) -> sp.Expr:
    assert isinstance(layer, Regimes)
    return kink(layer, pattern)[2]


def kink_formula(layer: Layer, pattern: Pattern, name: str, proofs: Sequence[str] = ()) -> Formula:
    """The kink on ``pattern``: where the input meets the boundary, and the slope's one-sided
    limits there; ``proofs`` are of the one-sided slopes' stated forms (rows of their own without
    a formula, proved here, where they are printed)."""
    assert isinstance(layer, Regimes)
    t_k, below, above = kink(layer, pattern)
    if is_zero(below - above) is not None:
        raise DerivationError(f"{layer.key}: the slope does not jump at |t| = {t_k}; no kink")
    u = sp.Derivative(sp.Function(f"u_{pattern.coordinate + 1}")(t), t)
    shown, proof = layer.proved(name, t_k)
    proof = "; ".join(filter(None, [proof, *proofs]))

    def relation(at: sp.Expr) -> sp.Basic:
        return sp.And(
            sp.Eq(sp.Abs(t), at),
            sp.Eq(sp.Limit(u, t, at, "-"), below),
            sp.Eq(sp.Limit(u, t, at, "+"), above),
        )

    return Formula(
        name,
        f"Kink: on {pattern} the input meets {say(layer.boundary)} at |t| = t_k, where the clamp switches "
        "regimes; the response is continuous there, its slope jumps (one-sided limits from |t| < t_k and "
        "|t| > t_k, the same at -t_k), so neither the slope nor J exists at |t| = t_k.",
        relation(t_k),
        ("epsilon > 0", f"input {pattern}"),
        Established.LIMIT,
        "boundary solved on the pattern; each side's slope at t = +-t_k (equal: the slope is even); they differ",
        proof,
        layer.key,
        relation(shown),
    )


# --- the Jacobian --------------------------------------------------------------------


def _open_by_regime(derive: Callable[[Layer], sp.Expr]) -> None:
    """Register, for layers with regimes, ``derive`` as each regime's own on the open regimes."""

    @cache
    def by_regime(layer: Regimes) -> sp.Expr:
        return _open(layer, [derive(regime.layer) for regime in layer.regimes])

    derive.register(Regimes)(by_regime)  # type: ignore[attr-defined]


# J_ik, J^T g, J v and the Hessian product: derivatives, on the open regimes.
for _derive in (jacobian.entry, backward.vjp, backward.jvp, backward.hvp):
    _open_by_regime(_derive)


@jacobian.is_symmetric.register
@cache
def _(layer: Regimes) -> bool:
    return all(jacobian.is_symmetric(regime.layer) for regime in layer.regimes)


@jacobian.matrix_form.register
def _(layer: Regimes) -> sp.MatrixExpr:
    return _open(layer, [jacobian.matrix_form(regime.layer) for regime in layer.regimes])


def _by_regime(layer: Regimes, stated: sp.Basic, name: str) -> list[tuple[Regime, sp.Basic]]:
    """A form stated by cases, matched with the regimes by their conditions."""
    if not isinstance(stated, (sp.Piecewise, MatrixCases)):
        raise DerivationError(f"{layer.key}.{name}: state it by regime, with `cases`")
    pairs = stated.pairs if isinstance(stated, MatrixCases) else stated.args
    out = []
    for regime in layer.regimes:
        found = [value for value, condition in pairs if condition.canonical == regime.condition.canonical]
        if len(found) != 1:
            raise DerivationError(f"{layer.key}.{name}: no stated case for {regime.condition}")
        out.append((regime, found[0]))
    return out


@jacobian.proof.register
def _(layer: Regimes, name: str) -> str:
    if name not in layer.stated:
        return ""
    return "; ".join(
        f"where {say(regime.condition)}: "
        + equal(
            jacobian.entry(regime.layer).xreplace(layer.twins),
            jacobian.entry_of(form),
            f"{layer.key}.{name} ({regime.name})",
        )
        for regime, form in _by_regime(layer, layer.stated[name], name)
    )


@jacobian.explicit_agrees.register
def _(layer: Regimes, size: int) -> str:
    # The output is each regime's output where that regime holds, by construction.
    return "; ".join(f"{regime.name}: {jacobian.explicit_agrees(regime.layer, size)}" for regime in layer.regimes)


@cache
def jump(layer: Layer) -> sp.Expr:
    """J_ik just outside the clamp minus J_ik just inside it, on the boundary: where J does not exist."""
    assert isinstance(layer, Regimes)
    clamped, unclamped = (jacobian.entry(regime.layer).xreplace(layer.twins) for regime in layer.regimes)
    on = {layer.boundary.lhs: layer.boundary.rhs}
    return sp.factor(sp.cancel((unclamped - clamped).xreplace(on)))


def jump_formula(layer: Layer, _: object, name: str) -> Formula:
    assert isinstance(layer, Regimes)
    difference = jump(layer)
    if difference == 0:
        raise DerivationError(f"{layer.key}: J does not jump across {layer.boundary}")
    stated = layer.stated.get(name)
    proof = "" if stated is None else equal(difference, jacobian.entry_of(stated), f"{layer.key}.{name}")
    lhs = sp.MatrixSymbol(r"J^{+} - J^{-}", n, n)
    matrix = jacobian._matrix(layer, difference)

    return Formula(
        name,
        f"Where J does not exist: on {say(layer.boundary)} the one-sided Jacobians (J^+ from the "
        f"{layer.regimes[1].name} side {say(layer.regimes[1].condition)}, J^- from {say(layer.regimes[0].condition)}) "
        "differ by "
        "this non-zero matrix, so the layer is not differentiable there.",
        sp.Eq(lhs, matrix),
        ("epsilon > 0", "n >= 2", say(layer.boundary)),
        Established.ALL_N,
        "both regimes' entries on the boundary, subtracted",
        proof,
        layer.key,
        sp.Eq(lhs, matrix if stated is None else stated),
    )


# --- eigenstructure and the spectral norm ------------------------------------------------


@eigen.eigenpairs.register
@cache
def _(layer: Regimes) -> tuple[eigen.Eigen, ...]:
    # A direction is an eigenvector of J where it is one in every regime.
    out = []
    for direction in layer.directions:
        pairs = [eigen.pair(regime.layer, direction) for regime in layer.regimes]
        if any(p is None for p in pairs):
            continue
        found = [p for p in pairs if p is not None]
        if len({p.multiplicity for p in found}) != 1:
            raise DerivationError(f"{layer.key}: {direction.name} has different multiplicities by regime")
        out.append(eigen.Eigen(direction, _open(layer, [p.value for p in found]), found[0].multiplicity))
    return tuple(out)


@eigen.spectral_form.register
@cache
def _(layer: Regimes) -> str:
    return "; ".join(f"{regime.name}: {eigen.spectral_form(regime.layer)}" for regime in layer.regimes)


@spectral.cases.register
@cache
def _(layer: Regimes) -> tuple[tuple[int, sp.Expr], ...]:
    pieces = [dict(spectral.cases(regime.layer)) for regime in layer.regimes]
    starts = sorted(set().union(*pieces))
    # A regime's norm holds from its start up to the next start it has.
    return tuple(
        (start, _open(layer, [piece[max(s for s in piece if s <= start)] for piece in pieces])) for start in starts
    )


_U = sp.Dummy("u", positive=True)


def _within(regime: Regime, expr: sp.Expr, u: sp.Symbol = _U) -> sp.Expr:
    """``expr`` with the regime's condition built in: its larger side written as the smaller plus u > 0."""
    large, small = regime.condition.gts, regime.condition.lts
    if not isinstance(large, sp.Symbol):
        raise DerivationError(f"cannot substitute for {large} in {regime.condition}")
    return expr.xreplace({large: small + u})


@cache
def bound(layer: Regimes) -> tuple[sp.Expr, list[str], list[str]]:
    """The bound on ||J||_2 over every input where J exists, its proofs, and the regimes attaining it.

    Each regime's norm is taken on the boundary; the one value they all take
    there is the candidate, proved to bound the norm inside each regime.
    """
    norms = [spectral.spectral_norm(regime.layer).xreplace(layer.twins) for regime in layer.regimes]
    on = {layer.boundary.lhs: layer.boundary.rhs}
    tops = {sp.factor(norm.xreplace(on)) for norm in norms}
    if len(tops) != 1:
        raise DerivationError(f"{layer.key}: the regimes' norms differ on the boundary: {tops}")
    (top,) = tops
    proofs, attained = [], []
    for regime, norm in zip(layer.regimes, norms, strict=True):
        value, largest = _within(regime, norm), _within(regime, top)
        proofs.append(f"{regime.name}: " + less_equal(value, largest, f"{layer.key}.spectral_bound, {regime.name}"))
        if is_zero(value - largest) is not None:
            attained.append(say(regime.condition))
    return top, proofs, attained


@spectral.bound_value.register
def _(layer: Regimes) -> sp.Expr:
    return bound(layer)[0]


@spectral.bound_formula.register
def _(layer: Regimes, _: object, name: str) -> Formula:
    top, proofs, attained = bound(layer)
    shown, proof = layer.proved(name, top)
    where = " or ".join(attained) or "nowhere"
    return Formula(
        name,
        f"Bound on the spectral norm over every input where J exists, attained exactly where {where}.",
        sp.Le(norm_J, top),
        ("epsilon > 0", "n >= 2", f"not {say(layer.boundary)}"),
        Established.ALL_N,
        "each regime's norm bounded under its condition; " + "; ".join(proofs),
        proof,
        layer.key,
        sp.Le(norm_J, shown),
    )


# --- the second moment and the backward pass -----------------------------------------


@moments.second_moment.register
@cache
def _(layer: Regimes) -> sp.Expr:
    values = [moments.second_moment(regime.layer) for regime in layer.regimes]
    return _closed(layer, values, [regime.condition for regime in layer.regimes], moments.second_moment)


@backward.hvp_proof.register
def _(layer: Regimes, name: str) -> str:
    stated = backward.prove_stated(layer, name, backward.hvp(layer))
    symmetric = "; ".join(f"{regime.name}: {backward.symmetry(regime.layer)}" for regime in layer.regimes)
    return "; ".join(filter(None, [stated, symmetric]))


@backward.explicit_agrees.register
def _(layer: Regimes, size: int) -> str:
    return "; ".join(f"{regime.name}: {backward.explicit_agrees(regime.layer, size)}" for regime in layer.regimes)


# --- scaling ----------------------------------------------------------------------------


@scaling.epsilon_degree.register
@cache
def _(layer: Regimes) -> int:
    # Each regime alone may be homogeneous for several scalings of epsilon
    # (x / epsilon is, for any); the boundary fixes one: both sides alike.
    m = scaling.m
    degrees = scaling.statistic_degrees(layer)
    side = layer.boundary.lhs.xreplace({s: m**d * s for s, d in degrees.items()}) / layer.boundary.lhs
    for candidate in (2, 1):
        floor = layer.boundary.rhs.xreplace({epsilon: m**candidate * epsilon}) / layer.boundary.rhs
        if sp.cancel(side - floor) == 0:
            scaled = scaling.scaled(layer, candidate)
            for regime in layer.regimes:
                output = regime.layer.output
                scaling.power_of_m(output.xreplace(scaled) / output, f"{layer.key}: the {regime.name} output")
            return candidate
    raise DerivationError(f"{layer.key}: no scaling of epsilon keeps {layer.boundary} in place")
