"""The PyTorch backend: a ``torch.autograd.Function`` whose backward is the derived input gradient.

The backward pass is written in differentiable torch operations on the saved
inputs, so autograd differentiates it again: double backward works.  epsilon
is a tensor input too: its gradient is the derived d<dy, y>/d epsilon.
"""

from __future__ import annotations

import functools

import sympy as sp
from sympy.printing.pycode import AbstractPythonCodePrinter, PythonCodePrinter

from derivations.codegen._program import (
    DEPSILON,
    DY,
    SIZE,
    Program,
    X,
    array_statistics,
    half_power,
    rescaled,
    shared,
)


class _Guarded(sp.Symbol):
    """A variable of the emitted code read through torch.where where a branch is taken (`_guarded`)."""


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
            # SymPy's TorchPrinter takes no ``rational``: a fourth root (of an L4 layer) reached it with one.
            return half_power(self, expr, "torch.sqrt") or super()._print_Pow(expr)

        def _print_Relational(self, expr: sp.core.relational.Relational) -> str:
            # Operators, not torch.ge: epsilon is a Python float, the statistic a tensor.
            return f"({self._print(expr.lhs)} {expr.rel_op} {self._print(expr.rhs)})"

        def _print_Piecewise(self, expr: sp.Piecewise) -> str:
            # A clamped layer's derivative is given on the open regimes only; on the
            # boundary it does not exist: NaN, as in the NumPy functions.
            if expr.args[-1].cond != sp.true:
                expr = sp.Piecewise(*expr.args, (sp.nan, True))
            return super()._print_Piecewise(sp.Piecewise(*(self._guarded(v, c) for v, c in expr.args)))

        def _guarded(self, value: sp.Expr, condition: sp.Basic) -> tuple[sp.Expr, sp.Basic]:
            """A branch whose divisors and roots are 1 where it is not taken: torch.where passes a zero
            gradient to the branch not taken, and zero times the infinite derivative of 1/s or sqrt(s)
            at s = 0 is NaN (a double backward through a clamped layer at x = 0 gave NaN)."""
            if condition == sp.true or not isinstance(value, sp.Expr):
                return value, condition
            risky = {
                symbol
                for power in value.atoms(sp.Pow)
                if power.exp.is_number and power.exp < 1
                for symbol in power.base.free_symbols
                if symbol != SIZE and not isinstance(symbol, _Guarded)
            }
            taken = self._print(condition)
            safe = {s: _Guarded(f"torch.where({taken}, {s.name}, torch.ones_like({s.name}))") for s in risky}
            return value.xreplace(safe), condition

    return Printer


# Input checks and the scale, the same in every emitted torch module: epsilon broadcasts against
# x's rows (its batch shape, x.shape[:-1]) as in `numeric`, and is refused where it does not.
HELPERS = '''
def _inputs(x, epsilon):
    """epsilon as a tensor like x, positive and finite, with a trailing axis for x's entries."""
    epsilon = torch.as_tensor(epsilon, dtype=x.dtype, device=x.device)
    if not bool(torch.isfinite(epsilon).all()):
        raise ValueError(f"epsilon must be finite, got {epsilon[~torch.isfinite(epsilon)].flatten()[0].item()}")
    if not bool((epsilon > 0).all()):
        raise ValueError(f"epsilon must be positive, got {epsilon[epsilon <= 0].flatten()[0].item()}")
    try:
        torch.broadcast_shapes(epsilon.shape, x.shape[:-1])
    except RuntimeError:
        batch = tuple(x.shape[:-1])
        raise ValueError(
            f"epsilon of shape {tuple(epsilon.shape)} does not broadcast with the batch shape {batch} of x"
        ) from None
    return epsilon[..., None]


def _scale(size, root, within=1.0):
    """A power of two above max(size, root), at most the dtype's largest power of two over within
    (a power of two): dividing by it is exact, and within times it is finite.  It is piecewise
    constant in x and epsilon: no gradient flows through it."""
    bound = torch.maximum(size, root).detach()
    _, exponent = torch.frexp(bound)
    _, used = torch.frexp(torch.as_tensor(within, dtype=bound.dtype).detach())
    largest = math.frexp(torch.finfo(bound.dtype).max)[1]
    return torch.ldexp(torch.ones_like(bound), torch.minimum(exponent, largest - used))
'''


def _lines(printer: AbstractPythonCodePrinter, names: list[str], exprs: list[sp.Expr]) -> list[str]:
    replacements, reduced = shared(exprs)
    out = [f"    {symbol} = {printer.doprint(value)}" for symbol, value in replacements]
    return out + [f"    {name} = {printer.doprint(expr)}" for name, expr in zip(names, reduced, strict=True)]


def _statistics(program: Program, printer: AbstractPythonCodePrinter) -> list[str]:
    """The scale m, x and epsilon divided by it, and the statistics of the scaled row."""
    return array_statistics(
        program,
        printer,
        f"epsilon = _inputs({X}, epsilon)",
        "torch.mean({}, dim=-1, keepdim=True)",
        "torch.amax(torch.abs({}), dim=-1, keepdim=True)",
        "torch.where({}, {}, {})",
    )


def emit(program: Program) -> str:
    """A self-contained PyTorch module for ``program``."""
    printer = _printer()()
    helpers = HELPERS.strip("\n").splitlines()
    forward, backward, autograd = _forward(program, printer), _backward(program, printer), _autograd(program)
    body = [*helpers, "", "", *forward, "", "", *backward, "", "", *autograd, ""]
    return "\n".join([program.header("# ", "torch"), "", "import math", "", "import torch", "", "", *body])


def _parameters(program: Program) -> str:
    return "".join(f", {p}" for p in program.parameters)


def _forward(program: Program, printer: AbstractPythonCodePrinter) -> list[str]:
    """The forward function's lines."""
    return [
        f"def {program.forward}({X}, epsilon{_parameters(program)}):",
        '    """The layer along the last axis of x, in plain torch operations."""',
        *_statistics(program, printer),
        *_lines(printer, ["y"], [program.output]),
        f"    return {rescaled('y', program.degrees['y'])}",
    ]


def _backward(program: Program, printer: AbstractPythonCodePrinter) -> list[str]:
    """The lines of ``_backward`` (every gradient and d<dy, y>/d epsilon) and of the backward function."""
    params, degrees = _parameters(program), program.degrees
    names = [name for name, _ in program.evaluated]
    returned = ", ".join(names)
    summed = "; parameter gradients summed over leading axes" if names[1:] else ""
    everything = [*names, DEPSILON]
    return [
        f"def _backward({X}, epsilon, {DY}{params}):",
        f'    """{returned} and d<dy, y>/d epsilon (of epsilon\'s shape); differentiable torch operations."""',
        *_statistics(program, printer)[:1],
        "    shape_epsilon = epsilon.shape",
        *_statistics(program, printer)[1:],
        f"    shape = torch.broadcast_shapes({X}.shape, {DY}.shape)",
        *(f"    {s.symbol} = {printer.doprint(s.expr)}" for s in program.guards),
        *(f"    {s.symbol} = torch.mean({printer.doprint(s.expr)}, dim=-1, keepdim=True)" for s in program.means),
        *_lines(printer, everything, [*(expr for _, expr in program.evaluated), program.depsilon]),
        f"    {names[0]} = ({rescaled(names[0], degrees[names[0]])}).expand(shape)",
        *(
            f"    {name} = ({rescaled(name, degrees[name])}).expand(shape).reshape(-1, {SIZE}).sum(0)"
            for name in names[1:]
        ),
        f"    {DEPSILON} = torch.sum({DEPSILON}.expand(shape), dim=-1, keepdim=True)",
        f"    {DEPSILON} = {rescaled(DEPSILON, degrees[DEPSILON])}",
        f"    {DEPSILON} = {DEPSILON}.sum_to_size(shape_epsilon)[..., 0]",
        f"    return {', '.join(everything)}",
        "",
        "",
        f"def {program.backward}({X}, epsilon, {DY}{params}):",
        f'    """{returned} for the upstream gradient dy{summed}; differentiable torch operations."""',
        f"    return _backward({X}, epsilon, {DY}{params})[{':-1' if names[1:] else '0'}]",
    ]


def _autograd(program: Program) -> list[str]:
    """The lines of the autograd Function and of the function that applies it."""
    params = _parameters(program)
    names = [name for name, _ in program.evaluated]
    everything = [*names, DEPSILON]
    function = "".join(part.capitalize() for part in program.key.split("_")) + "Function"
    saved = ", ".join([str(X), "epsilon", *map(str, program.parameters)])
    returns = ", ".join(
        [f"{names[0]}.sum_to_size({X}.shape)", f"{DEPSILON} if ctx.needs_input_grad[1] else None", *names[1:]]
    )
    return [
        f"class {function}(torch.autograd.Function):",
        f'    """{program.title}: forward and the derived backward, in x, epsilon and the parameters."""',
        "",
        "    @staticmethod",
        f"    def forward(ctx, {X}, epsilon{params}):",
        f"        ctx.save_for_backward({saved})",
        f"        return {program.forward}({X}, epsilon{params})",
        "",
        "    @staticmethod",
        f"    def backward(ctx, {DY}):",
        f"        {saved} = ctx.saved_tensors",
        f"        {', '.join(everything)} = _backward({X}, epsilon, {DY}{params})",
        f"        return {returns}",
        "",
        "",
        f"def {program.key}({X}, epsilon{params}):",
        f'    """{program.title}, differentiated by the derived backward (twice too); epsilon a number or'
        ' a tensor of a shape that broadcasts with x.shape[:-1]."""',
        f"    epsilon = torch.as_tensor(epsilon, dtype={X}.dtype, device={X}.device)",
        f"    return {function}.apply({X}, epsilon{params})",
    ]
