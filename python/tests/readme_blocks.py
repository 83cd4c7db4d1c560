"""The fenced code blocks of README.md and of the documentation site's pages (docs/), for the
tests that run them (test_readme.py, test_docs.py, test_cmake_package.py).

A block is skipped only when the line just before it is an HTML comment
`<!-- readme-test: skip (reason) -->` (or `docs-test: skip (reason)`), and only for blocks that
need what a test cannot have (root, the network, a GPU, a launcher, a full build); the reason is
required.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
SKIP = re.compile(r"<!--\s*(?:readme|docs)-test:\s*skip\s*\((?P<reason>[^)]+)\)\s*-->")


@dataclass
class Block:
    language: str
    code: str
    line: int  # 1-based line of the opening fence
    skip_reason: str | None
    path: Path = README

    @property
    def page(self) -> str:
        return self.path.relative_to(REPO).as_posix()

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line} ({self.language})"


def doc_pages() -> list[Path]:
    """The site's Markdown pages (docs/**/*.md)."""
    return sorted(DOCS.rglob("*.md"))


def blocks(path: Path = README) -> list[Block]:
    lines = path.read_text().splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        previous = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        marker = SKIP.search(previous)
        out.append(
            Block(
                language=fence.group(1),
                code="\n".join(lines[start + 1 : j]) + "\n",
                line=start + 1,
                skip_reason=marker.group("reason") if marker else None,
                path=path,
            )
        )
        i = j + 1
    return out


def command_lines(code: str) -> list[str]:
    """The commands of a shell block: continuation lines joined, comments dropped."""
    commands, current = [], ""
    for raw in code.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        if current.strip():
            commands.append(" ".join(current.split()))
        current = ""
    return commands
