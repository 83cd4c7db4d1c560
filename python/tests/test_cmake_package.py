"""The C++ library as a package: a library-only build (no GoogleTest, no CLI11) installs into a
temporary prefix, then the C++ example of docs/frameworks/cpp.md (its ```cmake and ```cpp blocks,
as written)
builds against it with find_package(chute) and runs on data `chute make-dataset` wrote.

The installed headers are the stable API (CHUTE_PUBLIC_HEADERS) plus the internal headers
they include, and an internal header declares nothing outside namespace chute::detail.

The library build keeps its folder in build/package-test, so a second run only relinks.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_support import run_cli
from readme_blocks import DOCS, blocks

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build" / "package-test"


def run(*args: object, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, check=False, timeout=3000, **kwargs
    )
    assert result.returncode == 0, (
        f"{args} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    )
    return result


def cmake_launchers() -> list[str]:
    if shutil.which("ccache"):
        return ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
    return []


def cpp_example() -> tuple[str, str]:
    page = blocks(DOCS / "frameworks" / "cpp.md")
    cmake = [b for b in page if b.language == "cmake" and not b.skip_reason]
    cpp = [b for b in page if b.language == "cpp" and not b.skip_reason]
    assert len(cmake) == 1 and len(cpp) == 1, "frameworks/cpp.md has one C++ example and its CMake"
    return cmake[0].code, cpp[0].code


@pytest.fixture(scope="module")
def prefix(tmp_path_factory) -> Path:
    if not shutil.which("cmake") or not shutil.which("ninja"):
        pytest.skip("cmake and ninja are needed")
    prefix = tmp_path_factory.mktemp("prefix")
    run("cmake", "-S", REPO, "-B", BUILD, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
        "-DCHUTE_BUILD_TESTS=OFF", "-DCHUTE_BUILD_CLI=OFF", "-DCHUTE_BUILD_PYTHON=OFF",
        # Proof that a library-only build needs neither: finding them is switched off.
        "-DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON", "-DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON",
        "-DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON", *cmake_launchers())  # fmt: skip
    jobs = os.environ.get("CHUTE_BUILD_JOBS", "2")
    run("cmake", "--build", BUILD, "-j", jobs)
    run("cmake", "--install", BUILD, "--prefix", prefix)
    return prefix


def test_install_holds_the_library_headers_and_package(prefix):
    assert (prefix / "lib" / "libchute.a").is_file()
    assert (prefix / "lib" / "cmake" / "chute" / "chuteConfig.cmake").is_file()
    assert (prefix / "include" / "chute" / "loader.h").is_file()
    assert (prefix / "include" / "chute" / "version.h").is_file()
    headers = [p.relative_to(prefix / "include") for p in (prefix / "include").rglob("*.h")]
    assert not [h for h in headers if "test" in h.name], headers
    # The harness stays out of the library: no benchmark, generator or rank-harness headers.
    assert not [h for h in headers if h.parts[1] in ("bench", "synth", "dist", "cli")], headers
    version = re.search(
        r'CHUTE_VERSION "([^"]+)"', (prefix / "include/chute/version.h").read_text()
    )
    cmake_version = re.search(
        r"project\(chute VERSION ([0-9.]+)", (REPO / "CMakeLists.txt").read_text()
    )
    assert version and cmake_version and version.group(1) == cmake_version.group(1)


def public_headers() -> list[str]:
    """CHUTE_PUBLIC_HEADERS of cmake/chute_public_headers.cmake: the stable C++ API."""
    text = (REPO / "cmake" / "chute_public_headers.cmake").read_text()
    block = re.search(r"set\(CHUTE_PUBLIC_HEADERS(.*?)\)", text, re.DOTALL).group(1)
    return block.split()


def include_closure(headers: list[str]) -> set[str]:
    pending, seen = list(headers), set()
    while pending:
        header = pending.pop()
        if header in seen or not (REPO / "src" / header).is_file():
            continue
        seen.add(header)
        text = (REPO / "src" / header).read_text()
        pending += re.findall(r'^#include "(chute/[^"]+)"', text, re.MULTILINE)
    return seen


def test_only_the_public_headers_and_what_they_include_are_installed(prefix):
    installed = {str(p.relative_to(prefix / "include")) for p in (prefix / "include").rglob("*.h")}
    expected = include_closure(public_headers()) | {"chute/version.h"}
    assert installed == expected, (sorted(installed - expected), sorted(expected - installed))
    # Internal parts a user never needs stay out: parsers, format internals, the SIGBUS guard.
    for internal in ("chute/format/npy_header.h", "chute/format/hdf5_btree.h",
                     "chute/format/json_fields.h", "chute/store/mapped_read_guard.h",
                     "chute/array/zarr_chunk_source.h", "chute/util/json_limits.h"):  # fmt: skip
        assert internal not in installed
    # The engine's headers stay out too: public headers only forward-declare their types.
    for internal in ("chute/array/read_plan.h", "chute/array/chunk_source.h",
                     "chute/array/read_scratch.h", "chute/array/strided_copy.h",
                     "chute/codec/codec_chain.h", "chute/codec/sharding.h",
                     "chute/util/thread_pool.h", "chute/store/io_executor.h"):  # fmt: skip
        assert internal not in installed
    # Every installed internal header says so, and declares nothing outside chute::detail.
    for header in sorted(installed - set(public_headers()) - {"chute/version.h"}):
        text = (prefix / "include" / header).read_text()
        assert declarations_outside_detail(text) == [], header
        if "namespace chute::detail" in text:
            assert "Internal" in text, header


def strip_comments_and_literals(text: str) -> str:
    """`text` without comments, string and character literals, and preprocessor lines."""
    pattern = r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
    text = re.sub(pattern, " ", text, flags=re.DOTALL)
    return re.sub(r"^[ \t]*#[^\n]*", " ", text, flags=re.MULTILINE)


def declarations_outside_detail(text: str) -> list[str]:
    """The declarations of a C++ header that are not inside namespace chute::detail: at file
    scope or directly in any other namespace (chute, an anonymous one). Each is given by its
    first words, up to its first '{' or ';'. Contents of classes and functions are not
    looked into: only where the declaration itself stands counts."""
    code = strip_comments_and_literals(text)
    opener = re.compile(r"(?<!\w)(?:inline\s+)?namespace\s*([\w:]*)\s*\{")
    scopes: list[list[str] | None] = []  # a namespace's path components, None for other braces
    found: list[str] = []
    i = 0
    while i < len(code):
        char = code[i]
        in_namespaces = all(scope is not None for scope in scopes)
        path = [part for scope in scopes if scope for part in scope]
        exposed = in_namespaces and path[:2] != ["chute", "detail"]
        if char.isspace() or (exposed and char == ";"):
            i += 1
        elif char == "}":
            if scopes:
                scopes.pop()
            i += 1
        elif char == "{":
            scopes.append(None)
            i += 1
        elif in_namespaces and (match := opener.match(code, i)):
            scopes.append(match.group(1).split("::") if match.group(1) else [""])
            i = match.end()
        elif exposed:
            end = min((j for c in "{;" if (j := code.find(c, i)) >= 0), default=len(code))
            found.append(" ".join(code[i:end].split()))
            i = end
        else:
            i += 1
    return found


def test_declaration_scan_finds_what_leaves_chute_detail():
    """The scan the installed-header test relies on fails where it should."""
    assert (
        declarations_outside_detail(
            "#pragma once\n#include <memory>\n// namespace chute { int x; }\n"
            "namespace chute::detail {\nstruct A { void f() { if (1) {} } };\n"
            'inline const char* s() { return "}"; }\n}  // namespace chute::detail\n'
        )
        == []
    )
    assert (
        declarations_outside_detail("namespace chute {\nnamespace detail {\nint f();\n}\n}\n") == []
    )
    assert declarations_outside_detail("namespace chute {\nclass ThreadPool;\n}\n") == [
        "class ThreadPool"
    ]
    assert declarations_outside_detail(
        "namespace chute::detail { int f(); }\n"
        "namespace chute {\nstruct A {\n  int x;\n};\nusing B = A;\n}\n"
    ) == ["struct A", "using B = A"]
    assert declarations_outside_detail("namespace { int g(); }\nint h();\n") == [
        "int g()",
        "int h()",
    ]
    assert declarations_outside_detail("namespace chute::other { void f(); }") == ["void f()"]
    assert declarations_outside_detail(
        "namespace chute::detail { int my_namespace {}; }\nnamespace chute { int y; }"
    ) == ["int y"]


def test_public_headers_compile_on_their_own(prefix, tmp_path):
    """Each public header, included alone in a file, compiles against the installed prefix."""
    compiler = shutil.which("c++") or shutil.which("g++")
    if not compiler:
        pytest.skip("no C++ compiler")
    source = tmp_path / "all.cc"
    for header in public_headers():
        source.write_text(f"#include <{header}>\nint main() {{ return 0; }}\n")
        run(compiler, "-std=c++20", "-fsyntax-only", f"-I{prefix / 'include'}", source)


def test_documented_cpp_example_builds_against_the_installed_package(prefix, tmp_path):
    cmake_code, cpp_code = cpp_example()
    app = tmp_path / "app"
    app.mkdir()
    (app / "CMakeLists.txt").write_text(cmake_code)
    source = re.search(r"add_executable\(\w+ (\S+)\)", cmake_code).group(1)
    (app / source).write_text(cpp_code)
    run("cmake", "-S", app, "-B", app / "build", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_PREFIX_PATH={prefix}", *cmake_launchers())  # fmt: skip
    run("cmake", "--build", app / "build")
    data = tmp_path / "data" / "packed"
    run_cli("make-dataset", "packed", data, "-q", "--samples", 40, "--lat", 6, "--lon", 8,
            "--input-channels", 3, "--target-channels", 1, "--chunk-channels", 0)  # fmt: skip
    executable = app / "build" / re.search(r"add_executable\((\w+)", cmake_code).group(1)
    out = run(executable, data).stdout
    version = re.search(r"project\(chute VERSION ([0-9.]+)", (REPO / "CMakeLists.txt").read_text())
    # 40 samples, batches of 16, drop_last: 2 batches; the resume point is epoch 1's start.
    assert out.startswith(f"chute {version.group(1)}: 2 batches, next epoch 1,"), out
