"""The one registry of derived quantities: each quantity is a row, named once.

A row says how to derive the quantity (``value``), how `make derive` states it
(``formula``), what it is (scalar, vector, matrix, or a statement only), what
it ranges over (the layer, each input pattern, each eigen direction), which
numeric evaluation computes it and under which name, and whether a claim may
name it.  Everything that consumes quantities (the catalog, the claims, the
homogeneity degrees, `numeric`, the renderers and the figures) iterates over
these rows; none of them spells a quantity's name.

>>> from derivations import LAYERS
>>> list(names(LAYERS["rmsnorm"]))[:4]
['response', 'response_uniform', 'slope', 'slope_uniform']
>>> value(LAYERS["layernorm"], "slope_at_zero")
1/sqrt(epsilon)
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

import sympy as sp

from derivations.core.formula import Formula
from derivations.core.layer import Layer
from derivations.core.proof import DerivationError, equal
from derivations.derive import backward, eigen, grouped, jacobian, moments, regimes, response, scaling, spectral
from derivations.derive.elementwise import Largest
from derivations.symbols import beta, gamma, gamma_max, n, w_gemma, x


def _always(layer: Layer, item: Any) -> bool:
    return True


@dataclass(frozen=True)
class Quantity:
    """One derived quantity, for every layer and item it applies to.

    ``over`` is ``"layer"`` (one per layer), ``"pattern"`` (one per input
    pattern, named with the pattern's suffix) or ``"direction"`` (one per eigen
    direction, named ``<stem>_<direction>``).  ``evaluate`` names the numeric
    evaluation strategy: ``"of_t"`` (elementwise in t and epsilon),
    ``"of_epsilon"`` (elementwise in epsilon), ``"of_statistics"`` (a function
    of the statistics of x), ``"entrywise"`` (a matrix from its entry J_ik) or
    ``"applied"`` (the layer applied to x); ``numeric`` is the
    stem of the numeric function's name (None: no numeric function).
    ``reference`` names an independent numeric computation of the same
    number, for re-checking counterexamples.  ``evaluate="backward"`` is a
    product with vectors besides x (the upstream gradient, a direction),
    written at one index k with means over the entries; ``limit`` gives its
    value at the degenerate input where the layer has one, and
    ``returned_by`` names the numeric function that returns this row too,
    summed over the batch (a parameter's gradient comes with the input's).
    ``jacobian_product`` marks J v (``"direct"``) or J^T g (``"transpose"``):
    numeric applies it through the derived eigenstructure where it can (no
    cancellation at n = 2).
    ``derivative_of`` names the
    quantity (over the same item) this one is the t-derivative of, which the
    numeric checks compare with finite differences.  ``column`` heads the
    quantity's column in the conventions table (on the first pattern); several
    rows may share one, and a layer's cell is the first of them it has, written
    as ``cell`` says (a bound at each input says so).
    ``claim_only`` marks a name only the claim language gives: a value derived
    for claims that `make derive` states under another row (the Lipschitz
    constant, which is the bound over all inputs shown tight).  It is no row of
    a layer (`rows`): neither printed, nor a numeric function, nor a degree of
    the homogeneity statement; `names` and `value` have it.
    """

    stem: str
    kind: str  # "scalar", "vector", "matrix" or "statement"
    over: str
    formula: Callable[[Layer, Any, str], Formula] | None
    value: Callable[..., sp.Expr] | None  # (layer) for a row over the layer, else (layer, item)
    applies: Callable[[Layer, Any], bool] = _always
    evaluate: str | None = None
    numeric: str | None = None
    claim: bool = False
    reference: str | None = None
    derivative_of: str | None = None
    column: str | None = None
    meaning: str = ""
    cell: str = "{}"  # the conventions-table cell around the value's LaTeX, where it says more than the value
    limit: Callable[[Layer], sp.Expr] | None = None
    returned_by: str | None = None
    jacobian_product: str | None = None  # "direct" (J v) or "transpose" (J^T g) applied to its one vector
    # How the independent audit of claims evaluates it from the layer's definition alone
    # (`derivations.claims.audit.evaluate`), for a row a claim may name.
    audit: str | None = None
    claim_only: bool = False

    def name(self, item: Any) -> str:
        if self.over == "pattern":
            return f"{self.stem}{item.suffix}"
        if self.over == "direction":
            return f"{self.stem}_{item.name}"
        return self.stem

    def numeric_name(self, item: Any) -> str | None:
        """The numeric function's name: the stem, with the item's suffix beyond the first pattern."""
        if self.numeric is None:
            return None
        if self.over == "pattern":
            return f"{self.numeric}{item.suffix}"
        if self.over == "direction":
            return f"{self.numeric}_{item.name}"
        return self.numeric

    def derive(self, layer: Layer, item: Any) -> sp.Expr:
        """The derived value for ``layer`` (and its pattern or direction ``item``)."""
        assert self.value is not None, f"{self.stem} is a statement, not a value"
        return self.value(layer) if self.over == "layer" else self.value(layer, item)

    def items(self, layer: Layer) -> tuple[Any, ...]:
        if self.over == "pattern":
            return layer.patterns
        if self.over == "direction":
            return layer.directions
        return (None,)


def _slope_at_zero(layer: Layer, pattern: Any) -> sp.Expr:
    return response.slope_at_zero(layer, pattern)[1]


def _asymptote(layer: Layer, pattern: Any) -> sp.Expr:
    return response.asymptote(layer, pattern)[0]


def _eigenvalue(layer: Layer, direction: Any) -> sp.Expr:
    found = eigen.pair(layer, direction)
    assert found is not None, "applies() keeps only eigenvectors"
    return found.value


def _is_eigen(layer: Layer, direction: Any) -> bool:
    return eigen.pair(layer, direction) is not None


def _symmetric(layer: Layer, _: Any) -> bool:
    return jacobian.is_symmetric(layer)


def _has_degenerate_limit(layer: Layer, _: Any) -> bool:
    return bool(layer.approach)


def _gradient(stem: str, parameter: sp.IndexedBase) -> Quantity:
    """The row of a per-feature parameter's gradient, returned by the numeric vjp with dx."""
    return Quantity(
        stem,
        "vector",
        "layer",
        backward.gradient_formula(parameter),
        lambda layer: backward.parameter_gradient(layer, parameter),
        applies=lambda layer, _: parameter in dict(layer.parameters).values(),
        evaluate="backward",
        returned_by="vjp",
        meaning=f"the gradient d<g, y>/d {parameter.label}_k",
    )


def _without_parameters(layer: Layer, _: Any) -> bool:
    # With per-feature parameters the output's moments involve their sums too,
    # which the statistics of x do not fix.
    return not layer.parameters


def _derivable(value: Callable[[Layer], sp.Expr], also: Callable[[Layer, Any], bool] = _always) -> Callable[..., bool]:
    """Applies where ``also`` holds and ``value`` can be derived: a layer defined by a user may
    lack what it needs (a statistic that fixes mean(x**2), a symmetric J)."""

    def applies(layer: Layer, item: Any) -> bool:
        if not also(layer, item):
            return False
        try:
            value(layer)
        except DerivationError:
            return False
        return True

    applies.why_not = partial(_why_not, value, also)  # type: ignore[attr-defined]
    return applies


def _why_not(value: Callable[[Layer], sp.Expr], also: Callable[[Layer, Any], bool], layer: Layer) -> str:
    if also is _symmetric and not _symmetric(layer, None):
        return "J is not symmetric, so its 2-norm is not its largest |eigenvalue|"
    if also is _without_parameters and not _without_parameters(layer, None):
        return "the gain's sums enter, which the statistics of x do not fix"
    try:
        value(layer)
    except DerivationError as error:
        return str(error)
    return ""


def left_out(layer: Layer) -> list[tuple[str, str]]:
    """The rows a layer defined by a user lacks that the built-in ones can have, each with why."""
    out = []
    for quantity in QUANTITIES:
        if quantity.claim_only:  # no row to leave out: `make derive` prints none for it
            continue
        why_not = getattr(quantity.applies, "why_not", None)
        if why_not is not None and not quantity.applies(layer, None):
            out.append((quantity.name(None), why_not(layer)))
    return out


@cache
def _lipschitz(layer: Layer) -> sp.Expr:
    r"""The layer's Lipschitz constant in the 2-norm: :math:`\sup_x \|J(x)\|_2`.

    Derived from the spectral norm (``spectral_norm``, a function of the input's statistics,
    where J is symmetric), not read from a stated bound.  Two halves make the supremum:

    - an upper bound: the bound over all inputs (``spectral_bound``, `spectral.bound_value`),
      which its own derivation proves >= the spectral norm at every input, in every case of n;
    - tightness, shown here: the spectral norm tends to that bound as the input tends to the
      degenerate one, the spread to 0 (each entry x_k to 0 for an elementwise layer), in every
      case of n (``n = 2`` as well as ``n >= 3``) and in the regime that holds there.

    So wherever a layer has it, ``lipschitz == spectral_bound`` is proved, and it is the least
    such bound: the maximum over inputs where an input attains it (RMSNorm at x = 0), else the
    supremum (the std-eps layers, whose J has no value at a constant input).  A layer whose
    bound is not shown tight, or whose J is not symmetric (a per-feature gain's
    ``gamma_max / sqrt(epsilon)`` bounds ``||diag(gamma) J||_2`` without being its supremum for
    each gain), has no Lipschitz constant derived: `DerivationError`.
    """
    norm = spectral.spectral_norm(layer)
    top = spectral.bound_value(layer)
    approached = _near_degenerate(layer, norm)
    if not approached:
        raise DerivationError(f"{layer.key}: no case of ||J||_2 holds near the degenerate input")
    for value in approached:
        equal(value, top, f"{layer.key}: ||J||_2 near the degenerate input against the bound over all inputs")
    return top


def _near_degenerate(layer: Layer, norm: sp.Expr) -> list[sp.Expr]:
    """The limits of ``norm`` as the input tends to the degenerate one, one per case of n (or
    regime) that holds there: each entry x_k at 0, then the spread to 0 from above."""
    spread = layer.spread
    at_zero = norm.replace(lambda e: isinstance(e, sp.Indexed) and e.base == x, lambda e: sp.Integer(0))
    at_zero = at_zero.replace(lambda e: isinstance(e, Largest), _largest_entry)
    pieces = at_zero.args if isinstance(at_zero, sp.Piecewise) else ((at_zero, sp.true),)
    out = []
    for value, condition in pieces:
        # A regime's condition (epsilon > ||x||) is taken at the spread's limit; a case of n
        # (n = 2, n >= 3) is a case to bound, each on its own.
        holds = condition.subs(spread, 0) if condition.has(spread) else sp.true
        if holds is sp.false:
            continue
        if holds is not sp.true and holds.free_symbols - {n}:
            raise DerivationError(f"{layer.key}: cannot tell whether {condition} holds as {spread} -> 0")
        out.append(sp.limit(value, spread, 0, "+") if value.has(spread) else value)
    return out


def _largest_entry(largest: sp.Expr) -> sp.Expr:
    """max_k of an entry free of its index but for |gamma_k|: the entry with gamma_max for |gamma_k|."""
    assert isinstance(largest, Largest)
    index = largest.index
    entry = largest.args[0].xreplace({sp.Abs(gamma[index]): gamma_max})
    if entry.has(index):
        raise DerivationError(f"the largest of {largest.args[0]} over {index} is not one expression")
    return entry


def _has_lipschitz(layer: Layer, _: Any) -> bool:
    try:
        _lipschitz(layer)
    except DerivationError:
        return False
    return True


# The Hessian product's name: its row, and the claim language's function hvp(u, w).
HESSIAN_PRODUCT = "hvp"

# In the order `make derive` prints them; consecutive rows over patterns are
# printed pattern by pattern.


def _kink_formula(layer: Layer, pattern: Any, name: str) -> Formula:
    """`regimes.kink_formula`, with the stated forms of the one-sided slopes on ``pattern`` (rows
    of the registry without a formula of their own) proved beside it."""
    proofs = [
        layer.prove_stated(other, quantity.derive(layer, item))
        for other, (quantity, item) in names(layer).items()
        if item is pattern and quantity.value in (regimes.slope_below_kink, regimes.slope_above_kink)
    ]
    return regimes.kink_formula(layer, pattern, name, proofs)


def _homogeneity_formula(layer: Layer, _: object, name: str) -> Formula:
    """`scaling.homogeneity_formula` over every result the registry derives for ``layer``."""
    return scaling.homogeneity_formula(layer, values(layer), name)


QUANTITIES: tuple[Quantity, ...] = (
    Quantity(
        "definition",
        "statement",
        "layer",
        response.definition_formula,
        None,
        column="definition",
        meaning="the output entry y_i as the layer defines it",
    ),
    Quantity(
        "response",
        "scalar",
        "pattern",
        response.response_formula,
        response.response,
        evaluate="of_t",
        numeric="response",
        claim=True,
        audit="value_at_pattern",
        meaning="the pattern's coordinate of the output, as a function of t",
    ),
    Quantity(
        "slope",
        "scalar",
        "pattern",
        response.slope_formula,
        response.slope,
        evaluate="of_t",
        numeric="slope",
        claim=True,
        audit="derivative_at_pattern",
        derivative_of="response",
        meaning="d response / dt",
    ),
    Quantity(
        "slope_at_zero",
        "scalar",
        "pattern",
        response.slope_at_zero_formula,
        _slope_at_zero,
        evaluate="of_epsilon",
        numeric="slope_at_zero",
        claim=True,
        audit="derivative_at_pattern_origin",
        column="slope at 0 on (−t, 0, t)",
        meaning="the slope at t = 0",
    ),
    Quantity(
        "asymptote",
        "scalar",
        "pattern",
        response.asymptote_formula,
        _asymptote,
        evaluate="of_epsilon",
        numeric="asymptote",
        claim=True,
        audit="value_at_pattern_far_out",
        meaning="the response's limit as t -> oo",
    ),
    Quantity(
        "kink",
        "scalar",
        "pattern",
        _kink_formula,
        regimes.kink_amplitude,
        applies=regimes.is_regimes,
        evaluate="of_epsilon",
        numeric="kink",
        claim=True,
        audit="case_switch_along_pattern",
        meaning="the amplitude |t| at which a clamped layer switches regimes",
    ),
    Quantity(
        "slope_below_kink",
        "scalar",
        "pattern",
        None,
        regimes.slope_below_kink,
        applies=regimes.is_regimes,
        evaluate="of_epsilon",
        numeric="slope_below_kink",
        claim=True,
        audit="derivative_just_inside_the_switch",
        meaning="the slope's limit as |t| rises to the kink",
    ),
    Quantity(
        "slope_above_kink",
        "scalar",
        "pattern",
        None,
        regimes.slope_above_kink,
        applies=regimes.is_regimes,
        evaluate="of_epsilon",
        numeric="slope_above_kink",
        claim=True,
        audit="derivative_just_outside_the_switch",
        meaning="the slope's limit as |t| falls to the kink",
    ),
    Quantity(
        "constant_response",
        "scalar",
        "layer",
        response.constant_formula,
        response.at_constant,
        claim=True,
        audit="value_at_constant_input",
        column="output at a constant input t·1",
        meaning="output entry i at the constant input x = t 1",
    ),
    Quantity(
        "jacobian",
        "matrix",
        "layer",
        jacobian.jacobian_formula,
        jacobian.entry,
        evaluate="entrywise",
        numeric="jacobian",
        meaning="J_ik = d y_i / d x_k",
    ),
    Quantity(
        "block_structure",
        "statement",
        "layer",
        grouped.block_formula,
        None,
        applies=grouped.is_grouped,
        meaning="J of a layer applied block by block is block-diagonal",
    ),
    Quantity(
        "jacobian_degenerate",
        "matrix",
        "layer",
        jacobian.degenerate_formula,
        jacobian.at_degenerate,
        applies=_has_degenerate_limit,
        meaning="J at the degenerate input, as a limit",
    ),
    Quantity(
        "jacobian_jump",
        "matrix",
        "layer",
        regimes.jump_formula,
        regimes.jump,
        applies=regimes.is_regimes,
        meaning="the jump of J across a clamped layer's boundary, where J does not exist",
    ),
    Quantity(
        "eigen",
        "scalar",
        "direction",
        eigen.eigen_formula,
        _eigenvalue,
        applies=_is_eigen,
        evaluate="of_statistics",
        numeric="eigen",
        claim=True,
        audit="eigenvalue_along_direction",
        meaning="the eigenvalue of J along the direction",
    ),
    Quantity(
        "spectral_norm",
        "scalar",
        "layer",
        spectral.norm_formula,
        spectral.spectral_norm,
        applies=_derivable(spectral.spectral_norm, _symmetric),
        evaluate="of_statistics",
        numeric="spectral_norm",
        claim=True,
        audit="norm2_of_jacobian",
        reference="norm2_of_jacobian",
        meaning="||J||_2 at the input",
    ),
    Quantity(
        "spectral_bound",
        "scalar",
        "layer",
        spectral.bound_formula,
        spectral.bound_value,
        applies=_derivable(spectral.bound_value),
        evaluate="of_epsilon",
        numeric="bound",
        claim=True,
        audit="norm2_of_jacobian_over_inputs",
        column="bound on ‖J‖₂",
        meaning="the bound on ||J||_2 over all inputs",
    ),
    Quantity(
        "lipschitz",
        "scalar",
        "layer",
        None,
        _lipschitz,
        applies=_has_lipschitz,
        evaluate="of_epsilon",
        numeric="bound",  # a counterexample re-checked by the bound it is proved equal to
        claim=True,
        audit="norm2_of_jacobian_over_inputs",
        meaning="the Lipschitz constant (the supremum of ||J||_2 over all inputs)",
        claim_only=True,
    ),
    Quantity(
        "norm_bound",
        "scalar",
        "layer",
        spectral.triangle_formula,
        spectral.triangle_bound,
        applies=spectral.triangle_applies,
        evaluate="of_statistics",
        numeric="norm_bound",
        claim=True,
        audit="at_least_norm2_of_jacobian",
        column="bound on ‖J‖₂",
        cell=r"\text{none over all } x\text{; at } x\text{: } {}",
        meaning="a bound on ||J||_2 at the input (the triangle inequality over J's terms), not its value",
    ),
    Quantity(
        "second_moment",
        "scalar",
        "layer",
        moments.second_moment_formula,
        moments.second_moment,
        applies=_derivable(moments.second_moment, _without_parameters),
        evaluate="of_statistics",
        numeric="second_moment",
        claim=True,
        audit="mean_square_of_output",
        reference="mean_square_of_output",
        meaning="mean of the squared output entries",
    ),
    Quantity(
        "output",
        "vector",
        "layer",
        None,
        lambda layer: layer.output,
        evaluate="applied",
        numeric="forward",
        meaning="the layer's output y_i",
    ),
    Quantity(
        "vjp",
        "vector",
        "layer",
        backward.vjp_formula,
        backward.vjp,
        evaluate="backward",
        numeric="vjp",
        limit=backward.vjp_at_degenerate,
        jacobian_product="transpose",
        meaning="the input gradient (J^T g)_k for the upstream gradient g",
    ),
    *(_gradient(stem, parameter) for stem, parameter in (("dgain", gamma), ("dbias", beta), ("dweight", w_gemma))),
    Quantity(
        "jvp",
        "vector",
        "layer",
        backward.jvp_formula,
        backward.jvp,
        evaluate="backward",
        numeric="jvp",
        limit=backward.jvp_at_degenerate,
        jacobian_product="direct",
        meaning="the forward-mode product (J v)_k",
    ),
    Quantity(
        HESSIAN_PRODUCT,
        "vector",
        "layer",
        backward.hvp_formula,
        backward.hvp,
        evaluate="backward",
        numeric="hvp",
        meaning="the Hessian of <g, y> applied to v, (sum_i g_i grad^2 y_i v)_k",
    ),
    Quantity("homogeneity", "statement", "layer", _homogeneity_formula, None),
)


def rows(layer: Layer) -> Iterator[tuple[Quantity, Any]]:
    """Every (quantity, item) that applies to ``layer``, in printing order.

    A layer whose derivations are another's (`Layer.derived_as`) has that
    layer's rows too, except its parameters' gradients: its own parameters differ.
    """
    source = layer.derived_as
    printed = (quantity for quantity in QUANTITIES if not quantity.claim_only)
    for by_pattern, run in itertools.groupby(printed, key=lambda quantity: quantity.over == "pattern"):
        group = list(run)
        pairs = (
            [(quantity, pattern) for pattern in layer.patterns for quantity in group]
            if by_pattern
            else [(quantity, item) for quantity in group for item in quantity.items(layer)]
        )
        yield from (
            (quantity, item)
            for quantity, item in pairs
            # The source first: what it decides was derived for it already.
            if (source is not layer and quantity.returned_by is None and quantity.applies(source, item))
            or quantity.applies(layer, item)
        )


def at_constant_input(name: str) -> bool:
    """Whether the quantity named ``name`` is taken at the constant input t 1 (not at a general x)."""
    return name == "constant_response"


def names(layer: Layer) -> dict[str, tuple[Quantity, Any]]:
    """Every quantity with a value that ``layer`` may have, by full name.

    Structural only: no derivation runs.  Whether a name applies (an
    eigenvector survives, J is symmetric) is decided when its value is asked for.
    """
    return {
        quantity.name(item): (quantity, item)
        for quantity in QUANTITIES
        if quantity.value is not None
        for item in quantity.items(layer)
    }


class NotApplicable(ValueError):
    """A quantity that the layer does not have (J is not symmetric, say)."""


def value(layer: Layer, name: str) -> sp.Expr:
    """The derived value of quantity ``name`` of ``layer``."""
    known = names(layer)
    if name not in known:
        raise ValueError(f"name must be a quantity of {layer.key} ({', '.join(known)}); got {name!r}")
    quantity, item = known[name]
    if not quantity.applies(layer, item):
        raise NotApplicable(f"{layer.key} has no {name}: {quantity.meaning} is not derived for it")
    return quantity.derive(layer, item)


def values(layer: Layer) -> dict[str, sp.Expr]:
    """Every applicable quantity's derived value, by name, in printing order."""
    return {
        quantity.name(item): quantity.derive(layer, item)
        for quantity, item in rows(layer)
        if quantity.value is not None
    }


@cache
def by_numeric(layer: Layer, numeric: str) -> tuple[str, Quantity, Any] | None:
    """(full name, row, item) of the quantity whose numeric function is ``numeric``, or None."""
    for name, (quantity, item) in names(layer).items():
        if quantity.numeric_name(item) == numeric:
            return name, quantity, item
    return None


def formulas(layer: Layer) -> list[Formula]:
    """Every formula `make derive` prints for ``layer``, in order."""
    source = layer.derived_as
    made = [
        _without_epsilon(
            layer,
            layer.restate(_formula(quantity, source if quantity.applies(source, item) else layer, item)),
        )
        for quantity, item in rows(layer)
        if quantity.formula
    ]
    # A proof is of a stated form only where the layer states one; else it proved something else.
    return [dataclasses.replace(f, stated=f.name in source.stated) for f in made]


@cache
def _formula(quantity: Quantity, layer: Layer, item: Any) -> Formula:
    """One row's formula, made once per process: the layers derived as another (a grouped
    layer as its base) restate its formulas rather than make them again."""
    assert quantity.formula is not None
    return quantity.formula(layer, item, quantity.name(item))


def _without_epsilon(layer: Layer, formula: Formula) -> Formula:
    """A layer without epsilon (Dynamic Tanh) assumes its scalar inputs real instead of epsilon > 0."""
    if layer.has_epsilon:
        return formula
    own = [f"{symbol} real" for _, symbol in layer.scalars]
    kept = [a for a in formula.assumptions if a != "epsilon > 0"]
    return dataclasses.replace(formula, assumptions=(*kept, *(a for a in own if a not in kept)))


def columns(layer: Layer) -> dict[str, list[tuple[str, str]]]:
    """Conventions-table column heading -> (full name, cell) of each of the layer's quantities
    under it, in registry order: the first the layer has fills the cell."""
    out: dict[str, list[tuple[str, str]]] = {}
    for quantity in QUANTITIES:
        items = quantity.items(layer)
        if quantity.column is not None and items:
            out.setdefault(quantity.column, []).append((quantity.name(items[0]), quantity.cell))
    # What the layer does where its spread vanishes closes the row, after the bound on its Jacobian.
    last = next(quantity.column for quantity in QUANTITIES if at_constant_input(quantity.stem))
    if last in out:
        out[last] = out.pop(last)
    return out
