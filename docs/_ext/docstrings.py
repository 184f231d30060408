"""A griffe extension for the API reference (mkdocstrings): the docstrings' reStructuredText
habits, read as this site's Markdown.

The public docstrings follow jax.nn's style: a formula in a ``.. math::`` directive, an
``Example:`` section of doctests.  Griffe's Google parser knows ``Examples:`` and Markdown
math, so before a docstring is parsed:

- ``Example:`` becomes ``Examples:`` (its doctests are then shown as code);
- a ``.. math::`` directive's indented body becomes a ``$$ ... $$`` block, and
  ``:math:`...``` an inline ``$...$``, which pymdownx.arithmatex hands to KaTeX.

Nothing else is changed.  mkdocs.yml loads it by path; `exclude_docs` keeps it out of the site.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":math:`([^`]+)`")
SECTION = re.compile(r"^(\s*)Example:\s*$")
DIRECTIVE = re.compile(r"^(\s*)\.\. math::\s*(.*)$")


def markdown(text: str) -> str:
    """``text`` with its math directives, math roles and ``Example:`` headings as Markdown."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        directive = DIRECTIVE.match(line)
        if directive is None:
            out.append(SECTION.sub(r"\1Examples:", ROLE.sub(r"$\1$", line)))
            i += 1
            continue
        indent, inline = directive.group(1), directive.group(2).strip()
        body = [inline] if inline else []
        i += 1
        # The body: the blank lines and the lines indented deeper than the directive.
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > len(indent)):
            body.append(lines[i].strip())
            i += 1
        formula = "\n".join(part for part in body if part)
        out += [f"{indent}$$", *(f"{indent}{part}" for part in formula.splitlines()), f"{indent}$$", ""]
    return "\n".join(out)


class ReadRestructuredText(griffe.Extension):
    """Rewrites each object's docstring with `markdown` as it is loaded."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
