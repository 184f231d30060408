"""conventions.png: response and slope of every normalization convention, same epsilon."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from figures._output import display_math
from numeric import layernorm, layernorm_std_eps, rmsnorm, rmsnorm_eps_outside

FILENAME = "conventions.png"
EPSILON = 0.1
# Solid for epsilon inside the root, dashed for epsilon added to a standard
# deviation; LayerNorm and RMSNorm coincide on (-t, 0, t), whose mean is 0,
# so RMSNorm is drawn thinner on top.
STYLES = {
    layernorm: ("#0072b2", "-", 3.2),
    rmsnorm: ("#56b4e9", "-", 1.4),
    layernorm_std_eps: ("#d55e00", "--", 2.4),
    rmsnorm_eps_outside: ("#009e73", ":", 2.4),
}


def draw() -> Figure:
    fig = Figure(figsize=(9.6, 4.6), dpi=100, facecolor="white")
    forward, slope = fig.subplots(1, 2)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.3, top=0.83, wspace=0.28)
    fig.suptitle("Where epsilon sits decides the slope at zero", fontsize=14, y=0.97)
    fig.text(0.5, 0.89, rf"Input $(-t, 0, t)$, third coordinate, $\varepsilon = {EPSILON:g}$", ha="center")
    t = np.linspace(-2, 2, 801)
    for module, (color, style, width) in STYLES.items():
        layer = module.LAYER
        label = rf"{layer.layer.key}: slope at 0 = ${display_math(layer.latex('slope_at_zero'))}$"
        forward.plot(t, module.response(t, EPSILON), color=color, ls=style, lw=width, label=label)
        slope.plot(t, module.slope(t, EPSILON), color=color, ls=style, lw=width)
    forward.set(xlim=(-2, 2), xlabel="input amplitude t", ylabel=r"normalized coordinate $u_3(t)$", title="Response")
    slope.set(xlim=(-2, 2), ylim=(0, None), xlabel="input amplitude t", ylabel=r"slope $du_3/dt$", title="Slope")
    fig.legend(*forward.get_legend_handles_labels(), loc="lower center", ncol=2, frameon=False, fontsize=9)
    for ax in (forward, slope):
        ax.grid(alpha=0.22)
        ax.spines[["top", "right"]].set_visible(False)
    return fig
