"""conventions.png: response and slope of every normalization convention, same epsilon."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure

import numeric
from derivations import LAYERS, symmetric
from derivations.derive.grouped import Grouped
from derivations.derive.regimes import is_regimes
from figures._output import display_math

if TYPE_CHECKING:
    from matplotlib.axes import Axes

FILENAME = "conventions.png"
EPSILON = 0.1
# A layer without epsilon (Dynamic Tanh) is drawn at the initial alpha of its paper, gain 1 and bias 0.
ALPHA = 0.5
COLORS = ("#0072b2", "#d55e00", "#56b4e9", "#009e73", "#cc79a7", "#e69f00")
# Within a row, conventions that coincide on (-t, 0, t), whose mean is 0
# (LayerNorm and RMSNorm), are drawn thinner and dashed on top of each other.


# One row per place epsilon sits, told apart by what the derivations say: a clamped layer
# has regimes, and otherwise the length scale is sqrt(epsilon) (under the root) or epsilon.
GROUPS = (
    ("inside", r"$\varepsilon$ under the square root"),
    ("added", r"$\varepsilon$ added to a deviation (a standard deviation, a root mean square)"),
    ("floor", r"$\varepsilon$ as a floor on the norm: two regimes, and a kink where the norm reaches $\varepsilon$"),
    (
        "none",
        rf"no $\varepsilon$ and no statistics: $1/\alpha$ sets the scale; drawn at $\alpha = \alpha_0 = {ALPHA:g}$, "
        r"$\gamma = 1$, $\beta = 0$",
    ),
)


def _group(key: str) -> str:
    if not LAYERS[key].has_epsilon:
        return "none"
    if is_regimes(LAYERS[key]):
        return "floor"
    return "inside" if getattr(numeric, key).LAYER.epsilon_root(4.0) == 2.0 else "added"


def draw() -> Figure:
    # A layer applied block by block draws its base's curve: it is named in the base's label.
    blocked: dict[str, list[str]] = {}
    for key, layer in LAYERS.items():
        if isinstance(layer, Grouped):
            blocked.setdefault(layer.base.key, []).append(key)
    rows = _rows()
    fig = Figure(figsize=(12.8, 1.2 + 2.6 * len(rows)), dpi=100, facecolor="white")
    axes = fig.subplots(len(rows), 2, squeeze=False)
    top = 1 - 1.05 / fig.get_figheight()
    fig.subplots_adjust(left=0.06, right=0.68, bottom=0.45 / fig.get_figheight(), top=top, hspace=0.55, wspace=0.25)
    fig.suptitle("Where epsilon sits decides the slope at zero", fontsize=14, y=1 - 0.25 / fig.get_figheight())
    fig.text(
        0.5,
        1 - 0.6 / fig.get_figheight(),
        rf"Input $(-t, 0, t)$, third coordinate, $\varepsilon = {EPSILON:g}$"
        + (rf"; Dynamic Tanh at $\alpha = {ALPHA:g}$" if any(r[0] == "none" for r in rows) else ""),
        ha="center",
    )
    for (group, title, keys), (forward, slope) in zip(rows, axes, strict=True):
        _draw_row(forward, slope, group, keys, blocked)
        forward.set_title(title, loc="left", fontsize=10.5)
        forward.set(xlim=(-2, 2), xlabel="input amplitude t", ylabel=r"response $u_3(t)$")
        slope.set(xlim=(-2, 2), ylim=(0, None), xlabel="input amplitude t", ylabel=r"slope $du_3/dt$")
        slope.legend(
            *forward.get_legend_handles_labels(),
            loc="upper left",
            bbox_to_anchor=(1.03, 1.0),
            frameon=False,
            fontsize=9,
        )
        for ax in (forward, slope):
            ax.grid(alpha=0.22)
            ax.spines[["top", "right"]].set_visible(False)
    return fig


def _rows() -> list[tuple[str, str, list[str]]]:
    """The figure's rows: each group's name, title and layers, for the groups that have one."""
    # A layer with a scalar input (ScaleNorm's gain) has no response of t and epsilon alone; one
    # whose partial mean runs over a subset (partial RMSNorm) is drawn at its default, as derived;
    # one without epsilon (Dynamic Tanh) has a response of t and its scalar, drawn at ALPHA.
    chosen = set(symmetric()) | {key for key, layer in LAYERS.items() if layer.subsets}
    drawn = [
        key
        for key in LAYERS
        if key in chosen
        and not isinstance(LAYERS[key], Grouped)
        and (not LAYERS[key].scalars or not LAYERS[key].has_epsilon)
    ]
    rows = [(name, title, [key for key in drawn if _group(key) == name]) for name, title in GROUPS]
    return [row for row in rows if row[2]]


def _draw_row(forward: Axes, slope: Axes, group: str, keys: list[str], blocked: dict[str, list[str]]) -> None:
    """Each layer's response on ``forward`` and its slope on ``slope``, labelled with its slope at zero."""
    t = np.linspace(-2, 2, 801)
    for position, key in enumerate(keys):
        module = getattr(numeric, key)
        color, style = COLORS[position % len(COLORS)], ("-", "--", ":", "-.")[position % 4]
        also = f"\nalso {', '.join(blocked[key])}, per block" if key in blocked else ""
        second = ALPHA if group == "none" else EPSILON
        value = f" = {float(module.slope_at_zero(second)):g}" if group == "none" else ""
        at = "".join(f" at {subset.keyword} = {subset.default}" for subset in LAYERS[key].subsets)
        label = rf"{key}{at}: slope at 0 = ${display_math(module.slope_at_zero.latex)}${value}{also}"
        forward.plot(t, module.response(t, second), color=color, ls=style, lw=2.4 - 0.5 * position, label=label)
        slope.plot(t, module.slope(t, second), color=color, ls=style, lw=2.4 - 0.5 * position)
