"""Shared fixtures: rendered plans of the example stacks and a valid base config."""

from __future__ import annotations

import copy
import functools
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from platformctl.engine import Plan, render_config, render_stack  # noqa: E402
from tests.conformance import reference_dir  # noqa: E402

STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))

BASE_CONFIG = {
    "customer": "test",
    "environment": "dev",
    "cluster": {
        "mode": "existing",
        "nodeGroups": [
            {"name": "cpu", "minNodes": 1, "maxNodes": 2, "selector": {"pool": "cpu"}},
            {"name": "gpu", "minNodes": 1, "maxNodes": 2, "selector": {"pool": "gpu"}, "gpu": {"model": "A100-80GB"}},
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


def as_magnum(raw: dict) -> dict:
    """The raw config turned into a Magnum cluster's: the driver labels the groups, so no selectors."""
    raw["cluster"]["mode"] = "magnum"
    for group in raw["cluster"]["nodeGroups"]:
        group.pop("selector", None)
    return raw


def render_raw(raw: dict, stack: str = "test-dev", secret_keys: tuple[str, ...] = ()) -> Plan:
    """Render config keys (without the namespace) through __main__.py."""
    return render_config(
        stack, {f"inference-platform:{k}": v for k, v in raw.items()}, [f"inference-platform:{k}" for k in secret_keys]
    )


@functools.cache
def stack_plan(stack: str) -> Plan:
    return render_stack(stack)


@pytest.fixture(scope="session")
def reference() -> Path:
    ref = reference_dir()
    if ref is None:
        pytest.skip("../shared/reference is absent (set PLATFORM_REFERENCE_DIR)")
    return ref
