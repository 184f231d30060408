"""The README's generated blocks: the conventions table, the derive sample and the LaTeX excerpt.

``python tests/golden/readme.py`` rewrites them (``make golden`` runs it);
tests/test_cli.py fails when the README and the derivations disagree.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def block(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {name}:start -->\n)(.*?)(<!-- {name}:end -->)", re.S)


def generated() -> dict[str, str]:
    from derivations.catalog import LAYERS, rows
    from derivations.render import conventions, latex, text

    every = rows(list(LAYERS))
    shown = ("layernorm.slope_at_zero", "layernorm.jacobian", "layernorm.spectral_norm")
    sample = [r for r in every if r["name"] in shown]
    excerpt = [r for r in every if r["name"] in ("layernorm.jacobian", "layernorm_affine.asymptote")]
    # The `--format latex` text, then the same formulas as GitHub renders them.
    rendered = "".join(f"```math\n{r['latex']}\n```\n" for r in excerpt)
    return {
        "conventions": conventions(every),
        "sample": "```text\n" + text(sample) + "```\n",
        "latex": "```latex\n" + latex(excerpt) + "```\n\nRendered:\n\n" + rendered,
    }


def update(readme: str) -> str:
    for name, content in generated().items():
        readme = block(name).sub(lambda m, new=content: m.group(1) + new + m.group(3), readme)
    return readme


if __name__ == "__main__":
    README.write_text(update(README.read_text()))
    sys.exit(0)
