"""Smoke tests of the package: import, version, exports, the error hierarchy, thread settings."""

from __future__ import annotations

import re

import pytest

import chute

ERRORS = {
    "InvalidArgumentError": ValueError,
    "InvalidMetadataError": ValueError,
    "UnsupportedError": ValueError,
    "CorruptDataError": ValueError,
    "NotFoundError": FileNotFoundError,
    "PermissionDeniedError": PermissionError,
    "StorageError": OSError,
    "OutOfRangeError": IndexError,
    "InternalError": RuntimeError,
    "CancelledError": chute.Error,
}


def test_version_is_a_version_string():
    assert re.match(r"^\d+(\.\d+)*([.+-]\w+)*$", chute.__version__), chute.__version__


def test_public_names_are_exported():
    for name in ["open", "open_group", "Array", "Group", "Error", "set_threads", "get_threads"]:
        assert name in chute.__all__ and hasattr(chute, name), name
    assert all(hasattr(chute, name) for name in chute.__all__)


@pytest.mark.parametrize("name", ERRORS)
def test_error_hierarchy(name):
    cls = getattr(chute, name)
    assert issubclass(cls, chute.Error) and issubclass(cls, ERRORS[name])
    assert cls.__module__ == "chute" and cls.__name__ == name
    assert cls.__doc__
    error = cls("message")
    assert str(error) == "message"
    with pytest.raises(chute.Error):
        raise error


def test_error_base_is_an_exception_and_distinct_classes():
    assert issubclass(chute.Error, Exception)
    assert not issubclass(chute.Error, (ValueError, OSError))
    assert len({getattr(chute, name) for name in ERRORS}) == len(ERRORS)


def test_core_errors_are_translated(tmp_path):
    missing = str(tmp_path / "missing.zarr")
    with pytest.raises(FileNotFoundError) as info:
        chute.open(missing)
    assert type(info.value) is chute.NotFoundError
    assert missing in str(info.value)
    with pytest.raises(chute.InvalidArgumentError):
        chute.set_threads(-2)


def test_thread_settings_round_trip():
    before = chute.get_threads()
    assert before >= 1
    try:
        chute.set_threads(2)
        assert chute.get_threads() == 2
    finally:
        chute.set_threads(before)
    assert chute.get_threads() == before


def test_version_is_the_one_in_cmakelists():
    from pathlib import Path

    from chute import _chute

    cmake = (Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
    version = re.search(r"project\(chute VERSION ([0-9.]+)", cmake).group(1)
    assert _chute.__version__ == version
    assert chute.__version__ == version


def test_roofline_lives_in_the_bench_module(tmp_path):
    """chute._chute links the library only; the roofline probe is chute._bench's."""
    import json

    import numpy as np

    from chute import _bench, _chute

    zarr = pytest.importorskip("zarr")
    assert not hasattr(_chute, "_roofline_json")
    path = str(tmp_path / "a.zarr")
    array = zarr.create_array(store=path, shape=(8, 16), chunks=(2, 16), dtype="float32")
    array[...] = np.arange(128, dtype="float32").reshape(8, 16)
    report = json.loads(_bench.roofline_json(path, [[0, 0]], [[4, 16]], 1))
    assert report["threads"] == 1
    assert report["chunks"] == 2
    assert report["decoded_bytes"] == 2 * 2 * 16 * 4


def test_the_core_package_never_imports_the_bench_helpers():
    """`import chute` (and its adapters) loads none of chute.bench: the harness stays apart."""
    import subprocess
    import sys

    code = (
        "import sys, chute, chute.loader, chute.distributed, chute.weather_stats\n"
        "loaded = sorted(m for m in sys.modules if m == 'chute.bench' or m.startswith('chute.bench.'))\n"
        "print(','.join(loaded))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=True)  # fmt: skip
    assert result.stdout.strip() == "", result.stdout


def test_the_bench_helpers_run_as_modules_of_chute_bench():
    """The C++ bench runs `python -m chute.bench.<name>`; each answers --help."""
    import subprocess
    import sys

    for name in ("peers", "model", "plots"):
        result = subprocess.run([sys.executable, "-m", f"chute.bench.{name}", "--help"],
                                capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert result.returncode == 0, (name, result.stderr)
        assert f"chute.bench.{name}" in result.stdout or "usage" in result.stdout, result.stdout


def _needed_libraries(path: str) -> list[str]:
    """The DT_NEEDED entries of a 64-bit little-endian ELF shared object."""
    import struct
    from pathlib import Path

    data = Path(path).read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, path
    shoff, _, _, _, _, shentsize, shnum, shstrndx = struct.unpack_from("<QIHHHHHH", data, 0x28)
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)
    ]
    names = sections[shstrndx]

    def section_name(s):
        start = names[4] + s[0]
        return data[start : data.index(b"\0", start)].decode()

    dynamic = next(s for s in sections if section_name(s) == ".dynamic")
    strtab = sections[dynamic[6]]  # sh_link: the dynamic string table
    needed = []
    for at in range(dynamic[4], dynamic[4] + dynamic[5], 16):
        tag, value = struct.unpack_from("<qQ", data, at)
        if tag == 0:
            break
        if tag == 1:  # DT_NEEDED
            start = strtab[4] + value
            needed.append(data[start : data.index(b"\0", start)].decode())
    return needed


def test_the_extension_does_not_link_libhdf5():
    # HDF5 and NetCDF-4 files are read by chute's own reader of the format.
    from chute import _chute

    needed = _needed_libraries(_chute.__file__)
    assert any(n.startswith("libc.so") for n in needed), needed
    assert not [n for n in needed if "hdf5" in n], needed
