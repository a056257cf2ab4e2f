"""Reading Kubernetes objects, Helm releases and policy config out of policy arguments.

Props arrive as plain dicts from the offline runner and as read-only Mapping
proxies from the Pulumi CLI, so every check here tests for Mapping / Sequence,
never dict / list. The policy pack runs in its own virtualenv: nothing here may
import the platform's components (the pack takes only the policy names from the library).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional

from pulumi_policy import PolicyConfigSchema

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
# How the offline plan redacts secret values (platformctl/engine.py).
REDACTED = "[secret]"

GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_RESOURCE_PREFIX = "nvidia.com/"
INJECTION_LABEL = "istio-injection"

# Workload kinds and where their pod template lives.
_POD_PATHS: dict[str, tuple[str, ...]] = {
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "Pod": ("spec",),
}

# Facts the resources cannot show, with the defaults a policy falls back to when the
# policy config (platformctl/policy.py) leaves them out.
DEFAULTS: dict[str, Any] = {
    "production": False,
    "gpuQuota": None,
    "gpuGroups": {},
    "systemNamespaces": ["kube-system", "kube-public", "kube-node-lease", "gpu-operator", "csi-s3"],
    "privilegedNamespaces": ["gpu-operator", "csi-s3"],
    "ingressGateway": {"namespace": "istio-system", "releases": ["istio-ingressgateway"]},
    "meshRootNamespace": "istio-system",
    "crdCharts": {
        "networking.istio.io": ["base"],
        "security.istio.io": ["base"],
        "telemetry.istio.io": ["base"],
        "monitoring.coreos.com": ["kube-prometheus-stack", "prometheus-operator-crds"],
        "nvidia.com": ["gpu-operator"],
        "ray.io": ["kuberay-operator"],
        "argoproj.io": ["argo-workflows"],
        "kueue.x-k8s.io": ["kueue"],
        "nfd.k8s-sigs.io": ["gpu-operator"],
    },
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "production": {"type": "boolean", "description": "The stack is a production stack."},
    "gpuQuota": {"type": "integer", "minimum": 0, "description": "Most GPUs the stack may run; absent: no limit."},
    "gpuGroups": {
        "type": "object",
        "description": "GPU node groups by name: gpusPerNode, maxNodes, the GPU resource names a node advertises and "
                       "the node selector that singles out the group's nodes.",
        "additionalProperties": {
            "type": "object",
            "properties": {
                "gpusPerNode": {"type": "integer", "minimum": 1},
                "maxNodes": {"type": "integer", "minimum": 0},
                "resources": {"type": "array", "items": {"type": "string"}},
                "selector": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
    },
    "systemNamespaces": {"type": "array", "items": {"type": "string"},
                         "description": "Namespaces of system components exempt from Pod Security restricted."},
    "privilegedNamespaces": {"type": "array", "items": {"type": "string"},
                             "description": "Namespaces whose charts may run privileged containers (GPU operator, CSI)."},
    "ingressGateway": {"type": "object", "description": "Namespace and Helm release names of the ingress gateway."},
    "meshRootNamespace": {"type": "string", "description": "Istio's root namespace (mesh-wide policies)."},
    "crdCharts": {"type": "object", "description": "API group -> charts whose Helm release installs its CRDs."},
}


def schema(*keys: str) -> PolicyConfigSchema:
    """Config schema of a policy reading `keys`, with their defaults."""
    props = {}
    for key in keys:
        props[key] = dict(SCHEMAS[key])
        if DEFAULTS[key] is not None:
            props[key]["default"] = DEFAULTS[key]
    return PolicyConfigSchema(properties=props)


def setting(args: Any, key: str) -> Any:
    value = args.get_config().get(key)
    return DEFAULTS[key] if value is None else value


def fix(problem: str, hint: str) -> str:
    """A violation message: what is wrong, then how to fix it."""
    return f"{problem}. Fix: {hint}"


# --------------------------------------------------------------------------- values


def get(value: Any, *path: Any, default: Any = None) -> Any:
    """Nested lookup through mappings and sequences; `default` when any step is missing."""
    for key in path:
        if isinstance(key, int):
            if not is_list(value) or key >= len(value):
                return default
        elif not isinstance(value, Mapping) or key not in value:
            return default
        value = value[key]
    return default if value is None else value


# The field manager pulumi-kubernetes applies objects under (server-side apply): `pulumi-kubernetes`,
# or `pulumi-kubernetes-<hex>` per object (provider/pkg/await: fieldManagerName).
_PULUMI_MANAGER = re.compile(r"^pulumi-kubernetes(-[0-9a-f]+)?$")


def declared(props: Mapping, *path: str) -> Any:
    """A field's value as the program declared it. Stack policies see a resource's inputs in a preview
    and the offline plan, but the object as the API server returns it after `up`, defaults filled in
    (a Deployment's `spec.replicas: 1`): there, a field counts only where Pulumi's field manager owns it
    (metadata.managedFields)."""
    value = get(props, *path)
    managed = get(props, "metadata", "managedFields")
    if value is None or not is_list(managed):
        return value
    for entry in managed:
        if not _PULUMI_MANAGER.match(str(get(entry, "manager", default=""))):
            continue
        owned = get(entry, "fieldsV1")
        for key in path:
            owned = get(owned, f"f:{key}")
        if isinstance(owned, Mapping):
            return value
    return None


def is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def items(value: Any) -> list:
    return list(value) if is_list(value) else []


def mappings(value: Any, path: str = "") -> Iterator[tuple[str, Mapping]]:
    """Every mapping inside `value` (itself included) with its dotted path, depth first."""
    if isinstance(value, Mapping):
        yield path, value
        for key in value:
            yield from mappings(value[key], f"{path}.{key}" if path else str(key))
    elif is_list(value):
        for i, child in enumerate(value):
            yield from mappings(child, f"{path}[{i}]")


# --------------------------------------------------------------------------- Kubernetes objects


def kind(resource_type: str) -> Optional[str]:
    """`kubernetes:apps/v1:Deployment` -> `Deployment`; None for anything not a Kubernetes object."""
    if not resource_type.startswith("kubernetes:") or resource_type == HELM_RELEASE:
        return None
    return resource_type.rsplit(":", 1)[-1]


def api_group(resource_type: str) -> Optional[str]:
    """`kubernetes:networking.istio.io/v1:VirtualService` -> `networking.istio.io` (`core` for v1)."""
    if kind(resource_type) is None:
        return None
    return resource_type.split(":")[1].split("/")[0]


def is_kind(resource_type: str, *kinds: str) -> bool:
    return kind(resource_type) in kinds


def metadata(props: Mapping) -> Mapping:
    return get(props, "metadata", default={})


def name_of(props: Mapping) -> Optional[str]:
    return get(props, "metadata", "name")


def namespace_of(props: Mapping) -> str:
    return get(props, "metadata", "namespace", default="default")


def labels_of(props: Mapping) -> Mapping:
    return get(props, "metadata", "labels", default={})


# Argo Workflows kinds and where their workflow spec lives.
_WORKFLOW_SPECS: dict[str, tuple[str, ...]] = {
    "Workflow": ("spec",), "WorkflowTemplate": ("spec",), "ClusterWorkflowTemplate": ("spec",),
    "CronWorkflow": ("spec", "workflowSpec"),
}


def workflow_pods(spec: Mapping) -> list[Mapping]:
    """The pod each container template of an Argo workflow spec makes, with what the policies
    read: its containers (main, init, sidecars), and the pod fields the template sets or else
    the workflow (Argo's workflowpod.go)."""
    pods = []
    for t in items(get(spec, "templates")):
        main = get(t, "container", default=get(t, "script"))
        containers = [main] if isinstance(main, Mapping) else items(get(t, "containerSet", "containers"))
        if not containers:
            continue  # steps, a DAG, a resource: no pod of its own
        pod = {f: get(t, f, default=get(spec, f)) for f in ("securityContext", "nodeSelector", "tolerations", "affinity")}
        pods.append({**pod, "hostNetwork": get(spec, "hostNetwork"), "volumes": [*items(get(spec, "volumes")), *items(get(t, "volumes"))],
                     "initContainers": items(get(t, "initContainers")), "containers": [*containers, *items(get(t, "sidecars"))]})
    return pods


def pod_specs(resource_type: str, props: Mapping) -> list[Mapping]:
    """The pod specs a resource makes: a workload's (Deployment, DaemonSet, ..., Pod) one, an
    Argo workflow's one per container template; none for anything else."""
    k = kind(resource_type) or ""
    if k in _WORKFLOW_SPECS:
        spec = get(props, *_WORKFLOW_SPECS[k])
        return workflow_pods(spec) if isinstance(spec, Mapping) else []
    path = _POD_PATHS.get(k)
    spec = get(props, *path) if path is not None else None
    return [spec] if isinstance(spec, Mapping) else []


def containers(pod: Mapping) -> list[tuple[str, Mapping]]:
    """(field, container) of every container, init container and ephemeral container."""
    out = []
    for field in ("initContainers", "containers", "ephemeralContainers"):
        out += [(field, c) for c in items(get(pod, field)) if isinstance(c, Mapping)]
    return out


def gpu_resources(container: Mapping) -> dict[str, tuple[Any, Any]]:
    """GPU resource name -> (request, limit) of a container; None where absent."""
    requests = get(container, "resources", "requests", default={})
    limits = get(container, "resources", "limits", default={})
    names = {n for n in (*requests, *limits) if str(n).startswith(GPU_RESOURCE_PREFIX)}
    return {n: (requests.get(n), limits.get(n)) for n in sorted(names)}


def runs_tritonserver(container: Mapping) -> bool:
    words = [str(w) for w in (*items(get(container, "command")), *items(get(container, "args")))]
    return any(w == "tritonserver" or w.endswith("/tritonserver") or w.startswith("tritonserver ") for w in words)


# --------------------------------------------------------------------------- images


_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def image_problem(ref: Any) -> Optional[str]:
    """Why an image reference is not pinned (None when it is: a tag other than latest, or a digest)."""
    if not isinstance(ref, str) or ref == REDACTED:
        return None
    if _DIGEST.search(ref):
        return None
    if "@" in ref:
        return "has a malformed digest"
    last = ref.rsplit("/", 1)[-1]
    if ":" not in last:
        return "has no tag"
    tag = last.split(":", 1)[1]
    if not tag or tag == "latest":
        return "uses the tag 'latest'" if tag == "latest" else "has an empty tag"
    return None


# --------------------------------------------------------------------------- Helm


def release_name(name: str, props: Mapping) -> str:
    """The Helm release's own name (the `name` input), else the resource's logical name."""
    value = get(props, "name")
    return value if isinstance(value, str) and value else name


def release_namespace(props: Mapping) -> str:
    return get(props, "namespace", default="default")
