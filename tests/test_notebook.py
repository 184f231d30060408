"""The tutorial notebook, examples/tour.ipynb, executed cell by cell in a real kernel (nbclient), so
that it never goes stale; and committed without outputs.

Without nbclient the test is skipped, unless EPSILON_LAYERNORM_REQUIRE_NOTEBOOK is set (CI sets
it): then a missing runner fails the run instead of skipping it."""

import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "tour.ipynb"
REQUIRED = "EPSILON_LAYERNORM_REQUIRE_NOTEBOOK"
CELL_TIMEOUT = 300  # seconds; a cold derivation cache derives the layers the tour uses


def test_the_tour_is_committed_without_outputs():
    notebook = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert 8 <= len(notebook["cells"]) <= 14
    assert [(cell["outputs"], cell["execution_count"]) for cell in code] == [([], None)] * len(code)
    assert notebook["metadata"]["kernelspec"]["name"] == "python3"


def kernel_here(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the kernel ``python3`` this interpreter (not one a user's Jupyter set up elsewhere), and keep
    Jupyter's and IPython's files of this run under ``folder``."""
    spec = folder / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "Python 3", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(folder))  # searched before the user's and the system's folders
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")  # jupyter_core's own future default, without its warning
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(folder / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(folder / "ipython"))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")


def outputs(cell: dict) -> dict[str, list[str]]:
    """Each output of ``cell`` by MIME type (a stream's as ``stream:<name>``), in order."""
    found: dict[str, list[str]] = {}
    for output in cell["outputs"]:
        if output["output_type"] == "stream":
            found.setdefault(f"stream:{output['name']}", []).append(output["text"])
        for mime, data in output.get("data", {}).items():
            found.setdefault(mime, []).append("".join(data) if isinstance(data, list) else data)
    return found


# In make test's tier: about 4 s with the derivations cached, 11 s cold (two cores, one busy).
def test_the_tour_runs_cell_by_cell(tmp_path, monkeypatch):
    if importlib.util.find_spec("nbclient") is None and not os.environ.get(REQUIRED):
        pytest.skip(f"nbclient is not installed (the test extra has it; {REQUIRED}=1 makes this a failure)")
    import nbformat
    from nbclient import NotebookClient

    kernel_here(tmp_path, monkeypatch)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        notebook, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    start = time.monotonic()
    client.execute()  # raises CellExecutionError at the first cell that raises
    print(f"tour.ipynb ran in {time.monotonic() - start:.1f} s")

    cells = {cell["id"]: outputs(cell) for cell in notebook.cells if cell["cell_type"] == "code"}
    errors = [cell["id"] for cell in notebook.cells for o in cell.get("outputs", []) if o["output_type"] == "error"]
    assert errors == []
    # A formula shows as math, a layer and a table of formulas as Markdown.
    (latex,) = cells["tour-01"]["text/latex"]
    assert latex.startswith("$\\displaystyle \\left. \\frac{d}{d t} u_{3}{\\left(t \\right)} \\right|")
    assert latex.endswith(" = \\frac{1}{\\sqrt{\\varepsilon}}$")
    (layer,) = cells["tour-02"]["text/markdown"]
    assert layer.startswith("**LayerNorm, epsilon added to the biased standard deviation**")
    (table,) = cells["tour-03"]["text/markdown"]
    assert table.count("\n| `rmsnorm.") == 6
    # A proof, then a refutation with its counterexample as a table.
    assert cells["tour-05"]["text/plain"] == ["<Verdict proved: spectral_norm <= 1/sqrt(epsilon) [layernorm]>"]
    (refuted,) = cells["tour-06"]["text/markdown"]
    assert refuted.startswith("**refuted**")
    assert "| `x` | `[-1.0, 1.0]` |" in refuted
    assert cells["tour-06"]["text/plain"][1] == "{'epsilon': 0.25, 'n': 2, 'q': 1, 'x': [-1.0, 1.0]}"
    # Two conventions: both slopes shown, the ordering proved for epsilon <= 1 and refuted without it.
    compared = cells["tour-08"]
    assert compared["text/latex"][1].endswith(" = \\frac{1}{\\varepsilon}$")
    assert [text.split(":")[0] for text in compared["text/plain"][2:]] == ["<Verdict proved", "<Verdict refuted"]
    # The plot is drawn; a numeric function shows its formula; the emitted module agrees with numeric.
    assert len(cells["tour-09"]["image/png"]) == 1
    assert "\\operatorname{spectral\\_norm}" in cells["tour-10"]["text/markdown"][0]
    printed = "".join(cells["tour-11"]["stream:stdout"])
    assert printed.startswith("# Generated by `python -m derivations codegen --layer rmsnorm --target numpy`")
    assert float(printed.rsplit(":", 1)[1]) < 1e-12
