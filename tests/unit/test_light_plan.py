"""`make plan`'s venv (requirements-plan.txt) holds every package the plan and the policy run import."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata

from tests.conftest import ROOT
from tests.support.import_graph import import_edges, load_modules

PACKAGES = {"inference_platform": "components", "platformctl": "platformctl", "policies": "policies",
            "graph_app": "graph_app"}
# The dev-only commands: the bench needs the test servers (tests/support), which `make plan` never runs.
DEV_ONLY = ("platformctl.bench",)


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0]).lower()


def _plan_distributions() -> set[str]:
    """requirements-plan.txt with requirements.txt (`-e .`: pyproject's pins), and all they pull in."""
    wanted = [_name(r) for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]]
    wanted += [_name(line) for line in (ROOT / "requirements-plan.txt").read_text().splitlines()
               if line.strip() and not line.startswith(("#", "-"))]
    found: set[str] = set()
    while wanted:
        name = wanted.pop()
        if name in found:
            continue
        found.add(name)
        for req in metadata.distribution(name).requires or []:
            if "extra ==" not in req:
                wanted.append(_name(req))
    return found


def _plan_modules() -> list:
    modules = load_modules(ROOT, PACKAGES)
    edges = [e for e in import_edges(modules, ROOT) if not e.target.startswith(DEV_ONLY)]
    seen, todo = set(), ["platformctl.__main__", "policies.__main__"]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += [e.target for e in edges if e.source == name]
    return [modules[m] for m in sorted(seen)]


def test_the_light_plan_installs_every_package_the_plan_and_the_policy_run_import():
    ours = set(PACKAGES) | {"components", "rules"}  # the policy pack's own `rules`, run from its directory
    providers = metadata.packages_distributions()
    available = _plan_distributions()
    missing = []
    for module in _plan_modules():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for top in {n.split(".")[0] for n in names} - ours - set(sys.stdlib_module_names) - {"__future__"}:
                if not {_name(d) for d in providers.get(top, [])} & available:
                    missing.append(f"{module.name} imports {top} ({providers.get(top)})")
    assert missing == []
