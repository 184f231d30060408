r"""A paper's LaTeX read: its files (``\input``), its macros, each relation with file, line and label."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pylatexenc.latexwalker import (
    LatexCommentNode,
    LatexEnvironmentNode,
    LatexGroupNode,
    LatexMacroNode,
    LatexMathNode,
    LatexSpecialsNode,
    LatexWalker,
    LatexWalkerError,
)

from derivations.files import Unreadable, read_capped

# The whole document, every \input file together: a paper's source is well under a megabyte.
MAX_BYTES = 2_000_000
MAX_FILES = 200
MAX_EXPANSIONS = 5_000
MAX_EXPANDED = 20_000  # characters of one relation after its macros are expanded
# Math environments and how their rows are relations: each row its own, or the whole one.
ROWS = {"align", "align*", "gather", "gather*", "eqnarray", "eqnarray*", "flalign", "flalign*", "alignat", "alignat*"}
WHOLE = {"equation", "equation*", "multline", "multline*", "displaymath", "math"}
INNER = {"split", "aligned", "gathered"}
# Relations that make inline math worth collecting.
RELATION = re.compile(
    r"(?<![\\<>])(=|<|>)|\\(le|leq|ge|geq|leqslant|geqslant|neq|ne|approx|coloneqq|equiv|triangleq)(?![A-Za-z])"
)
DIRECTIVE = "layernorm-claims:"


class DocumentError(ValueError):
    """A document that cannot be read whole; its message is one line."""


@dataclass(frozen=True)
class Found:
    """One row of math with a relation, as the paper writes it."""

    file: str
    line: int
    latex: str
    label: str | None
    environment: str


@dataclass
class Document:
    """The relations of a paper in source order, and the notation its comments give."""

    relations: list[Found] = field(default_factory=list)
    notation: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


@dataclass
class _Reader:
    root: Path
    document: Document = field(default_factory=Document)
    macros: dict[str, tuple[int, str, str | None]] = field(default_factory=dict)
    stack: list[Path] = field(default_factory=list)
    used: int = 0


def read(path: str | Path) -> Document:
    """Every relation of the paper at ``path`` and the files it inputs; `DocumentError` says why not."""
    path = Path(path)
    reader = _Reader(path.resolve().parent)
    _read_file(reader, path.resolve(), path.name)
    return reader.document


def _read_file(reader: _Reader, path: Path, shown: str) -> None:
    if path in reader.stack:
        raise DocumentError(f"{shown}: \\input cycle: {' -> '.join(p.name for p in (*reader.stack, path))}")
    if len(reader.document.files) >= MAX_FILES:
        raise DocumentError(f"{shown}: more than {MAX_FILES} \\input files")
    try:
        data = read_capped(path, MAX_BYTES - reader.used)
    except Unreadable as error:
        problem = str(error)
        if problem.startswith("larger than"):
            problem = f"the document is larger than {MAX_BYTES} bytes"
        raise DocumentError(f"{shown}: {problem}") from None
    reader.used += len(data)
    text = _text(data, shown)
    reader.document.files.append(shown)
    reader.stack.append(path)
    try:
        nodes, _, _ = LatexWalker(text, tolerant_parsing=False).get_latex_nodes()
    except (LatexWalkerError, RecursionError, IndexError, ValueError) as error:
        where = getattr(error, "lineno", None)
        message = " ".join(str(getattr(error, "msg", "") or error).split())[:160]
        raise DocumentError(f"{shown}{f':{where}' if where else ''}: not well-formed LaTeX: {message}") from None
    _walk(reader, nodes or [], text, path, shown)
    reader.stack.pop()


def _text(data: bytes, shown: str) -> str:
    if not data.strip():
        raise DocumentError(f"{shown}: the file is empty")
    if b"\0" in data:
        raise DocumentError(f"{shown}: a binary file, not LaTeX")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise DocumentError(f"{shown}: a binary file, not LaTeX (not UTF-8)") from None
    if not re.search(r"\\[A-Za-z]+|\$", text):
        raise DocumentError(f"{shown}: not LaTeX (no command and no math)")
    return text


def _line(text: str, position: int) -> int:
    return text.count("\n", 0, max(position, 0)) + 1


def _walk(reader: _Reader, nodes: list[Any], text: str, path: Path, shown: str) -> None:
    index = 0
    while index < len(nodes):
        node = nodes[index]
        index += 1
        if isinstance(node, LatexCommentNode):
            comment = node.comment.strip()
            if comment.startswith(DIRECTIVE):
                entries = comment[len(DIRECTIVE) :].split(",")
                reader.document.notation.extend(entry.strip() for entry in entries if entry.strip())
        elif isinstance(node, LatexMacroNode):
            index = _macro(reader, nodes, index, text, path, shown)
        elif isinstance(node, LatexMathNode):
            body = _verbatim(node.nodelist or [])
            if node.displaytype == "display" or RELATION.search(body):
                _add(
                    reader,
                    [(body, node.pos, None)],
                    text,
                    shown,
                    "display" if node.displaytype == "display" else "inline",
                )
        elif isinstance(node, LatexEnvironmentNode):
            name = node.environmentname
            if name in ROWS or name in WHOLE:
                rows = _rows(
                    node.nodelist or [], whole=name.startswith(("multline", "equation", "displaymath", "math"))
                )
                _add(reader, rows, text, shown, name)
            else:
                _walk(reader, node.nodelist or [], text, path, shown)
        elif isinstance(node, LatexGroupNode):
            _walk(reader, node.nodelist or [], text, path, shown)


def _argument(node: LatexMacroNode, number: int) -> str | None:
    arguments = node.nodeargd.argnlist if node.nodeargd is not None else []
    if number >= len(arguments) or arguments[number] is None:
        return None
    verbatim: str = arguments[number].latex_verbatim()
    return verbatim[1:-1] if verbatim[:1] in "{[" else verbatim


def _macro(reader: _Reader, nodes: list[Any], index: int, text: str, path: Path, shown: str) -> int:
    """Read one macro node (a definition, an \\input); returns the index of the next node to walk."""
    node = nodes[index - 1]
    name = node.macroname
    if name in ("newcommand", "renewcommand", "providecommand"):
        target, count, default = _argument(node, 1), _argument(node, 2), _argument(node, 3)
        body = _argument(node, 4)
        if target and body is not None:
            reader.macros[target.strip().lstrip("\\")] = (int(count) if count and count.isdigit() else 0, body, default)
    elif name == "DeclareMathOperator":
        target, body = _argument(node, 1), _argument(node, 2)
        if target and body is not None:
            reader.macros[target.strip().lstrip("\\")] = (0, f"\\operatorname{{{body}}}", None)
    elif name == "def" and index < len(nodes) and isinstance(nodes[index], LatexMacroNode):
        defined: str = nodes[index].macroname
        # From the defined name's own node: a name LaTeX knows (\frac) takes #1#2 as its arguments.
        position = index
        parameters = 0
        while position < len(nodes) and not isinstance(nodes[position], LatexGroupNode):
            parameters += nodes[position].latex_verbatim().count("#")
            position += 1
        if position < len(nodes):
            reader.macros[defined] = (parameters, _verbatim(nodes[position].nodelist or []), None)
            return position + 1
    elif name in ("input", "include"):
        argument = (_argument(node, 0) or "").strip()
        if argument:
            _include(reader, argument, path, shown, _line(text, node.pos))
    return index


def _include(reader: _Reader, argument: str, path: Path, shown: str, line: int) -> None:
    """The file ``argument`` names read in: relative to the main file's folder, as pdflatex run
    there finds it, or else to the including file's."""
    for folder in dict.fromkeys((reader.root, path.parent)):
        target = (folder / argument).resolve()
        if not target.suffix:
            target = target.with_suffix(".tex")
        if target.is_file():
            break
    else:
        raise DocumentError(f"{shown}:{line}: \\input file {argument!r} not found")
    try:
        name = str(target.relative_to(reader.root))
    except ValueError:
        name = target.name
    _read_file(reader, target, name)


def _verbatim(nodes: list[Any]) -> str:
    """The LaTeX of ``nodes`` without comments."""
    return "".join(" " if isinstance(node, LatexCommentNode) else node.latex_verbatim() for node in nodes)


def _rows(nodes: list[Any], whole: bool) -> list[tuple[str, int, str | None]]:
    """The rows of a math environment: (LaTeX, position, label); ``&`` dropped, ``\\label`` read."""
    rows: list[tuple[str, int, str | None]] = []
    parts: list[str] = []
    start, label = -1, None
    for node in nodes:
        chars = getattr(node, "chars", None)
        if start < 0 and not (chars is not None and not chars.strip()):
            start = node.pos + (len(chars) - len(chars.lstrip()) if chars else 0)
        if isinstance(node, LatexEnvironmentNode) and node.environmentname in INNER:
            inner = _rows(node.nodelist or [], whole=False)
            if whole:
                parts.append(" ".join(row for row, _, _ in inner))
            else:
                rows.extend(inner)
            continue
        if isinstance(node, LatexMacroNode) and node.macroname == "\\" and not whole:
            rows.append(("".join(parts), start, label))
            parts, start, label = [], -1, None
        elif isinstance(node, LatexMacroNode) and node.macroname == "label":
            label = _argument(node, 0)
        elif _blank(node):
            parts.append(" ")
        elif not isinstance(node, LatexCommentNode):
            parts.append(node.latex_verbatim())
    rows.append(("".join(parts), start, label))
    return [(row, position, label) for row, position, label in rows if row.strip()]


def _blank(node: Any) -> bool:
    """A node that stands for a space in a row: ``&``, ``\\nonumber``, a line break inside one relation."""
    if isinstance(node, LatexMacroNode):
        return bool(node.macroname in ("nonumber", "notag", "\\"))
    return isinstance(node, LatexSpecialsNode) and node.specials_chars == "&"


def _add(reader: _Reader, rows: list[tuple[str, int, str | None]], text: str, shown: str, environment: str) -> None:
    for latex, position, label in rows:
        try:
            expanded = " ".join(expand(latex, reader.macros).split())
        except DocumentError as error:  # say where: the row that uses the macro
            raise DocumentError(f"{shown}:{_line(text, position)}: {error}") from None
        if expanded:
            reader.document.relations.append(Found(shown, _line(text, position), expanded, label, environment))


_COMMAND = re.compile(r"\\([A-Za-z@]+)")


def expand(latex: str, macros: dict[str, tuple[int, str, str | None]]) -> str:
    """``latex`` with every macro of ``macros`` expanded, at most `MAX_EXPANSIONS` times in all."""
    done = 0
    position = 0
    while True:
        match = _COMMAND.search(latex, position)
        if match is None:
            return latex
        name = match.group(1)
        if name not in macros:
            position = match.end()
            continue
        done += 1
        if done > MAX_EXPANSIONS or len(latex) > MAX_EXPANDED:
            raise DocumentError(f"macro \\{name} expands without end (more than {MAX_EXPANSIONS} expansions)")
        count, body, default = macros[name]
        arguments, end = _arguments(latex, match.end(), count, default, name)
        for number, argument in enumerate(arguments, 1):
            body = body.replace(f"#{number}", argument)
        latex = latex[: match.start()] + body + latex[end:]
        position = match.start()


def _arguments(latex: str, position: int, count: int, default: str | None, name: str) -> tuple[list[str], int]:
    arguments: list[str] = []
    for number in range(count):
        while position < len(latex) and latex[position].isspace():
            position += 1
        if number == 0 and default is not None:
            if latex.startswith("[", position):
                end = latex.find("]", position)
                if end < 0:
                    raise DocumentError(f"macro \\{name}: unclosed [")
                arguments.append(latex[position + 1 : end])
                position = end + 1
            else:
                arguments.append(default)
            continue
        if position >= len(latex):
            raise DocumentError(f"macro \\{name} is missing an argument")
        if latex[position] == "{":
            end = _closing(latex, position)
            if end < 0:
                raise DocumentError(f"macro \\{name}: unbalanced braces in its argument")
            arguments.append(latex[position + 1 : end])
            position = end + 1
        else:
            single = _COMMAND.match(latex, position)
            end = single.end() if single else position + 1
            arguments.append(latex[position:end])
            position = end
    return arguments, position


def _closing(latex: str, position: int) -> int:
    """The index of the brace that closes the one at ``position``, or -1."""
    depth = 0
    index = position
    while index < len(latex):
        char = latex[index]
        if char == "\\":
            index += 2
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth == 0:
            return index
        index += 1
    return -1
