r"""What a claim means: typed values at one input shared by the whole claim.

Every name in a claim is taken at the same input x in R^n and the same
epsilon.  A scalar is a SymPy expression in the statistics of x (never free
variables of their own), t, epsilon and n; a vector is its entry at index i;
a matrix its entry at (i, k).  ``J @ v`` is the sum over k of J_ik v_k,
reduced for symbolic n by the same sum machinery as the Jacobian
(`derivations.derive.sums`), so vector claims are proved for every n.

The syntax tree comes from `derivations.claims.language` (Python's parser as
far as a tree, nothing evaluated); only the constructs below are built.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field, replace
from typing import Any

import sympy as sp

from derivations import Layer, NotApplicable, quantities
from derivations.catalog import CORE, LAYERS
from derivations.claims.definedness import Requirement, at_node, gaps, requirements
from derivations.claims.language import (
    FREE_SCALARS,
    MAX_EXPONENT,
    RIGHT,
    Built,
    ClaimError,
    Lim,
    _Builder,
    _describe,
    _where,
    unknown_name,
)
from derivations.core.layer import Pattern
from derivations.derive import backward, eigen, jacobian, scaling
from derivations.derive.elementwise import Largest, apart
from derivations.derive.grouped import is_grouped
from derivations.derive.regimes import is_regimes
from derivations.derive.sums import Mean, PowerSum, over_entries, p, reduce_sums
from derivations.symbols import epsilon, gamma_max, i, j, k, n, s, t, x

g = sp.IndexedBase("g", real=True)
v = sp.IndexedBase("v", real=True)
MAX_TERMS = 1_000  # terms a power of a sum may expand to


@dataclass(frozen=True)
class Vector:
    """An n-vector, by its entry at index i; ``applied`` is (M, w) where it is M @ w."""

    entry: sp.Expr
    applied: tuple[Any, Any] | None = field(default=None, compare=False)

    def at(self, index: sp.Symbol) -> sp.Expr:
        return self.entry.xreplace({i: index})


@dataclass(frozen=True)
class Row:
    """A transposed vector u^T, by its entry at index i: u^T v is a scalar, u^T M a row;
    ``applied`` is (M, u) where it is u^T M."""

    entry: sp.Expr
    applied: tuple[Any, Any] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Matrix:
    """An n x n matrix, by its entry at (i, k)."""

    entry: sp.Expr
    # The layer whose Jacobian this is (or its transpose), for norm(J, 2).
    jacobian_of: str | None = None


class OpaqueNorm(sp.Function):
    """norm(M, p) of a matrix the derivations give no closed form for; evaluated at explicit inputs."""

    nargs = 2


Value = Any  # sp.Expr | Vector | Matrix


@dataclass
class Usage:
    """What a claim uses: it decides the claim's quantifier and how it is sampled."""

    layers: set[str] = field(default_factory=set)
    patterns: dict[tuple[Any, ...], Pattern] = field(default_factory=dict)  # by values and coordinate
    general: bool = False  # statistics, vectors or general-input quantities
    vectors: set[str] = field(default_factory=set)  # g, v
    quantities: list[tuple[str, str]] = field(default_factory=list)  # (layer, name)
    gains: bool = False
    scalars: set[str] = field(default_factory=set)  # a layer's scalar inputs named (ScaleNorm's g_s)
    limit_epsilon: bool = False
    epsilon: bool = False  # epsilon named (or its limit taken)
    matrices: dict[str, Matrix] = field(default_factory=dict)  # held by OpaqueNorm
    # Where each term the claim names or forms is defined (`derivations.claims.definedness`).
    requirements: list[Requirement] = field(default_factory=list)
    # Relations the derived results give between terms the claim forms, true at every input:
    # |M w| <= ||M||_2 |w|, lambda_min |w|^2 <= w^T J w <= lambda_max |w|^2 (`Builder.facts_of`).
    facts: list[tuple[sp.Basic, str]] = field(default_factory=list)  # (relation, what it is)

    def require(self, found: list[Requirement]) -> None:
        """Record requirements (`derivations.claims.definedness`), each once."""
        known = {r.condition for r in self.requirements}
        for requirement in found:
            if requirement.condition not in known:
                self.requirements.append(requirement)
                known.add(requirement.condition)


def mean_statistic(layer: Layer) -> sp.Symbol | None:
    """The statistic that is the plain mean of x, if the layer has one."""
    for stat in layer.statistics:
        if stat.mean and sp.expand(stat.summand - x[j]) == 0:
            return stat.symbol
    return None


def express(expr: sp.Expr, layer: Layer) -> sp.Expr:
    """A reduced sum written in ``layer``'s statistics; sums of other vectors (g, v) stay."""
    return layer.express(expr, strict=False)


class Builder(_Builder):
    """Builds typed values from a whitelisted syntax tree, for a claim about ``key``."""

    def __init__(self, text: str, key: str, usage: Usage) -> None:
        super().__init__(text, {}, {"t": t, "epsilon": epsilon}, lambda e: e)
        self.key = key
        self.usage = usage

    # --- names ------------------------------------------------------------

    def name(self, identifier: str, layer_key: str, node: ast.AST) -> Value:
        layer = LAYERS[layer_key]
        known = quantities.names(layer)
        if identifier in known and known[identifier][0].claim:
            quantity, item = known[identifier]
            try:
                value = quantity.derive(layer, item) if quantity.applies(layer, item) else None
            except NotApplicable as error:
                raise ClaimError(str(error)) from None
            if value is None:
                raise ClaimError(f"{layer_key} has no {identifier}: {quantity.meaning} is not derived for it")
            # A largest value's index is bound: renamed apart, no J_ik or sum over k of the claim captures it.
            value = apart(value)
            # A largest value over the entries (max_k |J_kk|) is one number; an entry at k is not.
            outside = value.replace(lambda e: isinstance(e, Largest), lambda e: sp.Dummy())
            if quantity.kind == "scalar" and any(k in e.indices for e in outside.atoms(sp.Indexed)):
                # J e_k = J_kk e_k of an elementwise layer: one eigenvalue per entry, not one number.
                raise ClaimError(
                    f"{identifier} of {layer_key} is one value per entry k ({quantity.meaning}), not one number "
                    "at an input; state the claim with J, norm(J, 2) or spectral_norm"
                )
            self.usage.layers.add(layer_key)
            self.usage.quantities.append((layer_key, identifier))
            self._scalars_in(value, layer)
            if quantity.over == "pattern":
                self.usage.patterns[(item.values, item.coordinate)] = item
            else:
                self.usage.general = True
            self.usage.require(gaps(value, f"{layer_key}.{identifier}"))
            if quantity.evaluate == "of_epsilon":
                # At a fixed point of the pattern (the slope at t = 0, the limit as t -> oo) or over
                # all inputs: a function of epsilon and the gains alone, with no input to tend to a
                # point in, so its own formula says where it is defined (1/sqrt(epsilon): epsilon != 0).
                self.usage.require(requirements(value, f"{layer_key}.{identifier}"))
            else:
                # A quantity at the claim's own input exists only where the layer does there.
                self.defined(layer, constant=quantities.at_constant_input(identifier))
            if layer.parameters:
                self.usage.gains = True
            return value
        vector = self.vector(identifier, layer, node)
        if vector is not None:
            self.usage.layers.add(layer_key)
            self.usage.general = True
            return vector
        raise unknown_name(identifier, self.known(layer), node)

    def vector(self, identifier: str, layer: Layer, node: ast.AST) -> Value | None:
        if identifier == "x":
            return Vector(x[i])
        if identifier == "ones":
            return Vector(sp.Integer(1))
        if identifier == "I":
            return Matrix(sp.KroneckerDelta(i, k))
        if identifier in ("g", "v"):
            self.usage.vectors.add(identifier)
            return Vector((g if identifier == "g" else v)[i])
        if identifier == "c":
            mean = mean_statistic(layer) if scaling.translation_invariant(layer) else None
            if mean is None:
                raise ClaimError(f"c (the centered input) at {_where(node)}: {layer.key} does not center its input")
            return Vector(x[i] - mean)
        if identifier == "y":
            if layer.parameters:
                self.usage.gains = True
            self._scalars_in(layer.output, layer)
            self.defined(layer)
            return Vector(layer.output)
        if identifier == "J":
            if layer.parameters:
                self.usage.gains = True
            self._scalars_in(layer.output, layer)
            self.defined(layer)
            entry = jacobian.entry(layer)
            self.usage.require(gaps(entry, f"the Jacobian of {layer.key}"))
            return Matrix(entry, jacobian_of=layer.key)
        return None

    def defined(self, layer: Layer, constant: bool = False) -> None:
        """A quantity of ``layer`` exists only where the layer does: its definition's
        requirements, at the constant input x = t 1 for a quantity taken there."""
        output = layer.output
        if constant:
            values = constant_input_statistics(layer)
            if values is None:
                return
            output = output.xreplace(values)
        # A condition on one entry x_i (none of the catalog's layers has one) is left to the audit.
        found = requirements(output, f"{layer.key}'s definition")
        self.usage.require([r for r in found if not _on_entries(r.condition)])

    def _scalars_in(self, value: sp.Expr, layer: Layer) -> None:
        """A layer's scalar inputs a value depends on (ScaleNorm's g_s, Dynamic Tanh's alpha) are
        quantified over even where the claim does not name them."""
        for _, symbol in layer.scalars:
            if value.has(symbol):
                self.usage.scalars.add(str(symbol))

    def symbol(self, identifier: str, layer: Layer) -> sp.Expr | None:
        names: dict[str, sp.Expr] = {"t": t, "epsilon": epsilon, "n": n, "d": n, "oo": sp.oo}
        for stat in layer.statistics:
            names[str(stat.symbol)] = stat.symbol
        for old, new in layer.display:
            if new == s:
                names["s"] = old
        names.update(layer.named_symbols)
        value = names.get(identifier)
        if value is None and identifier in FREE_SCALARS:
            self.usage.scalars.add(identifier)
            return FREE_SCALARS[identifier]
        if value is None:
            return None
        if identifier == "epsilon":
            self.usage.epsilon = True
        if identifier in {str(stat.symbol) for stat in layer.statistics} or identifier == "s":
            self.usage.general = True
            self.usage.layers.add(layer.key)
        if identifier in {str(symbol) for _, symbol in layer.scalars}:
            self.usage.scalars.add(identifier)
            self.usage.layers.add(layer.key)
        elif identifier in layer.named_symbols:
            self.usage.gains = True
            self.usage.layers.add(layer.key)
        return value

    def known(self, layer: Layer) -> list[str]:
        out = [name for name, (q, _) in quantities.names(layer).items() if q.claim]
        out += ["x", "ones", "I", "y", "J", "g", "v", "t", "epsilon", "n", "d", "oo", *layer.named_symbols]
        out += [*FREE_SCALARS, "y(v, e)", "<layer>(v, e)"]
        out += [str(stat.symbol) for stat in layer.statistics]
        if scaling.translation_invariant(layer):
            out.append("c")
        return out

    # --- the tree ------------------------------------------------------------

    def build(self, node: ast.AST) -> Value:
        if isinstance(node, ast.Name):
            value = self.symbol(node.id, LAYERS[self.key])
            return value if value is not None else self.name(node.id, self.key, node)
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return self.matmul(self.build(node.left), self.build(node.right), node)
        if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.BitXor):
            return self.binary(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            operand = self.build(node.operand)
            return _scale(operand, -1)
        return super().build(node)

    def attribute(self, node: ast.Attribute) -> Value:
        if node.attr == "T" and not (isinstance(node.value, ast.Name) and node.value.id in LAYERS):
            value = self.build(node.value)
            if isinstance(value, Vector):
                return Row(value.entry)
            if isinstance(value, Row):
                return Vector(value.entry)
            if not isinstance(value, Matrix):
                raise ClaimError(f".T at {_where(node)} applies to a vector or a matrix")
            return Matrix(value.entry.xreplace({i: k, k: i}), value.jacobian_of)
        if isinstance(node.value, ast.Name) and node.value.id in LAYERS:
            key = node.value.id
            value = self.symbol(node.attr, LAYERS[key]) if node.attr not in ("t", "epsilon", "n", "d") else None
            return value if value is not None else self.name(node.attr, key, node)
        raise ClaimError(f"{_describe(node, self.text)} at {_where(node)} is not allowed in a claim")

    def binary(self, node: ast.BinOp) -> Value:
        left, right = self.build(node.left), self.build(node.right)
        operations = {
            ast.Add: self._sum,
            ast.Sub: self._sum,
            ast.Mult: self._product,
            ast.Div: self._quotient,
            ast.Pow: self._power,
        }
        operation = operations.get(type(node.op))
        value = operation(left, right, node) if operation is not None else None
        if value is not None:
            return value
        # Of scalars, or another operator: as the base builder builds it.
        return super().build(ast.BinOp(left=Built(left), op=node.op, right=Built(right), col_offset=node.col_offset))

    def _sum(self, left: Value, right: Value, node: ast.BinOp) -> Value | None:
        """left + right or left - right of two vectors or two matrices; None for scalars."""
        if type(left) is not type(right) and not (_is_scalar(left) and _is_scalar(right)):
            raise ClaimError(f"cannot add a {_kind(left)} and a {_kind(right)} at {_where(node)}")
        sign = 1 if isinstance(node.op, ast.Add) else -1
        if isinstance(left, Vector):
            return Vector(left.entry + sign * right.entry)
        if isinstance(left, Matrix):
            return Matrix(left.entry + sign * right.entry)
        return None

    def _product(self, left: Value, right: Value, node: ast.BinOp) -> Value | None:
        """left * right with a vector or a matrix in it; None for two scalars.  A matrix or a row
        times a vector is their product, as papers juxtapose J v and 1^T y; two matrices are refused,
        since NumPy's J * J is entrywise."""
        if isinstance(left, Matrix) and isinstance(right, Matrix):
            raise ClaimError(f"'*' of two matrices at {_where(node)}; use @ for their product")
        if isinstance(left, (Matrix, Row)) and isinstance(right, (Vector, Matrix)):
            return self.matmul(left, right, node)  # juxtaposition, as papers write J v and 1^T y
        if _is_scalar(left) and not _is_scalar(right):
            return _scale(right, left)
        if _is_scalar(right) and not _is_scalar(left):
            return _scale(left, right)
        if not (_is_scalar(left) and _is_scalar(right)):
            raise ClaimError(f"'*' of two {_kind(left)}s at {_where(node)}; use @ or dot(u, v)")
        return None

    def _quotient(self, left: Value, right: Value, node: ast.BinOp) -> Value | None:
        """left / right of a scalar right, requiring right != 0; None for a scalar left."""
        if not _is_scalar(right):
            raise ClaimError(f"division by a {_kind(right)} at {_where(node)}")
        # SymPy cancels q/q to 1: the claim then holds only where q != 0, and says so.
        self.usage.require(at_node(sp.Pow(right, -1, evaluate=False), f"the division by {right} at {_where(node)}"))
        if not _is_scalar(left):
            return _scale(left, 1 / right)
        return None

    def _power(self, left: Value, right: Value, node: ast.BinOp) -> None:
        """Check left ** right (of scalars, of a bounded expansion) and require it defined."""
        if not (_is_scalar(left) and _is_scalar(right)):
            raise ClaimError(f"'**' of a {_kind(left)} at {_where(node)}; powers are of scalars")
        _bound_expansion(left, right, node)
        # q**-1 * q is 1 once formed: the power is read before SymPy cancels it.
        self.usage.require(at_node(sp.Pow(left, right, evaluate=False), f"the power at {_where(node)}"))

    def matmul(self, left: Value, right: Value, node: ast.AST) -> Value:
        if isinstance(left, Matrix) and isinstance(right, Vector):
            return Vector(self.reduce(left.entry * right.at(k), k), applied=(left, right))
        if isinstance(left, Matrix) and isinstance(right, Matrix):
            inner = sp.Symbol("j_inner", integer=True, nonnegative=True)
            product = left.entry.xreplace({k: inner}) * right.entry.xreplace({i: inner})
            return Matrix(self.reduce(product, inner))
        if isinstance(left, Vector) and isinstance(right, Row):
            return Matrix(left.entry * right.entry.xreplace({i: k}))  # a column times a row: u v^T, entry u_i v_k
        if isinstance(left, Row) and left.applied is not None and left.applied[1].entry == right.entry:
            # u^T M u, read as u . (M u): the same number, with the facts of M u (M symmetric there).
            matrix = left.applied[0]
            transposed = Matrix(matrix.entry.xreplace({i: k, k: i}), matrix.jacobian_of)
            return self._inner(right.entry, Vector(left.entry, applied=(transposed, right)))
        if isinstance(left, (Vector, Row)) and isinstance(right, Vector):
            return self._inner(left.entry, right)
        if isinstance(left, (Vector, Row)) and isinstance(right, Matrix):
            row = self.reduce(left.entry * right.entry, i).xreplace({k: i})
            return Row(row, applied=(right, Vector(left.entry))) if isinstance(left, Row) else Vector(row)
        raise ClaimError(f"'@' of a {_kind(left)} and a {_kind(right)} at {_where(node)}")

    def reduce(self, summand: sp.Expr, index: sp.Symbol) -> sp.Expr:
        """The sum over ``index`` = 0 .. n-1, reduced and written in the statistics."""
        total = reduce_sums(over_entries(summand, index))
        return express(total, self.layer_for_sums())

    def layer_for_sums(self) -> Layer:
        keys = self.usage.layers or {self.key}
        return LAYERS[min(keys)] if len(keys) == 1 else LAYERS[CORE]

    # --- calls -------------------------------------------------------------

    def call(self, node: ast.Call) -> Value:
        name = node.func.id if isinstance(node.func, ast.Name) else ""
        if name in LAYERS or name == "y":
            return self.layer_call(self.key if name == "y" else name, node)
        if name == "eigenvalues":
            raise ClaimError(f"eigenvalues(J) at {_where(node)} goes into max() or min()")
        if name in ("max", "min") and len(node.args) == 1 and getattr(node.args[0], "func", None) is not None:
            inner = node.args[0]
            if isinstance(inner, ast.Call) and getattr(inner.func, "id", "") == "eigenvalues":
                spectrum = self.spectral("eigenvalues", inner)
                assert isinstance(spectrum, Spectrum)
                return spectrum.extreme(name)
        if name in ("rank", "multiplicity"):
            return self.spectral(name, node)
        if name == "diff":
            return self.derivative(node)
        if name == quantities.HESSIAN_PRODUCT:
            return self.hessian_product(node)
        if name in ("norm", "sum", "mean", "dot", "trace", "outer", "det", "diag"):
            if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                raise ClaimError(f"{name}() at {_where(node)} takes plain positional arguments only")
            arguments = [self.build(a) for a in node.args]
            return self.vector_call(name, arguments, node)
        if name in ("sqrt", "abs", "exp", "max", "min"):
            arguments = [self.build(a) for a in node.args]
            if name in ("abs", "max", "min") and len(arguments) == 1 and isinstance(arguments[0], Vector):
                return _entrywise(name, arguments[0])
            if not all(_is_scalar(a) for a in arguments):
                raise ClaimError(
                    f"{name}() at {_where(node)} takes scalars (abs, max and min one vector too); "
                    "use norm() for vectors"
                )
            if name == "sqrt" and len(arguments) == 1:
                self.usage.require(
                    at_node(sp.Pow(arguments[0], sp.S.Half, evaluate=False), f"sqrt() at {_where(node)}")
                )
            if name == "exp" and arguments and _is_scalar(arguments[0]):
                value = arguments[0]
                if value.is_number and value.is_extended_real and abs(value) > 10**4:
                    raise ClaimError(f"exp() of a number beyond 10**4 in magnitude at {_where(node)}")
            node = ast.Call(func=node.func, args=[Built(a) for a in arguments], keywords=[])
        elif name not in ("limit",):
            if name == "all":
                raise ClaimError(f"all() at {_where(node)} is a whole claim: all(u <= v), not part of one")
            raise unknown_name(name, [*CLAIM_FUNCTIONS, *LAYERS], node, kind="function")
        return super().call(node)

    def layer_call(self, key: str, node: ast.Call) -> Value:
        """``layernorm(z, e)``: the layer's output at the input z (a vector built from x) and at
        epsilon e (epsilon where not given), written in the statistics of x.  ``y(z, e)`` is the
        claim's own layer there.  Each statistic of z is its summand at z_j, summed over j for
        symbolic n and written in x's statistics; a quantity of the layer at z is not."""
        layer, name = LAYERS[key], f"{getattr(node.func, 'id', key)}() at {_where(node)}"
        if node.keywords or not 1 <= len(node.args) <= 2 or any(isinstance(a, ast.Starred) for a in node.args):
            raise ClaimError(f"{name} takes (input) or (input, epsilon)")
        arguments = [self.build(a) for a in node.args]
        if not isinstance(arguments[0], Vector):
            raise ClaimError(f"{name}: the input is a vector, such as a*x + b*ones")
        if len(arguments) == 2 and not _is_scalar(arguments[1]):
            raise ClaimError(f"{name}: epsilon is a scalar")
        if len(arguments) == 2 and not layer.has_epsilon:
            raise ClaimError(f"{name}: {key} has no epsilon to give")
        if is_grouped(layer, None):
            raise ClaimError(
                f"{name}: {key} at another input is derived for layers with one set of statistics over "
                "all entries (not a block's)"
            )
        self.usage.layers.add(key)
        self.usage.general = True
        self.usage.gains = self.usage.gains or bool(layer.parameters)
        self._scalars_in(layer.output, layer)
        self.defined(layer)
        entry = arguments[0].entry
        values = self._statistics_at(layer, entry, name)
        changed: dict[sp.Basic, sp.Expr] = {x[i]: entry}
        if len(arguments) == 2:
            changed[epsilon] = arguments[1]
        # Where the layer is defined at z: read with the statistics as symbols, whose properties
        # (q >= 0) hold at every real input, z too; then written in x's statistics.
        stand_ins = {stat: sp.Symbol(f"{stat}_z", **stat.assumptions0) for stat in values}
        found = requirements(layer.output.xreplace({**changed, **stand_ins}), f"{key} at {ast.unparse(node.args[0])}")
        pairs = tuple((stand_ins[stat], value) for stat, value in values.items())
        self.usage.require([replace(r, stand_ins=pairs) for r in found if not _on_entries(r.condition)])
        return Vector(layer.output.xreplace({**changed, **values}))

    def _statistics_at(self, layer: Layer, entry: sp.Expr, name: str) -> dict[sp.Basic, sp.Expr]:
        """Each statistic of ``layer`` at the input whose entry at i is ``entry``, in x's statistics."""
        values: dict[sp.Basic, sp.Expr] = {}
        for stat in layer.statistics:
            summand = stat.summand.xreplace({x[j]: entry.xreplace({i: j}), **values})
            value = self.reduce(summand.xreplace({j: i}), i) / n if stat.mean else summand
            # A sum the statistics do not fix (sum x_j for RMSNorm) stays, to be taken at explicit inputs.
            if any(e.base == x for e in value.replace(PowerSum, lambda *_: sp.Integer(0)).atoms(sp.Indexed)):
                raise ClaimError(f"{name}: the statistic {stat.symbol} of the input is not a sum over its entries")
            values[stat.symbol] = value
        return values

    def vector_call(self, name: str, arguments: list[Value], node: ast.AST) -> Value:
        value = self._reduction(name, arguments)
        if value is None and name == "norm" and len(arguments) == 2 and isinstance(arguments[0], Matrix):
            value = self._matrix_norm(arguments[0], arguments[1])
        if name == "diag" and len(arguments) == 1 and isinstance(arguments[0], Vector):
            return Matrix(sp.KroneckerDelta(i, k) * arguments[0].entry)  # the entry at (i, k): v_i [i = k]
        if name == "outer" and len(arguments) == 2 and all(isinstance(a, Vector) for a in arguments):
            # The entry at (i, k): u_i v_k.
            return Matrix(arguments[0].entry * arguments[1].entry.xreplace({i: k}))
        if name == "det" and len(arguments) == 1 and isinstance(arguments[0], Matrix):
            return self._determinant(arguments[0], node)
        if value is None and name == "trace" and len(arguments) == 1 and isinstance(arguments[0], Matrix):
            # The sum of the diagonal entries: the entry at (i, i), summed over i and reduced.
            value = self.reduce(arguments[0].entry.xreplace({k: i}), i)
        if value is None:
            raise ClaimError(
                f"{name}() at {_where(node)}: norm(v), norm(v, 1), norm(v, oo), norm(M, 2), norm(M, oo), sum(v), "
                "mean(v), dot(u, v), outer(u, v), diag(v), trace(M) and det(J) take vectors v, u and matrices M"
            )
        return value

    def _reduction(self, name: str, arguments: list[Value]) -> sp.Expr | None:
        """sum(v), mean(v), dot(u, v) or norm(v) of vectors, as a reduced sum; None for any other call."""
        if name == "sum" and len(arguments) == 1 and isinstance(arguments[0], Vector):
            return self.reduce(arguments[0].entry, i)
        if name == "mean" and len(arguments) == 1 and isinstance(arguments[0], Vector):
            return self.reduce(arguments[0].entry, i) / n
        if name == "dot" and len(arguments) == 2 and all(isinstance(a, Vector) for a in arguments):
            return self._inner(arguments[0].entry, arguments[1])
        if name == "norm" and len(arguments) in (1, 2) and isinstance(arguments[0], Vector):
            return self._vector_norm(arguments[0], arguments[1] if len(arguments) == 2 else sp.Integer(2))
        return None

    def _vector_norm(self, vector: Vector, order: Value) -> sp.Expr | None:
        """norm(v) and norm(v, 2), norm(v, 1) and norm(v, oo); None for another order."""
        if order == 2:
            return sp.sqrt(self._squared_norm(vector))
        if order == 1:
            value, squared = self.reduce(sp.Abs(vector.entry), i), self.reduce(vector.entry**2, i)
            # |w|_2 <= |w|_1 <= sqrt(n) |w|_2 (Cauchy-Schwarz), squared.
            text = "|w|_2 <= |w|_1 <= sqrt(n) |w|_2"
            self.usage.facts += [(sp.Le(squared, value**2), text), (sp.Le(value**2, n * squared), text)]
            self.usage.facts.append((sp.Le(0, value), "|w|_1 >= 0"))
            return value
        if order is sp.oo:
            return _entrywise("max", _entrywise("abs", vector))
        return None

    # --- facts from the derived results -------------------------------------------------

    def _squared_norm(self, vector: Vector) -> sp.Expr:
        """|w|^2 reduced; for w = M @ u with a bound on ||M||_2, the fact |M u|^2 <= ||M||_2^2 |u|^2."""
        value = self.reduce(vector.entry**2, i)
        if vector.applied is not None:
            matrix, inner = vector.applied
            bound = self.operator_bound(matrix)
            if bound is not None:
                fact = sp.Le(value, bound**2 * self.reduce(inner.entry**2, i))
                self.usage.facts.append((fact, "|M w| <= ||M||_2 |w|"))
        return value

    def _inner(self, left: sp.Expr, right: Vector) -> sp.Expr:
        """u . w reduced; for w = J @ u with J symmetric and its eigenvalues proved, the fact
        lambda_min |u|^2 <= u^T J u <= lambda_max |u|^2 (each over every eigenvalue listed)."""
        value = self.reduce(left * right.entry, i)
        if right.applied is None or right.applied[1].entry != left:
            return value
        eigenvalues = self.eigenvalues_of(right.applied[0])
        if eigenvalues:
            length = self.reduce(left**2, i)
            text = "lambda_min |w|^2 <= w^T J w <= lambda_max |w|^2"
            self.usage.facts += [
                (sp.Le(0, length), "|w|^2 >= 0"),
                (sp.Le(sp.Min(*eigenvalues) * length, value), text),
                (sp.Le(value, sp.Max(*eigenvalues) * length), text),
            ]
        return value

    def jacobian_layer(self, matrix: Matrix) -> Layer | None:
        """The layer whose Jacobian ``matrix`` is, itself or transposed, where it is symmetric."""
        layer = LAYERS.get(matrix.jacobian_of or "")
        if layer is None or is_regimes(layer) or not jacobian.is_symmetric(layer):
            return None
        entry = jacobian.entry(layer)
        return layer if matrix.entry in (entry, entry.xreplace({i: k, k: i})) else None

    def operator_bound(self, matrix: Matrix) -> sp.Expr | None:
        """An upper bound on ||M||_2 the derivations give: the spectral norm of a symmetric
        Jacobian, and gamma_max times the base's for a gain times one (submultiplicativity)."""
        layer = self.jacobian_layer(matrix)
        if layer is not None:
            return apart(quantities.value(layer, _spectral_norm_name(layer)))
        affine = LAYERS.get(matrix.jacobian_of or "")
        base = getattr(affine, "base", None)
        if affine is None or base is None or matrix.entry != jacobian.entry(affine):
            return None
        inner = self.operator_bound(Matrix(jacobian.entry(base), jacobian_of=base.key))
        return None if inner is None else gamma_max * inner

    def eigenvalues_of(self, matrix: Matrix) -> list[sp.Expr]:
        layer = self.jacobian_layer(matrix)
        if layer is None:
            return []
        try:
            return [pair.value for pair in eigen.complete(layer)]
        except eigen.Incomplete:
            return []

    def derivative(self, node: ast.Call) -> Value:
        """``diff(e, v)``: the derivative of a scalar or a vector (entry by entry) with respect to
        a statistic of the layer, epsilon or t, every other symbol held fixed (the mean, x_i).  A
        statistic derived from another (sigma_u from q) is first written in it, unless it is v."""
        layer = LAYERS[self.key]
        statistics = {str(stat.symbol): stat.symbol for stat in layer.statistics}
        variables = {**statistics, "epsilon": epsilon, "t": t}
        variable = node.args[1] if len(node.args) == 2 and not node.keywords else None
        if not isinstance(variable, ast.Name) or variable.id not in variables:
            raise ClaimError(f"diff() at {_where(node)} takes (expression, v) with v one of {', '.join(variables)}")
        symbol = variables[variable.id]
        value = self.build(node.args[0])
        if isinstance(value, (Matrix, Row, Spectrum)):
            raise ClaimError(f"diff() at {_where(node)} is of a scalar or a vector")
        derived = {stat.symbol: stat.summand for stat in layer.statistics if not stat.mean and stat.symbol != symbol}
        if symbol in statistics.values():
            self.usage.general = True
            self.usage.layers.add(self.key)
        if symbol == epsilon:
            self.usage.epsilon = True

        def of(expr: sp.Expr) -> sp.Expr:
            for _ in derived:
                expr = expr.xreplace(derived)
            return sp.diff(expr, symbol)

        return Vector(of(value.entry)) if isinstance(value, Vector) else of(value)

    def hessian_product(self, node: ast.Call) -> Vector:
        """``hvp(u, w)``: the Hessian of <u, y> applied to w, (sum_i u_i grad^2 y_i w)_k, from the
        registry's derived Hessian product with g = u and v = w, its means reduced for symbolic n."""
        layer = LAYERS[self.key]
        arguments = [self.build(a) for a in node.args]
        if node.keywords or len(arguments) != 2 or not all(isinstance(a, Vector) for a in arguments):
            raise ClaimError(f"hvp() at {_where(node)} takes two vectors (u, w): the Hessian of <u, y> applied to w")
        if layer.parameters or is_regimes(layer) or is_grouped(layer, None):
            raise ClaimError(f"hvp() at {_where(node)}: {layer.key}'s Hessian product is not derived for claims")
        self._scalars_in(layer.output, layer)
        self.defined(layer)
        self.usage.layers.add(layer.key)
        self.usage.general = True
        self.usage.quantities.append((layer.key, quantities.HESSIAN_PRODUCT))
        first, second = (a.entry for a in arguments)
        value = backward.hvp(layer).xreplace(
            {
                g[k]: first.xreplace({i: k}),
                v[k]: second.xreplace({i: k}),
                g[p]: first.xreplace({i: p}),
                v[p]: second.xreplace({i: p}),
            }
        )
        value = value.replace(lambda e: isinstance(e, Mean), lambda e: self.reduce(e.args[0].xreplace({p: i}), i) / n)
        return Vector(value.xreplace({k: i}))

    def _eigenpairs(self, name: str, matrix: Value, node: ast.AST) -> tuple[Any, ...]:
        """The proved eigen-decomposition of a smooth layer's J, for det, rank and the like."""
        layer = LAYERS.get(getattr(matrix, "jacobian_of", None) or "")
        if layer is None or matrix.entry != jacobian.entry(layer) or is_regimes(layer):
            raise ClaimError(
                f"{name}() at {_where(node)}: {name}(J) is derived from the eigenstructure of a smooth layer's J; "
                "state it for J itself"
            )
        try:
            pairs = eigen.complete(layer)
        except eigen.Incomplete as error:
            raise ClaimError(
                f"{name}() at {_where(node)}: {layer.key}'s eigen-decomposition is not proved ({error})"
            ) from None
        self.usage.quantities.append((layer.key, f"{name}(J)"))
        return pairs

    def _determinant(self, matrix: Matrix, node: ast.AST) -> sp.Expr:
        """det(J) of a smooth layer whose eigen-decomposition is proved: the product of its
        eigenvalues, each to its multiplicity (`derivations.derive.eigen.complete`)."""
        pairs = self._eigenpairs("det", matrix, node)
        return sp.Mul(*(pair.value**pair.multiplicity for pair in pairs))

    def spectral(self, name: str, node: ast.Call) -> Value:
        """rank(J), multiplicity(lambda, J) and eigenvalues(J) (for max() and min()), from the
        proved eigen-decomposition: J is diagonalizable, so its rank is the number of nonzero
        eigenvalues and the multiplicity of lambda the dimension of its eigenspace, each eigenspace
        counted with its multiplicity (which may be 0: n - 2 at n = 2)."""
        arity = 2 if name == "multiplicity" else 1
        if len(node.args) != arity or node.keywords:
            shown = "(lambda, J)" if arity == 2 else "(J)"
            raise ClaimError(f"{name}() at {_where(node)} takes {shown}")
        arguments = [self.build(a) for a in node.args]
        pairs = self._eigenpairs(name, arguments[-1], node)
        if name == "eigenvalues":
            return Spectrum(tuple((pair.value, pair.multiplicity) for pair in pairs))
        if name == "rank":
            return sp.Add(*(m * (1 - Equal(value, 0)) for value, m in _pairs(pairs)))
        if not _is_scalar(arguments[0]):
            raise ClaimError(f"multiplicity() at {_where(node)}: lambda is a scalar")
        return sp.Add(*(m * Equal(value, arguments[0]) for value, m in _pairs(pairs)))

    def _matrix_norm(self, matrix: Matrix, order: Value) -> sp.Expr | None:
        """norm(M, 2) (in closed form for a symmetric Jacobian) or norm(M, oo); None for another order."""
        if order == 2 and matrix.jacobian_of is not None:
            layer = LAYERS[matrix.jacobian_of]
            if jacobian.is_symmetric(layer):
                self.usage.quantities.append((layer.key, "norm(J, 2)"))
                return apart(quantities.value(layer, _spectral_norm_name(layer)))
        if order in (2, sp.oo):
            held = sp.Symbol(f"M{len(self.usage.matrices)}")
            self.usage.matrices[str(held)] = matrix
            self.usage.general = True
            value = OpaqueNorm(held, order)
            bound = self.operator_bound(matrix) if order == 2 else None
            self.usage.facts.append((sp.Le(0, value), "||M||_2 >= 0"))
            if bound is not None:
                self.usage.facts.append((sp.Le(value, bound), "||diag(gamma) J||_2 <= gamma_max ||J||_2"))
            return value
        return None

    def limit(self, node: ast.Call) -> sp.Expr:
        """``limit(e, t, point[, side])``, ``limit(e, epsilon, 0)`` or ``limit(e, epsilon, oo)``: left
        unevaluated (`Lim`) until the domain is known; a limit in epsilon to 0 is from the right."""
        if not 3 <= len(node.args) <= 4:
            return super().limit(node)
        before = len(self.usage.requirements)
        body = self.build(node.args[0])
        # The body need not be defined where its variable tends to: what it requires of that
        # variable is not required of the claim (limit(abs(t)/t, t, 0, "+") is defined).
        variable = {"t": t, "epsilon": epsilon}.get(getattr(node.args[1], "id", ""))
        self.usage.requirements[before:] = [
            r for r in self.usage.requirements[before:] if variable is None or not r.condition.has(variable)
        ]
        if not _is_scalar(body):
            raise ClaimError(f"limit() at {_where(node)} is of a scalar")
        call = ast.Call(func=node.func, args=[Built(body), *node.args[1:]], keywords=[])
        call.col_offset = node.col_offset
        value = super().limit(call)
        if value.args[1] == epsilon:
            self.usage.limit_epsilon = self.usage.epsilon = True
            if value.args[2] == sp.oo:
                return value
            if value.args[2] != 0:
                raise ClaimError(f"limit() at {_where(node)}: epsilon tends to 0 or to oo only")
            if value.side == "-":
                raise ClaimError(f"limit() at {_where(node)}: epsilon tends to 0 from above only (epsilon > 0)")
            value = Lim(*value.args[:3], RIGHT)
        return value


def _on_entries(condition: sp.Basic) -> bool:
    """Whether a condition is on an entry x_i (left to the audit: no layer of the catalog has one)."""
    return any(e.base == x for e in condition.atoms(sp.Indexed))


class Equal(sp.Function):
    """1 where its two arguments are equal, else 0.  Left as it is until both are numbers, or
    until the domain's symbols are in (`derivations.claims.domain.settle` writes it as a case):
    whether epsilon/s**3 is 0 depends on whether the domain admits epsilon = 0."""

    nargs = 2

    @classmethod
    def eval(cls, a: sp.Expr, b: sp.Expr) -> sp.Expr | None:
        difference = a - b
        if not difference.is_number:
            return None
        equal = difference.equals(0)
        return None if equal is None else sp.Integer(int(equal))

    def as_case(self) -> sp.Expr:
        return sp.Piecewise((1, sp.Eq(*self.args)), (0, True))


@dataclass(frozen=True)
class Spectrum:
    """eigenvalues(J): each proved eigenvalue with its multiplicity, for max() and min()."""

    pairs: tuple[tuple[sp.Expr, sp.Expr], ...]

    def extreme(self, name: str) -> sp.Expr:
        """The largest or smallest eigenvalue that J has: one of multiplicity 0 (the complement's
        at n = 2) stands in for one that is always there, so it changes nothing."""
        (present, _) = next((value, m) for value, m in self.pairs if m == 1)
        values = [value if m == 1 else sp.Piecewise((value, m > 0), (present, True)) for value, m in self.pairs]
        return (sp.Max if name == "max" else sp.Min)(*values)


def _pairs(pairs: tuple[Any, ...]) -> list[tuple[sp.Expr, sp.Expr]]:
    return [(pair.value, pair.multiplicity) for pair in pairs]


# Every function a claim may call, besides the layers by their keys (for an unknown one's error).
CLAIM_FUNCTIONS = (
    "sqrt", "abs", "exp", "max", "min", "limit", "norm", "sum", "mean", "dot", "trace", "outer", "det", "diag",
    "rank", "multiplicity", "eigenvalues", "diff", quantities.HESSIAN_PRODUCT, "y", "all",
)  # fmt: skip


def _entrywise(name: str, vector: Vector) -> Value:
    """abs(v), entry by entry; max(v) and min(v), the largest and smallest entry (one number)."""
    if name == "abs":
        return Vector(sp.Abs(vector.entry))
    sign = 1 if name == "max" else -1
    return sign * apart(Largest(sign * vector.entry.xreplace({i: k}), k))


def _spectral_norm_name(layer: Layer) -> str:
    (name,) = [name for name, (q, _) in quantities.names(layer).items() if q.reference == "norm2_of_jacobian"]
    return name


def _is_scalar(value: Value) -> bool:
    return not isinstance(value, (Vector, Row, Matrix))


def _kind(value: Value) -> str:
    kinds = {Vector: "vector", Row: "transposed vector", Matrix: "matrix"}
    return kinds.get(type(value), "scalar")


def _scale(value: Value, factor: sp.Expr) -> Value:
    if isinstance(value, (Vector, Row)):
        return type(value)(value.entry * factor)
    if isinstance(value, Matrix):
        return Matrix(value.entry * factor, value.jacobian_of if factor == 1 else None)
    return value * factor


def _bound_expansion(base: sp.Expr, exponent: sp.Expr, node: ast.AST) -> None:
    """Refuse a power whose expansion would have more than MAX_TERMS terms."""
    if not (exponent.is_Integer and exponent > 1):
        return
    terms = len(sp.Add.make_args(base))
    if terms > 1 and exponent <= MAX_EXPONENT and math.comb(terms + int(exponent) - 1, int(exponent)) > MAX_TERMS:
        raise ClaimError(
            f"the power at {_where(node)} would expand to more than {MAX_TERMS} terms; state the claim without it"
        )


def build(text: str, key: str) -> tuple[Value, str, Value, Usage]:
    """Parse and build ``text`` about layer ``key``: (lhs, op, rhs, usage)."""
    from derivations.claims.language import _SYMBOLS, RELATIONS, parse_expression

    if key not in LAYERS:
        raise ClaimError(f"layer must be one of {', '.join(LAYERS)}; got {key!r}")
    body = parse_expression(text, {}, {})
    # all(u <= v): a relation entry by entry, between vectors or a vector and a scalar.
    entrywise = isinstance(body, ast.Call) and getattr(body.func, "id", "") == "all"
    if isinstance(body, ast.Call) and entrywise:
        if len(body.args) != 1 or body.keywords or not isinstance(body.args[0], ast.Compare):
            raise ClaimError("all() takes one relation, such as all(abs(y) <= sqrt(n - 1))")
        body = body.args[0]
    if not isinstance(body, ast.Compare):
        raise ClaimError("a claim is a relation: use ==, <=, <, >= or > between two expressions")
    if len(body.ops) != 1:
        raise ClaimError(f"one relation per claim; found {len(body.ops)} at {_where(body)}")
    op = type(body.ops[0])
    if op not in RELATIONS:
        raise ClaimError(f"relation {op.__name__} at {_where(body)} is not allowed")
    usage = Usage()
    builder = Builder(text.strip(), key, usage)
    lhs, rhs = builder.build(body.left), builder.build(body.comparators[0])
    about = sorted(usage.layers or {key})
    if usage.epsilon and not any(LAYERS[name].has_epsilon for name in about):
        # A layer without epsilon (Dynamic Tanh): a claim in epsilon would be about a symbol
        # none of its results holds, and its verdict about nothing the layer does.
        scale = ", ".join(str(symbol) for name in about for _, symbol in LAYERS[name].scalars)
        raise ClaimError(
            f"epsilon: {', '.join(about)} has no epsilon" + (f" (its scale is set by {scale})" if scale else "")
        )
    symbol = _SYMBOLS[op]
    lhs, rhs = _zero_as(lhs, rhs), _zero_as(rhs, lhs)
    if isinstance(lhs, Row) or isinstance(rhs, Row):
        lhs, rhs = (Vector(side.entry) if isinstance(side, Row) else side for side in (lhs, rhs))
    if entrywise:
        if not any(isinstance(side, Vector) for side in (lhs, rhs)) or any(
            isinstance(side, Matrix) for side in (lhs, rhs)
        ):
            raise ClaimError("all() relates the entries of a vector: one side at least is a vector")
        lhs, rhs = (side if isinstance(side, Vector) else Vector(side) for side in (lhs, rhs))
        return lhs, symbol, rhs, usage
    if not (_is_scalar(lhs) and _is_scalar(rhs)):
        if type(lhs) is not type(rhs):
            raise ClaimError(f"cannot compare a {_kind(lhs)} with a {_kind(rhs)}")
        if symbol != "==":
            raise ClaimError(f"vectors and matrices compare only with ==, not {symbol}")
    return lhs, symbol, rhs, usage


def _zero_as(value: Value, other: Value) -> Value:
    """A literal 0 compared with a vector or matrix is the zero vector or matrix."""
    if _is_scalar(value) and value == 0 and isinstance(other, (Vector, Matrix)):
        return type(other)(sp.Integer(0))
    return value


def constant_input_statistics(layer: Layer) -> dict[sp.Basic, sp.Expr] | None:
    """The statistics at the constant input x = t 1 for symbolic n; None where a statistic
    is not a function of t there (a partial mean)."""
    values: dict[sp.Basic, sp.Expr] = {}
    for stat in layer.statistics:
        value = stat.summand.xreplace({x[j]: t}).xreplace(values)
        if value.atoms(sp.Indexed):
            return None
        values[stat.symbol] = value
    return values
