r"""Claims in LaTeX, as papers write them: ``\|J\|_2 \le \frac{1}{\sqrt{\epsilon}}``.

A real parser (Lark, over the grammar in ``latex.lark``) reads the LaTeX;
a transformer writes the same claim in the claim language, one small method
per grammar rule; that text then goes through the one whitelisted parser, with
the same bounds as any claim.  Nothing is evaluated here.

>>> to_claim(r"\|J\|_2 \le \frac{1}{\sqrt{\varepsilon}}")
'norm(J, 2) <= 1 / sqrt(epsilon)'
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from lark import Lark, Token, Transformer, exceptions

from derivations.claims.language import ClaimError

MAX_LENGTH = 1000
_GRAMMAR = Path(__file__).with_name("latex.lark")

# Every command the grammar reads; any other is named in the error.
KNOWN = {
    *[
        "frac",
        "dfrac",
        "tfrac",
        "sqrt",
        "left",
        "right",
        "lim",
        "to",
        "exp",
        "max",
        "min",
        "mathbf",
        "operatorname",
        "mathrm",
        "text",
        "mathit",
        "tanh",
        "sum",
    ],
    *[
        "infty",
        "top",
        "intercal",
        "le",
        "leq",
        "ge",
        "geq",
        "lt",
        "gt",
        "leqslant",
        "geqslant",
        "cdot",
        "times",
        "lVert",
        "rVert",
        "Vert",
        "lvert",
        "rvert",
        "odot",
    ],
    *["varepsilon", "epsilon", "mu", "sigma", "gamma", "beta", "alpha", "quad"],
}
_RELATIONS = {"\\leqslant": "<=", "\\geqslant": ">=", "\\leq": "<=", "\\geq": ">=", "\\le": "<=", "\\ge": ">="}
_RELATIONS.update({"\\lt": "<", "\\gt": ">", "<": "<", ">": ">", "=": "=="})
_GREEK = {"\\varepsilon": "epsilon", "\\epsilon": "epsilon", "\\mu": "mu", "\\sigma": "sigma"}
_GREEK.update({"\\gamma": "gamma", "\\beta": "beta", "\\alpha": "alpha"})
# What a paper writes for a vector or matrix name, in the claim language.
_LETTERS = {"d": "n"}
# The functions a named call may be (any other name juxtaposed with a parenthesis is a product);
# the claim language checks the call itself.
CALLS = {"mean", "sum", "norm", "dot", "outer", "diag", "trace", "det", "abs", "y", "sqrt", "exp", "max", "min"}
CALLS |= {"rank", "multiplicity", "eigenvalues", "diff"}


class _Limit(str):
    """A limit as the claim language writes it, with its parts: a product that follows it is its
    body's (``\\lim_{\\epsilon \\to 0} \\sqrt{\\epsilon} \\|J\\|`` is the limit of the product,
    as in papers; a sum that follows is not)."""

    body: str
    variable: str
    point: str

    @classmethod
    def of(cls, body: str, variable: str, point: str) -> _Limit:
        made = cls(f"limit({body}, {variable}, {point})")
        made.body, made.variable, made.point = body, variable, point
        return made


def _product(left: str, op: str, right: str) -> str:
    """``left op right``; where ``left`` is a limit, the limit of its body op ``right``."""
    if isinstance(left, _Limit):
        return _Limit.of(f"({left.body}) {op} ({right})", left.variable, left.point)
    return f"({left}) {op} ({right})"


class ToClaim(Transformer[Token, str]):
    """One method per grammar rule: each returns claim-language text."""

    def start(self, items: list[str]) -> str:
        lhs, relation, rhs = items
        return f"{lhs} {_RELATIONS[str(relation)]} {rhs}"

    def add(self, items: list[str]) -> str:
        return f"{items[0]} + {items[1]}"

    def sub(self, items: list[str]) -> str:
        return f"{items[0]} - ({items[1]})"

    def mul(self, items: list[str]) -> str:
        return _product(items[0], "*", items[1])

    def juxtapose(self, items: list[str]) -> str:
        # Juxtaposition: a product of scalars, or a matrix applied to a vector.
        return _product(items[0], "*", items[1])

    def div(self, items: list[str]) -> str:
        return _product(items[0], "/", items[1])

    def neg(self, items: list[str]) -> str:
        return f"-({items[0]})"

    def pow(self, items: list[str]) -> str:
        return f"({items[0]})**({items[1]})"

    def transpose(self, items: list[str]) -> str:
        return f"({items[0]}).T"

    def number(self, items: list[Token]) -> str:
        return str(items[0])

    def name(self, items: list[Token]) -> str:
        letter = str(items[-1])
        return _LETTERS.get(letter, letter)

    def greek(self, items: list[Token]) -> str:
        return _GREEK[str(items[0])]

    def greek_sub(self, items: list[Token]) -> str:
        base, sub = _GREEK[str(items[0])], str(items[1]).lstrip("\\")
        return f"{base}_{sub}"

    def word(self, items: list[Token]) -> str:
        return str(items[1]).replace("\\_", "_")

    def frac(self, items: list[str]) -> str:
        return f"({items[1]})/({items[2]})"

    def sqrt(self, items: list[str]) -> str:
        return f"sqrt({items[0]})"

    def root(self, items: list[str]) -> str:
        return f"({items[1]})**(1/({items[0]}))"

    def norm(self, items: list[str]) -> str:
        return f"norm({items[1]})"

    def norm_p(self, items: list[str]) -> str:
        return f"norm({items[1]}, {items[3]})"

    def abs(self, items: list[str]) -> str:
        return f"abs({items[1]})"

    def limit(self, items: list[str]) -> str:
        variable, point, body = str(items[0]), items[1], items[2]
        return _Limit.of(body, _GREEK.get(variable, _LETTERS.get(variable, variable)), point)

    def at(self, items: list[Token]) -> str:
        return str(items[0])

    def at_side(self, items: list[Token]) -> str:
        return f'{items[0]}, "{items[1]}"'

    def exp(self, items: list[str]) -> str:
        return f"exp({items[0]})"

    def max(self, items: list[str]) -> str:
        return f"max({', '.join(items)})"

    def min(self, items: list[str]) -> str:
        return f"min({', '.join(items)})"

    def tanh(self, items: list[str]) -> str:
        return f"tanh({items[0]})"

    def sum(self, items: list[str]) -> str:
        return f"sum({items[0]})"

    def call(self, items: list[Token | str]) -> str:
        name, arguments = str(items[1]).replace("\\_", "_"), [str(item) for item in items[2:]]
        if name in CALLS or name in _call_names():
            return f"{name}({', '.join(arguments)})"
        return f"({name}) * ({', '.join(arguments)})" if len(arguments) == 1 else f"{name}({', '.join(arguments)})"

    def ones(self, items: list[str]) -> str:
        return "ones"

    def infinity(self, items: list[str]) -> str:
        return "oo"

    def minus_infinity(self, items: list[str]) -> str:
        return "-oo"


@cache
def _call_names() -> frozenset[str]:
    """The layer keys, which a claim calls as functions (``rmsnorm(x)``), and the Hessian product."""
    from derivations.catalog import LAYERS
    from derivations.quantities import HESSIAN_PRODUCT

    return frozenset({*LAYERS, HESSIAN_PRODUCT})


@cache
def _parser() -> Lark:
    return Lark(_GRAMMAR.read_text(), parser="earley", ambiguity="resolve")


def to_claim(text: str) -> str:
    """The claim-language text of a LaTeX claim; `ClaimError` names what cannot be read."""
    if not isinstance(text, str):
        raise ClaimError(f"a LaTeX claim must be text, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ClaimError(f"LaTeX claim is {len(text)} characters long; at most {MAX_LENGTH} are accepted")
    source = text.strip().strip("$").strip()
    for command in re.findall(r"\\([A-Za-z]+)", source):
        if command not in KNOWN:
            raise ClaimError(f"unknown LaTeX command \\{command}")
    try:
        tree = _parser().parse(source)
    except exceptions.UnexpectedInput as error:
        column = getattr(error, "column", "?")
        raise ClaimError(f"cannot read the LaTeX claim at column {column}") from None
    except exceptions.LarkError as error:
        raise ClaimError(f"cannot read the LaTeX claim: {type(error).__name__}") from None
    return _tidy(ToClaim().transform(tree))


def _tidy(claim: str) -> str:
    """``claim`` with only the parentheses its precedence needs, as a reviewer would write it:
    the translation's own parentheses around every operand dropped (``ast.unparse``)."""
    try:
        return ast.unparse(ast.parse(claim, mode="eval"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return claim  # the claim's own parser names what is wrong with it
