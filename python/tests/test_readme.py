"""The README's code runs as written.

Every ```python block runs, in README order, in one interpreter (each block sees the names the
blocks before it made, as a reader running them would), in a folder where `chute make-dataset`
has written small data at the paths the README uses (data/packed, data/era5, data/vol). Every
`chute ...` line of the ```bash blocks runs on small data: the test adds size options
(--samples, --batches, ...) the line does not give itself. A block is left out only when the
line before it says `<!-- readme-test: skip (reason) -->` (see readme_blocks.py).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import chute_cli, run_cli
from readme_blocks import Block, blocks, command_lines

# Small versions of what the README's commands make; same layouts and names.
SMALL = {
    ("make-dataset", "packed"): ["--samples", "32", "--lat", "8", "--lon", "16",
                                 "--input-channels", "8", "--target-channels", "2",
                                 "--chunk-channels", "4"],
    ("make-dataset", "variables"): ["--times", "24", "--lat", "5", "--lon", "8"],
    ("make-dataset", "volume"): ["--size", "64", "--chunk", "32", "--npy"],
    ("bench",): ["--batches", "2", "--warmup", "1", "--trials", "1", "--batch-size", "4",
                 "--peer-seconds", "5", "--threads", "2", "-q"],
}  # fmt: skip
DATASETS = [("packed", "data/packed"), ("variables", "data/era5"), ("volume", "data/vol")]

RUNNER = r"""
import sys, traceback
namespace = {"__name__": "__main__"}
for name, code in BLOCKS:
    try:
        exec(compile(code, name, "exec"), namespace)
    except BaseException:
        traceback.print_exc()
        print(f"README block failed: {name}", file=sys.stderr)
        sys.exit(1)
    print(f"ran {name}")
"""


def readme_blocks(language: str) -> list[Block]:
    return [b for b in blocks() if b.language == language]


def small_options(argv: list[str]) -> list[str]:
    """The size options to add to `chute argv...`: those of SMALL the line does not set."""
    key = tuple(argv[:2]) if argv[0] == "make-dataset" else tuple(argv[:1])
    extra, options = [], SMALL.get(key, [])
    i = 0
    while i < len(options):
        flag = options[i]
        takes_value = i + 1 < len(options) and not options[i + 1].startswith("-")
        if flag not in argv:
            extra += options[i : i + 2] if takes_value else [flag]
        i += 2 if takes_value else 1
    return extra


def make_small_datasets(root: Path) -> Path:
    """Writes the small datasets at the paths the README and the site use (data/packed, ...)."""
    for kind, out in DATASETS:
        argv = ["make-dataset", kind, str(root / out), "-q"]
        run_cli(*argv, *small_options(argv))
    return root


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A folder holding the small datasets at the README's paths."""
    return make_small_datasets(tmp_path_factory.mktemp("readme"))


def test_readme_has_the_blocks_this_test_runs():
    python = [b for b in readme_blocks("python") if not b.skip_reason]
    cli = [c for b in readme_blocks("bash") if not b.skip_reason for c in command_lines(b.code)]
    assert len(python) >= 5, [b.name for b in python]
    assert any(c.startswith("chute bench") for c in cli), cli
    for block in blocks():
        if block.skip_reason is not None:
            assert block.skip_reason.strip(), f"{block.name}: a skip needs a reason"


def test_python_blocks_run(workdir):
    pytest.importorskip("torch")
    pytest.importorskip("jax")
    pytest.importorskip("ml_dtypes")
    runnable = [(b.name, b.code) for b in readme_blocks("python") if not b.skip_reason]
    script = workdir / "readme_blocks.py"
    script.write_text(f"BLOCKS = {runnable!r}\n{RUNNER}")
    result = subprocess.run(
        [sys.executable, str(script)], cwd=workdir, capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("ran README.md:") == len(runnable), result.stdout


def cli_lines() -> list[str]:
    lines = []
    for block in readme_blocks("bash"):
        if block.skip_reason:
            continue
        lines += [c for c in command_lines(block.code) if c.startswith("chute ")]
    return lines


def test_cli_lines_run(tmp_path):
    lines = cli_lines()
    assert lines
    # Datasets first (the lines that read them come before the lines that make them in the
    # README), each into the folder its line names.
    ordered = [c for c in lines if c.startswith("chute make-dataset")]
    ordered += [c for c in lines if not c.startswith("chute make-dataset")]
    for line in ordered:
        argv = shlex.split(line)[1:]
        argv += small_options(argv)
        result = subprocess.run(
            [chute_cli(), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=600,
            check=False,
        )  # fmt: skip
        assert result.returncode == 0, f"{line}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        if "--json" in argv and argv[0] == "info":
            json.loads(result.stdout)
        if "--json" in argv and argv[0] == "bench":
            report = json.loads((tmp_path / argv[argv.index("--json") + 1]).read_text())
            assert report, line
