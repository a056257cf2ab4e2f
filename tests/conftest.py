"""Shared fixtures: rendered plans of the example stacks and a valid base config."""

from __future__ import annotations

import copy
import functools
import os
import sys
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from platformctl.engine import Plan, render_config, render_stack  # noqa: E402
from tests.support.conformance import reference_dir  # noqa: E402

STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))

BASE_CONFIG = {
    "customer": "test",
    "environment": "dev",
    "cluster": {
        "mode": "existing",
        "nodeGroups": [
            {"name": "cpu", "minNodes": 1, "maxNodes": 2, "selector": {"pool": "cpu"}},
            {"name": "gpu", "minNodes": 1, "maxNodes": 2, "selector": {"pool": "gpu"}, "os": "ubuntu-24.04",
             "gpu": {"model": "A100-80GB"}},
        ],
    },
    "weightCaches": {"fileShare": {"mode": "existing", "server": "10.0.0.2", "path": "/models"}},
    "services": [
        {
            "name": "svc",
            "hosts": ["svc.example.com"],
            "versions": [
                {
                    "name": "v1",
                    "image": "nvcr.io/nvidia/tritonserver:25.01-py3",
                    "weight": 100,
                    "modelRepository": {"cache": "fileShare", "path": "svc/v1"},
                    "gpu": {"group": "gpu"},
                }
            ],
        }
    ],
}


def base_config() -> dict:
    """A fresh copy of a small valid configuration (keys without the namespace)."""
    return copy.deepcopy(BASE_CONFIG)


def clashing_deployment_names() -> dict:
    """Two services in one namespace whose `<service>-<version>` are both `a-b-c`."""
    raw = base_config()
    svc = raw["services"][0]
    raw["services"] = [
        dict(copy.deepcopy(svc), name="a-b", namespace="shared", hosts=["a-b.example.com"]),
        dict(copy.deepcopy(svc), name="a", namespace="shared", hosts=["a.example.com"]),
    ]
    raw["services"][0]["versions"][0]["name"] = "c"
    raw["services"][1]["versions"][0]["name"] = "b-c"
    raw["cluster"]["nodeGroups"][1]["maxNodes"] = 4
    return raw


def as_magnum(raw: dict) -> dict:
    """The raw config turned into a Magnum cluster's: the driver labels the groups, so no
    selectors, and the groups run the template's OS."""
    raw["cluster"]["mode"] = "magnum"
    for group in raw["cluster"]["nodeGroups"]:
        group.pop("selector", None)
        group.pop("os", None)
    return raw


# Magnum's own autoscaler on Heat from the operator's mirror, a release that knows node groups
# (settings/cluster.py HEAT_AUTOSCALER_DEFAULT_TAG).
HEAT_MIRRORED_AUTOSCALER = {"container_infra_prefix": "registry.acme.example/magnum/", "autoscaler_tag": "v1.34.5"}
# Magnum's Heat driver boots Fedora CoreOS only, where the NVIDIA driver must come with the
# image (components/core/driver_support.py).
HEAT = {"driver": "heat", "kubernetesVersion": "v1.34.1-rancher1",
        "template": {"image": "fedora-coreos-40-nvidia", "os": "fedora-coreos", "labels": HEAT_MIRRORED_AUTOSCALER}}


def on_heat(raw: dict, **magnum) -> dict:
    """A Magnum config on the Heat driver (Fedora CoreOS nodes whose image brings the driver),
    with further cluster.magnum settings."""
    raw["cluster"]["magnum"] = copy.deepcopy(HEAT) | magnum
    raw["gpuOperator"] = {"driver": {"mode": "preinstalled"}}
    return raw


def render_raw(raw: dict, stack: Optional[str] = None, secret_keys: tuple[str, ...] = ()) -> Plan:
    """Render config keys (without the namespace) through __main__.py, as the stack
    `<customer>-<environment>` of the config unless `stack` names another (the stack name must
    agree with them: settings/identity.py)."""
    if stack is None:
        names = (raw.get("customer"), raw.get("environment"))
        stack = "-".join(names) if all(isinstance(n, str) for n in names) else "test-dev"
    return render_config(
        stack, {f"inference-platform:{k}": v for k, v in raw.items()}, [f"inference-platform:{k}" for k in secret_keys]
    )


# Lines a test leaves for the end of the run, shown however output is captured
# (how long the Ray tests of graph_app took).
RUN_SUMMARY = pytest.StashKey[list[str]]()


def pytest_collection_modifyitems(items) -> None:
    """The real tier's stacks first (minutes each): under xdist they start while the rest runs,
    instead of lengthening the end of the run."""
    items.sort(key=lambda item: item.get_closest_marker("real") is None)


def pytest_terminal_summary(terminalreporter) -> None:
    for line in terminalreporter.config.stash.get(RUN_SUMMARY, []):
        terminalreporter.write_line(line)


@functools.cache
def stack_plan(stack: str) -> Plan:
    return render_stack(stack)


@pytest.fixture(scope="session")
def reference() -> Path:
    ref = reference_dir()
    if ref is None:
        pytest.skip("../shared/reference is absent (set PLATFORM_REFERENCE_DIR)")
    return ref


def observability_inputs(settings):
    """The Observability component's inputs for a stack, as the platform builds them, with
    the mesh as a Mesh component of these settings reports itself."""
    from types import SimpleNamespace

    from inference_platform import platform
    from inference_platform.mesh import mesh
    from inference_platform.timing.estimates import stack_estimates

    installed = settings.mesh.enabled
    reported = SimpleNamespace(crds=object() if installed else None, urls=dict(mesh.MESH_URLS) if installed else {},
                               ui_urls=mesh.ui_urls(platform.mesh_inputs(settings)) if installed else {})
    return platform.observability_inputs(settings, reported, stack_estimates(settings))


def gpu_operator_values_of(settings) -> dict:
    """The GPU operator chart's values for a stack, from the inputs the platform gives the component."""
    from inference_platform import platform
    from inference_platform.gpu import operator as gpu
    from inference_platform.timing.estimates import stack_estimates

    return gpu.gpu_operator_values(platform.gpu_operator_inputs(settings, stack_estimates(settings)))


@pytest.fixture(autouse=True)
def _stacks_dir_untouched():
    """Fails a test during which a file appeared in or left stacks/ (the directory's mtime moves):
    tests parametrize over stacks/ at collection, so a passing file there breaks another worker's run."""
    before = os.stat(ROOT / "stacks").st_mtime_ns
    yield
    assert os.stat(ROOT / "stacks").st_mtime_ns == before, \
        "stacks/ changed while this test ran: write stack files under tmp_path, never into the source tree"
