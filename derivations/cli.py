"""Command-line plumbing shared by ``python -m derivations`` and ``python -m figures``."""

from __future__ import annotations

import argparse
import sys


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)
