"""The NumPy backend: ``forward`` and the input gradient over the last axis, batched over the others."""

from __future__ import annotations

import sympy as sp
from sympy.printing.numpy import NumPyPrinter

from derivations.codegen._program import DY, SIZE, Program, X, half_power, shared


class Printer(NumPyPrinter):
    """NumPy printer with small integer and half-integer powers spelled as products and one sqrt."""

    def _print_Pow(self, expr: sp.Pow, rational: bool = False) -> str:
        return half_power(self, expr, "np.sqrt") or super()._print_Pow(expr, rational=rational)

    def _module_format(self, fqn: str, register: bool = True) -> str:
        # The module is imported as np by the emitted code.
        return super()._module_format(fqn, register).replace("numpy.", "np.")


def _lines(program: Program, printer: Printer, names: list[str], exprs: list[sp.Expr]) -> list[str]:
    replacements, reduced = shared(exprs)
    out = [f"    {symbol} = {printer.doprint(value)}" for symbol, value in replacements]
    return out + [f"    {name} = {printer.doprint(expr)}" for name, expr in zip(names, reduced, strict=True)]


def _statistics(program: Program, printer: Printer) -> list[str]:
    out = [f"    {X} = np.asarray({X})", f"    {SIZE} = {X}.shape[-1]"]
    for step in program.statistics:
        value = printer.doprint(step.expr)
        out.append(f"    {step.symbol} = " + (f"np.mean({value}, axis=-1, keepdims=True)" if step.mean else value))
    return out


def emit(program: Program) -> str:
    """A self-contained NumPy module for ``program``."""
    printer = Printer()
    params = "".join(f", {p}" for p in program.parameters)
    names = [name for name, _ in program.gradients]
    forward = [
        f"def {program.forward}({X}, epsilon{params}):",
        '    """The layer along the last axis of x; epsilon a scalar or broadcastable to (..., 1)."""',
        *_statistics(program, printer),
        *_lines(program, printer, ["y"], [program.output]),
        "    return y",
    ]
    returned = ", ".join(names)
    summed = "; parameter gradients summed over leading axes" if names[1:] else ""
    backward = [
        f"def {program.backward}({X}, epsilon, {DY}{params}):",
        f'    """{returned} for the upstream gradient dy{summed}."""',
        *_statistics(program, printer),
        f"    {DY} = np.asarray({DY})",
        f"    shape = np.broadcast_shapes({X}.shape, {DY}.shape)",
        *(f"    {s.symbol} = np.mean({printer.doprint(s.expr)}, axis=-1, keepdims=True)" for s in program.means),
        *_lines(program, printer, names, [expr for _, expr in program.gradients]),
        f"    {names[0]} = np.broadcast_to({names[0]}, shape)",
        *(f"    {name} = np.broadcast_to({name}, shape).sum(axis=tuple(range(len(shape) - 1)))" for name in names[1:]),
        f"    return {returned}",
    ]
    return "\n".join([program.header("# "), "", "import numpy as np", "", "", *forward, "", "", *backward, ""])
