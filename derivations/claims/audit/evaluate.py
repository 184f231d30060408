r"""A claim's syntax tree evaluated at one point, every name from its layer's definition.

The tree is Python's (the claim language is Python's expression syntax, read
by `derivations.claims.language.parse_expression` with its bounds and
nothing evaluated).  Scalars are the numbers of `numbers`, vectors lists of
them, a transposed vector a `Row`, a matrix a `Matrix`.  Each quantity name is
evaluated by what it means (the registry says which stem and which input
pattern or eigen direction it is), from the definition:

- ``response``, ``slope``, ``slope_at_zero`` at the pattern's input, the slope
  by a jet in t; ``asymptote`` and the one-sided slopes at a kink as limits;
- ``eigen_<direction>`` as J d = lambda d along the direction's vector;
- ``spectral_norm`` as ||J||_2; ``spectral_bound`` and ``norm_bound`` as what
  they are at least; ``second_moment`` as the mean of y_i^2.

A limit is evaluated at points tending to it: the one step that is not
rigorous, which `Evaluator.rigorous` records.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import mpmath
import sympy as sp
from flint import arb, fmpq

from derivations import LAYERS, quantities, symbols
from derivations.claims.audit.definition import (
    LayerAt,
    compiled,
    determinant,
    direction,
    gain_is_zero,
    kink,
    kink_bracket,
    number,
    spectral_norm,
)
from derivations.claims.audit.numbers import (
    BESIDE_STEPS,
    ONE,
    STEPS,
    ZERO,
    AtLeast,
    Inf,
    Jet,
    Num,
    Undefined,
    Unknown,
    ball,
    compare,
    derivative_by_quotients,
    divide,
    exact,
    extrapolated,
    holds_zero,
    hull,
    is_zero,
    known,
    positive,
    root,
    short,
    total,
)
from derivations.claims.language import FREE_SCALARS, NOT_CONSTANT, parse_expression, phrase

# A fixed vector, with no special structure, projected onto a complement to give one of its vectors.
_START = (3, -1, 4, -1, 5, -9, 2, 6, -5, 3, 5, -8, 9, -7, 9, 3, 2, -3, 8, 4, -6, 2, 6, 4)


@dataclass(frozen=True)
class Row:
    """A transposed vector."""

    entries: list[Num]


@dataclass(frozen=True)
class Matrix:
    rows: list[list[Num]]


@dataclass
class Point:
    """One point of a claim's domain, every number exact (SymPy numbers or Python ones)."""

    n: int
    epsilon: Any = None
    t: Any = None
    x: list[Any] | None = None
    gain: list[Any] | None = None
    bias: list[Any] | None = None
    g: list[Any] | None = None
    v: list[Any] | None = None
    scalars: dict[str, Any] = field(default_factory=dict)

    def shown(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n}
        for name in ("epsilon", "t"):
            if getattr(self, name) is not None:
                out[name] = _shown_number(getattr(self, name))
        for name in ("x", "gain", "bias", "g", "v"):
            if getattr(self, name) is not None:
                out[name] = [_shown_number(value) for value in getattr(self, name)]
        out.update({name: _shown_number(value) for name, value in self.scalars.items()})
        return out


def _shown_number(value: Any) -> Any:
    if isinstance(value, fmpq):  # exact: an integer as one, else the nearest float
        value = sp.Rational(int(value.p), int(value.q))
    if isinstance(value, arb):
        return float(short(value))
    value = sp.sympify(value) if isinstance(value, (int, float)) else value
    return int(value) if value.is_Integer else float(sp.N(value, 17))


class Evaluator:
    """Evaluates a claim's syntax tree at one point about the layer ``key``; ``pattern`` is the
    input pattern its quantities are taken at, if it names one."""

    def __init__(self, key: str, point: Point, pattern: Any = None, fixed: dict[str, Num] | None = None) -> None:
        self.key = key
        self.point = point
        self.pattern = pattern
        self.fixed = fixed or {}  # statistics held at these values (`derivative`)
        self._rigorous = True
        self._layers: dict[str, LayerAt] = {}

    @property
    def rigorous(self) -> bool:
        """Whether every step so far enclosed its value: no limit, no difference quotient."""
        return self._rigorous and all(at.rigorous for at in self._layers.values())

    @rigorous.setter
    def rigorous(self, value: bool) -> None:
        self._rigorous = self._rigorous and value

    def layer_at(self, key: str, inputs: list[Jet], values: dict[str, Any] | None = None) -> LayerAt:
        """A layer at another input than the point's (the pattern at another t), or at other
        ``values`` (epsilon), kept so that how it was evaluated counts in ``rigorous``."""
        at = LayerAt(key, inputs, self.values() if values is None else values, self.fixed)
        self._layers[f"{key}:{len(self._layers)}"] = at
        return at

    def values(self) -> dict[str, Any]:
        """The point's numbers by name, as jets: what a definition's terms read."""
        point = self.point
        out: dict[str, Any] = {}
        if point.epsilon is not None:
            out["epsilon"] = Jet(number(point.epsilon))
        for name, entries in (("gamma", point.gain), ("beta", point.bias), ("g", point.g), ("v", point.v)):
            if entries is not None:
                out[name] = [Jet(number(value)) for value in entries]
        if point.gain is not None:
            largest = ZERO
            for value in point.gain:
                largest = _largest(largest, abs(number(value)))
            out["gamma_max"] = Jet(largest)
        out.update({name: Jet(number(value)) for name, value in point.scalars.items()})
        return out

    def input(self, t: Any = None) -> list[Jet]:
        """The input: the pattern's entries at t (a jet, to differentiate), or the point's x."""
        if self.pattern is not None:
            at = t if isinstance(t, Jet) else Jet(number(_needed(self.point.t, "t") if t is None else t))
            return [compiled(value)({"t": at}) for value in self.pattern.values]
        if self.point.x is None:
            raise Unknown("the point gives no input x")
        return [Jet(number(value)) for value in self.point.x]

    def at(self, key: str) -> LayerAt:
        if key not in self._layers:
            self._layers[key] = LayerAt(key, self.input(), self.values(), self.fixed)
        return self._layers[key]

    # --- relations
    def relation(self, text: str) -> bool | None:
        """Whether the relation ``text`` holds here: True, False, None (cannot tell); `Undefined`.
        An input said not to be constant is one whose entries are not all equal."""
        if phrase(text) in NOT_CONSTANT:
            entries = [entry.value for entry in self.input()]
            return relate(entries, "!=", [entries[0]] * len(entries))
        return self.decide(parse_expression(text, {}, {}))

    def decide(self, node: ast.AST) -> bool | None:
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "all" and len(node.args) == 1:
            return self.decide(node.args[0])  # an entrywise relation: relate compares entry by entry
        if isinstance(node, ast.BoolOp):
            parts = [self.decide(v) for v in node.values]
            if isinstance(node.op, ast.And):
                return False if False in parts else (None if None in parts else True)
            return True if True in parts else (None if None in parts else False)
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            raise Unknown("not one relation")
        ops = {ast.Eq: "==", ast.NotEq: "!=", ast.LtE: "<=", ast.Lt: "<", ast.GtE: ">=", ast.Gt: ">"}
        op = ops[type(node.ops[0])]
        return relate(self.value(node.left), op, self.value(node.comparators[0]))

    # --- the tree
    def value(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise Unknown("a literal that is not a number")
            return exact(node.value)
        if isinstance(node, ast.Name):
            return self.name(node.id, self.key)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id in LAYERS:
                return self.name(node.attr, node.value.id)
            if node.attr == "T":
                return _transposed(self.value(node.value))
            raise Unknown(f"attribute .{node.attr}")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = self.value(node.operand)
            return _scale(inner, -ONE) if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.BinOp):
            return _binary(type(node.op), self.value(node.left), self.value(node.right))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "limit":
                return self.limit(node)
            if node.func.id in LAYERS or node.func.id == "y":
                return self.layer_call(self.key if node.func.id == "y" else node.func.id, node)
            if node.func.id in ("rank", "multiplicity", "eigenvalues"):
                return self.spectral(node.func.id, node)
            if node.func.id == "diff":
                return self.derivative(node)
            if node.func.id == quantities.HESSIAN_PRODUCT:
                return self.hessian_product([self.value(a) for a in node.args])
            return _call(node.func.id, [self.value(a) for a in node.args])
        raise Unknown(type(node).__name__)

    def layer_call(self, key: str, node: ast.Call) -> list[Num]:
        """``layernorm(z, e)``: the layer's definition evaluated at the input z and epsilon e."""
        inputs = self.value(node.args[0])
        if not isinstance(inputs, list) or len(inputs) != self.point.n:
            raise Unknown("a layer's input that is not a vector of n entries")
        values = self.values()
        if len(node.args) == 2:
            values["epsilon"] = Jet(self.value(node.args[1]))
        return self.layer_at(key, [Jet(value) for value in inputs], values).y()

    def derivative(self, node: ast.Call) -> Any:
        """``diff(e, v)`` by the limits of difference quotients in v (not rigorous): epsilon or t
        moved at the point, a statistic held at a moved value while x and the others stay."""
        body, variable = node.args
        name = getattr(variable, "id", "")
        self.rigorous = False
        if name in ("epsilon", "t"):
            here = number(_needed(getattr(self.point, name), name))

            def at(value: Num) -> Any:
                return Evaluator(self.key, replace(self.point, **{name: value}), self.pattern, self.fixed).value(body)
        else:
            here = self.at(self.key).statistic(name)

            def at(value: Num) -> Any:
                return Evaluator(self.key, self.point, self.pattern, {**self.fixed, name: value}).value(body)

        first = at(here)
        if isinstance(first, list):
            return [derivative_by_quotients(lambda value, row=row: at(value)[row], here) for row in range(len(first))]
        return derivative_by_quotients(at, here)

    def hessian_product(self, arguments: list[Any]) -> list[Num]:
        """hvp(u, w): the Hessian of <u, y> applied to w is d/dt J(x + t w)^T u at t = 0, each entry
        by the limits of its difference quotients (not rigorous)."""
        if len(arguments) != 2 or not all(isinstance(a, list) for a in arguments):
            raise Unknown("hvp() of anything but two vectors")
        u, w = arguments
        start = [entry.value for entry in self.input()]
        self.rigorous = False

        def gradient(at: Num, column: int) -> Num:
            moved = self.layer_at(self.key, [Jet(a + at * b) for a, b in zip(start, w, strict=True)]).jacobian()
            return total([moved[row][column] * u[row] for row in range(len(u))])

        return [derivative_by_quotients(lambda at, m=m: gradient(at, m), ZERO) for m in range(len(start))]

    def spectral(self, name: str, node: ast.Call) -> Any:
        """rank(J) exactly, from J differentiated exactly out of the definition at the point;
        multiplicity(lambda, J) as n minus the rank of J - lambda I (`numeric_rank`) and
        eigenvalues(J) at 60 digits, both numerically (not rigorous)."""
        target = node.args[-1]
        key = target.value.id if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) else self.key
        if getattr(target, "id", getattr(target, "attr", "")) != "J":
            raise Unknown(f"{name}() of anything but J")
        matrix = exact_jacobian(key, self.point)
        if name == "rank":
            return exact(int(matrix.rank(simplify=True)))
        self.rigorous = False
        if name == "eigenvalues":
            return [arb(str(value), "1e-40") for value in numeric_eigenvalues(matrix)]
        level = self.value(node.args[0])
        if not _scalar(level) or isinstance(level, Inf):
            raise Unknown("multiplicity() of a value that is not a number")
        return exact(matrix.shape[0] - numeric_rank(matrix, ball(_finite(level)).mid().str(120, radius=False)))

    def limit(self, node: ast.Call) -> Any:
        """A limit, by values at points tending to it: not rigorous."""
        body, variable, point = node.args[:3]
        side = str(node.args[3].value) if len(node.args) == 4 and isinstance(node.args[3], ast.Constant) else ""
        name = getattr(variable, "id", "")
        target = self.value(point)
        self.rigorous = False
        sides = [side] if side else (["+"] if name == "epsilon" or isinstance(target, Inf) else ["+", "-"])
        found = [self._toward(body, name, target, s) for s in sides]
        if len(found) == 2 and relate(found[0], "==", found[1]) is False:
            raise Undefined(
                f"the limit does not exist: from the right {short(found[0])}, from the left {short(found[1])}"
            )
        if len(found) == 2 and not isinstance(found[0], Inf) and not isinstance(found[1], Inf):
            return hull(found[0], found[1])
        return found[0]

    def _toward(self, body: ast.AST, name: str, target: Any, side: str) -> Any:
        if name not in ("t", "epsilon"):
            raise Unknown(f"a limit in {name}")
        values = []
        for step in STEPS[:6]:
            at = (
                arb(2) ** step * target.sign
                if isinstance(target, Inf)
                else target + (arb(2) ** -step) * (1 if side == "+" else -1)
            )
            moved = replace(self.point, t=at) if name == "t" else replace(self.point, epsilon=at)
            other = Evaluator(self.key, moved, self.pattern)
            values.append(other.value(body))
        return extrapolated(values)

    # --- names
    def name(self, identifier: str, key: str) -> Any:
        point = self.point
        if identifier == "oo":
            return Inf(1)
        if identifier == "t":
            return number(_needed(point.t, "t"))
        if identifier == "epsilon":
            return number(_needed(point.epsilon, "epsilon"))
        if identifier in ("n", "d"):
            return exact(point.n)
        if identifier in FREE_SCALARS and identifier not in LAYERS[key].named_symbols:
            if identifier not in point.scalars:
                raise Unknown(f"the point gives no {identifier}")
            return number(point.scalars[identifier])
        known = quantities.names(LAYERS[key])
        if identifier in known and known[identifier][0].claim:
            quantity, item = known[identifier]
            return self.quantity(quantity.audit or "", item, key)
        vector = self.vector(identifier, key)
        if vector is not None:
            return vector
        return self.symbol(identifier, key)

    def symbol(self, identifier: str, key: str) -> Num:
        layer = LAYERS[key]
        if identifier in layer.named_symbols:
            # A gain entry, its largest size, a scalar parameter: none needs the input.
            return compiled(layer.named_symbols[identifier])(self.values()).value
        at = self.at(key)
        if identifier in {str(stat.symbol) for stat in layer.statistics}:
            return at.statistic(identifier)
        if identifier == "s":
            for old, new in layer.display:
                if str(new) == "s":
                    return compiled(old)(at.flat_env()).value
        raise Unknown(f"the name {identifier}")

    def vector(self, identifier: str, key: str) -> Any:
        size = self.point.n
        if identifier == "ones":
            return [ONE] * size
        if identifier == "I":
            return Matrix([[ONE if row == column else ZERO for column in range(size)] for row in range(size)])
        if identifier in ("g", "v"):
            entries = getattr(self.point, identifier)
            if entries is None:
                raise Unknown(f"the point gives no {identifier}")
            return [number(value) for value in entries]
        if identifier not in ("x", "c", "y", "J"):
            return None
        at = self.at(key)
        if identifier == "x":
            return [e.value for e in at.x]
        if identifier == "c":
            mean = at.statistic("mu")
            return [e.value - mean for e in at.x]
        if identifier == "y":
            return at.y()
        return Matrix(at.jacobian())

    def quantity(self, how: str, item: Any, key: str) -> Any:
        """A quantity by how the registry says it is evaluated from the definition (its ``audit``)."""
        if how not in _QUANTITIES:
            raise Unknown(f"no independent evaluation of {how}")
        return _QUANTITIES[how](self, item, key)

    def at_pattern(self, pattern: Any, key: str) -> Callable[..., Num]:
        """The pattern's response as a function of t: its value, or its t-derivative (a jet)."""
        evaluator = Evaluator(key, self.point, pattern)

        def value(t: Any) -> Num:
            inputs = evaluator.input(Jet(number(t)))
            return self.layer_at(key, inputs).outputs(inputs)[pattern.coordinate].value

        def response(t: Any, derivative: bool = False) -> Num:
            if not derivative:
                return value(t)
            inputs = evaluator.input(Jet(number(t), [ONE]))
            try:
                out = self.layer_at(key, inputs).outputs(inputs)[pattern.coordinate]
                found = out.d[0] if out.d else ZERO
            except Unknown:
                found = arb("nan")
            if known(found):
                return found
            # A root at 0 inside (sqrt(r) at t = 0): the jets cannot tell; the difference quotients can.
            self.rigorous = False
            return derivative_by_quotients(value, number(t))

        return response

    def switch(self, pattern: Any, key: str) -> Num:
        """The amplitude t > 0 where the definition's case switches along the pattern."""
        evaluator = Evaluator(key, self.point, pattern)
        return kink(key, lambda t: evaluator.input(Jet(t)), self.values())

    def just_beside_switch(self, pattern: Any, key: str, sign: int) -> Any:
        """The slope's limit at the switch from inside (``sign`` -1) or outside (1): from the
        bisection's bracket, stepped out by 2^-step of it, the steps far above the bracket's width
        (a point inside the ball around the switch has no case to take)."""
        self.rigorous = False  # a one-sided limit at the switch
        evaluator = Evaluator(key, self.point, pattern)
        low, high = kink_bracket(key, lambda t: evaluator.input(Jet(t)), self.values())
        edge, width = (low if sign < 0 else high), (high - low) / high
        steps = [step for step in BESIDE_STEPS if fmpq(1, 2**step) >= width * 2**20]
        if len(steps) < 3:
            raise Unknown("the switch is not enclosed closely enough to step beside it")
        response = self.at_pattern(pattern, key)
        return extrapolated([response(edge * (1 + sign * fmpq(1, 2**step)), derivative=True) for step in steps])

    def far_out(self, pattern: Any, key: str) -> Any:
        self.rigorous = False
        response = self.at_pattern(pattern, key)
        return extrapolated([response(arb(2) ** step) for step in STEPS])

    def eigen_along(self, item: Any, key: str) -> Num:
        value, rigorous = eigenvalue(item, self.at(key))
        self.rigorous = self.rigorous and rigorous
        return value

    def bound_over_inputs(self, key: str) -> Any:
        if gain_is_zero(key, self.point.gain):
            return ZERO  # J = diag(gain) J' = 0 at every input: the bound over all inputs is 0
        return AtLeast(self.largest_norm(key))

    def mean_square(self, key: str) -> Num:
        values = self.at(key).y()
        return divide(total([v * v for v in values]), exact(len(values)))

    def constant_response(self, key: str) -> Num:
        if LAYERS[key].parameters:
            raise Unknown("the constant response of a layer with a gain is one value per entry")
        t = number(_needed(self.point.t, "t"))
        inputs = [Jet(t) for _ in range(self.point.n)]
        return self.layer_at(key, inputs).outputs(inputs)[0].value

    def largest_norm(self, key: str) -> Num:
        """The largest ||J||_2 over a few inputs at this point's epsilon and parameters: what a
        bound over all inputs is at least."""
        size = self.point.n
        candidates = [[ZERO] * size, [ONE] * size, [ONE] + [ZERO] * (size - 1)]
        if self.point.x is not None or self.pattern is not None:
            candidates.insert(0, [e.value for e in self.input()])
        best: Num = ZERO
        for x in candidates:
            try:
                value = spectral_norm(self.layer_at(key, [Jet(e) for e in x]).jacobian())
            except (Unknown, Undefined):
                continue
            if compare(value, ">", best):
                best = value
        return best if isinstance(best, fmpq) else best - best.rad()


# Each way the registry says a quantity is evaluated from the definition (its ``audit``), by name.
_QUANTITIES: dict[str, Callable[[Evaluator, Any, str], Any]] = {
    "value_at_pattern": lambda e, item, key: e.at_pattern(item, key)(_needed(e.point.t, "t")),
    "derivative_at_pattern": lambda e, item, key: e.at_pattern(item, key)(_needed(e.point.t, "t"), True),
    "derivative_at_pattern_origin": lambda e, item, key: e.at_pattern(item, key)(ZERO, True),
    "value_at_pattern_far_out": lambda e, item, key: e.far_out(item, key),
    "case_switch_along_pattern": lambda e, item, key: e.switch(item, key),
    "derivative_just_inside_the_switch": lambda e, item, key: e.just_beside_switch(item, key, -1),
    "derivative_just_outside_the_switch": lambda e, item, key: e.just_beside_switch(item, key, 1),
    "value_at_constant_input": lambda e, item, key: e.constant_response(key),
    "eigenvalue_along_direction": lambda e, item, key: e.eigen_along(item, key),
    "norm2_of_jacobian": lambda e, item, key: spectral_norm(e.at(key).jacobian()),
    "at_least_norm2_of_jacobian": lambda e, item, key: AtLeast(spectral_norm(e.at(key).jacobian())),
    "norm2_of_jacobian_over_inputs": lambda e, item, key: e.bound_over_inputs(key),
    "mean_square_of_output": lambda e, item, key: e.mean_square(key),
}


def eigenvalue(vector_of: Any, at: LayerAt) -> tuple[Num, bool]:
    """The eigenvalue of J along the direction: (d . J d) / (d . d), where J d = lambda d holds;
    where the direction vanishes (c = 0 at a constant input), its limit at inputs tending to
    this one (not rigorous: the second value is False then)."""
    vector = direction(vector_of, at, _START)
    if is_zero(total([e * e for e in vector])):
        nearby = []
        for step in STEPS[:5]:
            moved = [Jet(e.value + exact(_START[m]) * arb(2) ** -step) for m, e in enumerate(at.x)]
            nearby.append(_along(vector_of, LayerAt(at.layer.key, moved, at.values)))
        return extrapolated(nearby), False
    return _along(vector_of, at), True


def _along(vector_of: Any, at: LayerAt) -> Num:
    jacobian = at.jacobian()
    vector = direction(vector_of, at, _START)
    length = total([e * e for e in vector])
    if not positive(length):
        raise Unknown(f"the direction {vector_of.name} is zero here")
    image = [total([jacobian[r][c] * vector[c] for c in range(len(vector))]) for r in range(len(vector))]
    value = divide(total([a * b for a, b in zip(vector, image, strict=True)]), length)
    if any(not holds_zero(image[r] - value * vector[r]) for r in range(len(vector))):
        raise Unknown(f"the direction {vector_of.name} is not an eigenvector here")
    return value


def _needed(value: Any, name: str) -> Any:
    if value is None:
        raise Unknown(f"the point gives no {name}")
    return value


def _largest(a: Num, b: Num) -> Num:
    ahead = compare(b, ">", a)
    return b if ahead else (a if ahead is False else hull(a, b))


# --- operations ---------------------------------------------------------------------------


def exact_jacobian(key: str, point: Point) -> sp.Matrix:
    """J at the point in exact numbers: the definition's output entries at n explicit entries,
    differentiated by SymPy and evaluated at the point's rationals (no derived result used)."""
    layer, size = LAYERS[key], point.n
    if point.x is None or (layer.has_epsilon and point.epsilon is None):
        raise Unknown("the point gives no input x or epsilon")
    entries = [layer.explicit_entry(size, row) for row in range(size)]
    values: dict[sp.Basic, sp.Expr] = {symbols.x[m]: _rational(value) for m, value in enumerate(point.x)}
    if point.epsilon is not None:
        values[symbols.epsilon] = _rational(point.epsilon)
    for base, given in ((symbols.gamma, point.gain), (symbols.beta, point.bias)):
        values.update({base[m]: _rational(value) for m, value in enumerate(given or [])})
    values.update(
        {symbol: _rational(point.scalars[str(symbol)]) for _, symbol in layer.scalars if str(symbol) in point.scalars}
    )
    matrix = sp.Matrix(size, size, lambda row, column: sp.diff(entries[row], symbols.x[column]).xreplace(values))
    if matrix.free_symbols:
        raise Unknown(f"J at the point still has {sorted(map(str, matrix.free_symbols))}")
    if matrix.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        # A derivative of sqrt(sum c_j**2) at c = 0 (epsilon beside the root, at a constant input):
        # J exists there as a limit, which this exact evaluation does not take.
        raise Unknown("J's entries are not numbers at the point (a derivative taken as a limit there)")
    return matrix


def _rational(value: Any) -> sp.Expr:
    return value if isinstance(value, sp.Basic) else sp.Rational(str(value))


def numeric_eigenvalues(matrix: sp.Matrix) -> list[Any]:
    """J's eigenvalues at 60 digits (J is symmetric where the checker derives them), each as often
    as its multiplicity."""
    with mpmath.workdps(60):
        values = mpmath.eig(mpmath.matrix(matrix.evalf(70).tolist()), left=False, right=False)
        return [mpmath.nstr(mpmath.re(value), 50) for value in values]


def numeric_rank(matrix: sp.Matrix, level: str) -> int:
    """The rank of J - level I: its singular values above 1e-50 times the largest at 100 digits,
    and above 1e-100 at 200; where the two counts differ (a singular value between), `Unknown`."""
    counts = []
    for digits in (100, 200):
        with mpmath.workdps(digits):
            shifted = mpmath.matrix(matrix.evalf(digits + 10).tolist()) - mpmath.mpf(level) * mpmath.eye(
                matrix.shape[0]
            )
            singular = mpmath.svd_r(shifted, compute_uv=False)
            largest = max([abs(value) for value in singular] + [mpmath.mpf(1)])
            counts.append(sum(1 for value in singular if abs(value) > largest * mpmath.mpf(10) ** (-digits // 2)))
    if counts[0] != counts[1]:
        raise Unknown("a singular value of J - lambda I too small to tell from 0 at 200 digits")
    return counts[0]


def _call(name: str, arguments: list[Any]) -> Any:
    if name in _OF_VECTORS:
        return _of_vectors(name, arguments)
    if name == "sqrt":
        return _root(arguments[0])
    if name == "abs" and isinstance(arguments[0], list):
        return [abs(_finite(e)) for e in arguments[0]]  # entry by entry
    if name == "abs":
        return Inf(1) if isinstance(arguments[0], Inf) else abs(_finite(arguments[0]))
    if name == "exp":
        value = _finite(arguments[0])
        return ONE if is_zero(value) else ball(value).exp()
    if name in ("max", "min") and len(arguments) == 1 and isinstance(arguments[0], list):
        return _extreme(name, arguments[0])  # over the entries of one vector
    if name in ("max", "min"):
        return _extreme(name, arguments)
    raise Unknown(f"{name}()")


def _extreme(name: str, arguments: list[Any]) -> Any:
    """max or min of the arguments; the hull of two a ball cannot order."""
    best = arguments[0]
    for value in arguments[1:]:
        ahead = relate(value, ">" if name == "max" else "<", best)
        if ahead is None:
            best = hull(_finite(best), _finite(value))
        elif ahead:
            best = value
    return best


_OF_VECTORS = frozenset({"sum", "mean", "dot", "norm", "outer", "diag", "det", "trace"})


def _of_vectors(name: str, arguments: list[Any]) -> Any:
    """A call on vectors or matrices."""
    if name == "sum":
        return total(_vector(arguments[0]))
    if name == "mean":
        entries = _vector(arguments[0])
        return divide(total(entries), exact(len(entries)))
    if name == "dot":
        return total([a * b for a, b in zip(_vector(arguments[0]), _vector(arguments[1]), strict=True)])
    if name == "norm":
        return _norm(arguments)
    if name == "outer":
        return Matrix([[a * b for b in _vector(arguments[1])] for a in _vector(arguments[0])])
    if name == "diag":
        entries = _vector(arguments[0])
        size = len(entries)
        return Matrix([[e if row == column else ZERO for column in range(size)] for row, e in enumerate(entries)])
    if name == "det" and isinstance(arguments[0], Matrix):
        return determinant(arguments[0].rows)
    if name == "trace" and isinstance(arguments[0], Matrix):
        return total([row[m] for m, row in enumerate(arguments[0].rows)])
    raise Unknown(f"{name}() of this")


def _norm(arguments: list[Any]) -> Any:
    target = arguments[0]
    order = arguments[1] if len(arguments) > 1 else exact(2)
    if isinstance(target, (list, Row)):
        entries = _vector(target)
        if isinstance(order, Inf):
            return _extreme("max", [abs(e) for e in entries])
        if order == 1:
            return total([abs(e) for e in entries])
        if order != 2:
            raise Unknown("a vector norm other than 1, 2 and oo")
        return _root(total([e * e for e in entries]))
    if isinstance(target, Matrix):
        if isinstance(order, Inf):
            best: Num = ZERO
            for row in target.rows:
                best = _largest(best, total([abs(e) for e in row]))
            return best
        if order == 2:
            return spectral_norm(target.rows)
    raise Unknown("norm() of this")


def _binary(op: type, left: Any, right: Any) -> Any:
    if op is ast.MatMult or (op is ast.Mult and isinstance(left, (Matrix, Row)) and not _scalar(right)):
        return _matmul(left, right)
    if op in (ast.Add, ast.Sub):
        return _add(left, right, 1 if op is ast.Add else -1)
    if op is ast.Mult:
        if _scalar(left):
            return _scale(right, left)
        if _scalar(right):
            return _scale(left, right)
        raise Unknown("a product of two vectors")
    if op is ast.Div:
        if not _scalar(right):
            raise Unknown("a division by a vector")
        if isinstance(right, (fmpq, arb)) and is_zero(right):  # whatever is divided: a bound, oo, a vector
            raise Undefined("a division by zero")
        if not _scalar(left):
            return _scale(left, _reciprocal(right))
        if isinstance(left, Inf):
            return _scale(left, _reciprocal(right))
        return ZERO if isinstance(right, Inf) else divide(_finite(left), _finite(right))
    if op is ast.Pow:
        return _pow(_finite(left), _finite(right))
    raise Unknown(f"operator {op.__name__}")


def _scalar(value: Any) -> bool:
    return isinstance(value, (fmpq, arb, Inf, AtLeast))


def _vector(value: Any) -> list[Num]:
    if isinstance(value, Row):
        return value.entries
    if isinstance(value, list):
        return value
    raise Unknown("a vector was expected")


def _transposed(value: Any) -> Any:
    if isinstance(value, list):
        return Row(value)
    if isinstance(value, Row):
        return value.entries
    if isinstance(value, Matrix):
        return Matrix([list(column) for column in zip(*value.rows, strict=True)])
    raise Unknown(".T of a scalar")


def _finite(value: Any) -> Num:
    if not isinstance(value, (fmpq, arb)):
        raise Unknown("arithmetic with an infinity or a bound")
    return value


def _add(left: Any, right: Any, sign: int) -> Any:
    if isinstance(left, list) and isinstance(right, list):
        return [a + sign * b for a, b in zip(left, right, strict=True)]
    if isinstance(left, Matrix) and isinstance(right, Matrix):
        rows = zip(left.rows, right.rows, strict=True)
        return Matrix([[a + sign * b for a, b in zip(p, q, strict=True)] for p, q in rows])
    if isinstance(left, Inf) and not isinstance(right, Inf):
        _finite(right)
        return left
    if isinstance(right, Inf) and not isinstance(left, Inf):
        _finite(left)
        return Inf(right.sign * sign)
    return _finite(left) + sign * _finite(right)


def _scale(value: Any, factor: Any) -> Any:
    factor = _finite(factor)
    if isinstance(value, list):
        return [e * factor for e in value]
    if isinstance(value, Row):
        return Row([e * factor for e in value.entries])
    if isinstance(value, Matrix):
        return Matrix([[e * factor for e in row] for row in value.rows])
    if isinstance(value, Inf):
        if factor > 0:
            return value
        if factor < 0:
            return Inf(-value.sign)
        raise Unknown("an infinity times a number that may be zero")
    return _finite(value) * factor


def _reciprocal(value: Any) -> Num:
    if isinstance(value, Inf):
        return ZERO
    return divide(ONE, _finite(value))


def _pow(base: Num, exponent: Num) -> Num:
    if isinstance(exponent, fmpq) and exponent.q == 1:
        power = int(exponent.p)
        # Products, not arb's **, which is nan for a ball around 0.
        out = ONE
        for _ in range(abs(power)):
            out = out * base
        return out if power >= 0 else divide(ONE, out)
    if isinstance(exponent, fmpq) and exponent.q == 2:
        return _pow(_root(base), fmpq(exponent.p))
    if not positive(base):
        raise Unknown("a fractional power of a number not known to be positive")
    return ball(base) ** ball(exponent)


def _root(value: Any) -> Any:
    if isinstance(value, Inf):
        if value.sign < 0:
            raise Undefined("the square root of -oo")
        return value
    return root(_finite(value))


def _matmul(left: Any, right: Any) -> Any:
    if isinstance(left, list) and isinstance(right, Row):  # a column times a row: u v^T
        return Matrix([[a * b for b in right.entries] for a in left])
    if isinstance(left, Matrix) and isinstance(right, list):
        return [total([a * b for a, b in zip(row, right, strict=True)]) for row in left.rows]
    if isinstance(left, Matrix) and isinstance(right, Matrix):
        columns = list(zip(*right.rows, strict=True))
        return Matrix([[total([a * b for a, b in zip(row, col, strict=True)]) for col in columns] for row in left.rows])
    if isinstance(left, (Row, list)) and isinstance(right, list):
        return total([a * b for a, b in zip(_vector(left), right, strict=True)])
    if isinstance(left, (Row, list)) and isinstance(right, Matrix):
        entries = _vector(left)
        columns = list(zip(*right.rows, strict=True))
        out = [total([a * b for a, b in zip(entries, col, strict=True)]) for col in columns]
        return Row(out) if isinstance(left, Row) else out
    raise Unknown("@ of these")


def relate(left: Any, op: str, right: Any) -> bool | None:
    """``left op right`` for any two values of a claim; None where the numbers leave it open."""
    if isinstance(left, AtLeast) or isinstance(right, AtLeast):
        return _relate_bound(left, op, right)
    if not _scalar(left) or not _scalar(right):
        if op not in ("==", "!="):
            # Entry by entry (all(...)): a scalar side stands for each entry.
            results = [compare(a, op, b) for a, b in zip(_entries(left, right), _entries(right, left), strict=True)]
            return False if False in results else (None if None in results else True)
        results = [compare(a, "==", b) for a, b in zip(_entries(left, right), _entries(right, left), strict=True)]
        equal = False if False in results else (None if None in results else True)
        return equal if op == "==" or equal is None else not equal
    return compare(left, op, right)


def _entries(value: Any, other: Any) -> list[Any]:
    if isinstance(value, Matrix):
        return [e for row in value.rows for e in row]
    if isinstance(value, (list, Row)):
        return _vector(value)
    # A scalar 0 compared with a vector or matrix is the zero vector or matrix.
    return [value] * len(_entries(other, []))


def _relate_bound(left: Any, op: str, right: Any) -> bool | None:
    """A comparison with a number known only from below: decided where the lower bound does."""
    if isinstance(right, AtLeast) and not isinstance(left, AtLeast):
        flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}[op]
        return _relate_bound(right, flipped, left)
    if isinstance(left, AtLeast) and isinstance(right, AtLeast):
        return None
    at_least = left.value
    if op in ("<", "<=", "=="):
        beyond = compare(at_least, ">" if op != "<" else ">=", right)
        return False if beyond else None
    if op in (">", ">="):
        return True if compare(at_least, op, right) else None
    return None
