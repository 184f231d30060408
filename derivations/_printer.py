r"""SymPy's LaTeX printer, taught the conventions of a paper.

One method per node type, as in SymPy's own printers:

- a sum prints its leading term first and the corrections in epsilon after
  it (:math:`q + \varepsilon`, not :math:`\varepsilon + q`);
- a matrix sum prints the identity first, then the rank-one corrections in
  decreasing order, with a minus sign where a term is negative;
- a rational multiple of a square root prints as one root where that
  removes the fraction's scale (:math:`\sqrt{3/2}`, not :math:`\sqrt{6}/2`);
- the two limits at plus and minus infinity print as one statement with
  :math:`\pm`, other conjunctions as lines of an ``aligned`` block;
- a symbol never prints as a constant: the constants e and i print upright
  (ISO 80000-2), a symbol e or i in italic, and a symbol named ``pi`` (a
  user's statistic) as the italic word, not as the constant;
- given a ``width`` (in typeset letters, `derivations._width`), a sum too
  wide for it is broken between terms (`sum_lines`), and a branch of a
  ``cases`` block too wide for it is set as lines of an ``aligned`` block.

>>> import sympy as sp
>>> from derivations.notation import DEFAULT
>>> from derivations.symbols import epsilon, q
>>> ReaderPrinter(DEFAULT).doprint(sp.sqrt(6) / 2 / sp.sqrt(q + epsilon))
'\\frac{\\sqrt{\\frac{3}{2}}}{\\sqrt{q + \\varepsilon}}'
"""

from __future__ import annotations

import sympy as sp
from sympy.printing.latex import LatexPrinter
from sympy.printing.precedence import PRECEDENCE

from derivations._width import width as typeset_width
from derivations.notation import Notation
from derivations.symbols import epsilon

# Symbols SymPy would print as a constant (the others differ from the constants printed upright).
_CONSTANT_NAMES = {"pi"}

_RELATIONS = {"==": "=", "<=": r"\leq", ">=": r"\geq", "<": "<", ">": ">", "!=": r"\neq"}


def _matrix_order(term: sp.MatrixExpr) -> tuple[int, int]:
    """The identity first, then the terms whose scalar has the lowest-degree denominator."""
    scalar, matrix = term.as_coeff_mmul()
    if isinstance(matrix, sp.Identity) or matrix.args == (sp.Identity(matrix.rows),):
        return (0, 0)
    denominator = sp.fraction(sp.together(scalar))[1]
    degree = sp.Poly(denominator).total_degree() if denominator.free_symbols else 0
    return (1, degree)


def _at_minus_infinity(relation: sp.Basic) -> bool:
    return isinstance(relation, sp.Eq) and isinstance(relation.lhs, sp.Limit) and relation.lhs.args[2] == -sp.oo


class ReaderPrinter(LatexPrinter):
    """LaTeX in the reader's term order and notation."""

    def __init__(self, notation: Notation, width: float | None = None) -> None:
        super().__init__({"symbol_names": notation.symbol_names(), "imaginary_unit": "ri"})
        self.width = width

    def _signed_terms(self, expr: sp.Expr) -> list[tuple[bool, sp.Expr]]:
        """The terms of a sum in printed order, each as (negative, its size): a matrix sum's as
        `_print_MatAdd` orders and signs them, a scalar sum's as `_as_ordered_terms` does."""
        if isinstance(expr, sp.MatAdd):
            ordered = sorted(expr.args, key=_matrix_order)
            return [(t.as_coeff_mmul()[0].could_extract_minus_sign(), t) for t in ordered]
        return [(t.could_extract_minus_sign(), t) for t in self._as_ordered_terms(expr)]

    def sum_lines(self, expr: sp.Expr, width: float, start: str = "") -> list[str]:
        """The terms of the sum ``expr`` after ``start``, on lines of at most about ``width``
        typeset letters: a term goes on the current line where it fits, else starts the next."""
        lines = [start]
        for index, (negative, term) in enumerate(self._signed_terms(expr)):
            piece = ("- " if negative else ("+ " if index else "")) + self._print(-term if negative else term)
            if index and typeset_width(lines[-1]) + typeset_width(" " + piece) > width:
                lines.append(piece)
            else:
                lines[-1] += (" " if index else "") + piece
        return lines

    def _print_Piecewise(self, expr: sp.Piecewise) -> str:
        whole = super()._print_Piecewise(expr)
        if self.width is None or typeset_width(whole) <= self.width:
            return whole
        rows, unbroken = [], []
        for value, condition in expr.args:
            said = r"\text{otherwise}" if condition == sp.true else rf"\text{{for}}\: {self._print(condition)}"
            room = self.width - typeset_width(said) - 2
            shown = self._print(value)
            if isinstance(value, (sp.Add, sp.MatAdd)) and typeset_width(shown) > room:
                lines = self.sum_lines(value, room)
                shown = r"\begin{aligned}[t] & " + r" \\ & \quad ".join(lines) + r" \end{aligned}"
            else:
                unbroken.append(typeset_width(shown))
            rows.append((shown, said))
        # The conditions stand in a column after the widest value: where a value no break shortens
        # does not fit beside it, each condition goes below its value instead.
        stacked = max(unbroken, default=0.0) + max(typeset_width(said) for _, said in rows) + 2 > self.width
        if stacked:
            lines = [rf"{shown}, \\ \quad {said}" for shown, said in rows]
        else:
            lines = [f"{shown} & {said}" for shown, said in rows]
        return r"\begin{cases} " + r" \\".join(lines) + r" \end{cases}"

    def _print(self, expr: object, **kwargs: object) -> str:
        if expr is sp.S.Exp1:  # which SymPy prints by its own method, ahead of the printer's
            return r"\mathrm{e}"
        return super()._print(expr, **kwargs)

    def _print_Symbol(self, expr: sp.Symbol, style: str = "plain") -> str:
        if expr.name in _CONSTANT_NAMES and expr not in self._settings["symbol_names"]:
            return rf"\mathit{{{expr.name}}}"
        return super()._print_Symbol(expr, style)

    def _print_ExpBase(self, expr: sp.Expr, exp: str | None = None) -> str:
        return self._do_exponent(rf"\mathrm{{e}}^{{{self._print(expr.args[0])}}}", exp)

    def _as_ordered_terms(self, expr: sp.Expr, order: str | None = None) -> list[sp.Expr]:
        # Stable: SymPy's order among terms with the same power of epsilon.
        terms = super()._as_ordered_terms(expr, order=order)
        return sorted(terms, key=lambda term: term.as_coeff_exponent(epsilon)[1])

    def _print_MatAdd(self, expr: sp.MatAdd) -> str:
        return self.sum_lines(expr, float("inf"))[0]

    def _print_Mul(self, expr: sp.Mul) -> str:
        coefficient, rest = expr.as_coeff_Mul()
        factors = sp.Mul.make_args(rest)
        root = next((f for f in factors if f.is_Pow and f.exp == sp.S.Half and f.base.is_Integer), None)
        if root is None or not coefficient.is_Rational or coefficient.q == 1:
            return super()._print_Mul(expr)
        radicand = coefficient**2 * root.base
        if radicand.p == 1 or radicand.q == 1:
            return super()._print_Mul(expr)
        tex = self._print(sp.Pow(radicand, sp.S.Half, evaluate=False))
        numerator, denominator = sp.fraction(sp.Mul(*(f for f in factors if f is not root)))
        if numerator != 1:
            tex += " " + self.parenthesize(numerator, PRECEDENCE["Mul"], strict=True)
        if denominator != 1:
            tex = rf"\frac{{{tex}}}{{{self._print(denominator)}}}"
        return ("- " if coefficient < 0 else "") + tex

    def _print_And(self, expr: sp.And) -> str:
        limits = self._limits(expr)
        if limits is not None:
            return limits
        # Where limits are printed line by line, the one at +oo comes first, as with the sign in +-.
        rows = [self._row(arg) for arg in sorted(expr.args, key=_at_minus_infinity)]
        return r"\begin{aligned} " + r" \\ ".join(rows) + r" \end{aligned}"

    def _row(self, relation: sp.Basic) -> str:
        if isinstance(relation, sp.core.relational.Relational):
            op = _RELATIONS[relation.rel_op]
            return f"{self._print(relation.lhs)} &{op} {self._print(relation.rhs)}"
        return f"& {self._print(relation)}"

    def _limits(self, expr: sp.And) -> str | None:
        """``lim_{t -> +-oo} u = c +- d`` for the two limits of one function, where that reads simpler."""
        if len(expr.args) != 2 or not all(isinstance(a, sp.Eq) and isinstance(a.lhs, sp.Limit) for a in expr.args):
            return None
        at = {a.lhs.args[2]: a for a in expr.args}
        if set(at) != {sp.oo, -sp.oo} or at[sp.oo].lhs.args[:2] != at[-sp.oo].lhs.args[:2]:
            return None
        upper, lower = at[sp.oo].rhs, at[-sp.oo].rhs
        if lower == -upper:
            centre, half = sp.S.Zero, upper
        else:
            # upper = centre + half and lower = centre - half, whatever expand does.
            centre, half = sp.expand((upper + lower) / 2), sp.expand((upper - lower) / 2)
            if sp.count_ops(centre) + sp.count_ops(half) >= sp.count_ops(upper) + sp.count_ops(lower):
                return None
        sign = r"\pm"
        if half.could_extract_minus_sign():
            sign, half = r"\mp", -half
        function, variable = at[sp.oo].lhs.args[:2]
        value = f"{sign} {self.parenthesize(half, PRECEDENCE['Add'])}"
        if centre != 0:
            value = f"{self._print(centre)} {value}"
        return rf"\lim_{{{self._print(variable)} \to \pm\infty}} {self._print(function)} = {value}"
