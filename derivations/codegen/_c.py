"""The C99 backend: forward and backward for one row of n doubles.

Every statistic is a mean taken in its own pass over the row, in the order
the layer defines them: the mean first, then the mean square of the
centered entries x[j] - mu (the two-pass variance, with no cancellation
between a mean of squares and a squared mean).  The means of the upstream
gradient are likewise of dy and dy * (x - mu).  Expressions that do not
depend on the entry are computed once, outside the loops.  The row is read at
its scale (`derivations.codegen._program`): an entry x[j] is x[j] / m_x, and
a centered entry ((x[j] / m_x - mu) - center) / m_c.
"""

from __future__ import annotations

import sympy as sp
from sympy.printing.c import C99CodePrinter

from derivations.codegen._program import CENTERED, DY, ROOT, SCALE, SIZE, Program, X, half_power, rescaled, shared

INDEX = "j"
FIRST = f"{SCALE}_{X}"  # the scale of x
SECOND = f"{SCALE}_{CENTERED}"  # the further scale of the centered entries
CENTER = "center"  # the mean of the centered entries as first computed, a rounding error

HELPER = f"""static double power_of_two_above(double size, double {ROOT}, double within)
{{
    /* A power of two above max(size, {ROOT}), at most 2**1023 / within (a power of two):
       dividing by it is exact, and within times it is finite. */
    int exponent, used;
    frexp(fmax(size, {ROOT}), &exponent);
    frexp(within, &used);
    return ldexp(1.0, exponent < 1024 - used ? exponent : 1024 - used);
}}"""


class Printer(C99CodePrinter):
    """C99 printer in which a vector's symbol is its entry ``name[j]``, x and c at their scale."""

    def __init__(self, vectors: frozenset[sp.Symbol], centered: sp.Expr | None = None) -> None:
        super().__init__()
        self._vectors = vectors
        self._centered = centered

    def _print_Symbol(self, expr: sp.Symbol) -> str:
        name = super()._print_Symbol(expr)
        if expr == X:
            return f"({name}[{INDEX}] / {FIRST})"
        if expr == CENTERED and self._centered is not None:
            # Subtracted in this order: a constant row's entries become exactly 0.
            return f"(({self._print(self._centered)} - {CENTER}) / {SECOND})"
        return f"{name}[{INDEX}]" if expr in self._vectors else name

    def _print_Pow(self, expr: sp.Pow, rational: bool = False) -> str:
        return half_power(self, expr, "sqrt", "1.0") or super()._print_Pow(expr)

    def _print_Piecewise(self, expr: sp.Piecewise) -> str:
        # A derivative of a clamped layer is given on the open regimes only:
        # on the boundary between them it does not exist, NAN as in NumPy's select.
        if expr.args[-1].cond != sp.true:
            expr = sp.Piecewise(*expr.args, (sp.nan, True))
        # One line: nested conditional expressions, the last branch the default.
        out = self._print(expr.args[-1].expr)
        for value, condition in reversed(expr.args[:-1]):
            out = f"(({self._print(condition)}) ? ({self._print(value)}) : ({out}))"
        return out


def _loop(
    program: Program,
    printer: Printer,
    targets: list[str],
    exprs: list[sp.Expr],
    assign: list[str],
    degrees: list[int] | None = None,
) -> list[str]:
    """Scalar shared parts before the loop, the entry's own inside it; each result times m**degree."""
    replacements, reduced = shared(exprs)
    vectors = set(program.vectors)
    before, inside = [], []
    for symbol, value in replacements:
        line = f"const double {symbol} = {printer.doprint(value)};"
        if value.free_symbols & vectors:
            vectors.add(symbol)
            inside.append(f"        {line}")
        else:
            before.append(f"    {line}")
    values = [printer.doprint(e) for e in reduced]
    values = [rescaled(f"({v})", d) if d else v for v, d in zip(values, degrees or [0] * len(values), strict=True)]
    inside += [f"        {t} {op} {v};" for t, v, op in zip(targets, values, assign, strict=True)]
    loop = f"    for (int {INDEX} = 0; {INDEX} < {SIZE}_; ++{INDEX}) {{"
    return [*before, loop, *inside, "    }"]


def _mean(program: Program, printer: Printer, name: str, expr: sp.Expr) -> list[str]:
    return [
        f"    double {name} = 0.0;",
        *_loop(program, printer, [name], [expr], ["+="]),
        f"    {name} /= {SIZE};",
    ]


def _largest(name: str, entry: str) -> list[str]:
    loop = f"    for (int {INDEX} = 0; {INDEX} < {SIZE}_; ++{INDEX}) {{"
    return [f"    double {name} = 0.0;", loop, f"        {name} = fmax({name}, fabs({entry}));", "    }"]


def _statistics(program: Program, printer: Printer) -> list[str]:
    """The scale, epsilon at it, and the statistics of the scaled row."""
    out = [
        f"    const double {SIZE} = (double){SIZE}_;",
        f"    const double {ROOT} = {printer.doprint(program.root)};",
        *_largest("top", f"{X}[{INDEX}]"),
        f"    const double {FIRST} = power_of_two_above(top, {ROOT}, 1.0);",
    ]
    scaled = [f"    epsilon = {printer.doprint(program.scaled_epsilon)};"]
    if not program.centered:
        out += [f"    const double {SCALE} = {FIRST};", *scaled]
    for step in program.statistics:
        if step.vector:
            # Centered once more (the first mean's rounding is left in c: a constant row becomes
            # exactly 0), then divided by its own size: c is O(1) even where the offset dwarfs it.
            first = printer.doprint(step.expr)
            out += _mean(program, printer, CENTER, step.expr)
            out += _largest("top_c", f"{first} - {CENTER}")
            out += [
                f"    const double {SECOND} = power_of_two_above(top_c, {ROOT} / {FIRST}, {FIRST});",
                # A constant row (top_c exactly 0) has epsilon's scale alone: ROOT / FIRST may underflow.
                f"    const double {SCALE} = top_c == 0.0 ? power_of_two_above({ROOT}, {ROOT}, 1.0)"
                f" : {FIRST} * {SECOND};",
                *scaled,
            ]
        elif step.mean:
            out += _mean(program, printer, str(step.symbol), step.expr)
        else:
            out += [f"    const double {step.symbol} = {printer.doprint(step.expr)};"]
    return out


def _unused(program: Program, names: list[str], exprs: list[sp.Expr]) -> list[str]:
    used = set().union(*(e.free_symbols for e in exprs))
    return [f"    (void){name};" for name in names if sp.Symbol(name, real=True) not in used]


def emit(program: Program) -> str:
    """A self-contained C99 source for ``program``."""
    centered = next((step.expr for step in program.statistics if step.vector), None)
    printer = Printer(program.vectors, centered)
    params = "".join(f", const double *{p}" for p in program.parameters)
    names = [name for name, _ in program.evaluated]
    outputs = "".join(f", double *{name}" for name in names)
    statistics = [s.expr for s in program.statistics]
    forward = [
        f"void {program.key}_{program.forward}(int {SIZE}_, const double *{X}, double epsilon{params}, double *y)",
        "{",
        *_unused(program, [str(p) for p in program.parameters], [*statistics, program.output]),
        *_statistics(program, printer),
        *_loop(program, printer, ["y[j]"], [program.output], ["="], [program.degrees["y"]]),
        "}",
    ]
    gradients = [expr for _, expr in program.evaluated]
    means = [line for step in program.means for line in _mean(program, printer, str(step.symbol), step.expr)]
    guards = [f"    const double {s.symbol} = {printer.doprint(s.expr)};" for s in program.guards]
    backward = [
        f"void {program.key}_backward(int {SIZE}_, const double *{X}, double epsilon, const double *{DY}{params}"
        f"{outputs})",
        "{",
        *_unused(
            program, [str(p) for p in program.parameters], [*statistics, *(s.expr for s in program.means), *gradients]
        ),
        *_statistics(program, printer),
        *guards,
        *means,
        *_loop(
            program,
            printer,
            [f"{name}[j]" for name in names],
            gradients,
            ["=", *("+=" for _ in names[1:])],
            [program.degrees[name] for name in names],
        ),
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
    body = ["#include <math.h>", "", HELPER, "", *forward, "", *backward, ""]
    return "\n".join([program.header("// ", "c"), *notes, "", *body])
