"""The documentation: the MkDocs site builds with no broken link, its generated pages are current,
and the README stays a front door whose links all land."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from platformctl import docs
from tests.conftest import ROOT

DOCS = ROOT / "docs"
MKDOCS = ROOT / ".venv-docs" / "bin" / "mkdocs"
needs_mkdocs = pytest.mark.skipif(not MKDOCS.exists(), reason="mkdocs is not installed: run `make docs-venv`")

# A Markdown link's target: [text](target), the target up to the closing parenthesis.
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _mkdocs_build(site: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(site)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension gives a heading (its default slugify)."""
    text = unicodedata.normalize("NFKD", heading.replace("`", "")).encode("ascii", "ignore").decode()
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def _anchors(page: Path) -> set[str]:
    anchors, fence = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and (m := re.match(r"#{1,6} (.+)", line)):
            anchors.add(_slug(m.group(1)))
    return anchors


def _prose(text: str) -> str:
    """The text without code blocks and code spans, where brackets are not links."""
    return re.sub(r"`[^`\n]*`", "", re.sub(r"^```.*?^```", "", text, flags=re.M | re.S))


def _broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(_prose(page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target}: no heading with that anchor")
    return broken


@needs_mkdocs
def test_the_documentation_site_builds_strict_with_no_broken_link_and_fetches_no_web_font(tmp_path):
    result = _mkdocs_build(tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    pages = list((tmp_path / "site").rglob("*.html"))
    assert any(p.name == "index.html" and p.parent.name == "reference" for p in pages)
    assert not [p for p in pages if "fonts.googleapis.com" in p.read_text()]


@needs_mkdocs
def test_a_broken_internal_link_or_anchor_fails_the_site_build(tmp_path):
    copy = tmp_path / "repo"
    copy.mkdir()
    (copy / "mkdocs.yml").write_text((ROOT / "mkdocs.yml").read_text())
    subprocess.run(["cp", "-r", str(ROOT / "docs"), str(copy / "docs")], check=True)
    page = copy / "docs" / "index.md"
    page.write_text(page.read_text() + "\n[gone](no-such-page.md) and [lost](gpu.md#no-such-heading)\n")
    result = _mkdocs_build(tmp_path / "site", cwd=copy)
    assert result.returncode != 0
    assert "no-such-page.md" in result.stdout + result.stderr
    assert "no-such-heading" in result.stdout + result.stderr


def test_the_generated_pages_and_args_are_current():
    result = subprocess.run([sys.executable, "-m", "platformctl", "docs", "--check"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("page", sorted(docs.GENERATED_PAGES))
def test_a_stale_generated_part_of_a_page_is_renewed_by_the_generator(page):
    current = (ROOT / page).read_text()
    begin, end, _ = docs.GENERATED_PAGES[page][0]
    stale = current[:current.index(begin) + len(begin)] + "\n| stale |\n" + current[current.index(end):]
    assert docs.update_page(page, stale) == current


def test_the_readme_is_a_front_door_with_the_two_set_up_commands():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    assert "make plan STACK=demo-dev" in readme and "\nmake test " in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize("page", ["README.md", "CHANGELOG.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md"))])
def test_every_relative_link_lands_on_a_file_and_heading(page):
    assert _broken_links(ROOT / page) == []


def _docs_pages() -> set[str]:
    """Every page of the site, relative to docs/ (docs/upgrades/ included)."""
    return {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}


def _linked_docs_pages(page: Path, text: str) -> set[str]:
    """The docs pages (relative to docs/) that text, read on page, links to."""
    linked = set()
    for target in LINK.findall(_prose(text)):
        path = target.partition("#")[0]
        if path and not re.match(r"[a-z]+:", target):
            file = (page.parent / path).resolve()
            if file.is_relative_to(DOCS):
                linked.add(file.relative_to(DOCS).as_posix())
    return linked


def _documentation_table(readme: str) -> str:
    """The README's "Documentation" section: its table of the manual's pages."""
    section = re.search(r"^## Documentation\n(.*?)(?=^## |\Z)", readme, re.M | re.S)
    assert section, "README.md has no Documentation section"
    return "\n".join(line for line in section.group(1).splitlines() if line.startswith("|"))


def test_every_docs_page_is_in_the_readmes_documentation_table():
    table = _documentation_table((ROOT / "README.md").read_text())
    assert _docs_pages() - _linked_docs_pages(ROOT / "README.md", table) == set()


def test_every_docs_page_is_linked_from_the_sites_home_page():
    index = DOCS / "index.md"
    assert _docs_pages() - {"index.md"} - _linked_docs_pages(index, index.read_text()) == set()


def test_a_page_missing_from_the_front_doors_is_seen():
    table = _documentation_table("## Documentation\n\n| Start | [Home](docs/index.md) · [x](https://e.org/docs/gpu.md) |\n"
                                 "\n`[gpu](docs/gpu.md)`\n## Next\n| [GPU](docs/gpu.md) |\n")
    assert _linked_docs_pages(ROOT / "README.md", table) == {"index.md"}
    assert _linked_docs_pages(DOCS / "index.md", "[up](upgrades/0.2.md#x) [gpu](gpu.md)") == {"upgrades/0.2.md", "gpu.md"}


def test_every_docs_page_is_in_the_site_navigation():
    import yaml

    def pages(nav) -> set[str]:
        if isinstance(nav, str):
            return {nav}
        items = nav.values() if isinstance(nav, dict) else nav
        return set().union(*(pages(i) for i in items))

    nav = pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    on_disk = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk - nav == set()
