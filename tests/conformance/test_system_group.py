"""Where the pods of the platform's Helm releases land, read from a real `helm template` of each
vendored chart: on a Magnum cluster every pod that is not a per-node agent selects the system
group (the cluster's first, CPU group), and every per-node agent still runs on GPU nodes."""

from __future__ import annotations

import functools
from typing import Any, Iterator

import pytest
import yaml

from inference_platform.core.node_contract import GPU_TAINT
from tests.conftest import ROOT, as_magnum, on_heat, render_raw
from tests.support import helm

# Between them every chart the platform installs: studio-dev has Ray graphs, demo-dev a model
# pipeline, s3mount-prod the bucket mount.
STACKS = ("studio-dev", "demo-dev", "s3mount-prod")


def _on_magnum(stack: str, driver: str) -> dict:
    """An example stack (on an existing cluster) moved onto a Magnum cluster of the driver."""
    path = next(p for p in (ROOT / "stacks" / f"Pulumi.{stack}.yaml", ROOT / "tests" / "data" / f"Pulumi.{stack}.yaml")
                if p.exists())
    config = yaml.safe_load(path.read_text())["config"]
    raw = as_magnum({key.split(":", 1)[1]: value for key, value in config.items() if key.startswith("inference-platform:")})
    for group in raw["cluster"]["nodeGroups"][1:]:
        group["flavor"] = "g1"
    return on_heat(raw) if driver == "heat" else raw


DRIVERS = {
    "heat": ("magnum.openstack.org/nodegroup", "default-worker"),
    "magnum-cluster-api": ("node.cluster.x-k8s.io/nodegroup", "default-worker"),
}


@functools.cache
def _rendered(driver: str) -> list[tuple[str, dict]]:
    """(release, object) of every release of the stack, as `helm template` makes them."""
    out = []
    for stack in STACKS:
        raw = _on_magnum(stack, driver)
        secrets = tuple(k for k, v in raw.items() if isinstance(v, dict) and set(v) == {"secure"})
        raw |= {k: "offline-secret" for k in secrets}
        for release in helm.releases(render_raw(raw, secret_keys=secrets)):
            out += [(release["name"], doc) for doc in helm.helm_template(release, include_crds=False)]
    return out


def _pod_specs(doc: dict) -> Iterator[dict[str, Any]]:
    kind, spec = doc["kind"], doc.get("spec") or {}
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
        yield spec["template"]["spec"]
    elif kind == "CronJob":
        yield spec["jobTemplate"]["spec"]["template"]["spec"]
    elif kind in ("Pod", "Prometheus", "Alertmanager"):
        # The operator's Prometheus and Alertmanager pods take the CR's nodeSelector.
        yield spec


def _tolerates_gpu_taint(spec: dict) -> bool:
    return any(t.get("operator") == "Exists" and t.get("key") in (None, GPU_TAINT["key"])
               and t.get("effect") in (None, GPU_TAINT["effect"]) for t in spec.get("tolerations") or [])


@pytest.mark.parametrize("driver", sorted(DRIVERS))
def test_on_magnum_every_platform_pod_but_node_agents_selects_the_system_group(driver, reference):
    key, value = DRIVERS[driver]
    placed = set()
    for release, doc in _rendered(driver):
        if doc["kind"] == "DaemonSet":
            continue
        for spec in _pod_specs(doc):
            name = f"{release}: {doc['kind']} {doc['metadata']['name']}"
            assert (spec.get("nodeSelector") or {}).get(key) == value, name
            placed.add(release)
    # Every release that runs pods of its own was seen (the lists above are not empty by accident).
    assert placed >= {"kube-prometheus-stack", "prometheus-adapter", "loki", "istiod", "istio-ingressgateway",
                      "jaeger", "kiali", "argo-workflows", "kuberay-operator", "gpu-operator", "csi-s3"}, placed


@pytest.mark.parametrize("driver", sorted(DRIVERS))
def test_on_magnum_every_node_agent_still_runs_on_gpu_nodes(driver, reference):
    agents = [(release, doc) for release, doc in _rendered(driver) if doc["kind"] == "DaemonSet"]
    assert {doc["metadata"]["name"] for _, doc in agents} >= {"alloy", "kube-prometheus-stack-prometheus-node-exporter"}
    for release, doc in agents:
        spec = doc["spec"]["template"]["spec"]
        assert _tolerates_gpu_taint(spec), f"{release}: DaemonSet {doc['metadata']['name']}"
        assert not {k for k in (spec.get("nodeSelector") or {}) if k != "kubernetes.io/os"}, doc["metadata"]["name"]
