r"""The reader's notation: the LaTeX name each renamable symbol prints as.

Only printing changes; the derivations, proofs and golden output use the
default names.  A name is a letter or a Greek letter command, with an
optional subscript, so that nothing a user passes can inject LaTeX.

>>> Notation(n="d", epsilon=r"\epsilon").latex_name("n")
'd'
>>> Notation.parse(["m=d"])
Traceback (most recent call last):
...
ValueError: notation: unknown symbol 'm'; one of n, epsilon, t, s, q, r, mu, sigma, sigma_u, sigma_b, alpha
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import sympy as sp

from derivations.symbols import LATEX_NAMES, alpha, epsilon, mu, n, q, r, s, sigma, sigma_b, sigma_u, t

# The symbols a reader may rename, by the name an option gives them.
RENAMABLE: dict[str, sp.Symbol] = {
    "n": n,
    "epsilon": epsilon,
    "t": t,
    "s": s,
    "q": q,
    "r": r,
    "mu": mu,
    "sigma": sigma,
    "sigma_u": sigma_u,
    "sigma_b": sigma_b,
    "alpha": alpha,  # Dynamic Tanh's scalar, where the others have epsilon
}

# Names the printed formulas already use for something else: a new name must not take one.
TAKEN = {
    "x": "the input x",
    "c": "the centered input c",
    "w": "the test vector w",
    "J": "the Jacobian J",
    "I": "the identity",
    "u": "the response u",
    "f": "the function f",
    "m": "the scale m",
    "p": "the homogeneity degree p",
    "i": "the index i",
    r"\gamma": "the gain",
    r"\beta": "the bias",
}

_GREEK = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "varepsilon",
    "zeta",
    "eta",
    "theta",
    "vartheta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "pi",
    "rho",
    "sigma",
    "tau",
    "upsilon",
    "phi",
    "varphi",
    "chi",
    "psi",
    "omega",
    "Gamma",
    "Delta",
    "Theta",
    "Lambda",
    "Xi",
    "Pi",
    "Sigma",
    "Upsilon",
    "Phi",
    "Psi",
    "Omega",
]
_SAFE = re.compile(r"(?:[A-Za-z]|\\(?:" + "|".join(_GREEK) + r"))(?:_(?:[A-Za-z0-9]|\{[A-Za-z0-9]+\}))?")


def _default(symbol: sp.Symbol) -> str:
    return LATEX_NAMES.get(symbol) or sp.latex(symbol)


class Notation:
    """Printed names for some of the `RENAMABLE` symbols; the others keep their default."""

    def __init__(self, **names: str) -> None:
        for key, value in names.items():
            if key not in RENAMABLE:
                raise ValueError(f"notation: unknown symbol {key!r}; one of {', '.join(RENAMABLE)}")
            if not isinstance(value, str) or not _SAFE.fullmatch(value):
                raise ValueError(
                    f"notation: {key}={value} is not a safe LaTeX name; give a letter or a Greek letter "
                    r"command, with an optional subscript, such as \sigma_{u}"
                )
        printed = {key: names.get(key, _default(symbol)) for key, symbol in RENAMABLE.items()}
        for key, value in names.items():
            others = [other for other, shown in printed.items() if shown == value and other != key]
            if others or value in TAKEN:
                what = f"the symbol {others[0]}" if others else TAKEN[value]
                raise ValueError(f"notation: {key}={value} clashes with {what}, which already prints as {value}")
        self._names = tuple(sorted(names.items()))

    @classmethod
    def parse(cls, options: Iterable[str]) -> Notation:
        """From command-line options ``SYMBOL=LATEX`` such as ``n=d``."""
        names: dict[str, str] = {}
        for option in options:
            key, equals, value = option.partition("=")
            if not equals or not key.strip():
                raise ValueError(f"notation: expected SYMBOL=LATEX such as n=d; got {option!r}")
            names[key.strip()] = value.strip()
        return cls(**names)

    def options(self) -> tuple[str, ...]:
        """The ``SYMBOL=LATEX`` options `parse` makes this notation from, in a canonical order."""
        return tuple(f"{key}={value}" for key, value in self._names)

    def latex_name(self, key: str) -> str:
        """How the symbol ``key`` prints."""
        return dict(self._names).get(key) or _default(RENAMABLE[key])

    def symbol_names(self) -> dict[sp.Symbol, str]:
        """The ``symbol_names`` setting of SymPy's LaTeX printer."""
        return {**LATEX_NAMES, **{RENAMABLE[key]: value for key, value in self._names}}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Notation) and self._names == other._names

    def __hash__(self) -> int:
        return hash(self._names)

    def __repr__(self) -> str:
        return "Notation(" + ", ".join(f"{key}={value!r}" for key, value in self._names) + ")"


DEFAULT = Notation()
