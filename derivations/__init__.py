"""Symbolic derivations of what epsilon does inside normalization layers.

Each result is a `Formula`, derived by SymPy from a `Layer` definition and
proved equal to what the layer states.  `QUANTITIES` is the registry of what
is derived; `LAYERS` the catalog of layers.  In Jupyter, a formula shows as
math, and a layer, the `Formulas` of a layer and a claim's verdict as tables:

>>> import derivations
>>> derivations.formula("layernorm.slope_at_zero")
<Formula layernorm.slope_at_zero = 1/sqrt(epsilon)>
>>> derivations.LAYERS["rmsnorm"]
<Layer rmsnorm: RMSNorm, epsilon inside the square root>

The names below are imported when first used, so that a command that finds
its whole output in the derivation cache (`derivations.cache`) prints it
without importing SymPy.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from derivations.catalog import CORE, LAYERS, formula, formulas, symmetric
    from derivations.core.formula import Established, Formula, Formulas
    from derivations.core.layer import Direction, Layer, Pattern, Statistic
    from derivations.core.proof import DerivationError
    from derivations.derive.affine import Affine, affine
    from derivations.quantities import QUANTITIES, NotApplicable, Quantity

# Each public name and the module that defines it.
_HOMES = {
    "CORE": "derivations.catalog",
    "LAYERS": "derivations.catalog",
    "QUANTITIES": "derivations.quantities",
    "Affine": "derivations.derive.affine",
    "DerivationError": "derivations.core.proof",
    "Direction": "derivations.core.layer",
    "Established": "derivations.core.formula",
    "Formula": "derivations.core.formula",
    "Formulas": "derivations.core.formula",
    "Layer": "derivations.core.layer",
    "NotApplicable": "derivations.quantities",
    "Pattern": "derivations.core.layer",
    "Quantity": "derivations.quantities",
    "Statistic": "derivations.core.layer",
    "affine": "derivations.derive.affine",
    "formula": "derivations.catalog",
    "formulas": "derivations.catalog",
    "symmetric": "derivations.catalog",
}

__all__ = [
    "CORE",
    "LAYERS",
    "QUANTITIES",
    "Affine",
    "DerivationError",
    "Direction",
    "Established",
    "Formula",
    "Formulas",
    "Layer",
    "Moved",
    "NotApplicable",
    "Pattern",
    "Quantity",
    "Statistic",
    "affine",
    "formula",
    "formulas",
    "symmetric",
]


# The machinery's modules, moved to derivations/derive/: their old paths (derivations.jacobian)
# still import, as other names of the same modules (one module object, one set of registrations).
MOVED = frozenset(path.stem for path in (Path(__file__).parent / "derive").glob("[a-z]*.py"))


class Moved(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds each old module path of ``paths`` (``{old full name: new full name}``) as the module
    at the new one itself: a module moved into a subpackage keeps its old import path."""

    def __init__(self, paths: dict[str, str]) -> None:
        self.paths = paths
        self.specs: dict[str, Any] = {}  # each moved module's own spec

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self) if fullname in self.paths else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        module = importlib.import_module(self.paths[spec.name])
        self.specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: Any) -> None:
        """The module ran when it was imported under its own name; its own spec is put back
        (the import system set this finder's), so that a reload runs its file again."""
        module.__spec__ = self.specs[module.__name__]

    def get_code(self, fullname: str) -> Any:
        """The moved module's code, for ``python -m`` on an old path."""
        real: Any = importlib.import_module(self.paths[fullname])
        return real.__spec__.loader.get_code(real.__name__)


# The same for the layer definitions, moved to derivations/layers/ (derivations.layernorm), and
# the core types, moved to derivations/core/ from their private modules (derivations._layer).
LAYER_FILES = frozenset(path.stem for path in (Path(__file__).parent / "layers").glob("[a-z]*.py"))
CORE_MODULES = {"_layer": "layer", "_formula": "formula", "_proof": "proof"}
sys.meta_path.insert(
    0,
    Moved(
        {
            **{f"{__name__}.{name}": f"{__name__}.derive.{name}" for name in MOVED},
            **{f"{__name__}.{name}": f"{__name__}.layers.{name}" for name in LAYER_FILES},
            **{f"{__name__}.{old}": f"{__name__}.core.{new}" for old, new in CORE_MODULES.items()},
        }
    ),
)


# SymPy keeps its most recent results (assumptions, constructors, simplification
# steps) in a cache of 1,000 entries by default, a size it reads from the environment variable
# SYMPY_CACHE_SIZE once, when `sympy.core.cache` is imported.  A derivation's proofs revisit far
# more than that: with 100,000 a cold derivation of every layer is about 10% faster (make bench),
# for a few MB more per process.  Importing this package changes no environment variable: the size
# is in the environment only while SymPy's cache module runs (`CacheSize`), then taken out again.
# A user's own setting is kept; where SymPy is imported already nothing is done, since the size
# that process has can no longer change.
CACHE_SIZE = "100000"


class CacheSize(importlib.abc.MetaPathFinder):
    """Finds `sympy.core.cache` as the finders after it do, with a loader that runs it with
    ``SYMPY_CACHE_SIZE`` set to `CACHE_SIZE` (unless the user set it) and removes it after: SymPy
    gets the size, the environment is left as it was.  It leaves `sys.meta_path` once that ran."""

    MODULE = "sympy.core.cache"

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.MODULE:
            return None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _SizedLoader(spec.loader, self)
                return spec
        return None


class _SizedLoader(importlib.abc.Loader):
    """``loader``, whose module runs with SymPy's cache size in the environment, and only then."""

    def __init__(self, loader: Any, finder: CacheSize) -> None:
        self.loader = loader
        self.finder = finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        variable = "SYMPY_CACHE_SIZE"
        try:
            if variable in os.environ:  # the user's own size
                self.loader.exec_module(module)
                return
            os.environ[variable] = CACHE_SIZE
            try:
                self.loader.exec_module(module)
            finally:
                os.environ.pop(variable, None)
        finally:
            if self.finder in sys.meta_path:
                sys.meta_path.remove(self.finder)

    def __getattr__(self, name: str) -> Any:
        """The rest (``get_source`` for a traceback, ``get_code``) is the real loader's."""
        if name in ("loader", "finder"):
            raise AttributeError(name)
        return getattr(self.loader, name)


if CacheSize.MODULE not in sys.modules:
    sys.meta_path.insert(0, CacheSize())


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # The catalog first, as importing the package used to: it imports every
    # layer, and with them the registrations for layers with a gain.
    importlib.import_module("derivations.catalog")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
