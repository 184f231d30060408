"""How wide a line of math LaTeX is when typeset, in letters: for breaking displayed equations.

The printers' own output is measured, not arbitrary LaTeX: commands, braces,
fractions, roots, scripts and the spacing commands they emit.  A letter, digit
or operator counts 1, a wider letter or Greek capital its typeset width over
theirs, a space in the source half that (the room around an operator; none
between factors, which no space marks); a fraction is as wide as its wider
part; a script counts at the size it is set in; a font command is as wide as
its argument; any other command (a Greek letter, an operator symbol) counts 1;
an environment (cases, aligned) is as wide as its columns, each as wide as its
widest cell, plus a brace.  The count is what a reader sees, so that a long
subscript given with ``--notation`` makes a line wider, and a ``\\frac`` does
not count twice.

    >>> width(r"\\frac{1}{N_{abcdef} s}")
    8.42
    >>> width("a + b")
    4.0
    >>> width(r"\\begin{cases} a & b \\\\ c + d & e \\end{cases}")
    10.0
"""

from __future__ import annotations

# The width of a superscript or subscript letter next to one of the text size: TeX's \scriptstyle
# sets it at 7/10 of the size, in cmmi7, whose letters are drawn wider (their mean is 0.82 of cmmi10's).
SCRIPT = 0.82
# Commands whose one braced argument is set as text of the same width.
FONTS = frozenset(
    {"mathbf", "mathrm", "mathbb", "mathcal", "mathit", "operatorname", "boldsymbol", "text", "mathsf", "overline"}
)
# Letters in math italic wider than the mean lowercase one a letter stands for (0.4995 em): their
# widths in cmmi10's metrics over that, capitals in five classes.  The narrower ones count 1.
LETTERS = {
    **dict.fromkeys("IJ", 1.0),  # I 0.88, J 1.11: about a letter
    **dict.fromkeys("FPSTVY", 1.25),  # 1.16 .. 1.29
    **dict.fromkeys("ABCELRUZ", 1.45),  # 1.36 .. 1.52
    **dict.fromkeys("DGHNOQX", 1.6),  # 1.53 .. 1.66
    **dict.fromkeys("KMW", 1.9),  # 1.70 .. 1.94
    **dict.fromkeys("hux", 1.15),
    "n": 1.2,
    "w": 1.45,
    "m": 1.75,
}
# Commands set wider than a letter: the upright Greek capitals (cmr10's widths over the same mean).
WIDE_COMMANDS = {
    **dict.fromkeys(("Gamma",), 1.25),
    **dict.fromkeys(("Xi", "Lambda"), 1.4),
    **dict.fromkeys(("Sigma", "Phi", "Omega", "Pi"), 1.5),
    **dict.fromkeys(("Theta", "Upsilon", "Psi"), 1.56),
    "Delta": 1.67,
}
SPACES = {",": 0.3, ":": 0.3, ";": 0.4, "!": 0.0, "quad": 2.0, "qquad": 4.0, " ": 0.3}
FRACTIONS = frozenset({"frac", "dfrac", "tfrac"})


def width(tex: str) -> float:
    """The typeset width of ``tex``, in letters (see the module's docstring)."""
    total, _ = _width(tex, 0)
    return round(total, 6)


def _group(tex: str, at: int) -> tuple[float, int]:
    """The width of the group at ``at`` (a braced group, a command or one character), and where it ends."""
    while at < len(tex) and tex[at] == " ":
        at += 1
    if at >= len(tex):
        return 0.0, at
    if tex[at] == "{":
        inner, end = _width(tex, at + 1, closing=True)
        return inner, end
    if tex[at] == "\\":
        return _command(tex, at)
    return LETTERS.get(tex[at], 1.0), at + 1


def _top_level(tex: str, separator: str) -> list[str]:
    """``tex`` split at each ``separator`` outside braces and nested environments."""
    parts, depth, start, at = [], 0, 0, 0
    while at < len(tex):
        if tex.startswith("\\begin{", at) or tex[at] == "{":
            depth += 1
        elif tex.startswith("\\end{", at) or tex[at] == "}":
            depth -= 1
        elif depth == 0 and tex.startswith(separator, at):
            parts.append(tex[start:at])
            start = at + len(separator)
            at = start
            continue
        at += 1
    return [*parts, tex[start:]]


def _command(tex: str, at: int) -> tuple[float, int]:
    """A command at ``at`` (its backslash) and its arguments."""
    end = at + 1
    while end < len(tex) and tex[end].isalpha():
        end += 1
    if end == at + 1:  # a one-character command: \, \; \{ ...
        symbol = tex[at + 1 : at + 2]
        return SPACES.get(symbol, 1.0), at + 2
    name = tex[at + 1 : end]
    if name in SPACES:
        return SPACES[name], end
    if name == "begin" and tex.startswith("{", end):
        return _environment(tex, end)
    if name in FRACTIONS:
        top, end = _group(tex, end)
        bottom, end = _group(tex, end)
        return max(top, bottom) + 0.4, end
    if name == "sqrt":
        if end < len(tex) and tex[end] == "[":
            end = tex.index("]", end) + 1
        inner, end = _group(tex, end)
        return inner + 1.0, end
    if name in FONTS:
        return _group(tex, end)
    if name in ("left", "right", "bigl", "bigr", "Bigl", "Bigr"):
        delimiter, end = _group(tex, end)
        return (0.0 if tex[end - 1] == "." else delimiter), end
    return WIDE_COMMANDS.get(name, 1.0), end


def _environment(tex: str, end: int) -> tuple[float, int]:
    """An environment whose ``\\begin`` ends at ``end``: its width, and where it ends."""
    close = tex.index("}", end)
    environment = tex[end + 1 : close]
    finish = tex.find(f"\\end{{{environment}}}", close)
    if finish < 0:
        return 1.0, close + 1
    rows = [_top_level(row, "&") for row in _top_level(tex[close + 1 : finish], "\\\\")]
    columns = max(len(row) for row in rows)
    # Columns line up: each is as wide as its widest cell, with a quad between two in cases
    # (aligned pairs its columns, right- and left-aligned, with no space).
    widest = sum(max(_width(row[c], 0)[0] for row in rows if c < len(row)) for c in range(columns))
    gap = 2.0 if environment == "cases" else 0.0
    return widest + gap * (columns - 1) + 1.0, finish + len(f"\\end{{{environment}}}")


def _width(tex: str, at: int, closing: bool = False) -> tuple[float, int]:
    """The width from ``at`` to the end, or (``closing``) to the brace that closes the group."""
    total = 0.0
    while at < len(tex):
        char = tex[at]
        if char == "}" and closing:
            return total, at + 1
        if char in "^_":
            script, at = _group(tex, at + 1)
            total += SCRIPT * script
        elif char in "{\\":
            part, at = _group(tex, at)
            total += part
        elif char == "}":
            at += 1
        else:
            total += 0.5 if char == " " else LETTERS.get(char, 1.0)
            at += 1
    return total, at
