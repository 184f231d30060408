"""spectrum.png: LayerNorm's Jacobian eigenvalues against q/epsilon, with the bound 1/sqrt(epsilon)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from numeric.layernorm import LAYER

FILENAME = "spectrum.png"
EPSILON = 1e-2
SIZE = 8


def draw() -> Figure:
    # Inputs with a prescribed q: a fixed centered unit-variance pattern, scaled.
    pattern = np.linspace(-1, 1, SIZE)
    pattern = (pattern - pattern.mean()) / pattern.std()
    ratio = np.logspace(-3, 3, 241)
    x = np.sqrt(ratio * EPSILON)[:, None] * pattern
    eigen = LAYER.eigen_by_direction(x, EPSILON)
    scale = 1 / LAYER.bound(EPSILON)  # plot lambda * sqrt(epsilon): the bound becomes 1

    fig = Figure(figsize=(7.2, 4.8), dpi=100, facecolor="white")
    ax = fig.subplots()
    fig.subplots_adjust(left=0.12, right=0.97, bottom=0.13, top=0.86)
    fig.suptitle("LayerNorm Jacobian: eigenvalues against the input's variance", fontsize=13, y=0.97)
    ax.loglog(ratio, eigen["complement"] * scale, color="#0072b2", lw=2.2,
              label=r"$1/s$ on $w \perp \mathbf{1}, c$ (multiplicity $n-2$)")  # fmt: skip
    ax.loglog(ratio, eigen["centered"] * scale, color="#d55e00", lw=2.2, label=r"$\varepsilon/s^3$ along $c$")
    bound = LAYER.bound(EPSILON) * scale
    ax.axhline(bound, color="#444444", ls="--", lw=1.2, label=r"bound $1/\sqrt{\varepsilon}$ (attained at $q = 0$)")
    ax.text(0.02, 0.04, r"along $\mathbf{1}$ the eigenvalue is 0 (not on log axes)", transform=ax.transAxes)
    ax.set(
        xlim=(ratio[0], ratio[-1]),
        ylim=(1e-5, 3),
        xlabel=r"$q/\varepsilon$ (variance of the input over epsilon)",
        ylabel=r"eigenvalue $\times \sqrt{\varepsilon}$",
    )
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 0.09), fontsize=9, framealpha=0.95)
    ax.grid(alpha=0.22, which="both")
    ax.spines[["top", "right"]].set_visible(False)
    return fig
