"""The one path from a derived SymPy expression to a NumPy function."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import sympy as sp
from sympy.printing.numpy import NumPyPrinter

from derivations.symbols import n

# Powers a**(p/q), q 1 or 2, with |p| up to twice this are printed as products (with one
# sqrt for a half-integer): one multiply is several times cheaper than numpy.power.
_SMALL_POWER = 4


# A symbol whose name ends so stands for a whole block of rows; any other
# value of a fused program is a scalar or one number per row.
ROW = "_row"


def row_symbol(name: str) -> sp.Symbol:
    """A symbol for a block of rows (x, dy, v, a parameter) in a fused program."""
    return sp.Symbol(f"{name}{ROW}", real=True)


def is_wide(expr: sp.Basic) -> bool:
    """Whether ``expr`` is a whole block (it has a row symbol outside every row mean)."""
    if isinstance(expr, RowMean):
        return False
    if isinstance(expr, sp.Symbol):
        return expr.name.endswith(ROW)
    return any(is_wide(arg) for arg in expr.args)


class RowMean(sp.Function):
    """The mean of its argument over the last axis, kept as an axis of length 1.

    A fused program writes each statistic as the row mean of its summand, so
    that one lambdified function computes the statistics and the result, with
    `sympy.cse` sharing what they have in common (x - mean(x), say).
    """

    nargs = 1


class _Printer(NumPyPrinter):
    """NumPy printer that spells small integer and half-integer powers out, and row means."""

    def _cosh(self, sech: sp.Expr) -> str:
        """The cosh whose reciprocal ``sech`` (a sech or a `SechOfProduct`) is."""
        if isinstance(sech, SechOfProduct):
            return f"cosh_of_product({self._print(sech.args[0])}, {self._print(sech.args[1])})"
        return f"{self._module}.cosh({self._print(sech.args[0])})"

    def _print_sech(self, expr: sp.sech) -> str:
        # 1/cosh: cosh overflows to inf only where sech is below the float range, and 1/inf is 0.
        return f"(1/{self._cosh(expr)})"

    def _print_SechOfProduct(self, expr: SechOfProduct) -> str:
        return f"(1/{self._cosh(expr)})"

    def _print_RowMean(self, expr: RowMean) -> str:
        # numpy.mean's own steps (the pairwise sum, then a division by the count, the n every
        # fused program takes), without its Python wrapper around each block.
        summed = f"{self._module}.add.reduce({self._print(expr.args[0])}, axis=-1, keepdims=True)"
        return f"({summed}/{self._print(n)})"

    def _print_Mul(self, expr: sp.Mul) -> str:
        quotient = self._over_cosh(expr)
        if quotient is not None:
            return quotient
        # Per-row factors multiplied together first: a block is then
        # multiplied once by their product, not once by each of them.
        wide = [f for f in expr.args if is_wide(f)]
        if not wide or len(wide) == len(expr.args):
            return super()._print_Mul(expr)
        narrow = sp.Mul(*(f for f in expr.args if not is_wide(f)))
        block = self.parenthesize(sp.Mul(*wide), sp.printing.precedence.PRECEDENCE["Mul"])
        if narrow == -1:
            return f"-{block}"
        return f"({self._print(narrow)})*{block}"

    def _over_cosh(self, expr: sp.Mul) -> str | None:
        """c * sech(u)**m as c / cosh(u) / ... / cosh(u); None where ``expr`` has no such factor."""
        # sech(u)**m alone underflows where c * sech(u)**m is still a normal number
        # (alpha = 1e100, alpha t = 468).
        kinds = (sp.sech, SechOfProduct)
        sech = [f for f in expr.args if isinstance(f, kinds) or (f.is_Pow and isinstance(f.base, kinds))]
        if not sech or any(f.is_Pow and not (f.exp.is_Integer and f.exp > 0) for f in sech):
            return None
        rest = sp.Mul(*(f for f in expr.args if f not in sech))
        tex = self.parenthesize(rest, sp.printing.precedence.PRECEDENCE["Mul"])
        for f in sech:
            power, base = (int(f.exp), f.base) if f.is_Pow else (1, f)
            tex += f"/{self._cosh(base)}" * power
        return tex

    def _print_Add(self, expr: sp.Add, order: str | None = None) -> str:
        # The per-row terms summed first, then added to the block once.
        wide = [term for term in expr.args if is_wide(term)]
        if not wide or len(wide) == len(expr.args):
            return super()._print_Add(expr, order=order)
        narrow = sp.Add(*(term for term in expr.args if not is_wide(term)))
        return f"({self._print(narrow)}) + {self.parenthesize(sp.Add(*wide), sp.printing.precedence.PRECEDENCE['Add'])}"

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


def _shared_subexpressions(expr: Any) -> tuple[list[tuple[sp.Symbol, sp.Expr]], Any]:
    """``sympy.cse``, plus a name for every compound base of a half-integer power.

    The printer spells b**(3/2) as b*sqrt(b); naming b evaluates it once.
    ``expr`` is one expression or a list of them (a program's several results).
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
    if isinstance(reduced, list):
        reduced = [e.replace(is_half_power, name_base) for e in reduced]
    else:
        reduced = reduced.replace(is_half_power, name_base)
    # Each named base right before its first use: it is built from earlier shared values only.
    pending = {name: base for base, name in bases.items()}
    ordered: list[tuple[sp.Symbol, sp.Expr]] = []
    for name, value in replacements:
        for used in sorted(value.free_symbols & pending.keys(), key=str):
            ordered.append((used, pending.pop(used)))
        ordered.append((name, value))
    replacements = ordered + list(pending.items())
    # A shared value that is a whole block is named as one, for the printer.
    wide: dict[sp.Symbol, sp.Symbol] = {}
    for m, (name, value) in enumerate(replacements):
        value = value.xreplace(wide)
        if is_wide(value):
            wide[name] = row_symbol(name.name)
        replacements[m] = (wide.get(name, name), value)
    reduced = [e.xreplace(wide) for e in reduced] if isinstance(reduced, list) else reduced.xreplace(wide)
    return replacements, reduced


class SechOfProduct(sp.Function):
    """sech(a b), kept as one node so that `sympy.cse` does not name the rounded product a b."""

    nargs = 2


def _split(value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Veltkamp: value = high + low, each with at most 26 significant bits.
    scaled = 134217729.0 * value
    high = scaled - (scaled - value)
    return high, value - high


def cosh_of_product(a: Any, b: Any) -> Any:
    """cosh(a b) with the product taken exactly (Dekker's two-product, a b = p + e).

    cosh is ill-conditioned in its argument: a relative error d in a b moves
    cosh(a b) by |a b| tanh|a b| d, hundreds of ulp where |a b| is hundreds.
    The rounding e is put back to first order, cosh(p + e) = cosh(p) (1 + tanh(p) e),
    which is exact to the format (e is at most half an ulp of p).  Where the
    split overflows (|a| or |b| beyond 1e300) e is dropped.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    product = a * b
    with np.errstate(all="ignore"):
        (a_high, a_low), (b_high, b_low) = _split(a), _split(b)
        error = ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low
        error = np.where(np.isfinite(error), error, 0.0)
        return np.cosh(product) * (1 + np.tanh(product) * error)


def _exact_products(expr: sp.Expr) -> sp.Expr:
    """Each sech of a product of two factors as `SechOfProduct`, printed through `cosh_of_product`."""

    def two_factors(e: sp.Basic) -> bool:
        if not isinstance(e, sp.sech) or not e.args[0].is_Mul:
            return False
        coefficient, rest = e.args[0].as_coeff_Mul()
        return abs(coefficient) == 1 and len(sp.Mul.make_args(rest)) == 2

    def exact(e: sp.sech) -> sp.Expr:
        # sech is even: a sign in front of the product does not matter.
        first, second = sp.Mul.make_args(e.args[0].as_coeff_Mul()[1])
        return SechOfProduct(first, second)

    return expr.replace(two_factors, exact)


def compile(expr: sp.Expr | list[sp.Expr], args: Sequence[sp.Symbol]) -> Callable[..., Any]:
    """``lambdify(args, expr)`` for NumPy, with common subexpressions shared; a list of
    expressions gives a function returning the list of their values."""
    exprs = [_exact_products(e) for e in expr] if isinstance(expr, list) else _exact_products(expr)
    return sp.lambdify(
        args,
        exprs,
        # The printer qualifies every name (numpy.sqrt): the namespace needs numpy itself, not
        # lambdify's "numpy" module, whose `from numpy import *` imports f2py and the other
        # lazy submodules, a quarter of a second in each process (and functools, for Max and Min).
        modules=[{"cosh_of_product": cosh_of_product, "numpy": np, "functools": functools}],
        printer=_Printer,
        cse=_shared_subexpressions,
        docstring_limit=None,
    )
