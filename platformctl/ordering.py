"""Ordering invariants of a plan: written once as data (which resources must come after
which), checked on the transitive dependency graph of resources.json.

`pulumi up` orders resources only by what each registration waits for. In the Python SDK
(pulumi 3.272, runtime/resource.py prepare_resource) a resource waits for the URNs of its
`dependencies` (explicit depends_on, a component expanded to its custom children, and
every resource whose outputs its inputs use), for its parent's URN, which for a component
resolves only once the component's own depends_on are done, and for its provider. So B
comes before A exactly when B is reachable from A over dependsOn, parent and provider
edges, which is the graph checked here.

Each rule pairs a selector of dependents with what they must come after: a selector
(every matching resource, e.g. the istiod release) or a relation (the claim and Secrets a
workload's pods use). A rule whose required resources are not in the plan holds
trivially: the cluster provides them. CRDs the plan itself declares (the Gateway API and
InferencePool CRDs) are matched by group and kind: each object of one, and each Helm release
rendering one, comes after that CRD, and a kind of a declared group without its CRD is reported
too (an object the API server has no kind for). The check walks the descendants of each required
resource once: O(V + E) per resource a selector names, and for related resources (claims,
PVs, Secrets, buckets) only their own few descendants.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

from inference_platform.core.chart_source import chart_name_of

from .awaits import HELM_RELEASE, label, runs_tritonserver

NAMESPACE = "kubernetes:core/v1:Namespace"
# Charts that register an aggregated API (an APIService served by their pods) and are ordered after every
# namespace, so that destroy removes their APIService before any namespace waits on its discovery:
# prometheus-adapter's custom metrics. Kueue's visibility API is not, and needs not be: the namespaces
# whose jobs need Kueue come after it, so on destroy they go while Kueue still runs and answers.
AGGREGATED_API_CHARTS = ("prometheus-adapter",)
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
S3_BUCKET = "pulumi-python:dynamic/s3:Bucket"
MAGNUM_NODE_GROUP = "openstack:containerinfra/nodeGroup:NodeGroup"
WORKLOAD_KINDS = {"apps/v1": {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"},
                  "batch/v1": {"Job", "CronJob"}, "v1": {"Pod"}}
ISTIO_GROUPS = ("networking.istio.io", "security.istio.io", "telemetry.istio.io", "extensions.istio.io")
# Helm values with which a chart creates ServiceMonitors, PodMonitors or PrometheusRules
# (the GPU operator creates DCGM's ServiceMonitor itself, when the CRD exists).
MONITOR_VALUES = {
    "gpu-operator": ("dcgmExporter.serviceMonitor.enabled",),
    "loki": ("monitoring.serviceMonitor.enabled", "monitoring.rules.enabled", "monitoring.alerts.enabled"),
    "alloy": ("serviceMonitor.enabled",),
    # llm-d-router-gateway v0.10.0 charts/router/templates/_servicemonitor.yaml (provider
    # prometheusoperator, the default of router.monitoring.provider.name).
    "llm-d-router-gateway": ("router.monitoring.prometheus.enabled",),
}
# The custom kinds a chart renders whose CRD a plan may declare: (group, kind, the value that
# turns it on, its default). llm-d-router-gateway v0.10.0: templates/epp.yaml includes
# charts/router/templates/_inferencepool.yaml, an InferencePool unless router.inferencePool.create
# is false (charts/router/values.yaml: true) and one InferenceObjective per
# router.inferenceObjectives entry (_inferenceobjective.yaml: llm-d.ai/v1alpha2); templates/
# httproute.yaml an HTTPRoute under httpRoute.create (values.yaml: false).
CHART_CUSTOM_KINDS: dict[str, tuple[tuple[str, str, str, bool], ...]] = {
    "llm-d-router-gateway": (
        ("inference.networking.k8s.io", "InferencePool", "router.inferencePool.create", True),
        ("llm-d.ai", "InferenceObjective", "router.inferenceObjectives", False),
        ("gateway.networking.k8s.io", "HTTPRoute", "httpRoute.create", False),
    ),
}


# --------------------------------------------------------------------------- graph


class Graph:
    """The plan's resources by index, with edges to what each waits for and lookups by name."""

    def __init__(self, resources: list[dict[str, Any]]):
        self.resources = resources
        index = {r["urn"]: i for i, r in enumerate(resources)}
        self.index = index
        self.successors: list[list[int]] = [[] for _ in resources]
        for i, r in enumerate(resources):
            for urn in {*(r.get("dependsOn") or ()), r.get("parent"), r.get("provider")}:
                j = index.get(urn) if urn else None
                if j is not None and j != i:
                    self.successors[j].append(i)
        self.namespace_labels: dict[str, dict[str, str]] = {}
        self.objects: dict[tuple[str, Optional[str], str], int] = {}
        self.volumes_by_claim: dict[tuple[str, str], int] = {}
        self.buckets: dict[str, int] = {}
        # The CRDs the plan declares, by the (group, kind) they define.
        self.crds: dict[tuple[str, str], int] = {}
        for i, r in enumerate(resources):
            inputs = r.get("inputs") or {}
            meta = inputs.get("metadata") or {}
            if r["type"] == NAMESPACE and isinstance(meta.get("name"), str):
                self.namespace_labels[meta["name"]] = meta.get("labels") or {}
            elif r["type"] == S3_BUCKET and isinstance(inputs.get("bucket"), str):
                self.buckets[inputs["bucket"]] = i
            elif r["type"] == CRD:
                spec = inputs.get("spec") or {}
                self.crds[(str(spec.get("group")), str((spec.get("names") or {}).get("kind")))] = i
            kind = inputs.get("kind")
            name = (((r.get("outputs") or {}).get("metadata") or {}).get("name") or meta.get("name"))
            if isinstance(kind, str) and isinstance(name, str):
                self.objects[(kind, meta.get("namespace"), name)] = i
            ref = (inputs.get("spec") or {}).get("claimRef") if kind == "PersistentVolume" else None
            if isinstance(ref, dict):
                self.volumes_by_claim[(ref.get("namespace"), ref.get("name"))] = i
        self.crd_groups = {group for group, _ in self.crds}

    def descendants(self, start: int) -> set[int]:
        """Every resource that comes after `start` (iterative: stacks are deep and wide)."""
        seen = {start}
        stack = [start]
        while stack:
            for j in self.successors[stack.pop()]:
                if j not in seen:
                    seen.add(j)
                    stack.append(j)
        return seen

    def injected(self, namespace: Any) -> bool:
        return self.namespace_labels.get(namespace, {}).get("istio-injection") == "enabled"


# --------------------------------------------------------------------------- selectors


def _api(r: dict[str, Any]) -> tuple[str, str, Optional[str]]:
    inputs = r.get("inputs") or {}
    api = str(inputs.get("apiVersion", ""))
    return api, str(inputs.get("kind", "")), (inputs.get("metadata") or {}).get("namespace")


def _chart(r: dict[str, Any]) -> Optional[str]:
    if r["type"] != HELM_RELEASE:
        return None
    inputs = r.get("inputs") or {}
    return chart_name_of(inputs.get("chart", ""), str(inputs.get("version", "")))


def _path(value: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


Selector = Callable[[dict[str, Any], Graph], bool]
Relation = Callable[[dict[str, Any], Graph], Iterable[int]]


@dataclass(frozen=True)
class Charts:
    """Helm releases of these charts."""
    names: tuple[str, ...]

    def __call__(self, r: dict[str, Any], g: Graph) -> bool:
        return _chart(r) in self.names


@dataclass(frozen=True)
class ChartValues:
    """Helm releases whose values turn on one of these paths, by chart."""
    paths: dict[str, tuple[str, ...]]

    def __call__(self, r: dict[str, Any], g: Graph) -> bool:
        values = (r.get("inputs") or {}).get("values") or {}
        return any(_path(values, p) is True for p in self.paths.get(_chart(r) or "", ()))


@dataclass(frozen=True)
class CustomResources:
    """Custom resources of these API groups (and kinds, when given)."""
    groups: tuple[str, ...]
    kinds: tuple[str, ...] = ()

    def __call__(self, r: dict[str, Any], g: Graph) -> bool:
        api, kind, _ = _api(r)
        return (r["type"].startswith("kubernetes:") and api.split("/", 1)[0] in self.groups
                and (not self.kinds or kind in self.kinds))


@dataclass(frozen=True)
class Workloads:
    """Objects that create pods; with `injected`, only those in (or releases into) a
    namespace labelled istio-injection=enabled."""
    injected: bool = False
    triton_only: bool = False

    def __call__(self, r: dict[str, Any], g: Graph) -> bool:
        if r["type"] == HELM_RELEASE:
            return self.injected and not self.triton_only and g.injected((r.get("inputs") or {}).get("namespace"))
        api, kind, ns = _api(r)
        if kind not in WORKLOAD_KINDS.get(api, ()) or not r["type"].startswith("kubernetes:"):
            return False
        if self.triton_only and not runs_tritonserver(_pod(r)):
            return False
        return g.injected(ns) if self.injected else True


@dataclass(frozen=True)
class OfDeclaredGroups:
    """Custom resources, and releases of charts rendering them, of a group whose CRDs the plan declares."""

    def __call__(self, r: dict[str, Any], g: Graph) -> bool:
        return any(group in g.crd_groups for group, _ in custom_kinds(r))


@dataclass(frozen=True)
class AnyOf:
    selectors: tuple[Selector, ...]

    def __call__(self, r: dict[str, Any], g: Graph) -> bool:
        return any(s(r, g) for s in self.selectors)


# --------------------------------------------------------------------------- relations


def _pod(r: dict[str, Any]) -> dict[str, Any]:
    spec = (r.get("inputs") or {}).get("spec") or {}
    if (r.get("inputs") or {}).get("kind") == "Pod":
        return spec
    if (r.get("inputs") or {}).get("kind") == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    return (spec.get("template") or {}).get("spec") or {}


def mounted_storage_and_secrets(r: dict[str, Any], g: Graph) -> Iterable[int]:
    """The claims (and the volumes bound to them) and Secrets a workload's pods use."""
    _, _, ns = _api(r)
    pod = _pod(r)
    containers = [*(pod.get("initContainers") or ()), *(pod.get("containers") or ())]
    secrets = {v["secret"].get("secretName") for v in pod.get("volumes") or () if isinstance(v.get("secret"), dict)}
    for c in containers:
        secrets |= {(e.get("secretRef") or {}).get("name") for e in c.get("envFrom") or ()}
        secrets |= {((e.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name") for e in c.get("env") or ()}
    claims = {(v.get("persistentVolumeClaim") or {}).get("claimName") for v in pod.get("volumes") or ()}
    for claim in claims - {None}:
        for i in (g.objects.get(("PersistentVolumeClaim", ns, claim)), g.volumes_by_claim.get((ns, claim))):
            if i is not None:
                yield i
    for secret in secrets - {None}:
        i = g.objects.get(("Secret", ns, secret))
        if i is not None:
            yield i


def loki_storage(r: dict[str, Any], g: Graph) -> Iterable[int]:
    """Loki's buckets (storage.bucketNames) and the Secret with their keys (extraEnvFrom)."""
    values = (r.get("inputs") or {}).get("values") or {}
    names = _path(values, "loki.storage.bucketNames") or {}
    for bucket in set(names.values()) if isinstance(names, dict) else ():
        if bucket in g.buckets:
            yield g.buckets[bucket]
    ns = (r.get("inputs") or {}).get("namespace")
    for ref in _path(values, "singleBinary.extraEnvFrom") or ():
        i = g.objects.get(("Secret", ns, (ref.get("secretRef") or {}).get("name")))
        if i is not None:
            yield i


def training_runtime(r: dict[str, Any], g: Graph) -> Iterable[int]:
    """The ClusterTrainingRuntime a TrainJob names (spec.runtimeRef), when the plan declares it."""
    ref = ((r.get("inputs") or {}).get("spec") or {}).get("runtimeRef") or {}
    if ref.get("kind", "ClusterTrainingRuntime") == "ClusterTrainingRuntime":
        i = g.objects.get(("ClusterTrainingRuntime", None, ref.get("name")))
        if i is not None:
            yield i


def custom_kinds(r: dict[str, Any]) -> Iterable[tuple[str, str]]:
    """The (group, kind) of a custom resource, or of the custom resources a chart renders."""
    if r["type"] == HELM_RELEASE:
        values = (r.get("inputs") or {}).get("values") or {}
        for group, kind, path, default in CHART_CUSTOM_KINDS.get(_chart(r) or "", ()):
            value = _path(values, path)
            if default if value is None else bool(value):
                yield group, kind
    elif r["type"].startswith("kubernetes:") and r["type"] != CRD:
        api, kind, _ = _api(r)
        if "/" in api:
            yield api.split("/", 1)[0], kind


def _labels_match(selector: dict[str, Any], labels: dict[str, Any]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def weighted_pool_rollouts(r: dict[str, Any], g: Graph) -> Iterable[int]:
    """The Deployments whose pods an HTTPRoute's InferencePool backends with weight > 0 select: the
    pool is the router release of its name in the route's namespace (llm-d-router-gateway renders
    the InferencePool under the release's name), whose `router.modelServers.matchLabels` choose
    the pool's pods (charts/router/templates/_inferencepool.yaml)."""
    _, _, ns = _api(r)
    pools = {ref.get("name") for rule in ((r.get("inputs") or {}).get("spec") or {}).get("rules") or ()
             for ref in rule.get("backendRefs") or ()
             if ref.get("kind") == "InferencePool" and ref.get("weight", 1) > 0}
    for release in g.resources:
        inputs = release.get("inputs") or {}
        if _chart(release) != "llm-d-router-gateway" or inputs.get("namespace") != ns or inputs.get("name") not in pools:
            continue
        selector = _path(inputs.get("values") or {}, "router.modelServers.matchLabels") or {}
        for i, d in enumerate(g.resources):
            api, kind, d_ns = _api(d)
            labels = ((((d.get("inputs") or {}).get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels")
            if (api, kind) == ("apps/v1", "Deployment") and d_ns == ns and selector and _labels_match(selector, labels or {}):
                yield i


def declared_crds(r: dict[str, Any], g: Graph) -> Iterable[int]:
    """The CRDs in the plan that define a custom resource's kind (or the kinds its chart renders)."""
    for key in custom_kinds(r):
        if key in g.crds:
            yield g.crds[key]


def undeclared_crds(r: dict[str, Any], g: Graph) -> Iterable[str]:
    """The kinds of groups whose CRDs the plan declares that have no CRD in it."""
    for group, kind in custom_kinds(r):
        if (group, kind) not in g.crds and group in g.crd_groups:
            yield f"{kind} ({group})"


# --------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class Rule:
    """Every resource `dependents` selects comes after every resource `after` selects, or
    after the resources `related` names for it; `unmet` names what it needs that the plan lacks."""

    name: str
    dependents: Selector
    reason: str
    after: Optional[Selector] = None
    related: Optional[Relation] = None
    unmet: Optional[Callable[[dict[str, Any], Graph], Iterable[str]]] = None


ORDERING_RULES: tuple[Rule, ...] = (
    Rule("sidecar-injection",
         dependents=AnyOf((Workloads(injected=True), Charts(("gateway",)))),
         after=Charts(("istiod",)),
         reason="pods created before istiod's injector webhook run without a sidecar: "
                "no mTLS, AuthorizationPolicy or metrics"),
    Rule("monitoring-crds",
         dependents=AnyOf((CustomResources(("monitoring.coreos.com",), ("ServiceMonitor", "PodMonitor", "PrometheusRule")),
                           ChartValues(MONITOR_VALUES))),
         after=Charts(("kube-prometheus-stack",)),
         reason="kube-prometheus-stack installs the monitoring CRDs: a monitor created, or looked for by an "
                "operator, before them is rejected or skipped"),
    Rule("istio-crds",
         dependents=AnyOf((CustomResources(ISTIO_GROUPS), Charts(("istiod", "gateway")))),
         after=Charts(("base",)),
         reason="Istio's CRDs come with its base chart"),
    Rule("nfd-crds",
         dependents=CustomResources(("nfd.k8s-sigs.io",), ("NodeFeatureRule",)),
         after=Charts(("gpu-operator",)),
         reason="the GPU operator's chart installs Node Feature Discovery and its CRDs: a NodeFeatureRule "
                "created before them is rejected"),
    Rule("argo-crds",
         dependents=CustomResources(("argoproj.io",)),
         after=Charts(("argo-workflows",)),
         reason="the argo-workflows chart installs Argo's CRDs: a WorkflowTemplate created before them is rejected"),
    Rule("trainer-crds",
         dependents=CustomResources(("trainer.kubeflow.org",)),
         after=Charts(("kubeflow-trainer",)),
         reason="the kubeflow-trainer chart installs Trainer's CRDs and the webhooks that admit runtimes and "
                "TrainJobs: one created before them is rejected"),
    Rule("kueue-crds",
         dependents=CustomResources(("kueue.x-k8s.io",)),
         after=Charts(("kueue",)),
         reason="the kueue chart installs Kueue's CRDs and the webhooks that admit its objects: a queue or flavor "
                "created before them is rejected"),
    Rule("trainjob-after-its-runtime",
         dependents=CustomResources(("trainer.kubeflow.org",), ("TrainJob",)),
         related=training_runtime,
         reason="Trainer's webhook refuses a TrainJob whose runtime does not exist yet (kubeflow/trainer v2.3.0 "
                "pkg/webhooks/trainjob_webhook.go ValidateCreate), and so does Kueue's (\"unsupported runtime\"): "
                "a job created before its runtime, or moved to a new runtime variant, fails the up"),
    Rule("kueue-after-trainer",
         dependents=Charts(("kueue",)),
         after=Charts(("kubeflow-trainer",)),
         reason="Kueue sets up its TrainJob integration when it starts and finds Trainer's CRDs; started before "
                "them it waits for the API, and meanwhile its webhook refuses every TrainJob (kueue v0.19.2 "
                "pkg/controller/jobframework/setup.go)"),
    Rule("declared-crds",
         dependents=OfDeclaredGroups(),
         related=declared_crds,
         unmet=undeclared_crds,
         reason="the API server rejects an object whose CRD is not yet established (no matches for kind), "
                "and a chart rendering one fails its install: e.g. a Gateway, HTTPRoute or InferencePool "
                "before the Gateway API and InferencePool CRDs"),
    Rule("route-after-weighted-rollouts",
         dependents=CustomResources(("gateway.networking.k8s.io",), ("HTTPRoute",)),
         related=weighted_pool_rollouts,
         reason="an endpoint picker whose pool has no Ready pod answers 503 (llm-d-router v0.10.0 "
                "pkg/epp/requestcontrol/director.go; its pod reconciler admits Ready pods only): a route that "
                "gives a version weight before its Deployment's rollout fails that share for the whole cold start"),
    Rule("aggregated-apis-go-first",
         dependents=Charts(AGGREGATED_API_CHARTS),
         after=lambda r, g: r["type"] == NAMESPACE,
         reason="a namespace's deletion waits while any aggregated API (its chart's APIService) does not answer "
                "(NamespaceDeletionDiscoveryFailure): the release must go before every namespace on destroy"),
    Rule("node-groups-before-triton",
         dependents=Workloads(triton_only=True),
         after=lambda r, g: r["type"] == MAGNUM_NODE_GROUP,
         reason="a Triton replica's wait counts from its Deployment's creation: created while its node group is "
                "still being made, the group's creation eats the cold-start budget the wait was derived from"),
    Rule("gpu-operator-before-triton",
         dependents=Workloads(triton_only=True),
         after=Charts(("gpu-operator",)),
         reason="a Triton replica's cold start (driver install, device plugin) begins once the GPU operator runs, "
                "and its rollout's wait counts from there"),
    Rule("storage-and-secrets-before-workloads",
         dependents=Workloads(),
         related=mounted_storage_and_secrets,
         reason="pods start with the claims (and their volumes) and Secrets they use, e.g. Triton's weight cache"),
    Rule("loki-storage",
         dependents=Charts(("loki",)),
         related=loki_storage,
         reason="Loki writes to its bucket, with the keys in its Secret, from its first start"),
)


def violations(resources: list[dict[str, Any]], rules: Iterable[Rule] = ORDERING_RULES) -> list[str]:
    """One sentence per (dependent, required resource) pair that no dependency path connects."""
    g = Graph(resources)
    needed_by: dict[int, list[tuple[int, Rule]]] = defaultdict(list)
    problems = []
    for rule in rules:
        dependents = [i for i, r in enumerate(resources) if rule.dependents(r, g)]
        if not dependents:
            continue
        if rule.unmet is not None:
            problems.extend(f"{label(resources[d])} needs the CRD of {what} ({rule.name}: {rule.reason}), but the plan "
                            f"declares other CRDs of its group and not this one"
                            for d in dependents for what in rule.unmet(resources[d], g))
        if rule.related is not None:
            for d in dependents:
                for t in set(rule.related(resources[d], g)):
                    needed_by[t].append((d, rule))
        if rule.after is not None:
            for t in (i for i, r in enumerate(resources) if rule.after(r, g)):
                needed_by[t].extend((d, rule) for d in dependents if d != t)
    for t, needs in needed_by.items():
        after = g.descendants(t)
        for d, rule in needs:
            if d not in after:
                problems.append(f"{label(resources[d])} must come after {label(resources[t])} ({rule.name}: "
                                f"{rule.reason}), but no dependency leads there")
    return sorted(problems)
