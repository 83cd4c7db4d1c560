"""The wheel a user installs: built once (`pip wheel .`), repaired with auditwheel so it carries
every library that is not part of the base system, installed into a fresh virtual environment
without system site packages, then used: import, read an array, one Loader epoch, the CLI.

No network: the fresh environment gets NumPy (the one runtime dependency) by a .pth file that
points at a folder holding only NumPy from the test's own environment. The build keeps its
folder in build/wheel so a second run rebuilds only what changed (ccache does the rest).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def base_system(wheel: Path) -> set[str]:
    """What a wheel with this manylinux tag may take from the machine it is installed on: the
    policy's list (PEP 600: glibc's libraries, libstdc++, libgcc_s, zlib...) plus the loader."""
    import auditwheel

    tag = re.search(r"(manylinux_\d+_\d+)_x86_64", wheel.name).group(1)
    policies = json.loads(
        (Path(auditwheel.__file__).parent / "policy" / "manylinux-policy.json").read_text()
    )
    (policy,) = [p for p in policies if p["name"] == tag]
    return set(policy["lib_whitelist"]) | {"linux-vdso.so.1", "ld-linux-x86-64.so.2"}


def run(*args: object, **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("timeout", 3000)
    result = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, check=False, **kwargs
    )
    assert result.returncode == 0, (
        f"{args} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    )
    return result


CHECKOUT = REPO / "build" / "read-only-checkout"  # a copy of the sources, mounted read-only


def copy_checkout() -> Path:
    """The files of the repository (tracked and new, not ignored) copied to CHECKOUT with their
    times, so that the build folder, kept between runs, rebuilds only what changed."""
    listed = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=REPO)
    if CHECKOUT.exists():
        CHECKOUT.chmod(0o755)
        for entry in CHECKOUT.rglob("*"):
            if entry.is_dir() and not entry.is_symlink():
                entry.chmod(0o755)
        shutil.rmtree(CHECKOUT)
    for name in filter(None, listed.stdout.split("\0")):
        source = REPO / name
        if source.is_file():
            (CHECKOUT / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, CHECKOUT / name)
    return CHECKOUT


def snapshot(tree: Path) -> dict[str, tuple[int, int]]:
    """Every entry below `tree` with its size and modification time."""
    return {str(p.relative_to(tree)): (p.lstat().st_size, p.lstat().st_mtime_ns)
            for p in [tree, *tree.rglob("*")]}  # fmt: skip


def read_only_prefix(tree: Path) -> list[str]:
    """A command prefix that runs the command with `tree` mounted read-only (a private mount
    namespace; needs root or user namespaces), or [] after making it read-only with chmod,
    which does not stop root: then only the snapshot comparison catches writes."""
    probe = ["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && ! touch "$0/.w"', tree]
    if (
        shutil.which("unshare")
        and subprocess.run([str(a) for a in probe], check=False, capture_output=True).returncode
        == 0
    ):
        return ["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', str(tree)]
    for entry in [tree, *tree.rglob("*")]:
        entry.chmod(entry.stat().st_mode & ~0o222)
    return []


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """Built from a read-only copy of the checkout (getting-started.md: a read-only checkout installs), with
    the build folder outside it; the copy must be the same, entry for entry, afterwards."""
    pytest.importorskip("auditwheel")
    pytest.importorskip("scikit_build_core")
    raw = tmp_path_factory.mktemp("raw-wheel")
    repaired = tmp_path_factory.mktemp("wheel")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    checkout = copy_checkout()
    before = snapshot(checkout)
    run(*read_only_prefix(checkout), sys.executable, "-m", "pip", "wheel", "--no-deps",
        "--no-build-isolation", "-q", "--disable-pip-version-check", "-w", raw,
        f"--config-settings=build-dir={REPO / 'build' / 'wheel-ro'}", checkout, env=env)  # fmt: skip
    after = snapshot(checkout)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"building the wheel wrote into the source tree: {changed[:20]}"
    (built,) = raw.glob("chute-*.whl")
    run(sys.executable, "-m", "auditwheel", "repair", "-w", repaired, built, env=env)
    (fixed,) = repaired.glob("chute-*.whl")
    return fixed


NUMPY_PYTHONS = {
    "numpy1": Path(sys.executable),
    "numpy2": REPO / ".venv-numpy2" / "bin" / "python",  # made by scripts/bootstrap.sh
}


@pytest.fixture(scope="module", params=sorted(NUMPY_PYTHONS))
def venv(request, wheel, tmp_path_factory) -> Path:
    numpy_python = NUMPY_PYTHONS[request.param]
    if not numpy_python.exists():
        pytest.skip(f"{numpy_python} not found (scripts/bootstrap.sh makes it)")
    root = tmp_path_factory.mktemp(f"fresh-venv-{request.param}")
    env_dir = root / "venv"
    run(sys.executable, "-m", "venv", env_dir)  # no --system-site-packages
    # NumPy alone, from an environment that has it, without the network.
    numpy_only = root / "numpy-only"
    numpy_only.mkdir()
    found = run(numpy_python, "-c", "import numpy; print(numpy.__version__, numpy.__file__)")
    version, numpy_init = found.stdout.split()
    assert version.startswith("1.26" if request.param == "numpy1" else "2."), version
    site = Path(numpy_init).resolve().parents[1]
    for entry in site.iterdir():
        if entry.name == "numpy" or re.match(r"numpy(\.libs|-[\d.]+\.dist-info)$", entry.name):
            (numpy_only / entry.name).symlink_to(entry)
    python = env_dir / "bin" / "python"
    purelib = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    (Path(purelib.stdout.strip()) / "numpy-only.pth").write_text(f"{numpy_only}\n")
    run(python, "-m", "pip", "install", "--no-index", "-q", "--disable-pip-version-check", wheel)
    return env_dir


def test_the_wheel_is_tagged_manylinux_and_carries_its_libraries(wheel):
    assert re.search(r"-manylinux_\d+_\d+_x86_64", wheel.name), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert any(re.match(r"chute/_chute\..*\.so$", n) for n in names), names
    assert any(re.match(r"chute/_bench\..*\.so$", n) for n in names), names
    assert "chute/_bin/chute" in names
    bundled = [n for n in names if n.startswith("chute.libs/")]
    assert any("blosc" in n for n in bundled), bundled


def test_installed_wheel_imports_reads_and_loads(venv, tmp_path):
    python, cli = venv / "bin" / "python", venv / "bin" / "chute"
    data = tmp_path / "packed"
    run(cli, "make-dataset", "packed", data, "-q", "--samples", 6, "--lat", 6, "--lon", 8,
        "--input-channels", 3, "--target-channels", 1, "--chunk-channels", 0)  # fmt: skip
    script = f"""
import json, sys
import numpy as np
import chute
assert "site-packages" in chute.__file__, chute.__file__
assert "typing_extensions" not in sys.modules
a = chute.open({str(data / "inputs")!r})
whole = a[...]
loader = chute.Loader({{"inputs": {str(data / "inputs")!r}, "targets": {str(data / "targets")!r}}},
                      batch_size=2, seed=1, rank=0, world_size=1)
seen = []
for batch in loader:
    np.testing.assert_array_equal(batch["inputs"], whole[batch.indices])
    seen += batch.indices.tolist()
assert sorted(seen) == list(range(6)), seen
from chute import _chute
print(json.dumps({{"version": chute.__version__, "module": _chute.__version__,
                  "shape": list(whole.shape)}}))
"""
    result = json.loads(run(python, "-c", script, cwd=tmp_path).stdout)
    assert result["shape"] == [6, 6, 8, 3]
    assert result["version"] == result["module"]
    cli_version = run(cli, "--version").stdout.split()
    assert cli_version == ["chute", result["version"]]
    info = run(cli, "info", data / "inputs").stdout
    assert "inputs" in info and "6" in info


def linked_libraries(path: Path) -> dict[str, str]:
    """ldd's view of `path`: library name -> resolved path (or "not found")."""
    out = {}
    for line in run("ldd", path).stdout.splitlines():
        match = re.match(r"\s*(\S+)\s+=>\s+(.*?)\s*(\(0x[0-9a-f]+\))?$", line)
        if match:
            out[match.group(1)] = match.group(2)
        elif line.strip():
            name = line.split()[0]
            out[Path(name).name] = name
    return out


def test_installed_binaries_take_only_the_base_system_from_this_machine(venv, wheel):
    allowed = base_system(wheel)
    assert "libblosc.so.1" not in allowed and "libc.so.6" in allowed
    site = Path(
        run(venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])")
        .stdout.strip()
    )  # fmt: skip
    binaries = [*(site / "chute").glob("*.so"), site / "chute" / "_bin" / "chute"]
    assert len(binaries) == 3, binaries
    for binary in binaries:
        for name, resolved in linked_libraries(binary).items():
            assert "not found" not in resolved, (binary, name)
            if Path(resolved).resolve().is_relative_to(site.resolve()):
                continue  # carried by the wheel (chute.libs)
            assert name in allowed, f"{binary.name} takes {name} from {resolved}"
