"""Shared fixtures: the interop matrix is generated once per session into a tmp dir.

zarr-python 3.x fixtures are written in-process; zarr-python 2.x fixtures by running
fixtures/write_zarr2.py with the separate zarr 2.x environment (.venv-zarr2, or the python named
by $CHUTE_ZARR2_PYTHON); their tests are skipped when that environment is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
sys.path.insert(0, str(FIXTURES))


REPO = Path(__file__).resolve().parents[2]

# chute_testing (test helpers written in C++) is built with the C++ tests and never installed:
# it is found in a build folder, $CHUTE_TESTING_DIR first.
for _folder in [os.environ.get("CHUTE_TESTING_DIR", ""),
                *sorted(str(p.parent) for p in REPO.glob("build/*/python/chute_testing*.so"))]:  # fmt: skip
    if _folder and list(Path(_folder).glob("chute_testing*.so")):
        sys.path.append(_folder)
        break
ZARR2_PYTHON = Path(os.environ.get("CHUTE_ZARR2_PYTHON", REPO / ".venv-zarr2" / "bin" / "python"))

# What the interop tests compared, reported at the end of the run (the "matrix size").
MATRIX = {"arrays": 0, "groups": 0, "reads": 0, "by_writer": {}}


@pytest.fixture(scope="session")
def zarr3_fixtures(tmp_path_factory) -> dict:
    import write_zarr3

    outdir = tmp_path_factory.mktemp("zarr3")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr 3 warns about v2 numcodecs and unstable specs
        return write_zarr3.write(str(outdir))


@pytest.fixture(scope="session")
def zarr2_fixtures(tmp_path_factory) -> dict:
    if not ZARR2_PYTHON.exists():
        pytest.skip(f"zarr-python 2.x environment not found at {ZARR2_PYTHON} "
                    "(create .venv-zarr2 from python/requirements-zarr2.txt)")  # fmt: skip
    outdir = tmp_path_factory.mktemp("zarr2")
    result = subprocess.run(
        [str(ZARR2_PYTHON), str(FIXTURES / "write_zarr2.py"), str(outdir)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        pytest.fail(f"write_zarr2.py failed:\n{result.stdout}\n{result.stderr}")
    return json.loads((outdir / "manifest-zarr2.json").read_text())


@pytest.fixture
def fixture_entry(request):
    """Returns a function: case -> its manifest entry (fails the test if writing failed)."""

    def get(case: dict) -> dict:
        manifest = request.getfixturevalue(f"{case['writer']}_fixtures")
        entry = manifest[case["id"]]
        if "error" in entry:
            pytest.fail(f"zarr-python could not write fixture {case['id']}: {entry['error']}")
        return entry

    return get


def random_boxes(shape, count, rng):
    """`count` random boxes (tuples of slices, empty ones included) inside `shape`."""
    for _ in range(count):
        start = [int(rng.integers(0, n + 1)) for n in shape]
        stop = [int(rng.integers(s, n + 1)) for s, n in zip(start, shape)]
        yield tuple(slice(a, b) for a, b in zip(start, stop))


def check_h5py_reads(path, name, *, seed=0, boxes=25, dtype=True):
    """chute.open of dataset `name` of the HDF5 file at `path` reads what h5py reads: the whole
    array and `boxes` random boxes (and the dtype, in native byte order, unless dtype=False).
    Returns the chute array."""
    import h5py

    import chute

    with h5py.File(path, "r") as f:
        expected = f[name][()]
    array = chute.open(f"{path}/{name}")
    assert array.shape == expected.shape
    if dtype:
        assert array.dtype == expected.dtype.newbyteorder("=")
    np.testing.assert_array_equal(array[...], expected)
    for box in random_boxes(expected.shape, boxes, np.random.default_rng(seed)):
        np.testing.assert_array_equal(array[box], expected[box])
    return array


def native(a: np.ndarray) -> np.ndarray:
    return a.astype(a.dtype.newbyteorder("="), copy=False)


def assert_same(actual, expected) -> None:
    """Exact equality (NaN equal to NaN), same shape, same dtype up to byte order."""
    assert isinstance(actual, np.ndarray), f"expected numpy.ndarray, got {type(actual)}"
    expected = np.asarray(expected)
    assert actual.shape == expected.shape
    assert actual.dtype == expected.dtype.newbyteorder("="), (actual.dtype, expected.dtype)
    np.testing.assert_array_equal(actual, native(expected), strict=True)


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


def _fail_unexpected_skip(report) -> None:
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = (
        f"unexpected skip with CI=true ({reason}); install what the test needs, or mark it "
        "@pytest.mark.expected_skip(reason=...) if skipping here is right"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """With CI=true a skip is a failure unless the test is marked expected_skip(reason): in CI
    every tool a test needs is installed, so a skip there hides a missing install step."""
    outcome = yield
    report = outcome.get_result()
    if not _in_ci() or not report.skipped or hasattr(report, "wasxfail"):
        return
    if item.get_closest_marker("expected_skip") is None:
        _fail_unexpected_skip(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """The same for a whole module skipped while collecting (pytest.importorskip at the top)."""
    outcome = yield
    report = outcome.get_result()
    if _in_ci() and report.skipped:
        _fail_unexpected_skip(report)


def pytest_terminal_summary(terminalreporter):
    if MATRIX["arrays"] or MATRIX["groups"]:
        writers = ", ".join(f"{k}: {v}" for k, v in sorted(MATRIX["by_writer"].items()))
        terminalreporter.write_line(
            f"chute interop matrix: {MATRIX['arrays']} arrays and {MATRIX['groups']} groups "
            f"checked against zarr-python ({writers}); {MATRIX['reads']} reads compared"
        )
