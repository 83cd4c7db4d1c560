"""The `chute` command of an installed package: runs the compiled CLI shipped inside the package.

pip installs this as the `chute` console script. The executable itself lives in chute/_bin/ so
that a wheel's repair step (auditwheel) gives it the libraries it needs beside the extension's.
`chute bench` runs its Python helpers (peers, plots) with the interpreter that runs this script.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def executable() -> Path:
    """The path of the compiled `chute` program inside the installed package."""
    return Path(__file__).resolve().parent / "_bin" / "chute"


def main() -> None:
    program = executable()
    if not program.is_file():
        sys.exit(f"chute: the compiled CLI is missing from the package ({program})")
    os.environ.setdefault("CHUTE_PYTHON", sys.executable)
    os.execv(program, [str(program), *sys.argv[1:]])


if __name__ == "__main__":
    main()
