"""NumPy functions lambdified from the derivations; nothing here is typed by hand.

There is one module ``numeric.<key>`` per layer of the catalog, made here,
with that layer's functions: ``forward`` and ``jacobian``, and every scalar
quantity of the registry that has a numeric form (``response``, ``slope``,
``slope_at_zero``, ``eigen_<direction>``, ``spectral_norm``, ``bound``, ...).

>>> import numpy as np
>>> import numeric
>>> from numeric import layernorm
>>> float(layernorm.slope_at_zero(0.25))  # 1/sqrt(epsilon)
2.0
>>> float(layernorm.response(1.0, 0.25))  # t / sqrt(2 t**2/3 + epsilon) at t = 1
1.044465935734187
>>> layernorm.forward(np.array([1.0, 2.0, 3.0]), 1e-5).round(6)
array([-1.224736,  0.      ,  1.224736])
>>> layernorm.jacobian(np.array([1.0, -1.0]), 0.25).round(4)  # J = I/s - 11^T/(ns) - cc^T/(ns^3), n = 2
array([[ 0.0894, -0.0894],
       [-0.0894,  0.0894]])
>>> float(layernorm.spectral_norm(np.array([1.0, -1.0]), 0.25))  # epsilon / s**3 at n = 2
0.17888543819998318
>>> layernorm.eigenvalues(np.array([1.0, -1.0, 0.0]), 0.25).round(4)
array([0.    , 0.2849, 1.0445])
>>> float(numeric.rmsnorm_affine.bound(1e-4, np.array([0.5, -2.0])))  # max|gain| / sqrt(epsilon)
200.0
"""

import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from derivations import LAYERS, Moved, catalog
from numeric import _affine, _elementwise, _grouped, _regimes, _reparametrized  # noqa: F401 - register the facades
from numeric._layer import NumericLayer, facade
from numeric.kernels import native
from numeric.kernels.compiled import compiled
from numeric.kernels.lambdify import compile as lambdified
from numeric.kernels.native import backend

# The checks moved to numeric/checks/: numeric.verify, numeric.accuracy and numeric.agreement
# still import, as the same modules.
CHECKS = frozenset(path.stem for path in (Path(__file__).parent / "checks").glob("[a-z]*.py"))
# The kernels moved to numeric/kernels/ from private modules: numeric._rescale and the like too.
KERNELS = frozenset(path.stem for path in (Path(__file__).parent / "kernels").glob("[a-z]*.py"))
sys.meta_path.insert(
    0,
    Moved(
        {
            **{f"{__name__}.{name}": f"{__name__}.checks.{name}" for name in CHECKS},
            **{f"{__name__}._{name}": f"{__name__}.kernels.{name}" for name in KERNELS},
        }
    ),
)


class _LayerModule(ModuleType):
    """``numeric.<key>``: the layer's functions, compiled when first called.

    The layer itself (``LAYER``) is built on first use too, so that importing
    `numeric` builds no layer a command does not use.
    """

    LAYER: NumericLayer

    def __getattr__(self, name: str) -> Any:
        # No public function starts with "_": a probe for a private name (pytest's
        # doctest finder asks for _mock_name and __wrapped__) compiles nothing.
        if name.startswith("_"):
            raise AttributeError(name)
        if name == "LAYER":
            self.LAYER = facade(self.__name__.rpartition(".")[2])
            return self.LAYER
        if name not in self.LAYER.names():
            raise AttributeError(f"module {self.__name__!r} has no function {name!r}")
        function = getattr(self.LAYER, name)
        setattr(self, name, function)  # found once; later lookups are plain attributes
        return function

    def __dir__(self) -> list[str]:
        """The module's attributes, ``LAYER``, and every function of the layer (found by `__getattr__`)."""
        return sorted({*super().__dir__(), "LAYER", *self.LAYER.names()})


def _module(key: str) -> ModuleType:
    module = _LayerModule(f"{__name__}.{key}", f"Layer {key!r}: NumPy functions from the derivations.")
    sys.modules[module.__name__] = module
    return module


for _key in LAYERS:
    globals()[_key] = _module(_key)

# Besides the layers: the facade's type and constructor, and the one lambdify path, for code
# that evaluates derived expressions of its own (claims' numeric confirmation).
__all__ = [*LAYERS, "NumericLayer", "backend", "facade", "from_definition", "lambdified"]

# A layer registered again under its key (a user's file, changed) is compiled again.
catalog.on_register(facade.cache_clear)
catalog.on_register(compiled.cache_clear)
catalog.on_register(native.clear)


def from_definition(path: str | os.PathLike[str], timeout: float | None = 300.0) -> NumericLayer:
    r"""The NumPy functions of a layer you define in a TOML file, like ``numeric.<key>``'s.

    The file gives the layer's statistics (means over the entries j) and its
    output entry, in the whitelisted language of claims (never evaluated);
    everything else is derived from them, as for a built-in layer.  The layer
    of ``examples/c4norm.toml``, normalized by its fourth central moment, is

    .. math::

        y_i = \frac{x_i - \mu}{(m_4 + \varepsilon)^{1/4}}, \qquad
        \mu = \frac{1}{n}\sum_j x_j, \quad m_4 = \frac{1}{n}\sum_j (x_j - \mu)^4.

    The file is read by `derivations.definition.load`, and the layer
    registered in `derivations.LAYERS` under its key (replacing a layer this
    process registered there before, and what was compiled for it).

    Args:
      path: the TOML file (``examples/c4norm.toml`` is one).
      timeout: seconds the derivations may take: they are first run in a child
        process with a memory bound, so that a pathological definition raises
        instead of hanging the caller.  None derives in this process, unbounded.

    Returns:
      The layer's `NumericLayer`: ``forward``, ``jacobian``, and every scalar
      quantity the registry derives for it (``names()`` lists them).

    Raises:
      ValueError: the file cannot be read, a field is missing or not a layer the
        machinery handles (the message names the field), the key is a built-in
        layer's, or the derivations did not finish within ``timeout``.

    Example:
      >>> import numpy as np
      >>> from numeric import from_definition
      >>> layer = from_definition("examples/c4norm.toml")  # doctest: +SKIP
      >>> layer.forward(np.array([1.0, -1.0, 0.0]), 0.25).round(4)  # doctest: +SKIP
      array([ 1.022, -1.022,  0.   ])

      (Skipped as a doctest: a user's layer is derived whole, in a child process.)
    """
    from derivations import definition

    layer = definition.load(path).layer
    if layer.key in catalog.BUILT_IN:
        raise ValueError(f"key {layer.key!r} is a built-in layer; choose another key")
    if timeout is not None:
        definition.derive_within(layer, timeout)
    catalog.register(layer)
    return facade(layer.key)


def __getattr__(name: str) -> Any:
    """Bare names (``numeric.response``) are the core layer's functions."""
    from derivations import CORE

    return getattr(sys.modules[f"{__name__}.{CORE}"], name)


def __dir__() -> list[str]:
    """The module's names, and the core layer's functions, which bare names are (`__getattr__`)."""
    from derivations import CORE

    return sorted({*globals(), *_core_names(CORE)})


def _core_names(key: str) -> tuple[str, ...]:
    return tuple(sys.modules[f"{__name__}.{key}"].LAYER.names())
