"""The shell blocks of the user-facing pages (README.md, docs/**/*.md), for tests that run them or
check the paths they use."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT

SHELL = ("sh", "bash", "shell")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def shell_blocks(page: Path) -> list[tuple[str, list[str]]]:
    """(heading above it, lines) of each ```sh / ```bash block of a page."""
    blocks, heading, lines, lang = [], "", None, ""
    for line in page.read_text().splitlines():
        fence = line.strip()
        if fence.startswith("```"):
            if lines is None:
                lines, lang = [], fence[3:].strip()
            else:
                if lang in SHELL:
                    blocks.append((heading, lines))
                lines = None
        elif lines is not None:
            lines.append(line)
        elif line.startswith("#"):
            heading = line.lstrip("#").strip()
    return blocks


def section_block(page: Path, heading: str) -> list[str]:
    """The first shell block under a heading."""
    found = [lines for h, lines in shell_blocks(page) if h == heading]
    assert found, f"no shell block under {heading!r} in {page.name}"
    return found[0]
