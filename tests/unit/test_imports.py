"""The project's modules import each other without cycles, and checking a stack's settings
loads no module that builds resources (tests/support/import_graph.py reads the imports)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.import_graph import Edge, builds_resources, cycles, format_cycle, import_chain, import_edges, load_modules, reachable

# Import name -> folder: the library's import name differs from its folder.
PACKAGES = {"inference_platform": "components", "platformctl": "platformctl", "policies": "policies",
            "graph_app": "graph_app", "examples": "examples"}
# Settings validation: the module that loads a stack file, and everything it imports.
VALIDATION_ROOT = "inference_platform.settings.loader"
LEAF = "inference_platform.core.node_contract"


@pytest.fixture(scope="module")
def graph():
    modules = load_modules(ROOT, PACKAGES)
    return modules, import_edges(modules, ROOT)


def test_the_graph_holds_every_kind_of_import(graph):
    modules, edges = graph
    pairs = {(e.source, e.target) for e in edges}
    assert ("inference_platform.platform", "inference_platform.cluster.cluster") in pairs  # from x.cluster import Cluster
    assert ("inference_platform.mesh.mesh", "inference_platform.core.endpoints") in pairs  # from x.core import endpoints as ep
    assert ("platformctl.engine", "inference_platform.platform") in pairs  # inside render_settings
    assert ("policies.rules", "inference_platform.settings.policies") in pairs  # the names the pack carries
    assert "inference_platform.serving.triton" in modules and "policies.rules.kube" in modules


def test_no_import_cycles(graph):
    _, edges = graph
    found = cycles(edges)
    assert not found, "import cycles:\n" + "\n".join(format_cycle(c) for c in found)


def test_validation_builds_no_resources(graph):
    modules, edges = graph
    builders = {name for name, m in modules.items() if builds_resources(m)}
    assert {"inference_platform.gpu.node_rules", "inference_platform.gpu.coldstart", "inference_platform.serving.triton"} <= builders
    validation = reachable(edges, VALIDATION_ROOT)
    assert {"inference_platform.settings.stack", "inference_platform.settings.checks", "inference_platform.gpu.profiles", "inference_platform.gpu.node_labels"} <= validation
    bad = sorted(validation & builders)
    assert not bad, "settings validation imports resource-building modules:\n" + "\n".join(
        " -> ".join([VALIDATION_ROOT, *(e.target for e in import_chain(edges, VALIDATION_ROOT, m))]) + "\n"
        + "\n".join(f"    {e}" for e in import_chain(edges, VALIDATION_ROOT, m))
        for m in bad
    )


def test_node_contract_is_a_leaf(graph):
    _, edges = graph
    ours = [str(e) for e in edges if e.source == LEAF]
    assert not ours, "node_contract.py must import no module of ours:\n" + "\n".join(ours)


def _package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))


def test_the_checker_finds_cycles_hidden_in_functions(tmp_path):
    _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from . import b\n",
        "pkg/b.py": "def late():\n    from pkg.sub.c import thing\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/c.py": "import os\n\nclass K:\n    def m(self):\n        from ..a import b\n",
        "pkg/d.py": "from .d import x\n",
        "pkg/e.py": "from . import a\n",
    })
    modules = load_modules(tmp_path, {"pkg": "pkg"})
    found = cycles(import_edges(modules, tmp_path))
    loops = sorted(tuple(e.source for e in c) for c in found)
    # a -> b -> c -> a (each import in the loop once, whichever edge starts it); d imports itself.
    assert len(loops) == 2 and ("pkg.d",) in loops
    three = next(c for c in found if len(c) == 3)
    assert {(e.source, e.target) for e in three} == {("pkg.a", "pkg.b"), ("pkg.b", "pkg.sub.c"), ("pkg.sub.c", "pkg.a")}
    message = format_cycle(three)
    assert "pkg/b.py:2: from pkg.sub.c import thing" in message and "closed by" in message


def test_the_checker_sees_resource_builders(tmp_path):
    _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/check.py": "from .shapes import Box\n",
        "pkg/shapes.py": "def build():\n    import pulumi_kubernetes as k8s\n",
        "pkg/comp.py": "import pulumi\n\nclass C(pulumi.ComponentResource):\n    pass\n",
        "pkg/pure.py": "import pulumi\n",
    })
    modules = load_modules(tmp_path, {"pkg": "pkg"})
    assert {n for n, m in modules.items() if builds_resources(m)} == {"pkg.shapes", "pkg.comp"}
    edges = import_edges(modules, tmp_path)
    assert import_chain(edges, "pkg.check", "pkg.shapes") == [Edge("pkg.check", "pkg.shapes", "pkg/check.py", 1, "from .shapes import Box")]


# The library's layers, bottom up. Pure layers create nothing; a module that builds resources
# imports resource-building modules only from packages listed before its own (tuning before
# serving: a TritonService declares its versions' tuning runs).
LIB = "inference_platform"
PURE_LAYERS = ("core", "settings", "timing")
BUILD_ORDER = ("cluster", "gpu", "mesh", "observability", "weights", "tuning", "serving", "training", "platform")
# Each pure layer and what it may import of ours (the loader also runs checks that live beside
# their components: pure functions of the settings, wherever they are).
ALLOWED = {"core": {"core"}, "settings": {"core", "settings"}, "timing": {"core", "settings", "timing"}}
LOADER = f"{LIB}.settings.loader"


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == LIB and len(parts) > 1 else None


def test_pure_layers_import_only_what_lies_below_them(graph):
    _, edges = graph
    bad = [str(e) for e in edges
           if _layer(e.source) in ALLOWED and e.source != LOADER and e.target.startswith(f"{LIB}.")
           and _layer(e.target) not in ALLOWED[_layer(e.source)]]
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_pure_modules_reach_no_resource_building_module(graph):
    modules, edges = graph
    builders = {name for name, m in modules.items() if builds_resources(m)}
    pure = [m for m in modules if _layer(m) in PURE_LAYERS]
    assert LOADER in pure and f"{LIB}.core.grammar" in pure
    bad = {m: sorted(reachable(edges, m) & builders) for m in pure if reachable(edges, m) & builders}
    assert not bad, f"pure modules that load resource-building ones: {bad}"


def test_components_import_components_only_from_earlier_packages(graph):
    modules, edges = graph
    builders = {name for name, m in modules.items() if builds_resources(m)}
    bad = [str(e) for e in edges if e.source in builders and e.target in builders
           and _layer(e.source) in BUILD_ORDER and _layer(e.target) in BUILD_ORDER
           and BUILD_ORDER.index(_layer(e.target)) > BUILD_ORDER.index(_layer(e.source))]
    assert not bad, "a component imports one built after it:\n" + "\n".join(bad)


def test_the_library_imports_neither_the_tools_nor_the_policy_pack(graph):
    _, edges = graph
    bad = [str(e) for e in edges if e.source.startswith(f"{LIB}.") and e.target.split(".")[0] in ("platformctl", "policies", "tests")]
    assert not bad, "\n".join(bad)
