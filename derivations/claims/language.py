r"""The claim language: a whitelisted grammar, parsed without ever evaluating text.

A claim is one relation between two expressions::

    claim      := expr ("==" | "<=" | "<" | ">=" | ">") expr
    expr       := numbers, names, + - * / **, unary -, parentheses, calls
    call       := sqrt(e) | abs(e) | exp(e) | max(e, e, ...) | min(e, e, ...)
                | limit(e, t, point[, "+" | "-"])   point: oo, -oo or a number

Names are the derived quantities of the layer (``slope_at_zero``,
``spectral_norm``, ...), the symbols (``t``, ``epsilon``, ``n``, ``q``,
``s`` and those of the layer), and ``oo``.  Numbers are exact: ``3/2`` is a
rational and ``0.5`` is 1/2.

The text goes through Python's parser only as far as a syntax tree (which
executes nothing); every node is then checked against the whitelist and
turned into SymPy objects here, so attribute access, subscripts, lambdas,
comprehensions, strings and calls outside the list are refused with the
offending token named.  Length and bracket depth are bounded before parsing.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import sympy as sp

MAX_LENGTH = 2000
MAX_DEPTH = 40
MAX_NODES = 300
# Exact arithmetic on literals is unbounded (9**9**9**9 has billions of
# digits), so literal sizes and numeric exponents are bounded.
MAX_DIGITS = 40
MAX_EXPONENT = 64

RELATIONS: dict[type[ast.cmpop], Callable[[sp.Expr, sp.Expr], sp.Basic]] = {
    ast.Eq: lambda a, b: sp.Eq(a, b, evaluate=False),
    ast.LtE: lambda a, b: sp.Le(a, b, evaluate=False),
    ast.Lt: lambda a, b: sp.Lt(a, b, evaluate=False),
    ast.GtE: lambda a, b: sp.Ge(a, b, evaluate=False),
    ast.Gt: lambda a, b: sp.Gt(a, b, evaluate=False),
}
_SYMBOLS = {ast.Eq: "==", ast.LtE: "<=", ast.Lt: "<", ast.GtE: ">=", ast.Gt: ">"}

# Scalars a claim may name freely, each for every real number unless assumed otherwise: the
# factor and shift of an input a x + b 1 the layer is applied at (``layernorm(a*x + b*ones)``).
FREE_SCALARS = {"a": sp.Symbol("a", real=True), "b": sp.Symbol("b", real=True)}

FUNCTIONS: dict[str, Callable[..., sp.Expr]] = {
    "sqrt": sp.sqrt,
    "abs": sp.Abs,
    "exp": sp.exp,
    "max": sp.Max,
    "min": sp.Min,
}
_ARITY = {"sqrt": (1, 1), "abs": (1, 1), "exp": (1, 1), "max": (2, 8), "min": (2, 8)}

_BINARY: dict[type[ast.operator], Callable[[sp.Expr, sp.Expr], sp.Expr]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
}


class ClaimError(ValueError):
    """A claim that cannot be parsed or names something unknown; says what and where."""


@dataclass(frozen=True)
class Relation:
    """A parsed claim: ``lhs op rhs``, with the limits it asked for already taken."""

    lhs: sp.Expr
    op: str
    rhs: sp.Expr

    def as_sympy(self) -> sp.Basic:
        return {"==": sp.Eq, "<=": sp.Le, "<": sp.Lt, ">=": sp.Ge, ">": sp.Gt}[self.op](
            self.lhs, self.rhs, evaluate=False
        )


# Phrases papers use for an input that is not constant (its entries not all equal): an
# assumption in these words is read by the checker and, on its own, by the audit.
NOT_CONSTANT = frozenset({"x is not constant", "x not constant", "x is non-constant", "x is nonconstant"})


def phrase(text: str) -> str:
    """``text`` as a phrase is compared: lower case, single spaces, no final period."""
    return " ".join(text.lower().split()).rstrip(".")


def unknown_name(identifier: str, known: Iterable[str], node: ast.AST, kind: str = "name") -> ClaimError:
    """The error for a name the claim's vocabulary lacks: the nearest known name, where one is
    near (a prefix of it, as eps of epsilon, or a close spelling), then every known name."""
    names = sorted(known)
    near = [name for name in names if name.startswith(identifier) and len(identifier) >= 2]
    # A close spelling that starts alike: foo is not a misspelling of oo.
    near = near or difflib.get_close_matches(identifier, [m for m in names if m[:1] == identifier[:1]], n=1, cutoff=0.7)
    hint = f"did you mean {near[0]!r}? " if near else ""
    return ClaimError(f"unknown {kind} {identifier!r} at {_where(node)}; {hint}known {kind}s: {', '.join(names)}")


def _where(node: ast.AST) -> str:
    return f"column {getattr(node, 'col_offset', 0) + 1}"


def _check_shape(text: str) -> None:
    if not isinstance(text, str):
        raise ClaimError(f"a claim must be text, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ClaimError(f"claim is {len(text)} characters long; at most {MAX_LENGTH} are accepted")
    if not text.strip():
        raise ClaimError("claim is empty")
    depth = 0
    for column, char in enumerate(text, 1):
        if char in "([{":
            depth += 1
            if depth > MAX_DEPTH:
                raise ClaimError(f"brackets nested deeper than {MAX_DEPTH} at column {column}")
        elif char in ")]}":
            depth -= 1
    for column, char in enumerate(text, 1):
        if not (char.isascii() and (char.isprintable() or char in " \t")):
            raise ClaimError(f"character {char!r} at column {column} is not allowed")


class Built(ast.expr):
    """A value already built, placed back into a tree (a typed builder hands scalars down)."""

    _fields = ()

    def __init__(self, value: object) -> None:
        super().__init__()
        self.value = value
        self.col_offset = 0


class _Builder:
    """Turns a whitelisted syntax tree into SymPy objects."""

    def __init__(
        self,
        text: str,
        names: Mapping[str, sp.Expr],
        limit_variables: Mapping[str, sp.Symbol],
        expand: Callable[[sp.Expr], sp.Expr],
    ):
        self.text = text
        self.names = names
        self.limit_variables = limit_variables
        self.expand = expand

    def number(self, node: ast.Constant) -> sp.Expr:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ClaimError(f"only numbers may appear as literals; got {value!r} at {_where(node)}")
        source = (ast.get_source_segment(self.text, node) or repr(value)).replace("_", "")
        digits = sum(ch.isdigit() for ch in source.split("e")[0].split("E")[0])
        if digits > MAX_DIGITS or (isinstance(value, float) and not abs(value) < 1e300 and value != 0):
            raise ClaimError(f"number {source[:20]} at {_where(node)} is too large; at most {MAX_DIGITS} digits")
        # The literal's own text, so that 0.1 is exactly 1/10, not the nearest double.
        return sp.Integer(value) if isinstance(value, int) else sp.Rational(source)

    def build(self, node: ast.AST) -> sp.Expr:
        if isinstance(node, Built):
            return node.value
        if isinstance(node, ast.Constant):
            return self.number(node)
        if isinstance(node, ast.Name):
            if node.id not in self.names:
                raise unknown_name(node.id, self.names, node)
            return self.names[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.build(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.BitXor):
                raise ClaimError(f"'^' at {_where(node)} is not a power here; write ** for powers")
            if type(node.op) not in _BINARY:
                raise ClaimError(f"operator {type(node.op).__name__} at {_where(node)} is not allowed")
            left, right = self.build(node.left), self.build(node.right)
            if isinstance(node.op, ast.Pow) and right.is_number and not abs(right) <= MAX_EXPONENT:
                raise ClaimError(f"exponent at {_where(node)} is too large; at most {MAX_EXPONENT} in magnitude")
            if isinstance(node.op, ast.Pow) and left.is_number and not right.is_number:
                raise ClaimError(f"a number raised to a symbolic power at {_where(node)} is not supported")
            result = _BINARY[type(node.op)](left, right)
            if result.is_Rational and max(abs(result.p), result.q).bit_length() > 64 * MAX_EXPONENT:
                raise ClaimError(f"the number at {_where(node)} is too large")
            return result
        if isinstance(node, ast.Call):
            return self.call(node)
        raise ClaimError(f"{_describe(node, self.text)} at {_where(node)} is not allowed in a claim")

    def call(self, node: ast.Call) -> sp.Expr:
        if not isinstance(node.func, ast.Name):
            raise ClaimError(f"{_describe(node.func, self.text)} at {_where(node)} cannot be called")
        name = node.func.id
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise ClaimError(f"{name}() at {_where(node)} takes plain positional arguments only")
        if name == "limit":
            return self.limit(node)
        if name not in FUNCTIONS:
            allowed = ", ".join([*FUNCTIONS, "limit"])
            raise ClaimError(f"call to {name!r} at {_where(node)} is not allowed; allowed functions: {allowed}")
        low, high = _ARITY[name]
        if not low <= len(node.args) <= high:
            raise ClaimError(f"{name}() at {_where(node)} takes {low} to {high} arguments, got {len(node.args)}")
        arguments = [self.build(a) for a in node.args]
        if name == "exp" and arguments[0].has(sp.exp):
            raise ClaimError(f"exp() of exp() at {_where(node)} is not supported")
        return FUNCTIONS[name](*arguments)

    def limit(self, node: ast.Call) -> sp.Expr:
        """``limit(e, variable, point)``, two-sided, or ``limit(e, variable, point, "+")`` (or ``"-"``)
        from one side: left unevaluated (`Lim`) until the assumptions are known."""
        if len(node.args) not in (3, 4):
            raise ClaimError(f'limit() at {_where(node)} takes (expression, variable, point) or (..., "+" or "-")')
        expr, variable, point = node.args[:3]
        if not isinstance(variable, ast.Name) or variable.id not in self.limit_variables:
            raise ClaimError(f"limit() at {_where(node)}: the variable must be one of {sorted(self.limit_variables)}")
        target = self.build(point)
        if target.free_symbols or target.has(sp.zoo, sp.nan) or not target.is_extended_real:
            raise ClaimError(f"limit() at {_where(node)}: the point must be a number, oo or -oo")
        side = direction(node.args[3], node) if len(node.args) == 4 else TWO_SIDED
        if target.is_infinite and side != TWO_SIDED:
            raise ClaimError(f"limit() at {_where(node)}: a limit at {target} has one side only; give no direction")
        # Stand-ins for derived quantities are replaced first: the limit is of
        # the quantity's expression, not of a name.
        return Lim(self.expand(self.build(expr)), self.limit_variables[variable.id], target, side)


# The side a limit is taken from: the right ("+"), the left ("-"), or both.
RIGHT, LEFT, TWO_SIDED = sp.Integer(1), sp.Integer(-1), sp.Integer(0)
_SIDES = {"+": RIGHT, "-": LEFT}


def direction(node: ast.AST, call: ast.AST) -> sp.Integer:
    """The side a limit's fourth argument names: the string "+" or "-", nothing else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in _SIDES:
        return _SIDES[node.value]
    shown = repr(node.value) if isinstance(node, ast.Constant) else type(node).__name__.lower()
    raise ClaimError(f'limit() at {_where(call)}: the direction must be "+" or "-"; got {shown[:20]}')


class Lim(sp.Function):
    """A limit as the claim states it, not yet taken: (body, variable, point, side), the side
    `RIGHT`, `LEFT` or `TWO_SIDED`.  `derivations.claims.limits` takes it once the domain of
    every other symbol is known."""

    nargs = 4

    @property
    def side(self) -> str:
        return {RIGHT: "+", LEFT: "-"}.get(self.args[3], "")

    def _sympystr(self, printer: object) -> str:
        body, variable, point = (printer._print(a) for a in self.args[:3])  # type: ignore[attr-defined]
        side = f', "{self.side}"' if self.side else ""
        return f"limit({body}, {variable}, {point}{side})"


def _describe(node: ast.AST, text: str) -> str:
    segment = ast.get_source_segment(text, node) or ""
    if isinstance(node, ast.Attribute):
        return f"attribute access '.{node.attr}'"
    if isinstance(node, ast.Subscript):
        return f"subscript '{segment}'"
    if isinstance(node, ast.Lambda):
        return "lambda"
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return "comprehension"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return f"string {node.value!r}"
    return f"{type(node).__name__.lower()} '{segment}'"


def parse_expression(text: str, names: Mapping[str, sp.Expr], limit_variables: Mapping[str, sp.Symbol]) -> ast.AST:
    """The syntax tree of ``text``, after the bounds on length and nesting."""
    _check_shape(text)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as error:
        where = f" at column {error.offset}" if error.offset else ""
        raise ClaimError(f"cannot parse the claim{where}: {error.msg}") from None
    except (RecursionError, MemoryError, ValueError) as error:
        raise ClaimError(f"cannot parse the claim: {type(error).__name__}") from None
    count = sum(1 for _ in ast.walk(tree))
    if count > MAX_NODES:
        raise ClaimError(f"claim has {count} syntax nodes; at most {MAX_NODES} are accepted")
    return tree.body


def parse(
    text: str,
    names: Mapping[str, sp.Expr],
    limit_variables: Mapping[str, sp.Symbol],
    expand: Callable[[sp.Expr], sp.Expr] = lambda e: e,
) -> Relation:
    """Parse ``text`` into a `Relation` over ``names``; raise `ClaimError` otherwise.

    ``expand`` maps stand-in symbols to what they stand for, inside limit().
    """
    body = parse_expression(text, names, limit_variables)
    if not isinstance(body, ast.Compare):
        found = (
            ""
            if isinstance(body, (ast.BinOp, ast.Name, ast.Call, ast.Constant, ast.UnaryOp))
            else (f"{_describe(body, text.strip())} is not allowed; ")
        )
        raise ClaimError(f"{found}a claim is a relation: use ==, <=, <, >= or > between two expressions")
    if len(body.ops) != 1:
        raise ClaimError(f"one relation per claim; found {len(body.ops)} at {_where(body)}")
    op = type(body.ops[0])
    if op not in RELATIONS:
        raise ClaimError(f"relation {type(body.ops[0]).__name__} at {_where(body)} is not allowed")
    text = text.strip()
    builder = _Builder(text, names, limit_variables, expand)
    return Relation(builder.build(body.left), _SYMBOLS[op], builder.build(body.comparators[0]))


def parse_condition(text: str, symbols: Mapping[str, sp.Symbol]) -> Relation:
    """An assumption such as ``n >= 3``: a relation over symbols and numbers only."""
    return parse(text, symbols, {})


# A layer definition may also use tanh; `mean` is given by the caller, where a mean is allowed.
TERM_FUNCTIONS: dict[str, Callable[..., sp.Expr]] = {**FUNCTIONS, "tanh": sp.tanh}
_TERM_ARITY = {**_ARITY, "tanh": (1, 1), "mean": (1, 1)}


class _TermBuilder(_Builder):
    """The claim grammar for one term of a layer definition: entries such as ``x[i]``, calls
    such as ``mean(...)``, a matrix's ``.T`` and ``@``; numeric exponents only."""

    def __init__(
        self,
        text: str,
        names: Mapping[str, sp.Expr],
        entries: Mapping[str, Mapping[str, sp.Expr]],
        functions: Mapping[str, Callable[..., sp.Expr]],
    ):
        super().__init__(text, names, {}, lambda e: e)
        self.entries = entries
        self.functions = functions

    def build(self, node: ast.AST) -> sp.Expr:
        if isinstance(node, ast.Subscript):
            return self.entry(node)
        if isinstance(node, ast.Name) and node.id not in self.names and node.id in self.entries:
            allowed = " or ".join(f"{node.id}[{index}]" for index in self.entries[node.id])
            raise ClaimError(f"'{node.id}' at {_where(node)} is a vector: write its entry, {allowed}")
        if isinstance(node, ast.Attribute) and node.attr == "T":
            matrix = self.build(node.value)
            if not isinstance(matrix, sp.MatrixExpr):
                raise ClaimError(f"'.T' at {_where(node)} applies to a matrix or a vector only")
            return matrix.T
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return sp.MatMul(self.build(node.left), self.build(node.right))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            exponent = self.build(node.right)
            if not exponent.is_Rational:
                raise ClaimError(f"the exponent at {_where(node)} must be a number")
        return super().build(node)

    def entry(self, node: ast.Subscript) -> sp.Expr:
        segment = ast.get_source_segment(self.text, node) or ""
        if not isinstance(node.value, ast.Name) or node.value.id not in self.entries:
            allowed = ", ".join(f"{base}[...]" for base in self.entries) or "none"
            raise ClaimError(f"subscript '{segment}' at {_where(node)} is not allowed here; allowed: {allowed}")
        indices = self.entries[node.value.id]
        if not isinstance(node.slice, ast.Name) or node.slice.id not in indices:
            allowed = ", ".join(f"{node.value.id}[{index}]" for index in indices)
            raise ClaimError(f"subscript '{segment}' at {_where(node)} is not allowed here; allowed: {allowed}")
        return indices[node.slice.id]

    def call(self, node: ast.Call) -> sp.Expr:
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name is None or name not in self.functions:
            allowed = ", ".join(self.functions)
            what = f"call to {name!r}" if name else f"{_describe(node.func, self.text)}"
            raise ClaimError(f"{what} at {_where(node)} is not allowed here; allowed functions: {allowed}")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise ClaimError(f"{name}() at {_where(node)} takes plain positional arguments only")
        low, high = _TERM_ARITY.get(name, (1, 1))
        if not low <= len(node.args) <= high:
            raise ClaimError(f"{name}() at {_where(node)} takes {low} to {high} arguments, got {len(node.args)}")
        arguments = [self.build(a) for a in node.args]
        if name == "exp" and arguments[0].has(sp.exp):
            raise ClaimError(f"exp() of exp() at {_where(node)} is not supported")
        return self.functions[name](*arguments)


def parse_term(
    text: str,
    names: Mapping[str, sp.Expr],
    entries: Mapping[str, Mapping[str, sp.Expr]] | None = None,
    functions: Mapping[str, Callable[..., sp.Expr]] = TERM_FUNCTIONS,
) -> sp.Expr:
    """One expression of a layer definition, under the claims' whitelist and bounds.

    ``names`` are the bare names it may use, ``entries`` the subscripted ones
    (``{"x": {"i": x[i]}}`` allows ``x[i]`` only), ``functions`` the calls.
    """
    body = parse_expression(text, names, {})
    if isinstance(body, ast.Compare):
        raise ClaimError("an expression is expected here, not a relation")
    return _TermBuilder(text.strip(), names, entries or {}, functions).build(body)
