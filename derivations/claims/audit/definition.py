r"""A layer's definition, evaluated at one explicit input: statistics, outputs, Jacobian.

The definition is the layer's ``output`` and ``statistics`` as the layer
states them.  Each SymPy term is compiled once into a closure over an
environment of `Jet` values by name (x, gamma, the statistics, epsilon, the
index i), so that a point costs Python arithmetic only.  A derived formula
never enters here.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np
import sympy as sp
from flint import acb_mat, arb, arb_mat, fmpq

from derivations import LAYERS
from derivations.claims.audit.numbers import (
    ONE,
    ZERO,
    Jet,
    Num,
    Undefined,
    Unknown,
    ball,
    compare,
    constant,
    derivative_by_quotients,
    divide,
    exact,
    is_zero,
    jet_abs,
    jet_exp,
    jet_extreme,
    jet_power,
    jet_sech,
    jet_sign,
    jet_tanh,
    known,
    total,
    upper,
)

Env = dict[str, Any]
_FUNCTIONS: dict[type, Callable[[Jet], Jet]] = {
    sp.tanh: jet_tanh,
    sp.exp: jet_exp,
    sp.sech: jet_sech,
    sp.Abs: jet_abs,
    sp.sign: jet_sign,
}
_OPS = {sp.Eq: "==", sp.Ne: "!=", sp.Le: "<=", sp.Lt: "<", sp.Ge: ">=", sp.Gt: ">"}


@cache
def compiled(expr: sp.Basic) -> Callable[[Env], Jet]:
    """``expr`` (a definition's term) as a function of an environment of jets, by name."""
    if expr.is_Rational:
        value = Jet(exact(expr))
        return lambda env: value
    if expr is sp.pi:
        return lambda env: Jet(arb.pi())
    if isinstance(expr, sp.Symbol):
        name = expr.name
        return lambda env: _lookup(env, name)
    if isinstance(expr, sp.Indexed):
        base, index = str(expr.base), _index(expr.indices[0])
        return lambda env: _entry(env, base, index(env))
    if isinstance(expr, (sp.Add, sp.Mul)):
        parts = [compiled(a) for a in expr.args]
        add = isinstance(expr, sp.Add)
        return lambda env: _fold(parts, env, add)
    if isinstance(expr, sp.Pow):
        radix, exponent = compiled(expr.base), expr.exp
        if not exponent.is_Rational:
            raise Unknown(f"the power {expr}")
        return lambda env: jet_power(radix(env), exponent)
    if type(expr) in _FUNCTIONS:
        inner, function = compiled(expr.args[0]), _FUNCTIONS[type(expr)]
        return lambda env: function(inner(env))
    if isinstance(expr, (sp.Max, sp.Min)):
        parts, largest = [compiled(a) for a in expr.args], isinstance(expr, sp.Max)
        return lambda env: jet_extreme([p(env) for p in parts], largest)
    if isinstance(expr, sp.Piecewise):
        cases = [(compiled(value), _condition(condition)) for value, condition in expr.args]
        return lambda env: _case(cases, env)
    raise Unknown(f"{type(expr).__name__} in a definition")


def number(expr: Any) -> Num:
    """An exact number: a rational as itself, an algebraic one (sqrt(6)/2) enclosed by its tree."""
    if not isinstance(expr, sp.Basic):
        return exact(expr)
    if expr.is_Rational:
        return exact(expr)
    if expr.free_symbols:
        raise Unknown(f"{expr} is not a number")
    return compiled(expr)({}).value


def _index(index: sp.Expr) -> Callable[[Env], int]:
    if index.is_Integer:
        fixed = int(index)
        return lambda env: fixed
    name = str(index)
    return lambda env: int(env[name])


def _lookup(env: Env, name: str) -> Jet:
    if name not in env:
        raise Unknown(f"{name} has no value here")
    return env[name]


def _entry(env: Env, base: str, index: int) -> Jet:
    values = env.get(base)
    if values is None or not 0 <= index < len(values):
        raise Unknown(f"{base}[{index}] has no value here")
    return values[index]


def _fold(parts: list[Callable[[Env], Jet]], env: Env, add: bool) -> Jet:
    out = parts[0](env)
    for part in parts[1:]:
        out = out + part(env) if add else out * part(env)
    return out


def _condition(condition: sp.Basic) -> Callable[[Env], bool]:
    if condition is sp.true:
        return lambda env: True
    if isinstance(condition, (sp.And, sp.Or)):
        parts = [_condition(c) for c in condition.args]
        combine = all if isinstance(condition, sp.And) else any
        return lambda env: combine(p(env) for p in parts)
    if not isinstance(condition, sp.core.relational.Relational):
        raise Unknown(f"the condition {condition}")
    lhs, rhs, op = compiled(condition.lhs), compiled(condition.rhs), _OPS[type(condition)]

    def holds(env: Env) -> bool:
        decided = compare(lhs(env).value, op, rhs(env).value)
        if decided is None:
            raise Unknown(f"the case {condition} at a ball on its boundary")
        return decided

    return holds


def _case(cases: list[tuple[Callable[[Env], Jet], Callable[[Env], bool]]], env: Env) -> Jet:
    for value, condition in cases:
        if condition(env):
            return value(env)
    raise Undefined("no case of the definition holds here")


class LayerAt:
    """One layer at one input: its environment, outputs and Jacobian, each computed once.

    ``values`` holds the point's other numbers by name: epsilon, n, the gain
    and bias vectors (gamma, beta), g, v, and the layer's scalars (alpha, g_s).
    """

    def __init__(self, key: str, x: list[Jet], values: Env, fixed: dict[str, Num] | None = None) -> None:
        self.layer = LAYERS[key]
        self.x = x
        self.values = values
        # Statistics held at a value of their own, whatever x gives (a derivative in one of them).
        self.fixed = fixed or {}
        self.size = len(x)
        self.rigorous = True  # False once a derivative came from difference quotients
        self._cache: dict[str, Any] = {}

    def base(self) -> Env:
        """The point's values, with each subset's entries (a partial mean's indicator)."""
        env = {**self.values, "n": Jet(exact(self.size))}
        for subset in self.layer.subsets:
            env[str(subset.indicator)] = [Jet(exact(bit)) for bit in subset.entries(self.size, subset.default)]
        return env

    def env(self, x: list[Jet]) -> Env:
        """The environment at input ``x``: the point's values and the layer's statistics of x."""
        env = {**self.base(), "x": x}
        for stat in self.layer.statistics:
            term = compiled(stat.summand)
            if stat.mean:
                values = [term({**env, "j": j}) for j in range(self.size)]
                out = values[0]
                for value in values[1:]:
                    out = out + value
                env[str(stat.symbol)] = out * Jet(divide(ONE, exact(self.size)))
            else:
                env[str(stat.symbol)] = term(env)
            if str(stat.symbol) in self.fixed:
                env[str(stat.symbol)] = Jet(self.fixed[str(stat.symbol)])
        return env

    def outputs(self, x: list[Jet]) -> list[Jet]:
        env = self.env(x)
        output = compiled(self.layer.output)
        return [output({**env, "i": index}) for index in range(self.size)]

    def flat_env(self) -> Env:
        if "env" not in self._cache:
            self._cache["env"] = self.env([Jet(e.value) for e in self.x])
        return self._cache["env"]

    def statistic(self, name: str) -> Num:
        env = self.flat_env()
        if name not in env:
            raise Unknown(f"{self.layer.key} has no {name}")
        return env[name].value

    def y(self) -> list[Num]:
        if "y" not in self._cache:
            self._cache["y"] = [jet.value for jet in self.outputs([Jet(e.value) for e in self.x])]
        return self._cache["y"]

    def jacobian(self) -> list[list[Num]]:
        """J by forward jets; a column the jets cannot give (a root at 0 inside) by the limits of
        difference quotients along that entry, which is not rigorous (``rigorous`` says so)."""
        if "J" not in self._cache:
            tangents = [
                Jet(e.value, [ONE if row == column else ZERO for column in range(self.size)])
                for row, e in enumerate(self.x)
            ]
            try:
                outputs = self.outputs(tangents)
                columns = [[(out.d[c] if c < len(out.d) else ZERO) for out in outputs] for c in range(self.size)]
            except Unknown:
                columns = [[arb("nan")] * self.size for _ in range(self.size)]
            for c, column in enumerate(columns):
                if not all(known(e) for e in column):
                    self.rigorous = False
                    columns[c] = [derivative_by_quotients(self._along(c, r), self.x[c].value) for r in range(self.size)]
            self._cache["J"] = [[columns[c][r] for c in range(self.size)] for r in range(self.size)]
        return self._cache["J"]

    def _along(self, column: int, row: int) -> Callable[[Num], Num]:
        """Output ``row`` as a function of entry ``column`` of x, the others held."""

        def value(at: Num) -> Num:
            moved = [Jet(at) if m == column else Jet(e.value) for m, e in enumerate(self.x)]
            return self.outputs(moved)[row].value

        return value


def spectral_norm(matrix: list[list[Num]]) -> Num:
    """||M||_2: exactly where M is diagonal, else the square root of the largest enclosed
    eigenvalue of M^T M (balls that overlap at the top: their hull)."""
    size = len(matrix)
    if all(is_zero(matrix[r][c]) for r in range(size) for c in range(size) if r != c):
        return _largest_diagonal(matrix)
    gram = [[total([matrix[r][a] * matrix[r][b] for r in range(size)]) for b in range(size)] for a in range(size)]
    top = _top_eigenvalue([[ball(e) for e in row] for row in gram])
    if top < 0:
        raise Unknown("J^T J with a negative eigenvalue")
    if is_zero(top):
        return ZERO
    return (top if top > 0 else top.union(arb(0))).sqrt()


def determinant(matrix: list[list[Num]]) -> arb:
    """det M, enclosed in a ball (flint's arb_mat.det)."""
    return arb_mat([[ball(e) for e in row] for row in matrix]).det() if matrix else arb(1)


def _largest_diagonal(matrix: list[list[Num]]) -> Num:
    """The largest |M_rr| of a diagonal matrix, exactly."""
    largest = matrix[0][0] if matrix else ZERO
    for r in range(1, len(matrix)):
        largest = jet_extreme([constant(abs(largest)), constant(abs(matrix[r][r]))], True).value
    return abs(largest)


def _top_eigenvalue(balls: list[list[arb]]) -> arb:
    """A ball holding the largest eigenvalue of a symmetric matrix of balls."""
    try:
        eigenvalues = acb_mat(balls).eig(multiple=True)
    except (ValueError, ArithmeticError):
        # Balls cannot isolate a repeated eigenvalue: bracket the largest instead.
        return _largest_eigenvalue(balls)
    reals = [value.real for value in eigenvalues]
    top = max(reals, key=upper)
    for value in reals:
        if value is not top and not top > value:
            top = top.union(value)  # two eigenvalues that overlap: either may be the largest
    return top


def _largest_eigenvalue(gram: list[list[arb]]) -> arb:
    """The largest eigenvalue of a symmetric matrix of balls, repeated or not: at least the
    Rayleigh quotient of an approximate top eigenvector (exact in rationals), and at most any
    c for which c I - G is proved positive definite (every pivot of its LDL^T a positive ball)."""
    size = len(gram)
    middle = np.array([[float(e.mid()) for e in row] for row in gram])
    vector = [arb(fmpq(*Fraction(float(v)).as_integer_ratio())) for v in np.linalg.eigh(middle)[1][:, -1]]
    length = sum((v * v for v in vector), arb(0))
    below = sum((vector[a] * gram[a][b] * vector[b] for a in range(size) for b in range(size)), arb(0)) / length
    scale = max(1.0, float(np.abs(middle).max()))
    for digits in (28, 20, 12):
        ceiling = arb((below + arb(10) ** -digits * scale).upper())
        if _positive_definite([[(ceiling if a == b else 0) - gram[a][b] for b in range(size)] for a in range(size)]):
            return arb(below.lower()).union(ceiling)
    raise Unknown("the largest eigenvalue of J^T J cannot be bracketed")


def _positive_definite(matrix: list[list[arb]]) -> bool:
    """Whether every pivot of the symmetric matrix's LDL^T is a ball above 0 (Sylvester)."""
    size = len(matrix)
    low = [[arb(0)] * size for _ in range(size)]
    pivots: list[arb] = []
    for k in range(size):
        pivot = matrix[k][k] - sum((low[k][j] * low[k][j] * pivots[j] for j in range(k)), arb(0))
        if not pivot > 0:
            return False
        pivots.append(pivot)
        for i in range(k + 1, size):
            low[i][k] = (matrix[i][k] - sum((low[i][j] * low[k][j] * pivots[j] for j in range(k)), arb(0))) / pivot
    return True


def direction(vector_of: Any, at: LayerAt, start: tuple[int, ...]) -> list[Num]:
    """A direction's vector at the input: its entry at each k; for a complement, the part of
    ``start`` orthogonal to what its constraints span."""
    env = at.flat_env()
    size = at.size
    if not vector_of.complement:
        term = compiled(vector_of.entry)
        return [term({**env, "k": index}).value for index in range(size)]
    rows = []
    for constraint in vector_of.constraints:
        # Linear in w: its coefficient at k is the constraint at w = e_k.
        term = compiled(constraint)
        unit = [[Jet(ONE if m == index else ZERO) for m in range(size)] for index in range(size)]
        rows.append([term({**env, "k": index, "w": unit[index]}).value for index in range(size)])
    basis: list[list[Num]] = []
    for row in rows:
        row = _orthogonal(row, basis)
        length = total([e * e for e in row])
        if length > 0:
            basis.append(row)
        elif not is_zero(length):
            raise Unknown("the complement's constraints are nearly dependent here")
    return _orthogonal([exact(value) for value in start[:size]], basis)


def _orthogonal(vector: list[Num], basis: list[list[Num]]) -> list[Num]:
    """``vector`` minus its projections on each (orthogonal, not normalized) basis vector."""
    for done in basis:
        share = divide(total([a * b for a, b in zip(vector, done, strict=True)]), total([b * b for b in done]))
        vector = [a - share * b for a, b in zip(vector, done, strict=True)]
    return vector


def kink(key: str, inputs: Callable[[Num], list[Jet]], values: Env) -> Num:
    """The amplitude t > 0 at which the definition's case switches along the pattern, enclosed
    by bisection on its condition (a clamp's max(norm, epsilon))."""
    low, high = kink_bracket(key, inputs, values)
    return ball(low).union(ball(high))


def kink_bracket(key: str, inputs: Callable[[Num], list[Jet]], values: Env) -> tuple[Num, Num]:
    """Exact amplitudes ``low < high`` with the case of t = 0 at ``low`` and the other at ``high``
    (or its boundary): the switch lies in between."""
    layer = LAYERS[key]
    pieces = sorted(layer.output.atoms(sp.Piecewise), key=sp.default_sort_key)
    if not pieces:
        raise Unknown(f"{key} has no case to switch")
    (_, condition), *_ = pieces[0].args
    if not isinstance(condition, sp.core.relational.Relational):
        raise Unknown("a case condition that is not one relation")
    gap = compiled(condition.lhs - condition.rhs)

    def sign_at(t: Num) -> int | None:
        at = LayerAt(key, inputs(t), values)
        value = gap(at.env(at.x)).value
        return 1 if value > 0 else (-1 if value < 0 else (0 if is_zero(value) else None))

    low, high = ZERO, ONE
    start = sign_at(low)
    if start is None:
        raise Unknown("the case at t = 0 is not decided")
    while sign_at(high) == start:
        high = high * 2
        if high > 2**400:
            raise Unknown("no kink along the pattern")
    for _ in range(200):
        middle = (low + high) / 2
        found = sign_at(middle)
        if found is None:
            break  # the balls cannot tell the side here: the switch is somewhere in [low, high]
        if found == start:
            low = middle
        else:
            high = middle
    return low, high


def gain_is_zero(key: str, gain: list[Num] | None) -> bool:
    """Whether the gain is exactly zero and the layer's output then no longer depends on its
    input: every term with x or a statistic in it has the gain as a factor."""
    layer = LAYERS[key]
    if not layer.parameters or gain is None or any(not is_zero(number(value)) for value in gain):
        return False
    bases = [base for _, base in layer.parameters if str(base) == "gamma"]
    if not bases:
        return False
    (base,) = bases
    without = layer.output.xreplace({base[sp.Symbol("i", integer=True, nonnegative=True)]: 0})
    statistics = {stat.symbol for stat in layer.statistics}
    return not (without.free_symbols & statistics) and not any(str(e.base) == "x" for e in without.atoms(sp.Indexed))
