"""The C99 backend: forward and backward for one row of n doubles.

Every statistic is a mean taken in its own pass over the row, in the order
the layer defines them: the mean first, then the mean square of the
centered entries x[j] - mu (the two-pass variance, with no cancellation
between a mean of squares and a squared mean).  The means of the upstream
gradient are likewise of dy and dy * (x - mu).  Expressions that do not
depend on the entry are computed once, outside the loops.
"""

from __future__ import annotations

import sympy as sp
from sympy.printing.c import C99CodePrinter

from derivations.codegen._program import CENTERED, DY, SIZE, Program, X, half_power, shared

INDEX = "j"


class Printer(C99CodePrinter):
    """C99 printer in which a vector's symbol is its entry ``name[j]``."""

    def __init__(self, vectors: frozenset[sp.Symbol]) -> None:
        super().__init__()
        self._vectors = vectors

    def _print_Symbol(self, expr: sp.Symbol) -> str:
        name = super()._print_Symbol(expr)
        return f"{name}[{INDEX}]" if expr in self._vectors else name

    def _print_Pow(self, expr: sp.Pow, rational: bool = False) -> str:
        return half_power(self, expr, "sqrt", "1.0") or super()._print_Pow(expr)

    def _print_Piecewise(self, expr: sp.Piecewise) -> str:
        # A derivative of a clamped layer is given on the open regimes only:
        # on the boundary between them it does not exist, NAN as in NumPy's select.
        if expr.args[-1].cond != sp.true:
            expr = sp.Piecewise(*expr.args, (sp.nan, True))
        return super()._print_Piecewise(expr)


def _uncentered(program: Program, expr: sp.Expr) -> sp.Expr:
    """The centered entry c written as its definition x[j] - mu, computed where it is used."""
    for step in program.statistics:
        if step.symbol == CENTERED:
            return expr.xreplace({CENTERED: step.expr})
    return expr


def _loop(program: Program, printer: Printer, targets: list[str], exprs: list[sp.Expr], assign: list[str]) -> list[str]:
    """Scalar shared parts before the loop, the entry's own inside it."""
    replacements, reduced = shared([_uncentered(program, e) for e in exprs])
    vectors = set(program.vectors)
    before, inside = [], []
    for symbol, value in replacements:
        line = f"const double {symbol} = {printer.doprint(value)};"
        if value.free_symbols & vectors:
            vectors.add(symbol)
            inside.append(f"        {line}")
        else:
            before.append(f"    {line}")
    inside += [f"        {t} {op} {printer.doprint(e)};" for t, e, op in zip(targets, reduced, assign, strict=True)]
    loop = f"    for (int {INDEX} = 0; {INDEX} < {SIZE}_; ++{INDEX}) {{"
    return [*before, loop, *inside, "    }"]


def _statistics(program: Program, printer: Printer) -> list[str]:
    out = [f"    const double {SIZE} = (double){SIZE}_;"]
    for step in program.statistics:
        if step.vector:
            continue
        if step.mean:
            out += [f"    double {step.symbol} = 0.0;"]
            out += _loop(program, printer, [str(step.symbol)], [step.expr], ["+="])
            out += [f"    {step.symbol} /= {SIZE};"]
        else:
            out += [f"    const double {step.symbol} = {printer.doprint(_uncentered(program, step.expr))};"]
    return out


def _unused(program: Program, names: list[str], exprs: list[sp.Expr]) -> list[str]:
    used = set().union(*(e.free_symbols for e in exprs))
    return [f"    (void){name};" for name in names if sp.Symbol(name, real=True) not in used]


def emit(program: Program) -> str:
    """A self-contained C99 source for ``program``."""
    printer = Printer(program.vectors)
    params = "".join(f", const double *{p}" for p in program.parameters)
    names = [name for name, _ in program.gradients]
    outputs = "".join(f", double *{name}" for name in names)
    statistics = [s.expr for s in program.statistics]
    forward = [
        f"void {program.key}_{program.forward}(int {SIZE}_, const double *{X}, double epsilon{params}, double *y)",
        "{",
        *_unused(program, [str(p) for p in program.parameters], [*statistics, program.output]),
        *_statistics(program, printer),
        *_loop(program, printer, ["y[j]"], [program.output], ["="]),
        "}",
    ]
    gradients = [expr for _, expr in program.gradients]
    means = []
    for step in program.means:
        means += [f"    double {step.symbol} = 0.0;"]
        means += _loop(program, printer, [str(step.symbol)], [step.expr], ["+="])
        means += [f"    {step.symbol} /= {SIZE};"]
    backward = [
        f"void {program.key}_backward(int {SIZE}_, const double *{X}, double epsilon, const double *{DY}{params}"
        f"{outputs})",
        "{",
        *_unused(
            program, [str(p) for p in program.parameters], [*statistics, *(s.expr for s in program.means), *gradients]
        ),
        *_statistics(program, printer),
        *means,
        *_loop(program, printer, [f"{name}[j]" for name in names], gradients, ["=", *("+=" for _ in names[1:])]),
        "}",
    ]
    accumulate = (
        [f" * {', '.join(names[1:])} are added to (zero them before the first row): a batch's sum."]
        if names[1:]
        else []
    )
    notes = [
        "/*",
        f" * {program.key}_{program.forward}: y = the layer of one row x[0 .. n-1].",
        f" * {program.key}_backward: {names[0]} for the upstream gradient {DY} of one row.",
        *accumulate,
        " */",
    ]
    return "\n".join([program.header("// "), *notes, "", "#include <math.h>", "", *forward, "", *backward, ""])
