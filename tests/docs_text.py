"""The documentation pages as the tests read them: a page's words, whitespace collapsed, so that
a sentence a test quotes is found however the page wraps it."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def docs_words(page: str) -> str:
    """docs/``page`` with every run of whitespace (a line break among them) one space."""
    return " ".join((DOCS / page).read_text(encoding="utf-8").split())
