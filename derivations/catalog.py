"""Every layer's formulas, in a stable order, looked up by name."""

from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from functools import cache, partial

from derivations import quantities
from derivations.cache import derived
from derivations.core.formula import Formula, Formulas
from derivations.core.layer import Layer
from derivations.notation import DEFAULT, Notation

# One line per layer: the module under derivations/layers/ that defines it.  The
# order is the order `make derive` prints them in.
PACKAGE = "derivations.layers"
DEFINITIONS = (
    "layernorm",
    "layernorm_affine",
    "layernorm_std_eps",
    "layernorm_std_eps_biased",
    "rmsnorm",
    "rmsnorm_affine",
    "rmsnorm_eps_outside",
    "rmsnorm_gemma",
    "prmsnorm",
    "groupnorm",
    "batchnorm_train",
    "l2norm_clamped",
    "scalenorm",
    "dyt",
)


class UnknownLayer(KeyError):
    """A key no layer has: a KeyError (its argument the key) that names the nearest key."""

    def __init__(self, key: object, known: Sequence[str]) -> None:
        super().__init__(key)
        self.known = tuple(known)

    def __str__(self) -> str:
        return f"{self.args[0]!r} is not a layer{_nearest(self.args[0], self.known)}"


class Catalog(MutableMapping[str, Layer]):
    """The layers by key, in `DEFINITIONS` order, then the registered ones.

    A built-in layer's module is imported when its layer is first looked up,
    so that a command about one layer builds only that layer's definitions
    (and the layers it is built on).  Keys, ``in`` and iteration import nothing.
    """

    def __init__(self, names: Sequence[str]) -> None:
        self._built_in = tuple(names)
        self._registered: dict[str, Layer] = {}

    def __getitem__(self, key: str) -> Layer:
        if key in self._registered:
            return self._registered[key]
        if key not in self._built_in:
            raise UnknownLayer(key, list(self))
        layer: Layer = importlib.import_module(f"{PACKAGE}.{key}").LAYER
        if layer.key != key:
            raise RuntimeError(f"derivations/layers/{key}.py defines a layer keyed {layer.key!r}")
        return layer

    def __setitem__(self, key: str, layer: Layer) -> None:
        self._registered[key] = layer

    def __delitem__(self, key: str) -> None:
        del self._registered[key]

    def __iter__(self) -> Iterator[str]:
        return iter((*self._built_in, *self._registered))

    def __len__(self) -> int:
        return len(self._built_in) + len(self._registered)

    def __contains__(self, key: object) -> bool:
        return key in self._built_in or key in self._registered

    def __repr__(self) -> str:
        return f"<Catalog of {len(self)} layers: {', '.join(self)}>"

    def loaded(self) -> tuple[Layer, ...]:
        """The layers built so far in this process (a built-in one once its module is imported)."""
        modules = (sys.modules.get(f"{PACKAGE}.{key}") for key in self._built_in)
        built = tuple(getattr(module, "LAYER", None) for module in modules)
        return (*(layer for layer in built if isinstance(layer, Layer)), *self._registered.values())


LAYERS = Catalog(DEFINITIONS)

# The keys of the layers above; `register` adds others (a user's definition) but never replaces these.
BUILT_IN = tuple(DEFINITIONS)
_CLEAR: list[Callable[[], object]] = []

# The layer a bare name (``response``) and an unqualified claim refer to.
CORE = "layernorm"

# The paper each built-in layer comes from, where there is one: for the docstrings of its functions.
_LAYERNORM = "Ba, Kiros and Hinton, *Layer Normalization*, 2016, https://arxiv.org/abs/1607.06450"
_RMSNORM = "Zhang and Sennrich, *Root Mean Square Layer Normalization*, NeurIPS 2019, https://arxiv.org/abs/1910.07467"
PAPERS: dict[str, str] = {
    "layernorm": _LAYERNORM,
    "layernorm_affine": _LAYERNORM,
    "layernorm_std_eps": "Rush, *The Annotated Transformer*, NLP-OSS 2018, https://aclanthology.org/W18-2509",
    "rmsnorm": _RMSNORM,
    "rmsnorm_affine": _RMSNORM,
    "rmsnorm_eps_outside": _RMSNORM,
    "rmsnorm_gemma": "Gemma Team, *Gemma: Open Models Based on Gemini Research and Technology*, 2024, "
    "https://arxiv.org/abs/2403.08295",
    "prmsnorm": _RMSNORM,
    "groupnorm": "Wu and He, *Group Normalization*, ECCV 2018, https://arxiv.org/abs/1803.08494",
    "batchnorm_train": "Ioffe and Szegedy, *Batch Normalization: Accelerating Deep Network Training by Reducing "
    "Internal Covariate Shift*, ICML 2015, https://arxiv.org/abs/1502.03167",
    "scalenorm": "Nguyen and Salazar, *Transformers without Tears: Improving the Normalization of "
    "Self-Attention*, IWSLT 2019, https://arxiv.org/abs/1910.05895",
    "dyt": "Zhu, Chen, He, LeCun and Liu, *Transformers without Normalization*, CVPR 2025, "
    "https://arxiv.org/abs/2503.10622",
}


def _known(key: object) -> Layer:
    if not isinstance(key, str) or key not in LAYERS:
        raise ValueError(f"layer must be one of {', '.join(LAYERS)}; got {key!r}{_nearest(key, list(LAYERS))}")
    return LAYERS[key]


def _nearest(given: object, known: Sequence[str]) -> str:
    """ "; did you mean 'x'?" for the known name nearest ``given``, or ""."""
    import difflib

    close = difflib.get_close_matches(given, known, n=1) if isinstance(given, str) else []
    return f"; did you mean {close[0]!r}?" if close else ""


def register(layer: Layer) -> None:
    """Add ``layer``, defined outside this catalog, to `LAYERS` under its key.

    A layer registered earlier under the same key is replaced, and every
    cache keyed by layer key (see `on_register`) emptied; a built-in key is refused.
    """
    if not isinstance(layer, Layer):
        raise ValueError(f"layer must be a Layer; got {type(layer).__name__}")
    if layer.key in BUILT_IN:
        raise ValueError(f"key {layer.key!r} is a built-in layer; choose another key")
    if LAYERS.get(layer.key, layer) is not layer:
        unregister(layer.key)
    LAYERS[layer.key] = layer


def unregister(key: str) -> None:
    """Remove a layer `register` added, and what was derived and compiled for it."""
    if key in BUILT_IN:
        raise ValueError(f"key {key!r} is a built-in layer; only registered layers are removed")
    LAYERS.pop(key, None)
    formulas.cache_clear()
    for clear in _CLEAR:
        clear()


def on_register(clear: Callable[[], object]) -> None:
    """Call ``clear`` (a cache keyed by layer key) whenever a registered layer is replaced or removed."""
    _CLEAR.append(clear)


def symmetric() -> tuple[str, ...]:
    """The layers whose Jacobian is symmetric, so that every eigen check applies (derived)."""
    from derivations.derive import jacobian

    return tuple(key for key, layer in LAYERS.items() if jacobian.is_symmetric(layer))


@cache
def formulas(key: str = CORE) -> Formulas:
    r"""Every derived formula of a layer, in a stable order.

    Each is derived from the layer's definition (its statistics and output
    entry) and proved equal to the form its papers and libraries state, where
    they state one: the definition, the response on an input pattern and its
    slope, the Jacobian and its eigenstructure, the spectral norm and its bound
    over all inputs, the backward products, and the layer's homogeneity.  For
    LayerNorm, for example, the slope at the degenerate input is

    .. math::

        \left.\frac{d u_3}{d t}\right|_{t=0} = \frac{1}{\sqrt{\varepsilon}}.

    Args:
      key: a layer of `LAYERS`, such as ``"layernorm"`` or ``"rmsnorm_affine"``.

    Returns:
      The layer's formulas as `Formulas`: a tuple of `Formula` (and equal to
      the plain tuple of them), shown in Jupyter as a table of name and formula.
      The same tuple each time (the result is cached, and kept in the derivation
      cache across processes).

    Raises:
      ValueError: ``key`` is not a layer of `LAYERS`.
      DerivationError: a derivation could not prove its result equal to the
        stated form (a user-defined layer's, say).

    Example:
      >>> from derivations import formulas
      >>> found = formulas("rmsnorm")
      >>> [f.name for f in found[:4]]
      ['definition', 'response', 'slope', 'slope_at_zero']
      >>> found[3].expr.rhs
      1/sqrt(epsilon)

    References:
      Ba, Kiros and Hinton, *Layer Normalization*, 2016, https://arxiv.org/abs/1607.06450;
      Zhang and Sennrich, *Root Mean Square Layer Normalization*, NeurIPS 2019,
      https://arxiv.org/abs/1910.07467; the papers of each layer in `PAPERS`.
    """
    return Formulas(_formulas(_known(key)))


@derived  # kept across processes: the bulk of a command's derivation work
def _formulas(layer: Layer) -> tuple[Formula, ...]:
    # The layers this one is built on, registered or not (DyT's tanh base), have their formulas
    # derived first, so that every form they state is proved before this layer's proofs cite them.
    for base in layer.requires:
        _formulas(base)
    return tuple(quantities.formulas(layer))


def formula(name: str, key: str | None = None) -> Formula:
    r"""One derived formula, by its stable name.

    The formula is one of `formulas` of its layer: derived from the layer's
    definition and proved equal to the form the layer states.  RMSNorm's slope
    at the degenerate input, for example, is

    .. math::

        \left.\frac{d u_3}{d t}\right|_{t=0} = \frac{1}{\sqrt{\varepsilon}}.

    Args:
      name: ``"<layer>.<name>"`` (``"rmsnorm.slope_at_zero"``), or a bare name
        (``"jacobian"``), which is the name in layer ``key``.
      key: the layer of a bare name; by default `CORE` (``"layernorm"``).

    Returns:
      The `Formula`: ``expr`` the derived relation (a SymPy equation or
      inequality), ``printed`` the relation as printed, ``latex()`` its LaTeX,
      and how it was established.  In Jupyter it shows as math.

    Raises:
      TypeError: ``name`` is not a string.
      ValueError: there is no such layer, or no formula of that name in it (the
        message lists the names there are).

    Example:
      >>> from derivations import formula
      >>> f = formula("rmsnorm.slope_at_zero")
      >>> f
      <Formula rmsnorm.slope_at_zero = 1/sqrt(epsilon)>
      >>> f.expr.rhs
      1/sqrt(epsilon)
      >>> f.established.value
      'as a limit'

    References:
      Zhang and Sennrich, *Root Mean Square Layer Normalization*, NeurIPS 2019,
      https://arxiv.org/abs/1910.07467.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a formula name such as 'layernorm.jacobian'; got {type(name).__name__}")
    if key is None:
        key, _, name = name.rpartition(".")
        key = key or CORE
    for f in formulas(key):
        if f.name == name:
            return f
    names = [f.name for f in formulas(key)]
    known = ", ".join(f.qualified for f in formulas(key))
    raise ValueError(f"name must be one of {known}; got {name!r}{_nearest(name, names)}")


def _rows(keys: tuple[str, ...], notation: Notation) -> list[dict[str, object]]:
    return [dict(row) for key in keys for row in _rendered(_known(key), "\n".join(notation.options()))]


@derived  # the LaTeX of every row: the other half of a derive run's work, kept for `report` and `check`
def _rendered(layer: Layer, options: str) -> tuple[dict[str, object], ...]:
    notation = Notation.parse(options.split("\n") if options else ())
    return tuple(f.row(notation) for f in _formulas(layer))


def _tasks(keys: Sequence[str]) -> list[tuple[str, ...]]:
    """``keys`` in groups, in order: each layer with the first of ``keys`` it is built on, through every level."""

    def home(key: str) -> str:
        shared = [layer.key for layer in _known(key).requires if layer.key in keys]
        return home(shared[0]) if shared else key

    groups: dict[str, list[str]] = {}
    for key in keys:
        groups.setdefault(home(key), []).append(key)
    return [tuple(group) for group in groups.values()]


def _worker(parent: int, mask: set[signal.Signals]) -> None:
    """A pool worker's start: it ignores Ctrl-C and ends with ``parent``."""
    from derivations.cli import end_with_parent

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    end_with_parent(parent)


def rows(
    keys: Sequence[str], notation: Notation = DEFAULT, progress: Callable[[int], object] | None = None
) -> list[dict[str, object]]:
    """The rendered rows of several layers, in the order given, the LaTeX in ``notation``;
    ``progress(k)`` hears of each k layers as they are done (a progress bar's update).

    Layers are independent, so on a machine with more than one core they are
    derived in forked worker processes.  A layer built on a base layer goes
    to the same worker as its base (and its base's base), which then derives
    the base only once.
    """

    tasks = _tasks(keys)
    workers = min(len(tasks), os.cpu_count() or 1)
    done: list[list[dict[str, object]]] = []
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        for task in tasks:
            done.append(_rows(task, notation))
            if progress is not None:
                progress(len(task))
    else:
        # Ctrl-C is held back while the workers are forked, and they ignore it: the command
        # reports it once, and its workers end with it (`_worker`).
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            pool = multiprocessing.get_context("fork").Pool(workers, _worker, (os.getpid(), mask))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        with pool:
            for task, found in zip(
                tasks, pool.imap(partial(_rows, notation=notation), tasks, chunksize=1), strict=True
            ):
                done.append(found)
                if progress is not None:
                    progress(len(task))
    order = {key: position for position, key in enumerate(keys)}
    # A stable sort by layer keeps each layer's own stable order.
    return sorted((row for chunk in done for row in chunk), key=lambda row: order[str(row["layer"])])
