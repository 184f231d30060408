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
    "e": "the constant e",
    r"\pi": r"the constant \pi",
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

# In printed LaTeX: the commands whose argument is words, not names; a name (a letter or a Greek
# letter, with the subscript attached to it); a subscript's letters are names too ({x}_{i}: x and i).
_WORDS = re.compile(r"\\(?:text|operatorname|mathrm|begin|end)\{[^{}]*\}")
_NAME = re.compile(r"(\\[A-Za-z]+|[A-Za-z])(?:_(\{[^{}]*\}|[A-Za-z0-9]))?")
_GREEK_COMMANDS = {"\\" + letter for letter in _GREEK}


def _names(latex: str) -> Iterable[tuple[str, str]]:
    """Each name ``latex`` prints, as (the name with its subscript, the name without it)."""
    for match in _NAME.finditer(_WORDS.sub(" ", latex)):
        base, subscript = match.group(1), (match.group(2) or "").strip("{}")
        if base.startswith("\\") and base not in _GREEK_COMMANDS:
            yield from _names(subscript)  # \max_i, \frac: only what a command is given is named
            continue
        yield (f"{base}_{{{subscript}}}" if subscript else base), base
        yield from _names(subscript)


def _default(symbol: sp.Symbol) -> str:
    return LATEX_NAMES.get(symbol) or sp.latex(symbol)


def _canonical(name: str) -> str:
    """A name with its subscript braced: sigma_u and sigma_{u} are one name."""
    base, underscore, subscript = name.partition("_")
    return f"{base}_{{{subscript.strip('{}')}}}" if underscore else base


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
                what = " and ".join(f"the symbol {other}" for other in others) if others else TAKEN[value]
                raise ValueError(f"notation: {key}={value} clashes with {what}, which already prints as {value}")
        self._names = tuple(sorted(names.items()))

    def refuse_clashes(self, printed: Iterable[tuple[str, str]]) -> None:
        """Raise `ValueError` where a new name is one the formulas ``printed`` use for something else.

        ``printed`` holds (formula name, LaTeX) pairs in the default notation.  A name counts with
        or without its subscript (y_{i} is a use of y); where a symbol is renamed, the name it
        printed as before is no longer taken by it.
        """
        renamed = {_canonical(_default(RENAMABLE[key])) for key, _ in self._names}
        bases = {key: _canonical(value).partition("_")[0] for key, value in self._names}
        for formula, latex in printed:
            for name, base in _names(latex):
                if name in renamed:
                    continue
                key = next((key for key, new in bases.items() if new == base), None)
                if key is not None:
                    option = f"{key}={dict(self._names)[key]}"
                    raise ValueError(f"notation: {option} clashes with {base}, which {formula} already prints")

    @classmethod
    def parse(cls, options: Iterable[str]) -> Notation:
        """From command-line options ``SYMBOL=LATEX`` such as ``n=d``."""
        names: dict[str, str] = {}
        for option in options:
            key, equals, value = option.partition("=")
            if not equals or not key.strip():
                raise ValueError(f"notation: expected SYMBOL=LATEX such as n=N; got {option!r}")
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
