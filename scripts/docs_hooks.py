"""MkDocs hooks (mkdocs.yml `hooks:`): the pages and pictures generated at build time.

- reference/cli.md: `chute --help` and `chute COMMAND --help` of every command and subcommand,
  run on the built CLI ($CHUTE_CLI, else `chute` on PATH, else the release build's or the
  project venv's `chute`);
- reference/cpp.md: each public header (cmake/chute_public_headers.cmake) with its leading
  comment and the classes, structs, enums and functions it declares;
- assets/bench/*.png: the plots `chute bench --out` draws, from the small report checked in
  as docs/assets/bench-report.json (python/chute/bench/plots.py, loaded by path so the build
  needs matplotlib but not chute's extension).

A CLI that cannot be found or run is a warning, so `mkdocs build --strict` fails on it.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path

from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.chute")
REPO = Path(__file__).resolve().parents[1]


def find_cli() -> str | None:
    candidates = [os.environ.get("CHUTE_CLI"), shutil.which("chute"),
                  REPO / "build" / "release" / "tools" / "chute" / "cli" / "chute",
                  REPO / ".venv" / "bin" / "chute"]  # fmt: skip
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def _help(cli: str, words: list[str]) -> str:
    result = subprocess.run([cli, *words, "--help"], capture_output=True, text=True, timeout=60,
                            check=False, env={**os.environ, "COLUMNS": "100"})  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(f"`chute {' '.join(words)} --help` failed: {result.stderr.strip()}")
    return result.stdout.rstrip()


def subcommands(help_text: str) -> list[str]:
    """The names listed under CLI11's SUBCOMMANDS: heading."""
    names, inside = [], False
    for line in help_text.splitlines():
        if (
            re.match(r"^\s*SUBCOMMANDS:?\s*$", line, re.IGNORECASE)
            or line.strip() == "Subcommands:"
        ):
            inside = True
            continue
        if inside:
            match = re.match(r"^  (\S+)(\s|$)", line)
            if match:
                names.append(match.group(1))
            elif line.strip() and not line.startswith(" "):
                inside = False
    return names


def cli_reference(cli: str) -> str:
    out = ["# Command line\n",
           "Generated from `chute --help` and each command's `--help` when the site is built.\n"]  # fmt: skip
    queue: list[list[str]] = [[]]
    while queue:
        words = queue.pop(0)
        text = _help(cli, words)
        title = " ".join(["chute", *words])
        if words:
            out.append(f"{'#' * min(len(words) + 1, 4)} `{title}`\n")
        out.append(f"```text\n{text}\n```\n")
        queue[0:0] = [[*words, name] for name in subcommands(text)]
    return "\n".join(out)


def public_headers() -> list[str]:
    cmake = (REPO / "cmake" / "chute_public_headers.cmake").read_text()
    block = cmake[cmake.index("set(CHUTE_PUBLIC_HEADERS") :].split(")", 1)[0]
    return re.findall(r"chute/[\w/]+\.h", block)


def _leading_comment(lines: list[str]) -> list[str]:
    comment, started = [], False
    for line in lines:
        stripped = line.strip()
        if not started and (stripped.startswith("#pragma") or not stripped):
            continue
        if stripped.startswith("//"):
            started = True
            comment.append(re.sub(r"^//[/!]? ?", "", stripped))
        else:
            break
    return comment


def _comment_markdown(comment: list[str]) -> str:
    """Paragraphs as text; an indented run after a blank line (an example) as C++ code."""
    out: list[str] = []
    code: list[str] = []
    previous = ""
    for line in comment + [""]:
        indented = line.startswith("  ") and (code or not previous.strip())
        if indented or (code and not line.strip()):
            code.append(line)
        else:
            if code:
                out.append("```cpp\n" + textwrap.dedent("\n".join(code)).strip("\n") + "\n```\n")
                code = []
            out.append(line)
        previous = line
    if code:
        out.append("```cpp\n" + textwrap.dedent("\n".join(code)).strip("\n") + "\n```")
    return "\n".join(out).strip() + "\n"


DECLARATION = re.compile(
    r"^(?:class|struct|enum class|enum)\s+(?:\[\[\w+\]\]\s+)?(\w+)\b(?![^;{]*;)"
    r"|^(?:inline |constexpr |\[\[nodiscard\]\] )*[\w:<>,\s\*&]+?\b(\w+)\([^;]*$"
    r"|^(?:inline |constexpr |\[\[nodiscard\]\] )*[\w:<>,\s\*&]+?\b(\w+)\(.*\);$"
)


def declarations(lines: list[str]) -> list[str]:
    names: list[str] = []
    for line in lines:
        if line.startswith((" ", "\t", "#", "/", "}", "namespace", "using", "template", "return")):
            continue
        match = DECLARATION.match(line)
        if match:
            name = next(g for g in match.groups() if g)
            if name not in names and name not in ("if", "for", "while", "switch", "operator"):
                names.append(name)
    return names


def cpp_reference() -> str:
    intro = (
        "The public headers, the stable C++ API (`cmake/chute_public_headers.cmake`; every other "
        "header is internal and may change between versions), each with its leading comment and "
        "what it declares at namespace level. Generated from the headers when the site is "
        "built; see [C++](../frameworks/cpp.md) for building against the installed package.\n"
    )
    out = ["# C++ headers\n", intro]
    for header in public_headers():
        lines = (REPO / "src" / header).read_text().splitlines()
        out.append(f"## `{header}`\n")
        out.append(_comment_markdown(_leading_comment(lines)))
        names = declarations(lines)
        if names:
            out.append("Declares: " + ", ".join(f"`{n}`" for n in names) + ".\n")
    return "\n".join(out)


def bench_pictures() -> dict[str, bytes]:
    report = REPO / "docs" / "assets" / "bench-report.json"
    spec = importlib.util.spec_from_file_location(
        "chute_bench_plots", REPO / "python" / "chute" / "bench" / "plots.py"
    )
    plots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plots)
    import json

    with tempfile.TemporaryDirectory() as folder:
        written = plots.make_plots(json.loads(report.read_text()), Path(folder))
        return {Path(p).name: Path(p).read_bytes() for p in written}


def on_files(files: Files, config) -> Files:
    cli = find_cli()
    if cli is None:
        log.warning("the chute CLI was not found (set CHUTE_CLI): reference/cli.md is empty")
        cli_page = "# Command line\n\nBuild chute to generate this page.\n"
    else:
        try:
            cli_page = cli_reference(cli)
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as error:
            log.warning("reference/cli.md: %s", error)
            cli_page = "# Command line\n\nThe CLI's help could not be read.\n"
    files.append(File.generated(config, "reference/cli.md", content=cli_page))
    files.append(File.generated(config, "reference/cpp.md", content=cpp_reference()))
    for name, data in bench_pictures().items():
        files.append(File.generated(config, f"assets/bench/{name}", content=data))
    return files
