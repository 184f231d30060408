"""The generated blocks of the README and the documentation pages.

Each block sits between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` in the file `PAGES`
names for it: the README's one formula, the derive sample and the LaTeX excerpt (getting
started), the conventions table (the layers and their conventions) and the numeric functions
of every layer (the numeric API).  ``python tests/golden/readme.py`` rewrites them (``make
golden`` runs it); tests/test_cli.py fails when a block and the derivations disagree.

The README's claim examples and the claim reference's first are ``output`` blocks: a
``console`` block whose commands (``$ ...``) are run again, each followed by what it prints
now, wrapped at 100 columns.  tests/test_docs.py runs them and compares, whitespace aside.

The accuracy table of docs/accuracy.md is a block too, written by ``make accuracy``
(tests/accuracy/report.py), which measures it.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

# Each generated block by the file that holds it.
PAGES = {
    "formula": README,
    "sample": DOCS / "getting-started.md",
    "latex": DOCS / "getting-started.md",
    "conventions": DOCS / "conventions.md",
    "numeric": DOCS / "numeric.md",
    "example": DOCS / "numeric.md",
}

# The README's one formula, and the derive sample's three.
FORMULA = "layernorm.spectral_norm"
SAMPLE = ("layernorm.slope_at_zero", "layernorm.jacobian", "layernorm.spectral_norm")
EXCERPT = ("layernorm.jacobian", "layernorm_affine.asymptote")
# The numeric function whose docstring's example the numeric API page shows.
EXAMPLE = ("layernorm", "hvp")

MATH = re.compile(r"\$[^$\n]+\$")


def block(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {name}:start -->\n)(.*?)(<!-- {name}:end -->)", re.S)


def table_math(table: str) -> str:
    r"""The table with no ``|`` inside its math, which a Markdown table would split a cell at:
    ``\|`` as ``\Vert`` and ``|`` as ``\vert`` (the same symbols in TeX)."""

    def bars(found: re.Match[str]) -> str:
        inner = found.group(0)[1:-1].replace(r"\|", r"\Vert ").replace("|", r"\vert ")
        return "$" + inner.rstrip() + "$"  # no space before the closing $, or it is not math

    return MATH.sub(bars, table)


def _layers(keys: list[str], every: list[str]) -> str:
    if keys == every:
        return "every layer"
    missing = [key for key in every if key not in keys]
    if len(missing) <= len(keys) // 2:
        return "every layer but " + ", ".join(f"`{key}`" for key in missing)
    return ", ".join(f"`{key}`" for key in keys)


def _what(layer: object, name: str) -> str:
    """What function ``name`` of a numeric layer computes: its registry row's meaning (with the
    direction's, for an eigenvalue), or the first sentence of the method's docstring."""
    from derivations import quantities

    found = quantities.by_numeric(layer.definition, name)  # type: ignore[attr-defined]
    if found is None:
        doc = getattr(type(layer), name).__doc__ or ""
        what = " ".join(doc.strip().split("\n\n")[0].split()).split(". ")[0].rstrip(".")
    else:
        _, quantity, item = found
        what = quantity.meaning
        if getattr(item, "meaning", None):
            what += f": {item.meaning}"
    return what.replace("|", r"\|").replace("<", "&lt;").replace(">", "&gt;")


def numeric_table(keys: Iterable[str]) -> str:
    """Every function of ``numeric.<key>``, what it computes and the layers that have it."""
    import numeric

    every = list(keys)
    owners: dict[str, list[str]] = {}
    what: dict[str, str] = {}
    for key in every:
        layer = numeric.facade(key)
        for name in layer.names():
            owners.setdefault(name, []).append(key)
            what.setdefault(name, _what(layer, name))
    lines = ["| function | what it computes | layers |", "|---|---|---|"]
    lines += [f"| `{name}` | {what[name]} | {_layers(owners[name], every)} |" for name in owners]
    return "\n".join(lines) + "\n"


def docstring_example(key: str, name: str) -> str:
    """The example of the docstring of ``numeric.<key>.<name>``, a doctest the test suite runs."""
    import numeric

    doc = getattr(numeric.facade(key), name).__doc__
    example = doc.split("\nExample:\n", 1)[1].split("\n\n", 1)[0]
    return "```pycon\n" + "\n".join(line.removeprefix("  ") for line in example.splitlines()) + "\n```\n"


def generated() -> dict[str, str]:
    from derivations.catalog import LAYERS, rows
    from derivations.render import conventions, latex, text

    every = rows(list(LAYERS))
    by_name = {r["name"]: r for r in every}
    one = by_name[FORMULA]
    excerpt = [by_name[name] for name in EXCERPT]
    # The `--format latex` text, then the same formulas as GitHub and the documentation render them.
    rendered = "".join(f"```math\n{r['latex']}\n```\n" for r in excerpt)
    return {
        "formula": "```text\n" + text([one]) + "```\n\n```math\n" + str(one["latex"]) + "\n```\n",
        "sample": "```text\n" + text([by_name[name] for name in SAMPLE]) + "```\n",
        "latex": "```latex\n" + latex(excerpt) + "```\n\nRendered:\n\n" + rendered,
        "conventions": table_math(conventions(every)),
        "numeric": numeric_table(LAYERS),
        "example": docstring_example(*EXAMPLE),
    }


def update(text: str, contents: dict[str, str] | None = None) -> str:
    """``text`` with every generated block it holds rewritten."""
    for name, content in (generated() if contents is None else contents).items():
        text = block(name).sub(lambda m, new=content: m.group(1) + new + m.group(3), text)
    return text


# The files with output blocks.
OUTPUTS = (README, DOCS / "claims.md")
WIDTH = 100


def run(command: str) -> str:
    """What ``command`` prints, run as a reader would in the checkout (this interpreter as the venv's)."""
    argv = shlex.split(command)
    if argv[0] in (".venv/bin/python", "python"):
        argv[0] = sys.executable
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300).stdout


def wrapped(output: str) -> str:
    """Each line of ``output`` within `WIDTH` columns, its continuations at its own indent."""
    lines = []
    for line in output.splitlines():
        indent = line[: len(line) - len(line.lstrip())]
        lines += textwrap.wrap(
            line, WIDTH, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
        ) or [""]
    return "\n".join(lines)


def outputs(text: str) -> str:
    """``text`` with each output block's commands followed by what they print now."""

    def again(found: re.Match[str]) -> str:
        commands = [line[2:] for line in found.group(2).splitlines() if line.startswith("$ ")]
        body = "".join(f"$ {command}\n{wrapped(run(command))}\n" for command in commands)
        return found.group(1) + "```console\n" + body + "```\n" + found.group(3)

    return block("output").sub(again, text)


def main() -> int:
    contents = generated()
    for page in sorted(set(PAGES.values()) | set(OUTPUTS)):
        text = page.read_text()
        new = update(text, contents)
        if page in OUTPUTS:
            new = outputs(new)
        if new != text:
            page.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
