"""acme-prod on Magnum's Heat driver: the data stack tests/data/Pulumi.acme-prod-heat.yaml is
acme-prod with exactly these edits (test_variants.py checks it), so the await, ordering and
replacement checks that run over every test stack cover both drivers."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from inference_platform.settings.stack import Settings
from platformctl.engine import Plan, render_stack, stack_settings
from tests.conftest import HEAT, HEAT_MIRRORED_AUTOSCALER

HEAT_STACK = "acme-prod-heat"
HEAT_FILE = Path(__file__).parents[1] / "data" / f"Pulumi.{HEAT_STACK}.yaml"


def to_heat(config: dict[str, Any]) -> dict[str, Any]:
    """acme-prod's config (namespaced keys) moved to the Heat driver: Fedora CoreOS nodes, so
    drivers come with the image; the kubelet's hyperkube image from the operator's registry."""
    magnum = config["inference-platform:cluster"]["magnum"]
    magnum["driver"] = "heat"
    magnum["template"].update(HEAT["template"])
    magnum["template"]["labels"] = {"hyperkube_prefix": "registry.acme.example/magnum/", **HEAT_MIRRORED_AUTOSCALER}
    magnum.pop("apiAllowedCidrs", None)
    config["inference-platform:gpuOperator"]["driver"] = {"mode": "preinstalled"}
    return config


@functools.cache
def heat_plan() -> Plan:
    return render_stack(HEAT_STACK, HEAT_FILE)


def heat_settings() -> Settings:
    return stack_settings(HEAT_FILE)
