"""What `pulumi up` waits for, against what the cold-start model says each object may need.

The await rules are pulumi-kubernetes' own, recorded as data with the file they come from
(`provider/pkg/...` in pulumi/pulumi-kubernetes at commit 94977969, v4.32.0 plus 27
commits, the newest source available to us; the pinned SDK is 4.34.2). The budgets come
from components/timing/readiness.py. A wait shorter than its budget, a wait on pods that stay
Pending by design, an unawaited Triton rollout, or an object depending on a slow rollout
is a violation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Optional

from inference_platform.core.chart_source import chart_name_of
from inference_platform.gpu import coldstart
from inference_platform.gpu.first_up import first_up_estimates
from inference_platform.gpu.node_rules import MARKER_COMPONENT
from inference_platform.serving.openai_frontend import FRONTEND_COMMAND
from inference_platform.settings.stack import Settings
from inference_platform.timing.readiness import (
    Budget,
    gpu_node_join_budget,
    group_estimates,
    ray_upgrade_budget,
    release_budget,
    service_endpoints_budget,
    version_rollout_budget,
)

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
SOURCE_COMMIT = "pulumi/pulumi-kubernetes@94977969"

SKIP_AWAIT = "pulumi.com/skipAwait"
TIMEOUT_SECONDS = "pulumi.com/timeoutSeconds"
WAIT_FOR = "pulumi.com/waitFor"


@dataclass(frozen=True)
class AwaitRule:
    default_seconds: int
    ready_when: str
    source: str
    fixed: bool = False
    """The wait is a fixed inner watch: customTimeouts can shorten it, never lengthen it."""


# Keyed by `<apiVersion>/<kind>` as the provider's awaiters map is. Every other kind
# (custom resources included) is applied without waiting, unless pulumi.com/waitFor is set.
AWAIT_RULES: dict[str, AwaitRule] = {
    "apps/v1/Deployment": AwaitRule(
        600, "Available, and the newest ReplicaSet's replicas all ready (Progressing: NewReplicaSetAvailable)",
        "provider/pkg/await/deployment.go DefaultDeploymentTimeoutMins"),
    "apps/v1/StatefulSet": AwaitRule(
        600, "every replica ready and updated to the current revision",
        "provider/pkg/await/statefulset.go DefaultStatefulSetTimeoutMins"),
    "apps/v1/DaemonSet": AwaitRule(
        600, "kstatus Current: a pod updated and available on every node it targets",
        "provider/pkg/await/daemonset.go _defaultDaemonSetTimeout"),
    "v1/Service": AwaitRule(
        600, "LoadBalancer: an ingress IP or hostname; with a selector: Endpoints settled ~10 s with no unready address",
        "provider/pkg/await/service.go DefaultServiceTimeoutMins"),
    "batch/v1/Job": AwaitRule(
        600, "Complete (fails at once on Failed)", "provider/pkg/await/job.go DefaultJobTimeoutMins"),
    "v1/Pod": AwaitRule(600, "Ready", "provider/pkg/await/pod.go DefaultPodTimeoutMins"),
    "networking.k8s.io/v1/Ingress": AwaitRule(
        600, "an address in status.loadBalancer, and every backend Service's Endpoints",
        "provider/pkg/await/ingress.go DefaultIngressTimeoutMins"),
    "v1/PersistentVolumeClaim": AwaitRule(
        300, "Bound (Pending suffices with a WaitForFirstConsumer StorageClass; an update of a bound claim returns at once)",
        "provider/pkg/await/awaiters.go untilCoreV1PersistentVolumeClaimReady", fixed=True),
    "v1/PersistentVolume": AwaitRule(
        300, "Available or Bound", "provider/pkg/await/awaiters.go untilCoreV1PersistentVolumeInitialized", fixed=True),
    "v1/ReplicationController": AwaitRule(
        600, "availableReplicas == spec.replicas", "provider/pkg/await/awaiters.go untilCoreV1ReplicationControllerInitialized",
        fixed=True),
}
HELM_RULE = AwaitRule(
    300, "helm --wait (helm v3.20 pkg/kube/ready.go ReadyChecker.IsReady): the release's Pods ready; each"
         " Deployment's newest ReplicaSet, StatefulSets, DaemonSets, ReplicaSets and ReplicationControllers"
         " ready; PVCs Bound; Services with a cluster IP, and a LoadBalancer one with an ingress address"
         " (unless externalIPs are set); CRDs established; Jobs complete only with waitForJobs; every other"
         " kind (custom resources included) counts as ready. The `timeout` input in seconds; `skipAwait: true`"
         " turns it off; customTimeouts are not consulted",
    "provider/pkg/provider/helm_release.go defaultTimeoutSeconds, client.Wait = !SkipAwait, client.WaitForJobs;"
    " helm.sh/helm/v3 v3.20.2 in provider/go.mod of the newest pulumi-kubernetes source read")
# Precedence of a Kubernetes object's wait (metadata/overrides.go TimeoutDuration, ReadyCondition):
# pulumi.com/skipAwait "true" -> no wait; customTimeouts (create/update) -> that; else
# pulumi.com/timeoutSeconds -> that; else the kind's default (await/await.go: 10 minutes).
# pulumi.com/waitFor replaces the kind's condition, and makes any kind awaited.
OVERRIDES_SOURCE = "provider/pkg/metadata/overrides.go TimeoutDuration, ReadyCondition; provider/pkg/await/await.go"
# Kinds that wait for slow rollouts on purpose: an HTTPRoute gives a version weight only once the
# Deployment behind its InferencePool is Ready (ordering.py route-after-weighted-rollouts).
WAITS_ON_PURPOSE = ("gateway.networking.k8s.io/v1/HTTPRoute",)


# --------------------------------------------------------------------------- durations


_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_GO_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def go_duration_seconds(text: str) -> float:
    """Seconds of a Go duration string as the engine parses customTimeouts (`90s`, `1h30m`, `1.5h`)."""
    body = text.strip()
    sign = -1.0 if body.startswith("-") else 1.0
    body = body.lstrip("+-")
    if body == "0":
        return 0.0
    pos, total = 0, 0.0
    for m in _GO_PART.finditer(body):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _GO_UNITS[m.group(2)]
        pos = m.end()
    if not body or pos != len(body):
        raise ValueError(f"not a Go duration: {text!r}")
    return sign * total


# --------------------------------------------------------------------------- waits


@dataclass(frozen=True)
class Wait:
    create: Optional[float]
    """Seconds `pulumi up` waits on create; None when it does not wait."""
    update: Optional[float]
    source: str

    @property
    def awaited(self) -> bool:
        return self.create is not None or self.update is not None


def kind_key(r: dict[str, Any]) -> Optional[str]:
    inputs = r.get("inputs") or {}
    api, kind = inputs.get("apiVersion"), inputs.get("kind")
    return f"{api}/{kind}" if isinstance(api, str) and isinstance(kind, str) else None


def _annotations(r: dict[str, Any]) -> dict[str, Any]:
    return ((r.get("inputs") or {}).get("metadata") or {}).get("annotations") or {}


def effective_wait(r: dict[str, Any]) -> Optional[Wait]:
    """How long `pulumi up` waits for this resource; None for what is not a Kubernetes object."""
    if r["type"] == HELM_RELEASE:
        inputs = r.get("inputs") or {}
        # Helm turns waiting back on for an atomic release (action/install.go, upgrade.go).
        if inputs.get("skipAwait") is True and inputs.get("atomic") is not True:
            return Wait(None, None, "skipAwait input")
        timeout = inputs.get("timeout")
        if isinstance(timeout, (int, float)) and timeout > 0:
            return Wait(float(timeout), float(timeout), "timeout input")
        return Wait(float(HELM_RULE.default_seconds), float(HELM_RULE.default_seconds), "Helm default")
    key = kind_key(r)
    if key is None or not r["type"].startswith("kubernetes:"):
        return None
    notes = _annotations(r)
    if notes.get(SKIP_AWAIT) == "true":
        return Wait(None, None, SKIP_AWAIT)
    rule = AWAIT_RULES.get(key)
    if rule is None and not notes.get(WAIT_FOR):
        return Wait(None, None, "not awaited")
    default = float(rule.default_seconds if rule else 600)
    timeouts = r.get("customTimeouts") or {}
    annotated = notes.get(TIMEOUT_SECONDS)
    seconds: dict[str, float] = {}
    sources = set()
    for op in ("create", "update"):
        # A zero custom timeout counts as none (TimeoutDuration: resourceTimeoutSeconds != 0).
        custom = go_duration_seconds(timeouts[op]) if timeouts.get(op) else 0.0
        if custom > 0:
            seconds[op], source = custom, "customTimeouts"
        elif isinstance(annotated, str) and annotated.isdigit():
            seconds[op], source = float(annotated), TIMEOUT_SECONDS
        else:
            seconds[op], source = default, "default"
        if rule is not None and rule.fixed:
            seconds[op] = min(seconds[op], float(rule.default_seconds))
        sources.add(source)
    return Wait(seconds["create"], seconds["update"], "/".join(sorted(sources)))


# --------------------------------------------------------------------------- budgets


@dataclass(frozen=True)
class Expectation:
    """What the model says about one object: a budget, or Pending by design."""

    resource: dict[str, Any]
    budget: Optional[Budget]
    pending_by_design: str = ""
    """Why the object's pods never become ready by design (then it must not be awaited)."""
    readiness_matters: bool = False
    """Skipping the wait would hide a broken rollout (Triton)."""


def _pod_spec(r: dict[str, Any]) -> dict[str, Any]:
    return (((r.get("inputs") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}


def _metadata(r: dict[str, Any]) -> dict[str, Any]:
    return (r.get("inputs") or {}).get("metadata") or {}


def object_name(r: dict[str, Any]) -> str:
    name = ((r.get("outputs") or {}).get("metadata") or {}).get("name") or _metadata(r).get("name")
    return name if isinstance(name, str) else r["name"]


def label(r: dict[str, Any]) -> str:
    """`Deployment llm-chat/llm-chat-v7`, `Release monitoring/kube-prometheus-stack`."""
    if r["type"] == HELM_RELEASE:
        inputs = r.get("inputs") or {}
        return f"Release {inputs.get('namespace')}/{inputs.get('name', r['name'])}"
    kind = r["type"].rsplit(":", 1)[-1]
    ns = _metadata(r).get("namespace")
    return f"{kind} {ns + '/' if isinstance(ns, str) else ''}{object_name(r)}"


def runs_tritonserver(pod: dict[str, Any]) -> bool:
    """A pod running Triton: `tritonserver`, or Triton in-process behind the OpenAI frontend
    (serving/openai_frontend.py), which loads the same models as slowly."""
    return any((c.get("command") or [None])[0] == "tritonserver" or c.get("command") == FRONTEND_COMMAND
               for c in pod.get("containers") or [])


def expectations(resources: Iterable[dict[str, Any]], settings: Settings) -> list[Expectation]:
    """The objects the model knows about, each with its budget or why it is Pending by design."""
    versions = {(s.k8s_namespace, s.name, v.name): (s, v) for s in settings.services for v in s.versions}
    services = {(s.k8s_namespace, s.name): s for s in settings.services}
    ray_graphs = {(g.k8s_namespace, g.name): g for g in settings.graphs if g.placement == "ray"}
    out: list[Expectation] = []
    for r in resources:
        t = r["type"]
        if t == HELM_RELEASE:
            inputs = r.get("inputs") or {}
            chart = chart_name_of(inputs.get("chart", ""), str(inputs.get("version", "")))
            budget = release_budget(settings, chart, inputs.get("values") or {})
            if budget is not None:
                out.append(Expectation(r, budget))
            continue
        if not t.startswith("kubernetes:"):
            continue
        key = kind_key(r)
        meta = _metadata(r)
        ns = meta.get("namespace")
        if key in ("apps/v1/Deployment", "apps/v1/DaemonSet", "apps/v1/StatefulSet") and ns == coldstart.NAMESPACE:
            pod = _pod_spec(r)
            why = ("placeholder pods stay Pending until a node arrives"
                   if pod.get("priorityClassName") == coldstart.PRIORITY_CLASS
                   else "image pre-pull waits for every GPU node, booting ones included")
            out.append(Expectation(r, None, pending_by_design=why))
        elif key == "apps/v1/DaemonSet" and (meta.get("labels") or {}).get("app.kubernetes.io/component") == MARKER_COMPONENT:
            # A node-group marker runs on every node of its group, GPU nodes joining meanwhile included.
            budget = gpu_node_join_budget(settings)
            if budget is not None:
                out.append(Expectation(r, budget))
        elif key == "apps/v1/Deployment" and runs_tritonserver(_pod_spec(r)):
            labels = meta.get("labels") or {}
            found = versions.get((ns, labels.get("app"), labels.get("version")))
            if found is None:
                continue
            svc, version = found
            grace = int(_pod_spec(r).get("terminationGracePeriodSeconds", 30))
            estimate = first_up_estimates(settings)[version.gpu.group]
            out.append(Expectation(r, version_rollout_budget(estimate, svc, version, grace), readiness_matters=True))
        elif key == "ray.io/v1/RayService" and (ns, meta.get("name")) in ray_graphs:
            # Awaited until KubeRay has moved traffic to a new cluster: the old ConfigMap of
            # graph_app is deleted only after that (components/serving/graphs.py).
            graph = ray_graphs[(ns, meta.get("name"))]
            out.append(Expectation(r, ray_upgrade_budget(group_estimates(settings), graph), readiness_matters=True))
        elif key == "v1/Service":
            selector = ((r.get("inputs") or {}).get("spec") or {}).get("selector") or {}
            svc = services.get((ns, selector.get("app")))
            if svc is not None and set(selector) == {"app"}:
                out.append(Expectation(r, service_endpoints_budget(svc)))
    return out


# --------------------------------------------------------------------------- check


@dataclass(frozen=True)
class Row:
    expectation: Expectation
    wait: Optional[Wait]


def check(resources: list[dict[str, Any]], settings: Settings) -> tuple[list[Row], list[str]]:
    """Rows for the plan's table and violations (one sentence each)."""
    rows: list[Row] = []
    problems: list[str] = []
    slow: dict[str, Row] = {}
    for e in expectations(resources, settings):
        r = e.resource
        wait = effective_wait(r)
        rows.append(Row(e, wait))
        if e.pending_by_design:
            if wait is not None and wait.awaited:
                problems.append(f"{label(r)} is awaited ({wait.source}) but {e.pending_by_design}: "
                                f"annotate {SKIP_AWAIT}: \"true\"")
            continue
        if wait is None or not wait.awaited:
            if e.readiness_matters:
                problems.append(f"{label(r)} is not awaited ({wait.source if wait else 'no wait'}), "
                                "so a rollout that never becomes ready passes unnoticed: give it customTimeouts instead")
            continue
        b = e.budget
        for op, need, have in (("create", b.create_seconds, wait.create), ("update", b.update_seconds, wait.update)):
            if have is not None and have < need:
                problems.append(f"{label(r)} may need {need}s to become ready on {op} ({b.basis}) "
                                f"but `pulumi up` waits {have:g}s ({wait.source})")
        if r["type"] != HELM_RELEASE and b.seconds > 0:
            slow[r["urn"]] = rows[-1]
    for r in resources:
        if kind_key(r) in WAITS_ON_PURPOSE:
            continue
        for dep in r.get("dependsOn") or ():
            row = slow.get(dep)
            if row is not None:
                problems.append(f"{label(r)} depends on {label(row.expectation.resource)}, whose rollout may take "
                                f"{row.expectation.budget.seconds}s: refer to it by a stable name instead of its outputs")
    return rows, problems


def _seconds(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:g}s"


def format_rows(rows: list[Row], limit: int = 20) -> str:
    """The await budget of every slow object, slowest first; past `limit` rows, a count."""
    ordered = sorted(rows, key=lambda row: (-(row.expectation.budget.seconds if row.expectation.budget else -1),
                                            label(row.expectation.resource)))
    lines = ["Await budgets (what `pulumi up` waits for, against the cold-start model; create / update):"]
    table = []
    for row in ordered[:limit]:
        e, w = row.expectation, row.wait
        name = label(e.resource)
        if e.pending_by_design:
            table.append((name, "Pending by design", f"no wait ({w.source})" if w else "no wait", e.pending_by_design))
            continue
        budget = f"{e.budget.create_seconds}s / {e.budget.update_seconds}s"
        waits = f"{_seconds(w.create)} / {_seconds(w.update)} ({w.source})" if w and w.awaited else "no wait"
        table.append((name, budget, waits, e.budget.basis))
    widths = [max(len(row[i]) for row in table) for i in range(3)] if table else [0, 0, 0]
    for name, budget, waits, basis in table:
        lines.append(f"  {name:<{widths[0]}}  {budget:<{widths[1]}}  {waits:<{widths[2]}}  {basis}")
    if len(ordered) > limit:
        lines.append(f"  ... and {len(ordered) - limit} more with smaller budgets")
    return "\n".join(lines)


def format_program_waits(resources: list[dict[str, Any]], limit: int = 20) -> str:
    """What `pulumi up` waits for in a program that uses components alone, longest first.

    A program has no stack file, so no cold-start model to hold the waits against: the table shows
    each wait and where it comes from (customTimeouts, skipAwait, the kind's default)."""
    waits = [(label(r), w) for r in resources if (w := effective_wait(r)) is not None and w.source != "not awaited"]
    waits.sort(key=lambda item: (-(max(item[1].create or 0, item[1].update or 0)), item[0]))
    lines = ["Awaits (what `pulumi up` waits for; create / update; a program alone has no cold-start model to hold them against):"]
    width = max((len(name) for name, _ in waits[:limit]), default=0)
    for name, w in waits[:limit]:
        shown = f"{_seconds(w.create)} / {_seconds(w.update)}" if w.awaited else "no wait"
        lines.append(f"  {name:<{width}}  {shown:<15}  ({w.source})")
    if len(waits) > limit:
        lines.append(f"  ... and {len(waits) - limit} more with shorter waits")
    return "\n".join(lines)
