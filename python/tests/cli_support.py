"""Helpers for the tests that run the `chute` command: finding it and running it.

The binary is $CHUTE_CLI, else `chute` on PATH; tests that need it are skipped when neither
exists (build it with -DCHUTE_BUILD_CLI=ON).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def chute_cli() -> str:
    path = os.environ.get("CHUTE_CLI") or shutil.which("chute")
    if not path or not Path(path).exists():
        pytest.skip("the chute CLI was not found: set CHUTE_CLI or put chute on PATH")
    return str(path)


def run_cli(*args: object, check: bool = True) -> subprocess.CompletedProcess:
    """Runs `chute args...`; with check, asserts exit code 0 and shows stderr otherwise."""
    result = subprocess.run(
        [chute_cli(), *[str(a) for a in args]],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check:
        assert result.returncode == 0, f"chute {args} failed ({result.returncode}): {result.stderr}"
    return result


def stored_bytes(array_dir: Path) -> int:
    """Sum of the sizes of an array's chunk files (everything but metadata)."""
    names = {".zarray", ".zattrs", ".zgroup", "zarr.json", ".zmetadata"}
    return sum(
        p.stat().st_size for p in array_dir.rglob("*") if p.is_file() and p.name not in names
    )
