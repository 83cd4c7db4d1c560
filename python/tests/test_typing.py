"""The package is typed: mypy accepts the examples against the extension's stubs and py.typed,
and refuses a misspelt or mistyped option (so the check is not vacuous)."""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "python" / "examples"
PACKAGE = Path(__import__("chute").__file__).resolve().parent


def mypy(*paths: str) -> subprocess.CompletedProcess:
    pytest.importorskip("mypy")
    env = dict(os.environ)
    env.pop("MYPYPATH", None)
    # mypy finds an installed chute by itself and refuses site-packages in MYPYPATH; a build
    # tree on PYTHONPATH (which mypy ignores) must be named.
    if PACKAGE.parent not in {Path(p).resolve() for p in site.getsitepackages()}:
        env["MYPYPATH"] = str(PACKAGE.parent)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--ignore-missing-imports",
         "--follow-imports=silent", *paths],
        capture_output=True, text=True, env=env, cwd=REPO, check=False, timeout=600,
    )  # fmt: skip


def test_the_package_is_marked_typed():
    assert (PACKAGE / "py.typed").exists() and (PACKAGE / "_chute.pyi").exists()


def test_examples_type_check():
    result = mypy(*sorted(str(p) for p in EXAMPLES.glob("*.py")))
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_wrong_option_is_a_type_error(tmp_path):
    script = tmp_path / "wrong.py"
    script.write_text(
        "import chute\n"
        'chute.Loader({"x": "x.zarr"}, batch_sise=4)\n'
        'chute.Loader({"x": "x.zarr"}, prefetch="2")\n'
    )
    result = mypy(str(script))
    assert result.returncode == 1, result.stdout
    assert 'Unexpected keyword argument "batch_sise"' in result.stdout
    assert '"prefetch"' in result.stdout and "incompatible type" in result.stdout
