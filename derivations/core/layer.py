"""The one way to define a normalization layer: statistics, output, directions."""

from __future__ import annotations

import contextlib
import dataclasses
import html
import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeVar

import sympy as sp
from sympy.printing.precedence import PRECEDENCE
from sympy.solvers.solveset import NonlinearError

from derivations._printer import ReaderPrinter
from derivations.core.formula import (
    REPR,
    Formula,
    html_inline,
    markdown_code,
    markdown_inline,
    markdown_text,
    one_line,
    shortened,
)
from derivations.core.proof import DerivationError, equal
from derivations.derive.sums import (
    Indicator,
    Mean,
    PowerSum,
    in_statistics,
    opaque,
    over_entries,
    p,
    power_sum_values,
    reduce_sums,
    unfixed,
)
from derivations.notation import DEFAULT
from derivations.symbols import epsilon, i, j, k, n, x

R = TypeVar("R", bound="Rewrapped")
L = TypeVar("L", bound="Layer")


@dataclass(frozen=True, eq=False)
class Statistic:
    """A statistic of the input.

    With ``mean=True`` it is the mean over entries j of ``summand``, written in
    ``x[j]`` and the statistics defined before it.  With ``mean=False`` it is
    ``summand`` itself, a function of earlier statistics (a standard deviation
    from a variance, say).
    """

    symbol: sp.Symbol
    summand: sp.Expr
    meaning: str
    mean: bool = True
    # Why the derivation introduced it (`closed`), where the definition did not name it: empty otherwise.
    introduced: str = ""


@dataclass(frozen=True, eq=False)
class Subset:
    """The entries a partial mean runs over, as an `Indicator` m: m_j = 1 on the subset, else 0.

    A statistic that is the mean over the subset has the summand m_j f(x_j)
    divided by the fraction of entries in it (itself a statistic, the mean
    of m_j).  Which entries belong to it is set by one numeric keyword
    argument: ``entries(size, value)`` gives the 0/1 entries at ``size``
    entries for a ``value`` of it (a `ValueError` naming the keyword where the
    value is not admissible); ``default`` is its value where it is not given,
    and the one the explicit checks and the input patterns use.
    """

    indicator: Indicator
    meaning: str
    keyword: str
    default: Any
    entries: Callable[[int, Any], tuple[int, ...]]

    def explicit(self, size: int, value: Any = None) -> dict[sp.Expr, sp.Expr]:
        """Each entry m[0] .. m[size-1] at ``size`` entries, for ``value`` (default: `default`)."""
        chosen = self.entries(size, self.default if value is None else value)
        return {self.indicator[m]: sp.Integer(bit) for m, bit in enumerate(chosen)}


@dataclass(frozen=True, eq=False)
class Direction:
    """A candidate eigenvector of the Jacobian, given by its entry at index k.

    ``constraints`` are summands in k whose sums over k vanish; they define a
    subspace (such as the complement of other directions) rather than a vector.
    A direction with ``complement=True`` spans whatever the others leave.
    """

    name: str
    entry: sp.Expr
    meaning: str
    constraints: tuple[sp.Expr, ...] = ()
    complement: bool = False


@dataclass(frozen=True, eq=False)
class Pattern:
    """An input (values in t) along which the response and its slope are taken."""

    values: tuple[sp.Expr, ...]
    coordinate: int
    suffix: str = ""

    def __str__(self) -> str:
        return "(" + ", ".join(map(str, self.values)) + ")"


@dataclass(frozen=True, eq=False)
class Layer:
    """A layer ``y_i = output(x_i, statistics, epsilon)`` and what it states.

    ``stated`` maps a result name to the form the layer claims; every
    derivation must prove its output equal to it.  ``spread`` is the
    statistic that vanishes exactly at the degenerate input (a constant input
    for LayerNorm, zero for RMSNorm).  ``approach`` parametrizes inputs that
    tend to the degenerate one as a symbol tau -> 0+, for the limits taken
    there.  ``display`` lists the substitutions that write a derived
    expression in the notation of the statements (for example x_i -> c_i + mu).
    ``notes`` are caveats that belong in the statements, such as a point
    where a statistic is not differentiable.  A gain and a bias are not part
    of a layer: `derivations.derive.affine.Affine` wraps any layer with them.
    ``used_by`` names the library functions and models that compute exactly
    this layer, for the conventions table (each checked by `make crosscheck`
    where the library is installed there).  ``subsets`` are the entries
    partial means run over (`Subset`); their entries are fixed by the
    default of their keyword wherever explicit entries are needed.
    """

    key: str
    title: str
    statistics: tuple[Statistic, ...]
    output: sp.Expr
    patterns: tuple[Pattern, ...]
    directions: tuple[Direction, ...]
    display: tuple[tuple[sp.Expr, sp.Expr], ...]
    spread: sp.Symbol
    approach: Mapping[sp.Expr, sp.Expr] = field(default_factory=dict)
    stated: Mapping[str, sp.Basic] = field(default_factory=dict)
    notes: Mapping[str, str] = field(default_factory=dict)
    used_by: tuple[str, ...] = ()
    subsets: tuple[Subset, ...] = ()

    def __init_subclass__(cls, **keywords: Any) -> None:
        """A subclass keeps the short `__repr__`: ``@dataclass`` would give it a dump of every
        field (hundreds of characters), but writes none where the class has one of its own."""
        super().__init_subclass__(**keywords)
        if "__repr__" not in cls.__dict__:
            cls.__repr__ = cls.__repr__  # type: ignore[method-assign]

    def __repr__(self) -> str:
        """One line: the kind of layer, its key and its title."""
        head = f"<{type(self).__name__} {one_line(self.key)}"
        return f"{head}: {shortened(one_line(self.title), REPR - len(head))}>"

    def definition_latex(self) -> list[tuple[str, str]]:
        """The definition as LaTeX: the output entry, then each statistic, each with what it is."""
        printer = ReaderPrinter(DEFAULT)
        lines = [(f"y_i = {printer.doprint(self.output)}", "the output entry")]
        for stat in self.statistics:
            value = printer.doprint(stat.summand)
            if stat.mean:
                summand = printer.parenthesize(stat.summand, PRECEDENCE["Mul"], strict=True)
                value = f"\\frac{{1}}{{n}} \\sum_{{j=1}}^{{n}} {summand}"
            lines.append((f"{printer.doprint(stat.symbol)} = {value}", stat.meaning))
        return lines

    def _inputs(self) -> list[str]:
        """Its inputs besides x and epsilon, as Markdown: parameters, scalars, subsets' keywords."""
        found = [f"{markdown_code(name)} (per feature)" for name, _ in self.parameters]
        found += [f"{markdown_code(name)} (a scalar)" for name, _ in self.scalars]
        found += [
            f"{markdown_code(s.keyword)} ({markdown_text(s.meaning)}; default {markdown_text(s.default)})"
            for s in self.subsets
        ]
        return found

    def _repr_markdown_(self) -> str:
        """Title, definition and conventions (who computes exactly this layer), for Jupyter."""
        out = [f"**{markdown_text(self.title)}** ({markdown_code(self.key)})", ""]
        for latex, meaning in self.definition_latex():
            out.append(f"- ${latex}$: {markdown_text(meaning)}")
        inputs = self._inputs()
        if inputs:
            out += ["", "Inputs besides x and epsilon: " + "; ".join(inputs) + "."]
        if self.used_by:
            out += ["", "Computed exactly by:", "", *(f"- {markdown_inline(user)}" for user in self.used_by)]
        if self.notes:
            out += ["", "Notes:", ""]
            out += [f"- {markdown_code(name)}: {markdown_text(note.lstrip('; '))}" for name, note in self.notes.items()]
        return "\n".join(out) + "\n"

    def _repr_html_(self) -> str:
        """The same as `_repr_markdown_`, as HTML (where a front end shows no Markdown)."""
        items = "".join(
            f"<li>\\({html.escape(latex, quote=False)}\\): {html.escape(meaning)}</li>"
            for latex, meaning in self.definition_latex()
        )
        out = [f"<p><b>{html.escape(one_line(self.title))}</b> (<code>{html.escape(one_line(self.key))}</code>)</p>"]
        out.append(f"<ul>{items}</ul>")
        if self.used_by:
            users = "".join(f"<li>{html_inline(user)}</li>" for user in self.used_by)
            out.append(f"<p>Computed exactly by:</p><ul>{users}</ul>")
        if self.notes:
            notes = "".join(
                f"<li><code>{html.escape(name)}</code>: {html.escape(one_line(note.lstrip('; ')))}</li>"
                for name, note in self.notes.items()
            )
            out.append(f"<p>Notes:</p><ul>{notes}</ul>")
        return "".join(out)

    @property
    def parameters(self) -> tuple[tuple[str, sp.IndexedBase], ...]:
        """Per-feature inputs besides x, by argument name, each entering at index i."""
        return ()

    @property
    def scalars(self) -> tuple[tuple[str, sp.Symbol], ...]:
        """Scalar inputs besides x and epsilon, by argument name (ScaleNorm's one gain)."""
        return ()

    @property
    def has_epsilon(self) -> bool:
        """Whether epsilon enters the output.  One that it does not (Dynamic Tanh) has no epsilon
        to sample, scale or pass: its numeric functions take its scalar parameter in its place."""
        return self.output.has(epsilon)

    @property
    def named_symbols(self) -> dict[str, sp.Expr]:
        """Symbols a claim may name besides t, epsilon, n and the statistics."""
        return {}

    @property
    def requires(self) -> tuple[Layer, ...]:
        """The layers this one is built on, whose derivations it reuses."""
        return ()

    @property
    def unclaimable(self) -> str | None:
        """Why claims cannot name this layer (they are stated for another), or None."""
        return None

    @property
    def derived_as(self) -> Layer:
        """The layer whose derivations are this one's: itself, or the base of a layer applied block by block."""
        return self

    def restate(self, formula: Formula) -> Formula:
        """``formula`` as this layer states it; a layer applied block by block says what n counts."""
        return formula

    def entry(self, index: sp.Symbol = i) -> sp.Expr:
        """Output entry ``index`` for symbolic n, every statistic written as a sum."""
        return self.as_sums(self.output).xreplace({i: index})

    def as_sums(self, expr: sp.Expr) -> sp.Expr:
        """``expr`` with every statistic, and every `Mean`, written as a sum over the n entries,
        so that SymPy can differentiate it by an indexed entry x[j]."""
        fresh = (sp.Symbol(f"j{m}", integer=True, nonnegative=True) for m in itertools.count())
        means: dict[sp.Symbol, sp.Expr] = {}
        for stat in self.statistics:
            if not stat.mean:
                means[stat.symbol] = stat.summand.xreplace(means)
                continue
            dummy = next(fresh)
            summand = stat.summand.xreplace(means).xreplace({j: dummy})
            means[stat.symbol] = over_entries(summand, dummy) / n
        written = expr.xreplace(means)
        if written.has(Mean):
            raise DerivationError(f"{self.key}: a mean of a vector besides x cannot be written as a sum of x")
        return written

    def explicit_entry(self, size: int, index: int) -> sp.Expr:
        """Output entry ``index`` for ``size`` entries x[0] .. x[size-1]."""
        values = self.explicit_statistics(size)
        return self.output.xreplace(values).xreplace({i: index, n: size}).xreplace(values)

    def explicit_statistics(self, size: int) -> dict[sp.Expr, sp.Expr]:
        """Each statistic written out over ``size`` explicit entries, and each subset's
        indicator entries m[0] .. m[size-1] at its default."""
        indicators: dict[sp.Expr, sp.Expr] = {}
        for subset in self.subsets:
            indicators.update(subset.explicit(size))
        values: dict[sp.Expr, sp.Expr] = {}
        for stat in self.statistics:
            summand = stat.summand.xreplace(values).xreplace({n: size})
            values[stat.symbol] = (
                sp.Add(*(summand.xreplace({j: m}).xreplace(indicators) for m in range(size))) / size
                if stat.mean
                else summand
            )
        return {**values, **indicators}

    def relations(self) -> list[sp.Eq]:
        """Each mean's definition, n * statistic = reduced sum of its summand."""
        return [
            sp.Eq(n * stat.symbol, reduce_sums(over_entries(stat.summand, j))) for stat in self.statistics if stat.mean
        ]

    def power_sums(self, *constraints: sp.Expr) -> dict[sp.Expr, sp.Expr]:
        """Power sums in terms of the statistics, under extra zero-sum constraints."""
        return _power_sums(self, constraints)

    def express(self, reduced: sp.Expr, *constraints: sp.Expr, strict: bool = True) -> sp.Expr:
        """A reduced sum expression written in the layer's statistics.

        Power sums become means; then each derived statistic replaces the mean
        it is a function of (a variance q becomes its standard deviation's
        square), so results read in the statistic the layer normalizes by.
        With ``strict=False`` power sums the statistics do not fix (of other
        vectors, say) are left as they are rather than refused.
        """
        values = self.power_sums(*constraints)
        expr = in_statistics(reduced, values) if strict else reduced.xreplace(values)
        means = tuple(stat.symbol for stat in self.statistics if stat.mean)
        for stat in self.statistics:
            if not stat.mean:
                expr = expr.xreplace(_inverse(stat, means))
        return expr

    def to_display(self, expr: sp.Basic) -> sp.Basic:
        """Write ``expr`` in the notation of the layer's statements."""
        for old, new in self.display:
            expr = expr.subs(old, new)
        return expr

    def on_pattern(self, pattern: Pattern) -> sp.Expr:
        """The response: output coordinate ``pattern.coordinate`` on ``pattern.values``."""
        size = len(pattern.values)
        entry = self.explicit_entry(size, pattern.coordinate)
        return entry.xreplace({x[m]: value for m, value in enumerate(pattern.values)})

    def prove_stated(self, name: str, derived: sp.Expr) -> str:
        """Prove ``derived`` equal to the stated form of ``name``, if one is stated."""
        if name not in self.stated:
            return ""
        return equal(derived, self.stated[name], f"{self.key}.{name}")

    def proved(self, name: str, derived: sp.Expr) -> tuple[sp.Expr, str]:
        """The form to print for ``name``, and the proof that allows it.

        That is the stated form, once proved equal to ``derived``; where
        nothing is stated, ``derived`` itself and an empty proof.
        """
        proof = self.prove_stated(name, derived)
        return (self.stated[name] if proof else derived), proof


@dataclass(frozen=True, eq=False)
class Rewrapped(Layer):
    """A layer that is ``base`` in another form (block by block, reparametrized): its
    derivations are the base's, restated (`restate`)."""

    base: Layer = field(kw_only=True)

    @property
    def requires(self) -> tuple[Layer, ...]:
        return (self.base,)

    @property
    def derived_as(self) -> Layer:
        return self.base


def rewrapped(kind: type[R], base: Layer, key: str, title: str, used_by: tuple[str, ...], **extra: Any) -> R:
    """A layer of type ``kind`` with ``base``'s definition under a key, title and users of its own:
    a wrapper that is the base layer in another form (block by block, reparametrized)."""
    own = ("key", "title", "used_by")
    fields = {name: getattr(base, name) for name in Layer.__dataclass_fields__ if name not in own}
    return kind(key=key, title=title, used_by=used_by, base=base, **fields, **extra)


@cache
def _inverse(stat: Statistic, means: tuple[sp.Symbol, ...]) -> dict[sp.Symbol, sp.Expr]:
    """Solve a derived statistic's definition for the mean it is built on."""
    (base,) = [s for s in means if s in stat.summand.free_symbols]
    equation = stat.symbol - stat.summand
    if stat.symbol.is_nonnegative:
        # A nonnegative sigma = sqrt(c * b) is equivalent to sigma**2 = c * b,
        # which is linear in the mean b: no general solver needed.
        equation = stat.symbol**2 - sp.expand(stat.summand**2)
    try:
        solutions = [value for (value,) in sp.linsolve([equation], [base])]
    except NonlinearError:
        # A nonlinear function of the mean (a fourth root): solved in general, and each
        # solution kept only where substituting it back gives the statistic exactly.
        found = sp.solve(stat.symbol - stat.summand, base, dict=True)
        solutions = [s[base] for s in found if sp.simplify(stat.summand.xreplace(s) - stat.symbol) == 0]
    if len(solutions) != 1:
        raise DerivationError(f"{stat.symbol} = {stat.summand} does not determine {base} uniquely: {solutions}")
    return {base: solutions[0]}


@cache
def _power_sums(layer: Layer, constraints: tuple[sp.Expr, ...]) -> dict[sp.Expr, sp.Expr]:
    zero_sums = [sp.Eq(reduce_sums(over_entries(c, k)), 0) for c in constraints]
    return power_sum_values(layer.relations() + zero_sums)


# At most this many statistics are introduced for one layer (`closed`).
MAX_INTRODUCED = 8


def closed(layer: L, center: sp.Symbol | None = None, taken: Iterable[str] = ()) -> L:
    """``layer`` with a statistic introduced for each power sum that its derivations need and its
    statistics do not fix: an ordinary mean, after the layer's own, that every consumer of
    ``layer.statistics`` (numerics, codegen, claims) takes as it takes those.

    The derivations need each statistic's derivative by x_k (the Jacobian, the backward products
    and, through the chain rule again, the Hessian's) and the mean of the squared output (the
    second moment) written in the statistics.  A power sum of x**d that they leave free becomes
    the central moment m_d = mean((x[j] - center)**d) of a layer with a center (the mean of x),
    else the power mean r_d = mean(x[j]**d); a sum of another summand, its mean (z).  The free
    power sum of lowest degree is introduced first, then the layer is looked at again, until none
    is left.  Names are new: not a statistic's, nor one of ``taken``.  Each introduced statistic
    says why (`Statistic.introduced`): the derived expressions that are written in it.

    >>> from derivations.symbols import epsilon, mu
    >>> moments = (Statistic(mu, x[j], "mean"), Statistic(sp.Symbol("m4"), (x[j] - mu) ** 4, "4th"))
    >>> bare = Layer("c4", "C4", moments, (x[i] - mu) / (moments[1].symbol + epsilon) ** sp.Rational(1, 4),
    ...              (), (), (), moments[1].symbol)
    >>> for stat in closed(bare, mu).statistics[2:]:
    ...     print(f"{stat.symbol} = mean({stat.summand}): {stat.introduced}")
    m2 = mean((-mu + x[j])**2): dm3/dx_k (in the Hessian product), the second moment
    m3 = mean((-mu + x[j])**3): dm4/dx_k (in J and the backward products)
    """
    own = len(layer.statistics)
    names = {str(stat.symbol) for stat in layer.statistics} | set(taken)
    while True:
        needs = _needs(layer)
        missing = unfixed(layer.relations(), set().union(*(e.atoms(PowerSum) for e in needs.values())))
        if not missing:
            return _explained(layer, own, needs)
        if len(layer.statistics) - own == MAX_INTRODUCED:
            raise DerivationError(f"its derivations need more than {MAX_INTRODUCED} statistics besides its own")
        power = min(missing, key=lambda e: (_degree(e.args[0]), sp.default_sort_key(e)))
        stat = _introduce(power.args[0].xreplace({p: j}), center, names)
        names.add(str(stat.symbol))
        layer = dataclasses.replace(layer, statistics=(*layer.statistics, stat))


def _needs(layer: Layer) -> dict[str, sp.Expr]:
    """The reduced sums ``layer``'s derivations write in its statistics, by what they are."""
    direct = set(layer.output.free_symbols)
    for stat in reversed(layer.statistics):  # through a statistic that is a function of a mean
        if not stat.mean and stat.symbol in direct:
            direct |= stat.summand.free_symbols
    out: dict[str, sp.Expr] = {}
    for stat in layer.statistics:
        where = "J and the backward products" if stat.symbol in direct else "the Hessian product"
        out[f"d{stat.symbol}/dx_k (in {where})"] = reduce_sums(sp.diff(layer.as_sums(stat.symbol), x[k]))
    # The power sums of y_i**2 are those of its dependence on x_i: what multiplies that is left whole.
    shape, _ = opaque(layer.output, x[i])
    with contextlib.suppress(DerivationError):  # a sum not reduced: the second moment is left out anyway
        out["the second moment"] = reduce_sums(over_entries(shape**2, i))
    return out


def _explained(layer: L, own: int, needs: Mapping[str, sp.Expr]) -> L:
    """``layer`` whose statistics after the first ``own`` say which of ``needs`` are written in them."""
    if len(layer.statistics) == own:
        return layer
    written: dict[str, set[sp.Basic]] = {}
    for label, reduced in needs.items():
        try:
            written[label] = sp.expand(layer.express(reduced)).free_symbols
        except DerivationError:
            written[label] = set()
    statistics = list(layer.statistics)
    for m in range(own, len(statistics)):
        stat = statistics[m]
        why = ", ".join(label for label, symbols in written.items() if stat.symbol in symbols)
        why = why or "the power sums of the other introduced statistics"
        statistics[m] = dataclasses.replace(stat, introduced=why, meaning=f"{stat.meaning}: {why}")
    return dataclasses.replace(layer, statistics=tuple(statistics))


def _degree(monomial: sp.Expr) -> float:
    """The degree of a power sum's monomial in x[p]; infinite where it is not a polynomial (after
    every polynomial one)."""
    try:
        return int(sp.degree(monomial, x[p]))
    except sp.PolynomialError:
        return math.inf


def _introduce(monomial: sp.Expr, center: sp.Symbol | None, taken: set[str]) -> Statistic:
    """The statistic whose mean fixes the power sum of ``monomial`` (in x[j]), with a new name."""
    base, exponent = monomial.as_base_exp()
    if base == x[j] and exponent.is_Integer and exponent > 0:
        degree = int(exponent)
        summand, stem = ((x[j] - center) ** degree, f"m{degree}") if center is not None else (monomial, f"r{degree}")
        kind = "central moment" if center is not None else "power mean"
    else:
        summand, stem, kind = monomial, "z", "mean"
    name = next(
        candidate
        for candidate in itertools.chain([stem], (f"{stem}_{m}" for m in itertools.count(1)))
        if candidate not in taken
    )
    symbol = sp.Symbol(name, nonnegative=True) if summand.is_nonnegative else sp.Symbol(name, real=True)
    return Statistic(symbol, summand, f"the {kind} mean({summand}), introduced by the derivation", introduced="yes")
