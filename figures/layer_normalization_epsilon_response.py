"""The two-panel figure: forward response and slope of LayerNorm for three epsilons."""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MultipleLocator
from numeric.layernorm import LAYER

from figures._output import display_math
from numeric import layernorm

FILENAME = "layer-normalization-epsilon-response.png"
EPSILONS = (0.04, 0.25, 1.0)
COLORS = ("#0072b2", "#d55e00", "#009e73")


def draw() -> Figure:
    with matplotlib.rc_context({"font.size": 10, "axes.titlesize": 11}):
        return _draw()


def _draw() -> Figure:
    fig = Figure(figsize=(8.6, 4.1), dpi=100, facecolor="white")
    forward, derivative = fig.subplots(1, 2)
    fig.subplots_adjust(left=0.075, right=0.98, bottom=0.18, top=0.79, wspace=0.3)
    fig.suptitle("What epsilon changes in layer normalization", y=0.97, fontsize=14)
    fig.text(
        0.5,
        0.88,
        r"Input $(-t,0,t)$; plot the third normalized coordinate; gain = 1, bias = 0",
        ha="center",
        fontsize=10,
    )
    t = np.linspace(-3, 3, 1201)
    near_zero = np.linspace(-1, 1, 1201)
    for epsilon, color in zip(EPSILONS, COLORS, strict=True):
        label = rf"$\varepsilon={epsilon:g}$"
        forward.plot(t, LAYER.response(t, epsilon), color=color, lw=2, label=label)
        derivative.plot(near_zero, LAYER.slope(near_zero, epsilon), color=color, lw=2)
    for asymptote in LAYER.asymptotes():
        forward.axhline(asymptote, color="#888888", ls="--", lw=0.8)
    forward.axhline(0, color="#999999", lw=0.7)
    forward.axvline(0, color="#999999", lw=0.7)
    forward.set(
        xlim=(-3, 3),
        ylim=(-1.4, 1.4),
        xlabel="Input amplitude t",
        ylabel="Normalized coordinate",
        title="Forward response",
    )
    forward.legend(loc="lower right", framealpha=0.95, fontsize=9)
    peak = max(float(LAYER.slope(0.0, e)) for e in EPSILONS)
    derivative.set(
        xlim=(-1, 1),
        ylim=(0, 1.23 * peak),
        xlabel="Input amplitude t",
        ylabel="Derivative of normalized coordinate",
        title="Sensitivity near a constant input",
    )
    # Ticks every 0.5 leave room for the labels; the seed's 0.25 overlapped.
    derivative.xaxis.set_major_locator(MultipleLocator(0.5))
    at_zero = display_math(layernorm.slope_at_zero.latex)
    derivative.text(
        0.5,
        0.96,
        rf"Slope at $t=0$: ${at_zero}$",
        transform=derivative.transAxes,
        ha="center",
        va="top",
        fontsize=10,
    )
    for ax in (forward, derivative):
        ax.set_facecolor("white")
        ax.grid(alpha=0.22)
        ax.spines[["top", "right"]].set_visible(False)
    return fig
