"""Numeric confirmation of a counterexample: the claim evaluated again with NumPy at the same input.

A refutation from `derivations.claims` gives the full input: x (and g, v,
the gain where used), epsilon, t.  Here the claim's syntax tree is walked a
second time with numbers instead of SymPy: each derived quantity comes from
the numeric function its registry row names, at that x (``spectral_norm`` is
also checked against ``numpy.linalg.norm`` of the Jacobian; vjp, jvp and hvp
at the counterexample's g and v), vectors and
matrices from ``forward`` and ``jacobian``, and ``@``, ``norm``, ``sum`` and
``dot`` from NumPy.  The relation is then decided in float64.
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np
import sympy as sp

from derivations import LAYERS, quantities
from derivations.claims import Claim
from derivations.claims.language import FREE_SCALARS, parse_expression
from derivations.symbols import epsilon as eps_symbol
from numeric import NumericLayer, facade, lambdified
from numeric.kernels.backward import ARGUMENTS

_OPS = {ast.Eq: "==", ast.LtE: "<=", ast.Lt: "<", ast.GtE: ">=", ast.Gt: ">"}


class _Unsupported(Exception):
    pass


class _Evaluator:
    """Evaluates a claim's tree with NumPy at one explicit input."""

    def __init__(self, claim: Claim, example: dict[str, Any]) -> None:
        self.key = claim.layer
        self.example = example
        self.eps = float(example.get("epsilon", 0.25))
        self.t = float(example.get("t", 0.0))
        self.x = np.asarray(example["x"], dtype=np.float64) if "x" in example else None
        self.how: list[str] = []

    def layer(self, key: str) -> NumericLayer:
        return facade(key)

    def parameters(self, layer: NumericLayer) -> tuple[np.ndarray, ...]:
        if not layer.definition.parameters:
            return ()
        size = self.size()
        if "gain" in self.example:
            return np.asarray(self.example["gain"], dtype=np.float64), np.asarray(
                self.example["bias"], dtype=np.float64
            )
        largest = float(self.example.get("gamma_max", abs(self.example.get("gamma", 1.0))))
        gain = np.full(size, largest)
        bias = np.zeros(size)
        coordinate = layer.definition.patterns[0].coordinate
        if coordinate < size:
            gain[coordinate] = float(self.example.get("gamma", gain[coordinate]))
            bias[coordinate] = float(self.example.get("beta", 0.0))
        return gain, bias

    def second(self, definition: Any) -> tuple[float, str]:
        """The second argument of the layer's functions, and its name: epsilon, or for a layer
        without it (Dynamic Tanh) the scalar parameter in its place, from the counterexample."""
        if definition.has_epsilon:
            return self.eps, "epsilon"
        ((name, symbol),) = definition.scalars
        if str(symbol) not in self.example:
            raise _Unsupported(f"the counterexample gives no {symbol}")
        return float(self.example[str(symbol)]), name

    def scalars(self, definition: Any, on_pattern: bool = False) -> dict[str, float]:
        """A layer's scalar inputs (ScaleNorm's gain) by argument name, from the counterexample.
        A layer without epsilon takes its one scalar as the second argument (`second`); a function
        of t or of that scalar alone takes the gain and bias at the pattern's coordinate."""
        if not definition.has_epsilon:
            given = {"gain": "gamma", "bias": "beta"}
            names = [name for name, _ in definition.parameters]
            return {
                name: float(self.example[given[name]]) for name in names if on_pattern and given[name] in self.example
            }
        missing = [str(symbol) for _, symbol in definition.scalars if str(symbol) not in self.example]
        if missing:
            raise _Unsupported(f"the counterexample gives no {missing[0]}")
        return {name: float(self.example[str(symbol)]) for name, symbol in definition.scalars}

    def size(self) -> int:
        if self.x is not None:
            return self.x.size
        return int(self.example.get("n", 3))

    def name(self, identifier: str, key: str) -> Any:
        """The value of ``identifier`` at the counterexample, for layer ``key``: a scalar, a registry
        quantity by its numeric function, a vector, a statistic or a display name."""
        layer = self.layer(key)
        definition = LAYERS[key]
        scalars = {"epsilon": self.eps, "t": self.t, "n": float(self.size()), "d": float(self.size()), "oo": np.inf}
        if identifier in scalars:
            return scalars[identifier]
        known = quantities.names(definition)
        if identifier in known:
            return self.quantity(identifier, key, *known[identifier])
        if identifier == "ones":
            return np.ones(self.size())
        if identifier == "I":
            return np.eye(self.size())
        if identifier in ("x", "c", "y", "J"):
            return self.vector(identifier, key, layer)
        if identifier in ("g", "v"):
            if identifier not in self.example:
                raise _Unsupported(f"the counterexample gives no {identifier}")
            return np.asarray(self.example[identifier], dtype=np.float64)
        return self.other(identifier, layer, definition)

    def quantity(self, identifier: str, key: str, quantity: Any, item: Any) -> Any:
        """A registry quantity, by the numeric function its row names, as that row evaluates it."""
        layer, definition = self.layer(key), LAYERS[key]
        numeric = quantity.numeric_name(item)
        function = layer.function(numeric) if numeric else None
        if function is None:
            raise _Unsupported(f"no numeric function for {identifier}")
        second, called = self.second(definition)
        if quantity.evaluate == "of_t":
            self.how.append(f"numeric.{key}.{numeric}(t, {called})")
            return float(function(self.t, second, **self.scalars(definition, on_pattern=True)))
        if quantity.evaluate == "of_epsilon":
            if quantity.numeric == "bound" and not definition.has_epsilon and definition.parameters:
                self.how.append(f"numeric.{key}.{numeric}({called}, gain)")
                return float(function(second, self.parameters(layer)[0]))
            self.how.append(f"numeric.{key}.{numeric}({called})")
            return float(function(second, **self.scalars(definition, on_pattern=True)))
        if quantity.evaluate == "backward":
            return self.product(identifier, key, function, second, called)
        given = () if definition.has_epsilon else self.parameters(layer)
        found = np.asarray(function(self.need_x(), second, *given, **self.scalars(definition)), dtype=np.float64)
        value = float(found) if found.ndim == 0 else found
        self.how.append(f"numeric.{key}.{numeric}(x, {called})")
        if quantity.reference == "norm2_of_jacobian":
            matrix = layer.jacobian(self.need_x(), second, *given)
            independent = float(np.linalg.norm(matrix, 2))
            if not np.isclose(value, independent, rtol=1e-9, atol=0):
                raise _Unsupported(f"{identifier} {value} disagrees with numpy.linalg.norm {independent}")
            self.how.append("numpy.linalg.norm(J, 2)")
        return value

    def product(self, identifier: str, key: str, function: Any, second: float, called: str) -> np.ndarray:
        """A backward product at x and the counterexample's vectors (g as the numeric dy, v), with
        its gain and bias where the layer has them."""
        layer = self.layer(key)
        value = quantities.value(layer.definition, identifier)
        taken = [str(base) for base in ARGUMENTS if value.has(base)]
        vectors = [self.name(name, key) for name in taken]
        found = function(self.need_x(), second, *vectors, *self.parameters(layer), **self.scalars(layer.definition))
        self.how.append(f"numeric.{key}.{function.__name__}(x, {', '.join([called, *taken])})")
        return np.asarray(found[0] if isinstance(found, tuple) else found, dtype=np.float64)

    def other(self, identifier: str, layer: NumericLayer, definition: Any) -> Any:
        """A statistic, a display name (lambdified from the expression it stands for, not typed),
        a gain or a scalar the counterexample gives."""
        stats = layer.statistics(self.need_x()) if definition.statistics else {}
        named = {str(symbol): value for symbol, value in stats.items()}
        if identifier in named:
            return named[identifier]
        # A display name such as s stands for a derived expression (sqrt(q + epsilon)).
        for expr, shown in definition.display:
            if str(shown) == identifier and not expr.atoms(sp.Indexed):
                symbols = [*stats, eps_symbol]
                return float(lambdified(expr, symbols)(*stats.values(), self.eps))
        if identifier in ("gamma", "beta", "gamma_max") and identifier in self.example:
            return float(self.example[identifier])
        if identifier == "gamma_max" and "gain" in self.example:
            return float(np.max(np.abs(np.asarray(self.example["gain"], dtype=np.float64))))
        if identifier in {str(symbol) for _, symbol in definition.scalars} and identifier in self.example:
            return float(self.example[identifier])
        if identifier in FREE_SCALARS and identifier in self.example:
            return float(self.example[identifier])
        raise _Unsupported(f"no numeric value for {identifier}")

    def vector(self, identifier: str, key: str, layer: NumericLayer) -> np.ndarray:
        x = self.need_x()
        if identifier == "c":
            return x - np.mean(x)
        second, _ = self.second(layer.definition)
        if identifier == "y":
            self.how.append(f"numeric.{key}.forward")
            return np.asarray(layer.forward(x, second, *self.parameters(layer), **self.scalars(layer.definition)))
        if identifier == "J":
            self.how.append(f"numeric.{key}.jacobian")
            return np.asarray(layer.jacobian(x, second, *self.parameters(layer), **self.scalars(layer.definition)))
        return x

    def layer_call(self, key: str, arguments: list[ast.expr]) -> np.ndarray:
        """``layernorm(z, e)``: the layer's forward function at the input z and epsilon e."""
        layer = self.layer(key)
        inputs = np.asarray(self.build(arguments[0]), dtype=np.float64)
        second = float(self.build(arguments[1])) if len(arguments) == 2 else self.second(layer.definition)[0]
        self.how.append(f"numeric.{key}.forward")
        return np.asarray(layer.forward(inputs, second, *self.parameters(layer), **self.scalars(layer.definition)))

    def need_x(self) -> np.ndarray:
        if self.x is None:
            raise _Unsupported("the counterexample gives no input vector")
        return self.x

    def build(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name):
            return self.name(node.id, self.key)
        if isinstance(node, ast.Attribute):
            if node.attr == "T":
                value = self.build(node.value)
                if isinstance(value, _Row):
                    return value.entries
                return _Row(value) if np.ndim(value) == 1 else np.swapaxes(value, -1, -2)
            assert isinstance(node.value, ast.Name)
            return self.name(node.attr, node.value.id)
        if isinstance(node, ast.UnaryOp):
            value = self.build(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp):
            a, b = self.build(node.left), self.build(node.right)
            return _BINARY[type(node.op)](a, b)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "limit":
                raise _Unsupported("a limit has no numeric value at one input")
            if node.func.id in LAYERS or node.func.id == "y":
                return self.layer_call(self.key if node.func.id == "y" else node.func.id, node.args)
            if node.func.id == quantities.HESSIAN_PRODUCT:
                layer = self.layer(self.key)
                self.how.append(f"numeric.{self.key}.hvp")
                u, w = (np.asarray(self.build(a), dtype=np.float64) for a in node.args)
                return np.asarray(layer.hvp(self.need_x(), self.second(layer.definition)[0], u, w))
            values = [self.build(argument) for argument in node.args]
            return _CALLS[node.func.id](*values)
        raise _Unsupported(f"cannot evaluate {type(node).__name__}")


class _Row:
    """A transposed vector v^T: a column times it is an outer product, it times a column a number."""

    def __init__(self, entries: np.ndarray) -> None:
        self.entries = entries


def _matmul(a: Any, b: Any) -> Any:
    if isinstance(b, _Row):
        if isinstance(a, _Row) or np.ndim(a) != 1:
            raise _Unsupported("a transposed vector on the right of a row or a matrix")
        return np.outer(a, b.entries)
    if isinstance(a, _Row):
        return np.matmul(a.entries, b)  # v^T u, or the row v^T M (compared as a vector)
    return np.matmul(a, b)


def _multiply(a: Any, b: Any) -> Any:
    """Juxtaposition, as the claims read it: J v, 1^T y and u v^T are products of arrays; else elementwise."""
    if isinstance(a, _Row) or isinstance(b, _Row) or (np.ndim(a) >= 1 and np.ndim(b) >= 1):
        return _matmul(a, b)
    return np.multiply(a, b)


_BINARY: dict[type[ast.operator], Any] = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: _multiply,
    ast.Div: np.divide,
    ast.Pow: np.power,
    ast.MatMult: _matmul,
}


def _norm(value: np.ndarray, order: float | None = None) -> float:
    if order is None:
        return float(np.linalg.norm(value))
    return float(np.linalg.norm(value, np.inf if order == np.inf else int(order)))


_CALLS: dict[str, Any] = {
    "sqrt": np.sqrt,
    "abs": np.abs,
    "exp": np.exp,
    "max": max,
    "min": min,
    "norm": _norm,
    "sum": np.sum,
    "mean": np.mean,
    "dot": np.dot,
    "trace": np.trace,
    "outer": np.outer,
    "det": np.linalg.det,
    "diag": np.diag,
    "rank": np.linalg.matrix_rank,
    "eigenvalues": lambda matrix: np.real(np.linalg.eigvals(matrix)),
    # The dimension of the eigenspace of lam: n minus the rank of J - lam I.
    "multiplicity": lambda lam, matrix: len(matrix) - np.linalg.matrix_rank(matrix - lam * np.eye(len(matrix))),
}


def confirm(claim: Claim, example: dict[str, Any]) -> str:
    """Evaluate the claim with NumPy at the counterexample and say whether it fails there too."""
    evaluator = _Evaluator(claim, example)
    try:
        body = parse_expression(claim.text, {}, {})
        if isinstance(body, ast.Call) and getattr(body.func, "id", "") == "all":
            body = body.args[0]  # entry by entry: NumPy's comparisons are, and np.all takes every one
        assert isinstance(body, ast.Compare)
        op = _OPS[type(body.ops[0])]
        with np.errstate(all="ignore"):
            lhs, rhs = evaluator.build(body.left), evaluator.build(body.comparators[0])
    except (_Unsupported, KeyError, ValueError, TypeError, AssertionError) as error:
        return f"not confirmed numerically: {error}"
    lhs, rhs = np.asarray(lhs, dtype=np.float64), np.asarray(rhs, dtype=np.float64)
    holds = {
        "==": bool(np.all(np.isclose(lhs, rhs, rtol=1e-9, atol=1e-300))),
        "<=": bool(np.all(lhs <= rhs)),
        "<": bool(np.all(lhs < rhs)),
        ">=": bool(np.all(lhs >= rhs)),
        ">": bool(np.all(lhs > rhs)),
    }[op]
    verdict = "confirmed numerically" if not holds else "NOT confirmed numerically"
    how = "; ".join(dict.fromkeys(evaluator.how)) or "NumPy arithmetic"
    shown = lambda a: np.array2string(a, precision=8) if a.ndim else f"{float(a):.8g}"  # noqa: E731
    return f"{verdict} ({how}): lhs = {shown(lhs)}, rhs = {shown(rhs)}"
