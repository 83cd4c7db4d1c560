"""The code stays as the style guide says: ruff (lint and format) over the Python, clang-format
(the repository's .clang-format) over the C++. A failure prints what to run to fix it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CPP_FOLDERS = ("src", "tools", "tests", "fuzz", "python/src", "python/testing_src")


def run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, check=False, timeout=600
    )


def test_python_is_ruff_clean():
    pytest.importorskip("ruff")
    lint = run(sys.executable, "-m", "ruff", "check", ".")
    assert lint.returncode == 0, f"run `ruff check --fix .`:\n{lint.stdout}{lint.stderr}"
    formatted = run(sys.executable, "-m", "ruff", "format", "--check", ".")
    assert formatted.returncode == 0, f"run `ruff format .`:\n{formatted.stdout}"


def cpp_files() -> list[str]:
    files = []
    for folder in CPP_FOLDERS:
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix in (".cc", ".h") and "build" not in path.relative_to(REPO).parts:
                files.append(str(path.relative_to(REPO)))
    return files


def test_cpp_is_clang_formatted():
    clang_format = shutil.which("clang-format")
    if clang_format is None:
        pytest.skip("clang-format is not installed (scripts/bootstrap.sh installs it)")
    files = cpp_files()
    assert len(files) > 100  # the folders above hold the C++ sources
    result = run(clang_format, "--dry-run", "--Werror", *files)
    assert result.returncode == 0, (
        f"run `clang-format -i` on the files named:\n{result.stderr[-4000:]}"
    )
