"""What every backend prints: a layer's forward and backward pass as steps over one row.

A `Program` is backend-neutral.  Entries of a vector are plain symbols
(``x`` for x_i, ``dy`` for g_i, the parameters by their argument names),
so an expression in them is elementwise over the last axis; a `Step` with
``mean=True`` is the mean of such an expression over the n entries, a
scalar.  The expressions come from the registry's rows (the layer's output,
the input gradient, each parameter's gradient), written with the centered
input c = x - mu where the layer centers: the means then are of g and of
g * c, not of g * x, which would cancel against mu * mean(g).

Every backend evaluates a row at a scale (`derivations.derive.scaling`): x divided
by a power of two m >= max(|x_i|, epsilon**(1/e)) and epsilon by m**e, each
result multiplied back by m**d, d its derived degree; a centered layer's
centered entries are centered once more and divided by their own size too.
No square or cube of a scaled entry leaves float64's range.  Where the layer
has a derived limit of its Jacobian at the degenerate input (the spread 0),
the input gradient there is the limit's (`derivations.derive.backward.vjp_at_degenerate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy as sp
from sympy.printing.precedence import PRECEDENCE

from derivations import quantities
from derivations.core.layer import Layer
from derivations.derive import backward, eigen, jacobian, scaling
from derivations.derive.sums import Mean
from derivations.symbols import c, epsilon, g, i, j, n, x

# The entries of the vectors, as the emitted code names them.
X = sp.Symbol("x", real=True)
DY = sp.Symbol("dy", real=True)
CENTERED = sp.Symbol("c", real=True)
EPSILON, SIZE = epsilon, n
# The scale a row is evaluated at, and the root of epsilon that bounds it from below.
SCALE = sp.Symbol("m", positive=True)
ROOT = sp.Symbol("root", positive=True)
# The gradient of <dy, y> in epsilon, per row.
DEPSILON = "depsilon"


@dataclass(frozen=True)
class Step:
    """``symbol = expr``, or with ``mean`` the mean of the elementwise ``expr`` over the entries."""

    symbol: sp.Symbol
    expr: sp.Expr
    mean: bool
    vector: bool = False  # an elementwise definition (the centered input), not a scalar


@dataclass(frozen=True)
class Program:
    """One layer's forward and backward pass, ready for a backend to print."""

    key: str
    title: str
    parameters: tuple[sp.Symbol, ...]  # per-feature parameters, by argument name
    statistics: tuple[Step, ...]  # in order; the centered input among them where the layer centers
    forward: str  # the name of the forward function (the registry's numeric name)
    output: sp.Expr  # the output entry, elementwise
    backward: str  # the name of the input gradient's function
    means: tuple[Step, ...]  # the means of g (and g * c, ...) the gradients use
    gradients: tuple[tuple[str, sp.Expr], ...]  # (name, entry): dx first, then each parameter's
    formulas: tuple[str, ...]  # the registry names of what is implemented
    epsilon_degree: int  # e: the output is unchanged under (x, epsilon) -> (m x, m**e epsilon)
    degrees: dict[str, int]  # "y", each gradient's name and DEPSILON: how each scales with m
    depsilon: sp.Expr  # dy * dy/d epsilon, elementwise: summed over the row, d<dy, y>/d epsilon
    guards: tuple[Step, ...] = ()  # before the gradients: the spread where it is not 0, else 1
    limit: sp.Expr | None = None  # the input gradient where the spread is 0, the derived limit
    spread: sp.Symbol | None = None

    @property
    def vectors(self) -> frozenset[sp.Symbol]:
        """The symbols that stand for an entry of a vector."""
        return frozenset({X, DY, CENTERED, *self.parameters})

    @property
    def evaluated(self) -> tuple[tuple[str, sp.Expr], ...]:
        """The gradients as the backends evaluate them: where the layer has a limit at the
        degenerate input, the input gradient is that limit where the spread is 0, and elsewhere
        the general form with the spread replaced by the guard (finite, and not taken, at 0)."""
        if self.limit is None:
            return self.gradients
        (guard,) = self.guards
        (name, expr), *rest = self.gradients
        general = expr.xreplace({self.spread: guard.symbol})
        return ((name, sp.Piecewise((self.limit, sp.Eq(self.spread, 0)), (general, True))), *rest)

    @property
    def centered(self) -> bool:
        """Whether the layer is evaluated in the centered input c."""
        return any(step.vector for step in self.statistics)

    @property
    def root(self) -> sp.Expr:
        """epsilon**(1/e): the length scale epsilon sets."""
        return EPSILON ** sp.Rational(1, self.epsilon_degree)

    @property
    def scaled_epsilon(self) -> sp.Expr:
        """epsilon / m**e, written as (root / m)**e: root / m is at most 1, its power cannot overflow."""
        return sp.Pow(ROOT / SCALE, self.epsilon_degree, evaluate=False)

    def header(self, comment: str, target: str) -> str:
        """Lines naming the formulas implemented and the command that wrote them (for ``target``),
        each behind ``comment``."""
        lines = [
            f"Generated by `python -m derivations codegen --layer {self.key} --target {target}`"
            " from the derived formulas;",
            f"do not edit.  {self.title}.",
            "Implements: " + ", ".join(self.formulas) + ".",
            "Statistics (means over the n entries of a row, in this order):",
            *(f"  {s.symbol} = {'mean(' + str(s.expr) + ')' if s.mean else s.expr}" for s in self.statistics),
            f"{self.forward}: y = {self.output}",
            "Means of the upstream gradient dy:",
            *(f"  {s.symbol} = mean({s.expr})" for s in self.means),
            *(f"{name} = {expr}" for name, expr in self.gradients),
            *(
                [f"  ({self.gradients[0][0]} = {self.limit} where {self.spread} = 0, the derived limit there)"]
                if self.limit is not None
                else []
            ),
            *(
                f"  ({name} is NaN where {gap}: the layer has no derivative there)"
                for name, expr in self.gradients
                if (gap := _undefined(expr)) is not None
            ),
            f"Evaluated at a scale: x / m and epsilon / m**{self.epsilon_degree}, m a power of two at least "
            f"max(|x_i|, {self.root})" + (" (the centered entries again by their size)" if self.centered else ""),
            "then each result times m**d ("
            + ", ".join(
                f"{'the gradient in epsilon, torch' if name == DEPSILON else name}: d = {degree}"
                for name, degree in self.degrees.items()
            )
            + "): right for every finite x and epsilon > 0.",
        ]
        return "\n".join(f"{comment}{line}".rstrip() for line in lines)


def _undefined(expr: sp.Expr) -> str | None:
    """Where a piecewise gradient has no piece (a kink its conditions leave out), as text: the
    equality its two strict pieces leave between them, or that none of its conditions holds."""
    pieces = [piece for piece in expr.atoms(sp.Piecewise) if not any(c == sp.true for _, c in piece.args)]
    if not pieces:
        return None
    conditions = [c for _, c in pieces[0].args]
    if len(conditions) == 2 and all(isinstance(c, (sp.StrictGreaterThan, sp.StrictLessThan)) for c in conditions):
        sides = {frozenset(c.canonical.args) for c in conditions}
        if len(sides) == 1:
            left, right = conditions[0].args
            return f"{left} = {right}"
    return "none of its conditions holds"


def _row(predicate: object) -> quantities.Quantity:
    (found,) = [quantity for quantity in quantities.QUANTITIES if predicate(quantity)]  # type: ignore[operator]
    return found


def _entries(layer: Layer) -> dict[sp.IndexedBase, sp.Symbol]:
    names = {x: X, g: DY, c: CENTERED}
    names.update({base: sp.Symbol(name, real=True) for name, base in layer.parameters})
    return names


def _plain(expr: sp.Expr, entries: dict[sp.IndexedBase, sp.Symbol]) -> sp.Expr:
    """Every indexed entry written as its vector's plain symbol."""
    return expr.replace(lambda e: isinstance(e, sp.Indexed) and e.base in entries, lambda e: entries[e.base])


def _shift(layer: Layer) -> sp.Expr | None:
    """mu where the layer writes x_i = c_i + mu for display, else None."""
    for old, new in layer.display:
        if old == x[i] and new.has(c):
            return sp.expand(new - c[i])
    return None


def _centered(expr: sp.Expr, shift: sp.Expr, grouped: bool) -> sp.Expr:
    """``expr`` with x = c + shift at every index, inside the means too (regrouped by the means)."""
    at = {e: c[e.indices[0]] + shift for e in expr.atoms(sp.Indexed) if e.base == x}
    means = {m: m.func(m.args[0].xreplace(at)) for m in expr.atoms(Mean)}
    centered = expr.xreplace(means).xreplace(at)
    return backward._grouped(centered) if grouped else centered


def program(layer: Layer) -> Program:
    """The forward and backward pass of ``layer`` from the registry's rows."""
    entries = _entries(layer)
    shift = _shift(layer)
    output_row = _row(lambda q: q.evaluate == "applied")
    dx_row = _row(lambda q: q.value is backward.vjp)
    extra = [q for q in quantities.QUANTITIES if q.returned_by == dx_row.numeric and q.applies(layer, None)]

    statistics = _statistic_steps(layer, shift, entries)

    def written(expr: sp.Expr, grouped: bool = True) -> sp.Expr:
        if shift is not None:
            centered = _centered(expr, shift, grouped)
            if not centered.has(*shift.free_symbols):
                expr = centered
        return expr

    derived = {"y": output_row.derive(layer, None), f"d{x.label}": dx_row.derive(layer, None)}
    derived.update({quantity.stem: quantity.derive(layer, None) for quantity in extra})
    degrees = {name: scaling.degree_of(layer, expr, name) for name, expr in derived.items()}
    degrees[DEPSILON] = degrees["y"] - scaling.epsilon_degree(layer)
    output = written(derived.pop("y"), grouped=False)
    gradients = [(name, written(expr)) for name, expr in derived.items()]
    guards: tuple[Step, ...] = ()
    limit = None
    if dx_row.limit is not None and layer.approach:
        guards = _spread_guard(layer)
        limit = written(dx_row.limit(layer))
    limits = [] if limit is None else [limit]
    means = sorted(
        set().union(*(expr.atoms(Mean) for expr in [*dict(gradients).values(), *limits])), key=sp.default_sort_key
    )
    names = {m: sp.Symbol(_mean_name(_plain(m.args[0], entries)), real=True) for m in means}
    plain_output = _plain(output, entries)
    return Program(
        key=layer.key,
        title=layer.title,
        parameters=tuple(entries[base] for _, base in layer.parameters),
        statistics=tuple(statistics),
        forward=str(output_row.numeric),
        output=plain_output,
        backward=str(dx_row.numeric),
        means=tuple(Step(names[m], _plain(m.args[0], entries), mean=True) for m in means),
        gradients=tuple((name, _plain(expr.xreplace(names), entries)) for name, expr in gradients),
        formulas=tuple(f"{layer.key}.{q.stem}" for q in (output_row, dx_row, *extra)),
        epsilon_degree=scaling.epsilon_degree(layer),
        degrees=degrees,
        # The statistics do not depend on epsilon: the output's derivative in it is elementwise.
        depsilon=DY * sp.diff(plain_output, EPSILON),
        guards=guards,
        limit=None if limit is None else _plain(limit.xreplace(names), entries),
        spread=layer.spread if limit is not None else None,
    )


@dataclass(frozen=True)
class Pair:
    """An eigenpair of J as a backend prints it: the eigenvalue (in the statistics, epsilon and n),
    the direction's entry (in x, c and the statistics; None for the complement) and its
    multiplicity a*n + b."""

    value: sp.Expr
    entry: sp.Expr | None
    multiplicity: tuple[int, int]


def spectrum(layer: Layer) -> tuple[Pair, ...]:
    """The eigenpairs J is assembled from, J = sum_d lambda_d Pi_d (proved by
    `derivations.derive.eigen.spectral_form` first), where J is symmetric and the layer takes no
    parameter; else none."""
    if layer.parameters or not jacobian.is_symmetric(layer):
        return ()
    eigen.spectral_form(layer)
    entries = _entries(layer)
    pairs = []
    for pair in eigen.eigenpairs(layer):
        count = sp.Poly(pair.multiplicity, n).all_coeffs() if pair.multiplicity.has(n) else [pair.multiplicity]
        a, b = ([0, *count])[-2:]
        entry = None if pair.direction.complement else _plain(pair.direction.entry, entries)
        pairs.append(Pair(pair.value, entry, (int(a), int(b))))
    return tuple(pairs)


def _statistic_steps(layer: Layer, shift: sp.Expr | None, entries: dict[sp.IndexedBase, sp.Symbol]) -> list[Step]:
    """The statistics in order; with a ``shift``, the centered input c = x - shift follows the
    statistics it needs, and every later summand is written in c."""
    statistics: list[Step] = []
    known: set[sp.Symbol] = set()
    for stat in layer.statistics:
        summand = stat.summand
        if shift is not None and any(s.symbol == CENTERED for s in statistics):
            summand = sp.expand(summand.xreplace({x[j]: c[j] + shift}))
            summand = sp.factor(summand) if summand.is_Add else summand
        statistics.append(Step(stat.symbol, _plain(summand, entries), stat.mean))
        known.add(stat.symbol)
        if shift is not None and shift.free_symbols <= known and not any(s.symbol == CENTERED for s in statistics):
            statistics.append(Step(CENTERED, X - shift, mean=False, vector=True))
    return statistics


def _spread_guard(layer: Layer) -> tuple[Step, ...]:
    """The spread, or 1 where it is 0."""
    # The general form divides 0 by 0 where the spread is 0: there it is evaluated with the
    # spread 1 instead (finite, and not taken) and the derived limit is taken (`Program.evaluated`).
    nonzero = sp.Symbol(f"{layer.spread}_nonzero", positive=True)
    return (Step(nonzero, sp.Piecewise((sp.Integer(1), sp.Eq(layer.spread, 0)), (layer.spread, True)), False),)


def _mean_name(monomial: sp.Expr) -> str:
    """``mean_dy_c`` for the mean of dy * c, ``mean_dy_x2`` for that of dy * x**2."""
    parts = []
    for factor in sorted(sp.Mul.make_args(monomial), key=str):
        base, power = factor.as_base_exp()
        parts.append(f"{base}{power if power != 1 else ''}")
    return "mean_" + "_".join(parts)


def shared(exprs: list[sp.Expr], names: Any = None) -> tuple[list[tuple[sp.Symbol, sp.Expr]], list[sp.Expr]]:
    """``sympy.cse`` of ``exprs``, the shared parts named t0, t1, ... (or by ``names``, an iterator of symbols)."""
    names = sp.numbered_symbols("t", real=True) if names is None else names
    replacements, reduced = sp.cse(exprs, symbols=names, order="none")
    return list(replacements), list(reduced)


def half_power(printer: object, expr: sp.Pow, sqrt: str, one: str = "1") -> str | None:
    """b**(k/2) and b**k for small |k| as products with one ``sqrt`` call, or None for other powers.

    One multiply is cheaper than a pow call and exact where pow may not be.
    """
    exponent = expr.exp
    if not (exponent.is_Rational and exponent.q in (1, 2) and 0 < abs(exponent.p) <= 8):
        return None
    base = printer.parenthesize(expr.base, PRECEDENCE["Mul"] + 1)  # type: ignore[attr-defined]
    factors = [base] * (abs(exponent.p) // exponent.q)
    if exponent.q == 2:
        factors.append(f"{sqrt}({printer._print(expr.base)})")  # type: ignore[attr-defined]
    product = "*".join(factors)
    return f"({one}/({product}))" if exponent < 0 else f"({product})"


def rescaled(value: str, degree: int, inverse: str = "") -> str:
    """``value`` times m**degree, one exact multiply or divide by the power of two m at a time
    (m**degree itself can leave the range where the product does not).  With ``inverse``, the
    prefix of a name for 1/m, a division is a multiply by 1/m (the same, m a power of two)."""
    op = " * " if degree > 0 else f" * {inverse}" if inverse else " / "
    return value + "".join(f"{op}{SCALE}" for _ in range(abs(degree)))


def array_statistics(program: Program, printer: Any, inputs: str, mean: str, top: str, where: str) -> list[str]:
    """The emitted lines of an array target (NumPy, torch) that take the scale m, divide x and
    epsilon by it, and compute the statistics of the scaled row.  ``inputs`` is the line reading
    x and epsilon; ``mean`` and ``top`` spell the mean and the largest magnitude along the last
    axis, with ``{}`` for the array; ``where`` the elementwise choice, with ``{}`` for the
    condition and the two values."""
    out = [
        f"    {inputs}",
        f"    {SIZE} = {X}.shape[-1]",
        f"    {ROOT} = {printer.doprint(program.root)}",
        f"    {SCALE} = _scale({top.format(X)}, {ROOT})",
        f"    {X} = {X} / {SCALE}",
    ]
    scaled = [f"    epsilon = {printer.doprint(program.scaled_epsilon)}"]
    if not program.centered:
        out += scaled
    for step in program.statistics:
        value = printer.doprint(step.expr)
        out.append(f"    {step.symbol} = " + (mean.format(value) if step.mean else value))
        if step.vector:
            # Centered once more (the first mean's rounding is left in c: a constant row becomes
            # exactly 0), then divided by its own size: c is O(1) even where the offset dwarfs it.
            # A constant row (c exactly 0) has epsilon's scale alone: root / m may underflow.
            c = step.symbol
            constant = where.format(f"{top.format(c)} == 0", f"_scale({ROOT}, {ROOT})", f"{SCALE} * {SCALE}_{c}")
            out += [
                f"    {c} = {c} - {mean.format(c)}",
                f"    {SCALE}_{c} = _scale({top.format(c)}, {ROOT} / {SCALE}, {SCALE})",
                f"    {c} = {c} / {SCALE}_{c}",
                f"    {SCALE} = {constant}",
                *scaled,
            ]
    return out
