"""The PyTorch backend: a ``torch.autograd.Function`` whose backward is the derived input gradient.

The backward pass is written in differentiable torch operations on the saved
inputs, so autograd differentiates it again: double backward works.
"""

from __future__ import annotations

import functools

import sympy as sp
from sympy.printing.pycode import AbstractPythonCodePrinter, PythonCodePrinter

from derivations.codegen._program import DY, SIZE, Program, X, half_power, shared


@functools.cache
def _printer() -> type[AbstractPythonCodePrinter]:
    """The printer class.  SymPy's TorchPrinter imports torch where it is installed (1.5 s):
    only a command that emits torch code pays for it, not every import of this package."""
    from sympy.printing.pytorch import TorchPrinter

    class Printer(TorchPrinter):
        """Torch printer; powers of the row length alone (a Python int) go through ``math``."""

        def _print_Pow(self, expr: sp.Pow, rational: bool = False) -> str:
            if expr.free_symbols <= {SIZE}:
                return PythonCodePrinter().doprint(expr)
            return half_power(self, expr, "torch.sqrt") or super()._print_Pow(expr, rational=rational)

        def _print_Relational(self, expr: sp.core.relational.Relational) -> str:
            # Operators, not torch.ge: epsilon is a Python float, the statistic a tensor.
            return f"({self._print(expr.lhs)} {expr.rel_op} {self._print(expr.rhs)})"

        def _print_Piecewise(self, expr: sp.Piecewise) -> str:
            # A clamped layer's derivative is given on the open regimes only; on the
            # boundary it does not exist: NaN, as in the NumPy functions.
            if expr.args[-1].cond != sp.true:
                expr = sp.Piecewise(*expr.args, (sp.nan, True))
            return super()._print_Piecewise(expr)

    return Printer


def _lines(printer: AbstractPythonCodePrinter, names: list[str], exprs: list[sp.Expr]) -> list[str]:
    replacements, reduced = shared(exprs)
    out = [f"    {symbol} = {printer.doprint(value)}" for symbol, value in replacements]
    return out + [f"    {name} = {printer.doprint(expr)}" for name, expr in zip(names, reduced, strict=True)]


def _statistics(program: Program, printer: AbstractPythonCodePrinter) -> list[str]:
    out = [f"    {SIZE} = {X}.shape[-1]"]
    for step in program.statistics:
        value = printer.doprint(step.expr)
        out.append(f"    {step.symbol} = " + (f"torch.mean({value}, dim=-1, keepdim=True)" if step.mean else value))
    return out


def emit(program: Program) -> str:
    """A self-contained PyTorch module for ``program``."""
    printer = _printer()()
    params = "".join(f", {p}" for p in program.parameters)
    names = [name for name, _ in program.gradients]
    returned = ", ".join(names)
    function = "".join(part.capitalize() for part in program.key.split("_")) + "Function"
    summed = "; parameter gradients summed over leading axes" if names[1:] else ""
    forward = [
        f"def {program.forward}({X}, epsilon{params}):",
        '    """The layer along the last axis of x, in plain torch operations."""',
        *_statistics(program, printer),
        *_lines(printer, ["y"], [program.output]),
        "    return y",
    ]
    backward = [
        f"def {program.backward}({X}, epsilon, {DY}{params}):",
        f'    """{returned} for the upstream gradient dy{summed}; differentiable torch operations."""',
        *_statistics(program, printer),
        f"    shape = torch.broadcast_shapes({X}.shape, {DY}.shape)",
        *(f"    {s.symbol} = torch.mean({printer.doprint(s.expr)}, dim=-1, keepdim=True)" for s in program.means),
        *_lines(printer, names, [expr for _, expr in program.gradients]),
        f"    {names[0]} = {names[0]}.expand(shape)",
        *(f"    {name} = {name}.expand(shape).reshape(-1, {SIZE}).sum(0)" for name in names[1:]),
        f"    return {returned}",
    ]
    saved = ", ".join([str(X), *map(str, program.parameters)])
    nones = ", ".join(["grads[0]", "None", *(f"grads[{m}]" for m in range(1, len(names)))])
    autograd = [
        f"class {function}(torch.autograd.Function):",
        f'    """{program.title}: forward and the derived backward."""',
        "",
        "    @staticmethod",
        f"    def forward(ctx, {X}, epsilon{params}):",
        f"        ctx.save_for_backward({saved})",
        "        ctx.epsilon = epsilon",
        f"        return {program.forward}({X}, epsilon{params})",
        "",
        "    @staticmethod",
        f"    def backward(ctx, {DY}):",
        f"        {saved}, = ctx.saved_tensors",
        f"        grads = {program.backward}({X}, ctx.epsilon, {DY}{params})",
        "        grads = (grads,)" if len(names) == 1 else "        pass",
        f"        return {nones}",
        "",
        "",
        f"def {program.key}({X}, epsilon{params}):",
        f'    """{program.title}, differentiated by the derived backward (twice too)."""',
        f"    return {function}.apply({X}, epsilon{params})",
    ]
    autograd = [line for line in autograd if line != "        pass"]
    body = [*forward, "", "", *backward, "", "", *autograd, ""]
    return "\n".join([program.header("# "), "", "import math", "", "import torch", "", "", *body])
