"""The NumPy backend: ``forward`` and the input gradient over the last axis, batched over the others."""

from __future__ import annotations

import sympy as sp
from sympy.printing.numpy import NumPyPrinter

from derivations.codegen._program import (
    DY,
    Program,
    X,
    array_statistics,
    half_power,
    rescaled,
    shared,
)


class Printer(NumPyPrinter):
    """NumPy printer with small integer and half-integer powers spelled as products and one sqrt."""

    def _print_Pow(self, expr: sp.Pow, rational: bool = False) -> str:
        return half_power(self, expr, "np.sqrt") or super()._print_Pow(expr, rational=rational)

    def _module_format(self, fqn: str, register: bool = True) -> str:
        # The module is imported as np by the emitted code.
        return super()._module_format(fqn, register).replace("numpy.", "np.")


# Input checks and the scale, the same in every emitted NumPy module: epsilon broadcasts against
# x's rows (its batch shape, x.shape[:-1]) as in `numeric`, and is refused where it does not.
HELPERS = '''
def _inputs(x, epsilon):
    """x as float64 and epsilon, positive and finite, with a trailing axis for x's entries."""
    x = np.asarray(x, dtype=np.float64)
    epsilon = np.asarray(epsilon, dtype=np.float64)
    if not np.isfinite(epsilon).all():
        raise ValueError(f"epsilon must be finite, got {epsilon[~np.isfinite(epsilon)].flat[0]}")
    if not (epsilon > 0).all():
        raise ValueError(f"epsilon must be positive, got {epsilon[epsilon <= 0].flat[0]}")
    try:
        np.broadcast_shapes(epsilon.shape, x.shape[:-1])
    except ValueError:
        raise ValueError(
            f"epsilon of shape {epsilon.shape} does not broadcast with the batch shape {x.shape[:-1]} of x"
        ) from None
    return x, epsilon[..., None]


def _scale(size, root, within=1.0):
    """A power of two above max(size, root), at most 2**1023 / within (a power of two): dividing
    by it is exact, and within times it is finite."""
    _, exponent = np.frexp(np.maximum(size, root))
    _, used = np.frexp(within)
    return np.ldexp(1.0, np.minimum(exponent, 1024 - used))
'''


def _lines(printer: Printer, names: list[str], exprs: list[sp.Expr]) -> list[str]:
    replacements, reduced = shared(exprs)
    out = [f"{symbol} = {printer.doprint(value)}" for symbol, value in replacements]
    out += [f"{name} = {printer.doprint(expr)}" for name, expr in zip(names, reduced, strict=True)]
    if not any(expr.has(sp.Piecewise) for expr in exprs):
        return [f"    {line}" for line in out]
    # np.select evaluates every branch on every row: one not taken may divide by 0 there.
    return ['    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):', *(f"        {s}" for s in out)]


def _statistics(program: Program, printer: Printer) -> list[str]:
    """The scale m, x and epsilon divided by it, and the statistics of the scaled row."""
    return array_statistics(
        program,
        printer,
        f"{X}, epsilon = _inputs({X}, epsilon)",
        "np.mean({}, axis=-1, keepdims=True)",
        "np.max(np.abs({}), axis=-1, keepdims=True)",
        "np.where({}, {}, {})",
    )


def emit(program: Program) -> str:
    """A self-contained NumPy module for ``program``."""
    printer = Printer()
    params = "".join(f", {p}" for p in program.parameters)
    names = [name for name, _ in program.evaluated]
    forward = [
        f"def {program.forward}({X}, epsilon{params}):",
        '    """The layer along the last axis of x; epsilon of a shape that broadcasts with x.shape[:-1]."""',
        *_statistics(program, printer),
        *_lines(printer, ["y"], [program.output]),
        f"    return {rescaled('y', program.degrees['y'])}",
    ]
    returned = ", ".join(names)
    summed = "; parameter gradients summed over leading axes" if names[1:] else ""
    backward = [
        f"def {program.backward}({X}, epsilon, {DY}{params}):",
        f'    """{returned} for the upstream gradient dy{summed}."""',
        *_statistics(program, printer),
        f"    {DY} = np.asarray({DY})",
        f"    shape = np.broadcast_shapes({X}.shape, {DY}.shape)",
        *(f"    {s.symbol} = {printer.doprint(s.expr)}" for s in program.guards),
        *(f"    {s.symbol} = np.mean({printer.doprint(s.expr)}, axis=-1, keepdims=True)" for s in program.means),
        *_lines(printer, names, [expr for _, expr in program.evaluated]),
        f"    {names[0]} = np.broadcast_to({rescaled(names[0], program.degrees[names[0]])}, shape)",
        *(
            f"    {name} = np.broadcast_to({rescaled(name, program.degrees[name])}, shape)"
            ".sum(axis=tuple(range(len(shape) - 1)))"
            for name in names[1:]
        ),
        f"    return {returned}",
    ]
    body = ["import numpy as np", "", *HELPERS.strip("\n").splitlines(), "", "", *forward, "", "", *backward, ""]
    return "\n".join([program.header("# ", "numpy"), "", *body])
