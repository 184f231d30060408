"""The generic mutation operators (tests/mutation/generic.py): each makes the changes it names, every
mutant compiles, and docstrings, annotations and the rest of the file are left as they were."""

import ast
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "mutation"))
import generic

SOURCE = '''"""A module docstring: 1 < 2."""
def f(x: int, y: list[int] | None) -> bool:
    """ε, a docstring of 10 words."""
    total = x * 2 + y[0] - y[-1]  # ε in a comment moves the bytes, not the characters
    if x < 4 and not y:
        print(x)
    return x in y or True
'''


def _mutants(operator: str) -> list[str]:
    found = []
    occurrence = 0
    while (mutated := generic.mutate(SOURCE, operator, occurrence)) is not None:
        compile(mutated, "<mutant>", "exec")
        found.append(mutated)
        occurrence += 1
    return found


def _changed(mutated: str) -> str:
    """The one line ``mutated`` changes, stripped."""
    (line,) = [b for a, b in zip(SOURCE.splitlines(), mutated.splitlines(), strict=True) if a != b]
    return line.split("  #")[0].strip()


@pytest.mark.parametrize(
    ("operator", "expected"),
    [
        ("numbers", {"total = x * (3) + y[0] - y[-1]", "total = x * (4) + y[0] - y[-1]", "if x < (5) and not y:"}),
        ("compare", {"if (x <= 4) and not y:", "if (x > 4) and not y:", "return (x not in y) or True"}),
        (
            "arithmetic",
            {"total = (x * 2 - y[0]) - y[-1]", "total = (x * 2 + y[0] + y[-1])", "total = (x / 2) + y[0] - y[-1]"},
        ),
        ("call", {"pass", "(x)"}),
        ("statement", {"pass"}),
        (
            "boolean",
            {"return (x in y and True)", "if (x < 4 or not y):", "if x < 4 and (y):", "return x in y or (False)"},
        ),
        ("subscript", {"total = x * 2 + (y[1]) - y[-1]", "total = x * 2 + y[0] - (y[0])"}),
    ],
)
def test_each_operator_makes_the_changes_it_names(operator, expected):
    mutants = _mutants(operator)
    changed = {_changed(mutant) for mutant in mutants}
    assert expected <= changed, changed - expected
    assert len(changed) == len(mutants)  # no two mutants alike


def test_docstrings_annotations_and_the_rest_of_the_file_are_left_alone():
    """Numbers 1, 2, 10 stand in docstrings, and int and None in annotations: none is
    mutated; every mutant changes one place and keeps the comments and the layout."""
    for operator in generic.OPERATORS:
        for mutated in _mutants(operator):
            assert mutated.splitlines()[:3] == SOURCE.splitlines()[:3]
            assert "# ε in a comment moves the bytes" in mutated or operator in ("call", "statement")
            assert ast.dump(ast.parse(mutated)) != ast.dump(ast.parse(SOURCE))
    assert generic.mutate(SOURCE, "numbers", 10**6) is None
