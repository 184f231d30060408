"""A small generic mutation operator set, beside cosmic-ray's: the kinds of change an outside sampler makes.

Each operator walks a module's syntax tree and yields, for every node it applies to, the
replacement texts of that node's source segment; a mutant is the module with one segment
replaced, every other byte (comments, layout) kept, so that its name (the lines it changes,
`run.key`) is as readable as cosmic-ray's.

    numbers      an int or float constant n -> n + 1, n - 1, n * 2, 0
    compare      a comparison operator -> its neighbours (< <=, == !=, in / not in, is / is not)
    arithmetic   + - * / // % ** -> another of them
    call         a call of one argument f(a) -> a; a call made for its effect -> pass
    statement    an assignment, augmented assignment, raise, assert or del -> pass
    boolean      True <-> False, and <-> or, not a -> a
    subscript    x[0] <-> x[1], x[k] -> x[-1], x[-1] -> x[0]

Docstrings and annotations are left alone: a mutant of either changes no behaviour.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

PREFIX = "generic/"

_COMPARE: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.Gt),
    ast.LtE: (ast.Lt, ast.GtE),
    ast.Gt: (ast.GtE, ast.Lt),
    ast.GtE: (ast.Gt, ast.LtE),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
}
_ARITHMETIC: dict[type[ast.operator], tuple[type[ast.operator], ...]] = {
    ast.Add: (ast.Sub, ast.Mult),
    ast.Sub: (ast.Add,),
    ast.Mult: (ast.Div, ast.Add),
    ast.Div: (ast.Mult, ast.FloorDiv),
    ast.FloorDiv: (ast.Div, ast.Mult),
    ast.Mod: (ast.FloorDiv,),
    ast.Pow: (ast.Mult,),
}
_STATEMENTS = (ast.Assign, ast.AugAssign, ast.Raise, ast.Assert, ast.Delete)


def _annotations(tree: ast.AST) -> set[int]:
    """The ids of every node inside an annotation or a docstring."""
    skipped: set[int] = set()

    def skip(node: ast.AST | None) -> None:
        if node is not None:
            skipped.update(id(inner) for inner in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            skip(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            skip(node.returns)
        elif isinstance(node, ast.AnnAssign):
            skip(node.annotation)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip(first)
    return skipped


def _numbers(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        value = node.value
        for changed in dict.fromkeys((value + 1, value - 1, value * 2, type(value)(0))):
            if changed != value:
                yield ast.Constant(changed)


def _compare(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.Compare):
        for place, op in enumerate(node.ops):
            for other in _COMPARE[type(op)]:
                ops = [*node.ops[:place], other(), *node.ops[place + 1 :]]
                yield ast.Compare(node.left, ops, node.comparators)


def _arithmetic(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        for other in _ARITHMETIC[type(node.op)]:
            yield ast.BinOp(node.left, other(), node.right)
    elif isinstance(node, ast.AugAssign) and type(node.op) in _ARITHMETIC:
        for other in _ARITHMETIC[type(node.op)]:
            yield ast.AugAssign(node.target, other(), node.value)


def _call(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        yield ast.Pass()
    elif isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        (argument,) = node.args
        yield from () if isinstance(argument, ast.Starred) else (argument,)


def _statement(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, _STATEMENTS):
        yield ast.Pass()


def _boolean(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield ast.Constant(not node.value)
    elif isinstance(node, ast.BoolOp):
        yield ast.BoolOp(ast.Or() if isinstance(node.op, ast.And) else ast.And(), node.values)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield node.operand


def _index(node: ast.AST) -> int | None:
    """The integer an index constant names (-1 for ``-1``), or None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value if type(node.operand.value) is int else None
    return None


def _subscript(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.Subscript):
        index = _index(node.slice)
        if index is None:
            return
        for other in {0: (1, -1), 1: (0, -1), -1: (0,)}.get(index, (-1,)):
            slice_: ast.expr = ast.Constant(other) if other >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-other))
            yield ast.Subscript(node.value, slice_, node.ctx)


OPERATORS: dict[str, Callable[[ast.AST], Iterator[ast.AST]]] = {
    "numbers": _numbers,
    "compare": _compare,
    "arithmetic": _arithmetic,
    "call": _call,
    "statement": _statement,
    "boolean": _boolean,
    "subscript": _subscript,
}


def _offsets(source: bytes) -> list[int]:
    """The byte offset of each line's start (1-based line numbers index it): the tree's columns are
    offsets in UTF-8 bytes."""
    starts = [0, 0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def positions(source: str, operator: str) -> list[tuple[int, int, int, str]]:
    """Every mutant ``operator`` makes of ``source``: (line, start, end, replacement), in tree order,
    where the UTF-8 bytes ``start:end`` of ``source`` are the segment replaced."""
    tree = ast.parse(source)
    skipped = _annotations(tree)
    for node in ast.walk(tree):  # the columns inside an f-string are not the source's
        if isinstance(node, ast.JoinedStr):
            skipped.update(id(inner) for inner in ast.walk(node))
    starts = _offsets(source.encode())
    out = []
    for node in ast.walk(tree):
        if id(node) in skipped or not hasattr(node, "end_lineno") or node.end_lineno is None:
            continue
        for replacement in OPERATORS[operator](node):
            start = starts[node.lineno] + node.col_offset
            end = starts[node.end_lineno] + node.end_col_offset
            text = ast.unparse(replacement)
            if isinstance(replacement, ast.expr):
                text = f"({text})"
            out.append((node.lineno, start, end, text))
    return out


def mutate(source: str, operator: str, occurrence: int) -> str | None:
    """``source`` with its ``occurrence``-th mutant of ``operator`` applied, or None past the last."""
    found = positions(source, operator)
    if occurrence >= len(found):
        return None
    _, start, end, text = found[occurrence]
    data = source.encode()
    return (data[:start] + text.encode() + data[end:]).decode()
