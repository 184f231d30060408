"""A formula's printed lines read back as one line: what a broken display must still say."""

import re


def unbroken(lines: list[str]) -> str:
    r"""``lines`` (`Formula.latex_lines`) joined, with the breaking undone: the ``aligned`` block a
    long ``cases`` branch is set in, and the \bigl( \bigr) a product's broken sum is set in (one line
    prints \left( \right)), so that it can be compared with `Formula.latex`."""
    text = " ".join(line.strip().removesuffix(r"\\").strip() for line in lines)
    text = re.sub(
        r"\\begin\{aligned\}\[t\] & (.*?) \\end\{aligned\}",
        lambda found: found.group(1).replace(r" \\ & \quad ", " "),
        text,
    )
    text = text.replace(r"\bigl(", r"\left(").replace(r" \bigr)", r"\right)")
    return re.sub(r" +", " ", text)
