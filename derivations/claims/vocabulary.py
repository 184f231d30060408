"""What a claim about one layer may name: the registry's quantities, its symbols, and ``oo``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, partial

import sympy as sp

from derivations import quantities
from derivations.catalog import LAYERS, on_register
from derivations.claims.language import ClaimError
from derivations.symbols import epsilon, n, s, t


@dataclass(frozen=True)
class Vocabulary:
    """What a claim about one layer may name.

    Quantities are derived on first use: a claim about the slope at zero does
    not wait for the eigenstructure.
    """

    makers: Mapping[str, Callable[[], sp.Expr]]  # derived quantity -> how to derive it
    symbols: Mapping[str, sp.Expr]  # symbol name -> SymPy object (s -> sqrt(q + epsilon))
    placeholders: Mapping[str, sp.Symbol]  # derived quantity -> stand-in symbol

    def names(self) -> dict[str, sp.Expr]:
        return {**self.symbols, **self.placeholders, "oo": sp.oo}

    def quantity(self, name: str) -> sp.Expr:
        return self.makers[name]()

    def expand(self, expr: sp.Expr) -> sp.Expr:
        """Replace each quantity's stand-in by its derived expression."""
        used = {name: stand_in for name, stand_in in self.placeholders.items() if expr.has(stand_in)}
        return expr.xreplace({stand_in: self.quantity(name) for name, stand_in in used.items()})


@cache
def vocabulary(key: str) -> Vocabulary:
    """The names a claim about layer ``key`` may use."""
    if key not in LAYERS:
        raise ClaimError(f"layer must be one of {', '.join(LAYERS)}; got {key!r}")
    layer = LAYERS[key]
    symbols: dict[str, sp.Expr] = {"t": t, "epsilon": epsilon, "n": n}
    symbols.update({str(stat.symbol): stat.symbol for stat in layer.statistics if str(stat.symbol) != "mu"})
    for old, new in layer.display:
        if new == s:
            symbols["s"] = old  # s is the display name of sqrt(q + epsilon)
    symbols.update(layer.named_symbols)
    makers: dict[str, Callable[[], sp.Expr]] = {
        name: cache(partial(quantities.value, layer, name))
        for name, (quantity, _) in quantities.names(layer).items()
        if quantity.claim
    }
    placeholders = {name: sp.Symbol(f"<{name}>") for name in makers}
    return Vocabulary(makers, symbols, placeholders)


on_register(vocabulary.cache_clear)
