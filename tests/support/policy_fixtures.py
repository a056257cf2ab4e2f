"""Small synthetic resources in resources.json form, and a runner for one policy."""

from __future__ import annotations

import copy
from typing import Any, Optional

from platformctl.policy import Violation, run_policies
from policies.rules import BY_NAME

HELM = "kubernetes:helm.sh/v3:Release"
GPU_SELECTOR = {"pool.example.com/name": "gpu"}
GPU_GROUPS = {"gpu": {"gpusPerNode": 1, "maxNodes": 2, "resources": ["nvidia.com/gpu"], "selector": GPU_SELECTOR}}


def urn(type_: str, name: str) -> str:
    return f"urn:pulumi:test::inference-platform::{type_}::{name}"


def resource(type_: str, name: str, inputs: dict, *, protect: bool = False, deps: tuple = (),
             rendered: Optional[str] = None) -> dict[str, Any]:
    r = {
        "urn": urn(type_, name), "type": type_, "name": name, "parent": None, "custom": True, "provider": None,
        "dependsOn": [d["urn"] for d in deps], "protect": protect, "retainOnDelete": False,
        "deleteBeforeReplace": False, "ignoreChanges": [], "inputs": inputs,
    }
    if rendered:
        r["outputs"] = {"metadata": {"name": rendered}}
    return r


def k8s(token: str, name: str, metadata: dict, body: dict, **opts) -> dict[str, Any]:
    api, kind = token.rsplit(":", 1)
    api_version = api.removeprefix("core/")
    return resource(f"kubernetes:{token}", name, {"apiVersion": api_version, "kind": kind, "metadata": metadata, **body}, **opts)


def triton_container(**over) -> dict:
    probe = {"httpGet": {"path": "/v2/health/ready", "port": "http"}}
    c = {
        "name": "triton",
        "image": "nvcr.io/nvidia/tritonserver:25.01-py3",
        "command": ["tritonserver"],
        "args": ["--model-repository=/models/svc/v1"],
        "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
        "securityContext": {
            "runAsNonRoot": True, "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"},
        },
        "startupProbe": probe, "readinessProbe": probe, "livenessProbe": probe,
    }
    c.update(over)
    return c


def pod(container: Optional[dict] = None, **over) -> dict:
    p = {
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
        "nodeSelector": dict(GPU_SELECTOR),
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}],
        "containers": [container or triton_container()],
    }
    p.update(over)
    return p


def deployment(name: str = "svc-v1", ns: str = "svc", pod_spec: Optional[dict] = None, replicas: Optional[int] = None,
               rendered: Optional[str] = None, **opts) -> dict:
    spec: dict = {"selector": {"matchLabels": {"app": "svc"}}, "template": {"metadata": {"labels": {"app": "svc"}},
                                                                           "spec": pod_spec or pod()}}
    if replicas is not None:
        spec["replicas"] = replicas
    return k8s("apps/v1:Deployment", name, {"namespace": ns}, {"spec": spec}, rendered=rendered, **opts)


def workflow_template(*templates: dict, ns: str = "svc", **spec) -> dict:
    """An Argo WorkflowTemplate running `templates` in turn, with workflow-level `spec` fields."""
    entry = {"name": "main", "steps": [[{"name": t["name"], "template": t["name"]}] for t in templates]}
    body = {"entrypoint": "main", "templates": [entry, *templates], **spec}
    return k8s("argoproj.io/v1alpha1:WorkflowTemplate", "svc-pipeline", {"name": "svc-pipeline", "namespace": ns}, {"spec": body})


def namespace(name: str = "svc", injected: bool = True) -> dict:
    labels = {"istio-injection": "enabled"} if injected else {}
    return k8s("core/v1:Namespace", f"ns-{name}", {"name": name, "labels": labels}, {})


def custom(token: str, name: str, ns: str, spec: dict, meta_name: Optional[str] = None, **opts) -> dict:
    return k8s(token, name, {"name": meta_name or name, "namespace": ns}, {"spec": spec}, **opts)


def virtual_service(http: list, ns: str = "svc", hosts: tuple = ("svc.example.com",), **opts) -> dict:
    spec = {"hosts": list(hosts), "gateways": ["istio-system/inference-gateway"], "http": http}
    return custom("networking.istio.io/v1:VirtualService", "svc-virtualservice", ns, spec, meta_name="svc", **opts)


def route(*weights: int, host: str = "svc", subsets: tuple = ("v1", "v2"), auth: bool = True) -> dict:
    rule: dict = {"name": "http", "route": [
        {"destination": {"host": host, "subset": s}, "weight": w} for s, w in zip(subsets, weights, strict=True)
    ]}
    if auth:
        rule["match"] = [{"headers": {"authorization": {"exact": "[secret]"}}}]
    return rule


def helm(name: str, values: dict, chart: str = "some-chart", version: str = "1.2.3", ns: str = "monitoring",
         release: Optional[str] = None) -> dict:
    return resource(HELM, name, {"chart": chart, "version": version, "namespace": ns, "name": release or name,
                                 "repositoryOpts": {"repo": "https://charts.example.com"}, "values": values})


def check(policy: str, resources: list[dict], **facts) -> list[Violation]:
    """Violations of one policy over `resources`, with `facts` as its config."""
    config = {policy: {"enforcementLevel": "mandatory", **facts}}
    return run_policies({"resources": copy.deepcopy(resources)}, config, [BY_NAME[policy]])
