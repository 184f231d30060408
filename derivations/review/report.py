"""The review's report: review.md (GitHub math), review.json and review.pdf, written whole or not at all."""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from pathlib import Path

from derivations.review.classify import CLASSES, Entry


def summary(entries: list[Entry]) -> dict[str, dict[str, int]]:
    classes = Counter(entry.kind for entry in entries)
    verdicts = Counter(entry.verdict for entry in entries if entry.kind == "checked")
    return {"classes": {name: classes[name] for name in CLASSES}, "verdicts": dict(sorted(verdicts.items()))}


def status(entries: list[Entry]) -> int:
    """`check`'s exit status: 0 every checked relation proved or supported, 1 one refuted, 2 an error."""
    out = 0
    for entry in entries:
        if entry.kind == "checked" and entry.verdict not in ("proved", "supported"):
            out = max(out, 2 if entry.verdict in ("error", "vacuous") else 1)
    return out


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def markdown(entries: list[Entry], title: str, notes: tuple[str, ...] = ()) -> str:
    """review.md: the counts and the refuted relations first, then every relation; ``notes`` are
    lines said under the counts (whether review.pdf was written)."""
    counts = summary(entries)
    lines = [f"# Review of `{title}`", ""]
    lines.append(f"{len(entries)} relations: " + ", ".join(f"{n} {name}" for name, n in counts["classes"].items() if n))
    if counts["verdicts"]:
        lines.append("")
        lines.append("Checked: " + ", ".join(f"{n} {name}" for name, n in counts["verdicts"].items()))
    for note in notes:
        lines += ["", note]
    refuted = [(number, e) for number, e in enumerate(entries, 1) if e.verdict == "refuted"]
    if refuted:
        lines += ["", "## Refuted", ""]
        lines += [f"- [{number}](#{number}) {e.found.file}:{e.found.line}: `{_cell(e.claim)}`" for number, e in refuted]
    lines += ["", "## Relations", ""]
    for number, entry in enumerate(entries, 1):
        lines += _section(number, entry)
    return "\n".join(lines).rstrip() + "\n"


def _section(number: int, entry: Entry) -> list[str]:
    where = f"{entry.found.file}:{entry.found.line}" + (f" ({entry.found.label})" if entry.found.label else "")
    head = entry.verdict if entry.kind == "checked" else entry.kind
    out = [f'### <a id="{number}"></a>{number}. {where}: {head}', "", "```math", entry.link, "```", ""]
    if entry.claim:
        out.append(f"- read as: `{_cell(entry.claim)}`" + (f" about `{entry.layer}`" if entry.layer else ""))
        if entry.conditions:
            out.append("- under its stated condition: " + ", ".join(f"`{_cell(c)}`" for c in entry.conditions))
    out.append(f"- class: {entry.kind}")
    if entry.kind == "checked":
        out.append(f"- verdict: **{entry.verdict}**")
        if entry.quantifier:
            out.append(f"- quantifier: {_cell(entry.quantifier)}")
        if entry.counterexample is not None:
            out.append(f"- counterexample: `{_cell(json.dumps(entry.counterexample, sort_keys=True))}`")
    out.append(f"- {'detail' if entry.kind == 'checked' else 'reason'}: {_cell(entry.reason)}")
    return [*out, ""]


def as_json(entries: list[Entry], title: str) -> str:
    document = {"paper": title, "summary": summary(entries), "relations": [entry.row() for entry in entries]}
    return json.dumps(document, indent=2, ensure_ascii=True, default=str) + "\n"


def write(folder: Path, outputs: dict[str, str | bytes]) -> None:
    """Each file of ``outputs`` into ``folder``: every one written to a temporary file first, then
    all renamed into place, so that a failure leaves no file half-written."""
    folder.mkdir(parents=True, exist_ok=True)
    umask = os.umask(0)
    os.umask(umask)
    pending: list[tuple[str, Path]] = []
    try:
        for name, text in outputs.items():
            handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
            pending.append((temporary, folder / name))
            os.chmod(temporary, 0o666 & ~umask)  # as any file the user writes, not mkstemp's 0600
            with os.fdopen(handle, "wb") as stream:
                stream.write(text.encode("utf-8") if isinstance(text, str) else text)
        for temporary, target in pending:
            os.replace(temporary, target)
    finally:
        for temporary, _ in pending:
            if os.path.exists(temporary):
                os.unlink(temporary)
