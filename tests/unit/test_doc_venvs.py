"""The venvs the pages tell users to run from exist after the Makefile target that makes them: every
`.venv*/bin/TOOL` on README.md and docs/ is a venv a Makefile rule creates and a tool the Makefile
runs from it (or python, pip), and every platformctl command a page's shell block runs comes from
the venv of `make plan`, the README's set-up."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT
from tests.support.doc_shell import pages, shell_blocks

VENV_PATH = re.compile(r"(?<![\w/.-])(\.venv[\w-]*)/bin/([\w.-]+)")
PLATFORMCTL = re.compile(r"(\S*)\s+-m\s+platformctl\b(?!\.)")
# Developer commands: run from the development venv by their make targets (bench).
DEVELOPER = re.compile(r"-m\s+platformctl\s+bench\b")
MAKEFILE = (ROOT / "Makefile").read_text()


def _make_vars() -> dict[str, str]:
    found = dict(re.findall(r"^([A-Z_]+)\s*:?=\s*(\S+)", MAKEFILE, re.M))

    def expand(value: str) -> str:
        return re.sub(r"\$\(([A-Z_]+)\)", lambda m: expand(found.get(m.group(1), "")), value)

    return {name: expand(value) for name, value in found.items()}


def made_venvs() -> dict[str, set[str]]:
    """Venv folder -> the bin/ tools the Makefile creates or runs there."""
    variables = _make_vars()
    expand = lambda text: re.sub(r"\$\(([A-Z_]+)\)", lambda m: variables.get(m.group(1), ""), text)  # noqa: E731
    venvs = {}
    for target in re.findall(r"^(\S+)/\.installed\s*:", MAKEFILE, re.M):
        if "%" in target:  # .venv-%/.installed: requirements-%.txt
            venvs.update({target.replace("%", r.name[len("requirements-"):-len(".txt")]): set()
                          for r in ROOT.glob("requirements-*.txt")})
        else:
            venvs[expand(target)] = set()
    for venv, tools in venvs.items():
        tools.update({"python", "python3", "pip"})
        tools.update(re.findall(rf"(?<![\w-]){re.escape(venv)}/bin/([\w.-]+)", expand(MAKEFILE)))
    return venvs


def plan_venv() -> str:
    """The venv whose interpreter the `plan` target's recipe runs."""
    recipe = re.search(r"^plan:.*\n\t(\S+) -m platformctl plan", MAKEFILE, re.M)
    assert recipe, "the Makefile's plan target runs no platformctl plan"
    return re.sub(r"\$\(([A-Z_]+)\)", lambda m: _make_vars()[m.group(1)], recipe.group(1)).removesuffix("/bin/python")


def _venv_uses():
    for page in pages():
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if "-m venv" in line:
                continue  # a command that makes its own venv (policies/.venv for `pulumi preview`)
            for venv, tool in VENV_PATH.findall(line):
                yield f"{page.relative_to(ROOT)}:{number}", venv, tool


@pytest.mark.parametrize("where, venv, tool", list(_venv_uses()))
def test_every_venv_path_a_page_uses_is_one_a_makefile_target_creates(where, venv, tool):
    venvs = made_venvs()
    assert venv in venvs, f"{where}: {venv} is made by no Makefile target (made: {', '.join(sorted(venvs))})"
    assert tool in venvs[venv], f"{where}: {venv}/bin/{tool} is not a tool the Makefile puts there"


def test_every_platformctl_command_of_a_shell_block_runs_from_the_plan_venv():
    venv = plan_venv()
    wrong = []
    for page in pages():
        for heading, lines in shell_blocks(page):
            for line in lines:
                for interpreter in PLATFORMCTL.findall(line):
                    if not DEVELOPER.search(line) and interpreter.strip("\"'") != f"{venv}/bin/python":
                        wrong.append(f"{page.relative_to(ROOT)} ({heading}): {line.strip()}")
    assert not wrong, f"not run from {venv} (what `make plan` builds):\n" + "\n".join(wrong)


def test_a_venv_no_target_makes_is_caught(tmp_path):
    assert ".venv" in made_venvs() and plan_venv() == ".venv-plan"
    assert not VENV_PATH.findall("make plan && python -m platformctl diff a b")
    assert VENV_PATH.findall("`.venv-nope/bin/python -m platformctl`") == [(".venv-nope", "python")]
    assert ".venv-nope" not in made_venvs()


def _rule(target: str) -> tuple[list[str], list[str]]:
    """A Makefile rule's prerequisites and its recipe lines, with the variables expanded."""
    variables = _make_vars()
    rule = re.search(rf"^{re.escape(target)}:([^\n]*)\n((?:\t[^\n]*\n)*)", MAKEFILE, re.M)
    assert rule, f"the Makefile has no {target} target"
    expand = lambda text: re.sub(r"\$\(([A-Z_]+)\)", lambda m: variables.get(m.group(1), ""), text)  # noqa: E731
    return expand(rule.group(1)).split(), [expand(line.strip()) for line in rule.group(2).splitlines()]


def _venvs_built_by(prerequisites: list[str]) -> set[str]:
    """The venvs that prerequisites build: a target `NAME: VENV/.installed` names one."""
    return {p.removesuffix("/.installed") for name in prerequisites for p in _rule(name)[0]
            if p.endswith("/.installed")}


def test_make_docs_builds_only_the_venvs_its_recipe_runs_from():
    """`make docs` regenerates the pages from the plan venv and builds the site from the docs venv:
    it must not build the 1.7 GB development venv for that."""
    prerequisites, recipe = _rule("docs")
    runs_from = {venv for line in recipe for venv, _tool in VENV_PATH.findall(line)}
    assert runs_from == {plan_venv(), ".venv-docs"}, recipe
    assert _venvs_built_by(prerequisites) == runs_from, prerequisites
