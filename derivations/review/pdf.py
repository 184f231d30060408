r"""review.pdf: each relation typeset as the paper writes it, with its verdict in a coloured margin note.

Only packages of a minimal TeX installation (texlive-latex-base) are used: amsmath, amssymb and
color.  pdflatex runs in a temporary folder; an equation pdflatex cannot typeset (a command of a
package the paper loads, say) is shown as its source instead, so that one bad equation does not
cost the whole PDF.  Where pdflatex is missing, or fails even so, `build` says why in one line.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from derivations.review.classify import Entry

NOTE_PREFIX = "PDF:"  # the line of review.md that says whether review.pdf was written
COMPILE_TIMEOUT = 120.0
RETRIES = 8  # equations replaced by their source before pdflatex is given up on
# The colour of each verdict (RGB), and of each class that has none.
COLOURS = {
    "proved": "0,0.5,0",
    "supported": "0,0.35,0.75",
    "refuted": "0.8,0,0",
    "error": "0.85,0.45,0",
    "vacuous": "0.85,0.45,0",
    "defined": "0.35,0.2,0.6",
    "not in the vocabulary": "0.45,0.45,0.45",
    "not read": "0.45,0.45,0.45",
}
# Commands papers take from packages beyond amsmath and amssymb, given a plain meaning.
PREAMBLE = r"""\documentclass[10pt]{article}
\usepackage{amsmath,amssymb}
\usepackage{color}
\setlength{\textwidth}{12.5cm}\setlength{\oddsidemargin}{0cm}\setlength{\evensidemargin}{0cm}
\setlength{\marginparwidth}{3.6cm}\setlength{\marginparsep}{0.4cm}
\setlength{\textheight}{22cm}\setlength{\topmargin}{-1cm}\setlength{\parindent}{0pt}
\providecommand{\coloneqq}{\mathrel{:=}}
\providecommand{\eqqcolon}{\mathrel{=:}}
\providecommand{\bm}[1]{\boldsymbol{#1}}
\providecommand{\mathbold}[1]{\boldsymbol{#1}}
\providecommand{\operatorname}[1]{\mathrm{#1}}
\providecommand{\RR}{\mathbb{R}}
\allowdisplaybreaks
\sloppy
"""


@dataclass(frozen=True)
class Built:
    """review.pdf's bytes, or None with the reason; ``note`` is the line review.md gives."""

    pdf: bytes | None
    note: str


def available() -> bool:
    return shutil.which("pdflatex") is not None


def _escape(text: str) -> str:
    """``text`` as LaTeX text: every special character escaped."""
    special = {
        "\\": r"\textbackslash{}",
        "{": r"\{",
        "}": r"\}",
        "$": r"\$",
        "&": r"\&",
        "#": r"\#",
        "^": r"\^{}",
        "_": r"\_",
        "%": r"\%",
        "~": r"\~{}",
        "<": r"$<$",
        ">": r"$>$",
        "|": r"$|$",
    }
    return "".join(special.get(char, char) for char in text.encode("ascii", "replace").decode())


def _note(entry: Entry, prefix: str = "") -> str:
    """The margin note of one link: its verdict (or class) in its colour; ``prefix`` names the link."""
    head = entry.verdict if entry.kind == "checked" else entry.kind
    colour = COLOURS.get(entry.verdict if entry.kind == "checked" else entry.kind, COLOURS["not read"])
    if entry.kind == "defined" and entry.layer:
        head = f"definition: {entry.layer}"
    head = prefix + head
    return rf"\marginpar{{\raggedright\footnotesize\textcolor[rgb]{{{colour}}}{{\textbf{{{_escape(head)}}}}}}}"


def _groups(entries: list[Entry]) -> list[list[Entry]]:
    """The entries of one row of the paper together (a chain's links share its row)."""
    groups: list[list[Entry]] = []
    for entry in entries:
        if groups and groups[-1][0].found is entry.found:
            groups[-1].append(entry)
        else:
            groups.append([entry])
    return groups


def source(entries: list[Entry], title: str, plain: frozenset[int] = frozenset()) -> str:
    """The LaTeX of review.pdf; the rows numbered in ``plain`` are shown as their source, not typeset."""
    lines = [PREAMBLE, r"\begin{document}", rf"\section*{{Review of \texttt{{{_escape(title)}}}}}"]
    for number, group in enumerate(_groups(entries)):
        found = group[0].found
        where = f"{found.file}:{found.line}" + (f" ({found.label})" if found.label else "")
        lines.append(rf"\par\medskip\noindent{{\small\texttt{{{_escape(where)}}}}}")
        several = len(group) > 1
        lines += [_note(entry, f"{k}. " if several else "") for k, entry in enumerate(group, 1)]
        if number in plain or not _typesettable(found.latex):
            lines.append(rf"\par{{\small\texttt{{{_escape(found.latex)}}}}}\par")
        else:
            lines += [r"\begin{equation*}", found.latex, r"\end{equation*}"]
        lines.append(rf"% row {number}")
    lines.append(r"\end{document}")
    return "\n".join(lines) + "\n"


def _typesettable(latex: str) -> bool:
    """Whether a row can go into a display as it is: balanced braces, no environment, no line break."""
    depth = 0
    for token in re.findall(r"\\.|[{}]", latex):
        depth += {"{": 1, "}": -1}.get(token, 0)
        if depth < 0:
            return False
    return depth == 0 and not re.search(r"\\(begin|end|label|tag|\\|par\b|input|include|def\b)", latex)


def _failing_row(text: str, log: str) -> int | None:
    """The row of ``text`` at the line pdflatex's first error names (``l.123``), or None."""
    match = re.search(r"^l\.(\d+)", log, re.M)
    if match is None:
        return None
    below = text.splitlines()[int(match.group(1)) - 1 :]
    for line in below:
        row = re.fullmatch(r"% row (\d+)", line)
        if row:
            return int(row.group(1))
    return None


def _compile(text: str, folder: Path) -> tuple[bytes | None, str]:
    tex = folder / "review.tex"
    tex.write_text(text, encoding="utf-8")
    command = ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "review.tex"]
    try:
        subprocess.run(command, cwd=folder, capture_output=True, timeout=COMPILE_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return None, f"pdflatex took more than {COMPILE_TIMEOUT:.0f} s"
    log_file = tex.with_suffix(".log")
    log = log_file.read_text(encoding="latin-1") if log_file.exists() else ""
    pdf = tex.with_suffix(".pdf")
    if pdf.exists() and not re.search(r"^! ", log, re.M):
        return pdf.read_bytes(), log
    return None, log


def build(entries: list[Entry], title: str) -> Built:
    """review.pdf for ``entries``, compiled in a temporary folder; never raises for a bad paper."""
    if not available():
        return Built(None, f"{NOTE_PREFIX} review.pdf not written: pdflatex is not on PATH")
    plain: set[int] = set()
    with tempfile.TemporaryDirectory(prefix="review-pdf-") as folder:
        for _ in range(RETRIES + 1):
            text = source(entries, title, frozenset(plain))
            pdf, log = _compile(text, Path(folder))
            if pdf is not None:
                shown = f" ({len(plain)} shown as source: pdflatex could not typeset them)" if plain else ""
                return Built(pdf, f"{NOTE_PREFIX} review.pdf typesets each relation with its verdict{shown}")
            row = _failing_row(text, log)
            if row is None or row in plain:
                break
            plain.add(row)
    error = re.search(r"^! (.*)$", log, re.M)
    reason = error.group(1) if error else (log.splitlines()[0] if log.strip() else "no log")
    return Built(None, f"{NOTE_PREFIX} review.pdf not written: pdflatex failed: {' '.join(reason.split())[:160]}")
