"""docs/architecture.md keeps one line per module of the library."""

from __future__ import annotations

import re

from tests.conftest import ROOT


def _documented() -> set[str]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = text.split("## The house", 1)[1].split("```", 2)[1]
    paths, stack = set(), []
    for line in block.splitlines():
        m = re.match(r"( *)(\S+)", line)
        if not m:
            continue
        depth, name = len(m.group(1)) // 2, m.group(2)
        stack = stack[:depth]
        if name.endswith("/"):
            stack.append(name.rstrip("/"))
        else:
            paths.add("/".join([*stack, name]))
    return paths


def test_every_module_of_the_library_has_its_line_in_the_architecture_doc():
    modules = {str(p.relative_to(ROOT / "components")) for p in (ROOT / "components").rglob("*.py")
               if p.name != "__init__.py" or p.parent == ROOT / "components"}
    documented = _documented()
    assert modules - documented == set(), f"modules without a line in docs/architecture.md: {sorted(modules - documented)}"
    assert documented - modules == set(), f"lines for modules that do not exist: {sorted(documented - modules)}"
