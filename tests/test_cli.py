"""`python -m derivations`: the golden LaTeX, the three formats, and clean errors."""

import json
from pathlib import Path

import pytest

from derivations import LAYERS, formulas
from derivations.__main__ import main
from derivations.catalog import rows
from derivations.render import FORMATS, text

GOLDEN = Path(__file__).parent / "golden"


def _blocks(text: str) -> dict[str, str]:
    """The golden text's blocks by their first line, the formula's qualified name."""
    return {block.split("\n", 1)[0]: block for block in text.strip("\n").split("\n\n")}


GOLDEN_BLOCKS = _blocks((GOLDEN / "derive.txt").read_text())


@pytest.fixture(scope="module")
def produced() -> dict[str, str]:
    return _blocks(text(rows(list(LAYERS))))


# A deliberate change to a formula is recorded with `make golden` and reviewed
# as a diff of tests/golden/derive.txt; a drift names the formula that moved.
@pytest.mark.parametrize("name", list(GOLDEN_BLOCKS))
def test_formula_matches_the_committed_golden_block(name, produced):
    assert name in produced, f"{name} is in tests/golden/derive.txt but no longer derived"
    assert produced[name] == GOLDEN_BLOCKS[name], f"{name} drifted from tests/golden/derive.txt"


def test_every_formula_has_a_golden_block_in_order(produced):
    assert list(produced) == list(GOLDEN_BLOCKS), "formulas added, removed or reordered: run make golden"


def test_the_whole_text_output_is_the_golden_file(capsys):
    assert main([]) == 0
    assert capsys.readouterr().out == (GOLDEN / "derive.txt").read_text()


@pytest.mark.parametrize("key", list(LAYERS))
def test_one_layer_is_its_part_of_the_whole(key, capsys):
    assert main(["--layer", key]) == 0
    part = capsys.readouterr().out
    assert part.startswith(f"{key}.definition\n")
    assert part in (GOLDEN / "derive.txt").read_text()


def test_json_has_name_statement_latex_for_every_formula(capsys):
    assert main(["--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    every = [f for key in LAYERS for f in formulas(key)]
    assert [r["name"] for r in rows] == [f.qualified for f in every]
    for row, f in zip(rows, every, strict=True):
        assert {"name", "statement", "latex"} <= row.keys()
        assert row["latex"] == f.latex()
        assert row["statement"] == f.statement


def test_markdown_uses_math_blocks(capsys):
    assert main(["--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert out.count("```math\n") == sum(len(formulas(key)) for key in LAYERS)
    assert r"J c = \frac{\varepsilon}{s^{3}} c" in out


def test_every_format_is_registered():
    assert sorted(FORMATS) == ["conventions", "json", "latex", "markdown", "text"]


@pytest.mark.parametrize("argv", [["--format", "yaml"], ["--layer", "nope"], ["--bogus"]])
def test_bad_arguments_print_one_line_and_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    out, err = capsys.readouterr()
    assert stop.value.code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_readme_blocks_are_generated_from_the_derivations():
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme", GOLDEN / "readme.py")
    assert spec is not None
    assert spec.loader is not None
    readme = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(readme)
    text = readme.README.read_text()
    for name in ("conventions", "sample", "latex"):
        assert readme.block(name).search(text), f"README has no {name} block"
    assert readme.update(text) == text, "README blocks are stale: run make golden"


def test_claims_are_read_from_a_pipe():
    """``--claims /dev/stdin``: a file that is not a regular one, read whole (a real process: its stdin)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "derivations", "check", "--claims", "/dev/stdin"],
        input='[[claim]]\nid = "a"\nclaim = "slope_at_zero == 1/sqrt(epsilon)"\n'
        '[[claim]]\nid = "b"\nclaim = "slope_at_zero == 1/epsilon"\n',
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert [line.split()[:2] for line in done.stdout.splitlines() if line.startswith("[")] == [
        ["[a]", "proved:"],
        ["[b]", "refuted:"],
    ]
    assert done.returncode == 1, done.stderr


def _command(*argv, stdin=None, env=None, timeout=600, **options):
    """``python -m derivations ARGV`` as a real process: its status, stdout and stderr."""
    import os
    import subprocess
    import sys

    given = {"input": stdin} if isinstance(stdin, (str, bytes, type(None))) else {"stdin": stdin}
    return subprocess.run(
        [sys.executable, "-m", "derivations", *argv],
        **given,
        capture_output=True,
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ, **(env or {})},
        timeout=timeout,
        **options,
    )


@pytest.mark.parametrize(
    ("layer", "option", "clash"),
    [
        ("layernorm_std_eps", "n=g", "g, which layernorm_std_eps.vjp already prints"),
        ("layernorm", "n=T", "T, which layernorm.jacobian already prints"),
        ("layernorm", "n=k", "k, which layernorm.vjp already prints"),
        ("layernorm", "n=v", "v, which layernorm.jvp already prints"),
        ("layernorm", "n=y", "y, which layernorm.definition already prints"),
        ("layernorm", "n=H", "H, which layernorm.hvp already prints"),
        ("layernorm", "n=d", "d, which layernorm.slope already prints"),
        ("layernorm", "q=y_{i}", "y, which layernorm.definition already prints"),
        ("dyt", "alpha=e", "the constant e, which already prints as e"),
        ("layernorm", r"n=\pi", r"the constant \pi, which already prints as \pi"),
    ],
)
def test_a_new_name_the_printed_formulas_already_use_is_refused_in_one_line(layer, option, clash, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--layer", layer, "--notation", option])
    out, err = capsys.readouterr()
    assert stop.value.code == 2
    assert out == ""
    assert err == f"python -m derivations: error: notation: {option} clashes with {clash}\n"


def test_a_renamed_symbol_may_take_a_name_no_printed_formula_uses(capsys):
    assert main(["--layer", "layernorm", "--notation", "n=N", "--notation", "q=n"]) == 0
    out = capsys.readouterr().out
    assert r"\frac{1}{N s} \mathbf{1}" in out
    assert r"\sqrt{n + \varepsilon}" in out


@pytest.mark.parametrize("name", ["pi", "E", "e", "I", "i", "oo"])
def test_a_symbol_never_prints_as_the_constant_of_its_name(name):
    import sympy as sp

    from derivations._printer import ReaderPrinter
    from derivations.notation import DEFAULT

    printer = ReaderPrinter(DEFAULT)
    shown = printer.doprint(sp.Symbol(name, nonnegative=True))
    constants = {printer.doprint(c) for c in (sp.pi, sp.E, sp.I, sp.oo, sp.EulerGamma, sp.Catalan, sp.GoldenRatio)}
    assert shown not in constants


def test_a_statistic_named_pi_does_not_print_as_the_constant(tmp_path):
    path = tmp_path / "pi.toml"
    path.write_text('key = "mine"\ntitle = "t"\noutput = "x[i] / sqrt(pi + epsilon)"\n')
    path.write_text(path.read_text() + '[statistics]\npi = "mean(x[j]**2)"\n')
    done = _command("--definition", str(path), "--no-cache", text=True)
    assert done.returncode == 0, done.stderr
    assert r"\pi" not in done.stdout
    assert r"\sqrt{\mathit{pi} + \varepsilon}" in done.stdout


_CLAIM = '[[claim]]\nid = "a"\nclaim = "slope_at_zero == 1/sqrt(epsilon)"\n'


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("/dev/zero", "claims file /dev/zero: not a regular file"),
        ("fifo", "claims file {tmp}/fifo: not a regular file"),
        ("folder", "claims file {tmp}/folder: not a regular file"),
        ("missing", "claims file {tmp}/missing: No such file or directory"),
        ("large", "claims file {tmp}/large: larger than 16777216 bytes"),
    ],
)
def test_a_claims_file_that_is_not_a_small_regular_file_is_one_line(source, line, tmp_path):
    import os

    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")  # nobody writes it: reading it would wait forever
    with open(tmp_path / "large", "wb") as large:
        large.truncate((16 << 20) + 1)
    path = source if source.startswith("/") else str(tmp_path / source)
    done = _command("check", "--claims", path, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"python -m derivations check: error: {line.format(tmp=tmp_path)}\n"


@pytest.mark.parametrize("name", ["-", "/dev/stdin"])
def test_claims_from_standard_input_are_read_up_to_the_cap(name):
    done = _command("check", "--claims", name, stdin=_CLAIM, text=True)
    assert done.stdout.startswith("[a] proved:"), done.stderr
    assert done.returncode == 0
    with open("/dev/zero", "rb") as zeros:
        done = _command("check", "--claims", name, stdin=zeros, timeout=120)
    assert done.returncode == 2
    line = f"python -m derivations check: error: claims file {name}: larger than 16777216 bytes\n"
    assert done.stderr == line.encode()


@pytest.mark.parametrize(
    "env",
    [{"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}],
    ids=["ascii", "C-locale"],
)
def test_conventions_print_in_ascii_spellings_where_stdout_takes_only_ascii(env):
    done = _command("--format", "conventions", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    out = done.stdout.decode("ascii")
    assert "slope at 0 on (-t, 0, t)" in out
    assert "bound on ||J||_2" in out
    assert "output at a constant input t*1" in out


def test_a_memory_error_without_a_message_is_one_line_that_says_so(monkeypatch, capsys):
    from derivations import __main__ as command
    from derivations.cli import run

    def exhausted(argv):
        raise MemoryError

    monkeypatch.setattr(command, "_derive", exhausted)
    assert run(command.main, "python -m derivations", []) == 1
    assert capsys.readouterr().err == "python -m derivations: error: out of memory\n"


def test_a_memory_error_while_deriving_is_one_line_that_says_so(monkeypatch, capsys):
    import derivations.catalog
    from derivations import cache as derivation_cache

    def exhausted(keys, notation=None):
        raise MemoryError

    monkeypatch.setattr(derivation_cache, "read", lambda *args: None)
    monkeypatch.setattr(derivations.catalog, "rows", exhausted)
    assert main(["--layer", "rmsnorm"]) == 1
    assert capsys.readouterr().err == "python -m derivations: error: out of memory\n"
