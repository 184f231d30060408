"""conventions.png: response and slope of every normalization convention, same epsilon."""

from __future__ import annotations

import itertools

import numpy as np
from matplotlib.figure import Figure

import numeric
from derivations import LAYERS, symmetric
from derivations.grouped import Grouped
from figures._output import display_math

FILENAME = "conventions.png"
EPSILON = 0.1
COLORS = ("#0072b2", "#d55e00", "#56b4e9", "#009e73", "#cc79a7", "#e69f00")
# Solid for epsilon inside the root, dashed and dotted for epsilon added to a
# standard deviation.  Conventions that coincide on (-t, 0, t), whose mean is
# 0 (LayerNorm and RMSNorm), are drawn thinner on top of each other.
DASHES = ("--", ":", "-.")
SOLID_WIDTHS = (3.2, 1.4, 0.8)


def draw() -> Figure:
    fig = Figure(figsize=(9.6, 4.6), dpi=100, facecolor="white")
    forward, slope = fig.subplots(1, 2)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.3, top=0.83, wspace=0.28)
    fig.suptitle("Where epsilon sits decides the slope at zero", fontsize=14, y=0.97)
    fig.text(0.5, 0.89, rf"Input $(-t, 0, t)$, third coordinate, $\varepsilon = {EPSILON:g}$", ha="center")
    t = np.linspace(-2, 2, 801)
    dashes, widths = itertools.cycle(DASHES), itertools.cycle(SOLID_WIDTHS)
    # A layer applied block by block draws its base's curve: it is named in the base's label.
    blocked: dict[str, list[str]] = {}
    for key, layer in LAYERS.items():
        if isinstance(layer, Grouped):
            blocked.setdefault(layer.base.key, []).append(key)
    # A layer with a scalar input (ScaleNorm's gain) has no response of t and epsilon alone.
    drawn = [key for key in symmetric() if not isinstance(LAYERS[key], Grouped) and not LAYERS[key].scalars]
    for position, key in enumerate(drawn):
        module = getattr(numeric, key)
        inside = module.LAYER.epsilon_root(4.0) == 2.0  # the length scale is sqrt(epsilon): under the root
        style, width = ("-", next(widths)) if inside else (next(dashes), 2.4)
        color = COLORS[position % len(COLORS)]
        names = ", ".join([key, *blocked.get(key, [])])
        label = rf"{names}: slope at 0 = ${display_math(module.slope_at_zero.latex)}$"
        forward.plot(t, module.response(t, EPSILON), color=color, ls=style, lw=width, label=label)
        slope.plot(t, module.slope(t, EPSILON), color=color, ls=style, lw=width)
    forward.set(xlim=(-2, 2), xlabel="input amplitude t", ylabel=r"normalized coordinate $u_3(t)$", title="Response")
    slope.set(xlim=(-2, 2), ylim=(0, None), xlabel="input amplitude t", ylabel=r"slope $du_3/dt$", title="Slope")
    fig.legend(*forward.get_legend_handles_labels(), loc="lower center", ncol=2, frameon=False, fontsize=9)
    for ax in (forward, slope):
        ax.grid(alpha=0.22)
        ax.spines[["top", "right"]].set_visible(False)
    return fig
