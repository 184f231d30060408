"""The one path from a derived SymPy expression to a NumPy function."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import sympy as sp
from sympy.printing.numpy import NumPyPrinter

# Powers up to this order are printed as products: one multiply is several
# times cheaper than numpy.power, and these orders are exact either way.
_SMALL_POWER = 4


class _Printer(NumPyPrinter):
    """NumPy printer that spells small integer and half-integer powers out."""

    def _print_Pow(self, expr: sp.Pow, rational: bool = False) -> str:
        base, exponent = expr.base, expr.exp
        if exponent.is_Rational and exponent.q in (1, 2) and abs(exponent.p) <= 2 * _SMALL_POWER:
            b = self.parenthesize(base, sp.printing.precedence.PRECEDENCE["Mul"] + 1)
            whole = abs(exponent.p) // exponent.q
            factors = [b] * whole
            if exponent.q == 2:
                factors.append(f"{self._module}.sqrt({self._print(base)})")
            product = "*".join(factors) or "1"
            return f"(1/({product}))" if exponent < 0 else f"({product})"
        return super()._print_Pow(expr, rational=rational)


def _shared_subexpressions(expr: sp.Expr) -> tuple[list[tuple[sp.Symbol, sp.Expr]], sp.Expr]:
    """``sympy.cse``, plus a name for every compound base of a half-integer power.

    The printer spells b**(3/2) as b*sqrt(b); naming b evaluates it once.
    """
    replacements, reduced = sp.cse(expr, list=False)
    names = (sp.Symbol(f"b{m}") for m in itertools.count())
    bases: dict[sp.Expr, sp.Symbol] = {}

    def name_base(power: sp.Pow) -> sp.Expr:
        if power.base not in bases:
            bases[power.base] = next(names)
        return bases[power.base] ** power.exp

    def is_half_power(e: sp.Basic) -> bool:
        return bool(e.is_Pow and e.exp.is_Rational and e.exp.q == 2 and abs(e.exp.p) > 1 and not e.base.is_Symbol)

    replacements = [(name, value.replace(is_half_power, name_base)) for name, value in replacements]
    reduced = reduced.replace(is_half_power, name_base)
    return replacements + [(name, base) for base, name in bases.items()], reduced


def compile(expr: sp.Expr, args: Sequence[sp.Symbol]) -> Callable[..., Any]:
    """``lambdify(args, expr)`` for NumPy, with common subexpressions shared."""
    return sp.lambdify(args, expr, modules="numpy", printer=_Printer, cse=_shared_subexpressions, docstring_limit=None)
