"""The documentation site: it builds with warnings as errors, and its code runs as written.

Each page's ```python blocks run, in page order, in one interpreter per page, in a folder where
`chute make-dataset` has written small data at the paths the pages use (data/packed, data/era5,
data/vol), as test_readme.py does for the README. Every `chute ...` line of a page's ```bash
blocks runs on small data (the size options of test_readme.SMALL are added). A block that needs
what a test cannot have (a launcher, a bucket, a GPU, root) is preceded by
`<!-- docs-test: skip (reason) -->`; ```text blocks are output; the one ```cmake and ```cpp
example of frameworks/cpp.md is built by test_cmake_package.py.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import chute_cli, run_cli
from readme_blocks import DOCS, REPO, Block, blocks, command_lines, doc_pages
from test_readme import DATASETS, RUNNER, make_small_datasets, small_options

CPP_EXAMPLE = DOCS / "frameworks" / "cpp.md"
OUTPUT_LANGUAGES = {"text", "console"}


def page_blocks() -> dict[Path, list[Block]]:
    return {page: blocks(page) for page in doc_pages()}


def pages_with(language: str) -> list[Path]:
    return [p for p, bs in page_blocks().items()
            if any(b.language == language and not b.skip_reason for b in bs)]  # fmt: skip


def _id(page: Path) -> str:
    return page.relative_to(DOCS).as_posix()


def test_every_block_runs_or_says_why_not():
    """No block is left out silently: each runs, is output, or is skipped with a reason."""
    problems = []
    for page, page_block_list in page_blocks().items():
        for block in page_block_list:
            if block.skip_reason is not None:
                if not block.skip_reason.strip():
                    problems.append(f"{block.name}: a skip needs a reason")
                continue
            if block.language in ("python", *OUTPUT_LANGUAGES):
                continue
            if block.language == "bash":
                problems += [f"{block.name}: `{c}` is not a chute command (skip the block?)"
                             for c in command_lines(block.code) if not c.startswith("chute ")]  # fmt: skip
                continue
            if block.language in ("cmake", "cpp") and page == CPP_EXAMPLE:
                continue
            problems.append(f"{block.name}: nothing runs a ```{block.language} block")
    assert not problems, "\n".join(problems)


def test_the_pages_have_code_that_runs():
    assert len(pages_with("python")) >= 8, pages_with("python")
    assert len(pages_with("bash")) >= 3, pages_with("bash")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A folder holding the small datasets at the pages' paths."""
    return make_small_datasets(tmp_path_factory.mktemp("docs"))


@pytest.mark.parametrize("page", pages_with("python"), ids=_id)
def test_python_blocks_run(page, workdir):
    pytest.importorskip("torch")
    pytest.importorskip("jax")
    pytest.importorskip("ml_dtypes")
    runnable = [(b.name, b.code) for b in blocks(page)
                if b.language == "python" and not b.skip_reason]  # fmt: skip
    script = workdir / f"{page.stem}_blocks.py"
    script.write_text(f"BLOCKS = {runnable!r}\n{RUNNER}")
    result = subprocess.run(
        [sys.executable, str(script)], cwd=workdir, capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("ran docs/") == len(runnable), result.stdout


@pytest.mark.parametrize("page", pages_with("bash"), ids=_id)
def test_cli_lines_run(page, tmp_path):
    lines = [c for b in blocks(page) if b.language == "bash" and not b.skip_reason
             for c in command_lines(b.code) if c.startswith("chute ")]  # fmt: skip
    # Datasets first, each into the folder its line names; then what reads them.
    ordered = [c for c in lines if c.startswith("chute make-dataset")]
    ordered += [c for c in lines if not c.startswith("chute make-dataset")]
    for kind, out in DATASETS:  # the pages' lines read the datasets other pages make
        if not any(f"make-dataset {kind} {out}" in c for c in ordered):
            argv = ["make-dataset", kind, str(tmp_path / out), "-q"]
            run_cli(*argv, *small_options(argv))
    for line in ordered:
        argv = shlex.split(line)[1:]
        argv += small_options(argv)
        result = subprocess.run(
            [chute_cli(), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=600,
            check=False,
        )  # fmt: skip
        assert result.returncode == 0, f"{line}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"


def test_site_builds_with_warnings_as_errors(tmp_path):
    """`mkdocs build --strict`: broken links and anchors, pages missing from the nav, docstrings
    that do not render and a CLI whose --help fails are all errors."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    env = {**os.environ, "CHUTE_CLI": chute_cli()}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    site = tmp_path / "site"
    cli = (site / "reference" / "cli" / "index.html").read_text()
    for command in ("make-dataset", "bench", "info", "stats"):
        assert f"chute {command}" in cli, command
    cpp = (site / "reference" / "cpp" / "index.html").read_text()
    assert "chute/pipeline/loader.h" in cpp and "LoaderOptions" in cpp
    python = (site / "reference" / "python" / "index.html").read_text()
    assert "chute.Loader" in python and "chute.windows" in python
    pictures = sorted(p.name for p in (site / "assets" / "bench").glob("*.png"))
    assert {"peers.png", "time_breakdown.png", "throughput_vs_threads.png"} <= set(pictures)


def test_users_read_tasks_not_workload_codes():
    """W1/W2/W3 are the project's measurement names; the guides, the user pages, the installed C++
    headers and the core package's docstrings name the tasks (packed samples, weather windows,
    volume crops) instead. Design notes, the performance page and the history keep the codes."""
    import re

    code = re.compile(r"\bW[123]\b")
    kept = ("design/", "measurements/", "performance.md")
    pages = [p for p in doc_pages() if not _id(p).startswith(kept)] + [REPO / "README.md"]
    cmake = (REPO / "cmake" / "chute_public_headers.cmake").read_text()
    # The installed headers: the public ones and those they include (chute_header_closure).
    pending = re.findall(r"^\s+(chute/[\w/]+\.h)", cmake, re.MULTILINE)
    installed: set[str] = set()
    while pending:
        header = pending.pop()
        if header in installed or not (REPO / "src" / header).exists():
            continue
        installed.add(header)
        text = (REPO / "src" / header).read_text()
        pending += re.findall(r'^#include "(chute/[^"]+)"', text, re.MULTILINE)
    headers = [REPO / "src" / h for h in sorted(installed)]
    package = list((REPO / "python" / "chute").glob("*.py"))
    offenders = [f"{p.relative_to(REPO)}:{i + 1}" for p in pages + headers + package
                 for i, line in enumerate(p.read_text().splitlines()) if code.search(line)]  # fmt: skip
    assert headers and not offenders, offenders
