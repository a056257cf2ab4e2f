"""Kueue on the GPU groups: the controller from the pinned chart, a ResourceFlavor per GPU group that
places pods exactly as serving's are placed (the node contract), one cohort holding serving's
reservation, a ClusterQueue per team and, as the cohort's own quota, the unguaranteed rest; a
LocalQueue per team namespace, the workload priorities, the training pods' PriorityClass below
serving, and a Topology when the stack declares topology levels.

Objects and fields are Kueue 0.19.2's, API kueue.x-k8s.io/v1beta2 (the CRDs of the vendored chart,
../shared/reference/crds/kueue-0.19.2-*); the quotas are the serving-first proof's (capacity.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.core import endpoints as ep
from inference_platform.core import versions
from inference_platform.core.common import aggregation_stopped, helm_release, namespace, resource_opts, standard_labels, with_node_selector
from inference_platform.gpu.profiles import gpu_scheduling, resource_name
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.training import TrainingSettings
from inference_platform.settings.training_teams import TrainingTeam
from inference_platform.training.capacity import GroupProof

API_VERSION = "kueue.x-k8s.io/v1beta2"
RELEASE = "kueue"
# One cohort: serving's reservation and every team's queue share the GPU groups.
COHORT = "gpu"
SERVING_QUEUE = "serving-reservation"
TEAM_QUEUE_PREFIX = "training-"
TOPOLOGY = "gpu-topology"
# What Kueue manages: TrainJobs and the JobSets Trainer makes of them (the names their integrations
# register, kueue v0.19.2 pkg/controller/jobs/trainjob/trainjob_controller.go FrameworkName and
# pkg/controller/jobs/jobset/jobset_controller.go). The chart's default list also holds pod,
# deployment, statefulset and the Ray kinds: left out, so no serving workload can ever be queued.
# The chart's aggregated ClusterRoles (kueue 0.19.2 templates/rbac/batch_{admin,user}_role.yaml, rendered
# whatever the values), which gather the chart's own editor and viewer roles: core/common.aggregation_stopped.
AGGREGATED_ROLES = (f"{RELEASE}-batch-admin-role", f"{RELEASE}-batch-user-role")
INTEGRATIONS = ("trainer.kubeflow.org/trainjob", "jobset.x-k8s.io/jobset")
# Training pods' PriorityClass: below serving's pods (no class, priority 0), which preempt them; at
# or above the cluster autoscaler's expendable cutoff (-10), so a pending job still adds a node;
# below tuning runs (gpu/coldstart.py, -5), which serve the serving side. They preempt nothing.
TRAINING_PRIORITY_CLASS = "gpu-training"
TRAINING_PRIORITY = -8
# Kueue's order and preemption among training jobs (label kueue.x-k8s.io/priority-class on a job).
WORKLOAD_PRIORITIES = {"training": 100, "training-urgent": 1000}


# Kueue 0.19.2 turns waitForPodsReady on whatever the configuration says (apis/config/v1beta2/defaults.go
# SetDefaults_Configuration; only the DisableWaitForPodsReady gate turns it off); written out, with its
# defaults, so what it does is seen here. An admitted job whose pods are not all ready within `timeout`,
# or not ready again within `recoveryTimeout` after one failed (a JobSet restarting after a preemption,
# its pods waiting for a GPU node), is evicted: its pods deleted, its quota free for others, and
# requeued after a backoff of about 60 s x 2^(n-1), at most an hour. No backoffLimitCount: it is
# requeued for ever, never deactivated.
WAIT_FOR_PODS_READY = {
    "timeout": "30m", "recoveryTimeout": "30m", "blockAdmission": False,
    "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 60, "backoffMaxSeconds": 3600},
}


def manager_config() -> dict[str, Any]:
    """Kueue's Configuration: the chart's default (kueue 0.19.2 values.yaml
    managerConfig.controllerManagerConfigYaml), with the training integrations only and quota on
    the resources the queues declare (resources.quotaCheckStrategy IgnoreUndeclared, beta and on by
    default in 0.19, pkg/features/kube_features.go QuotaCheckStrategy): GPUs are the quota, CPU and
    memory are the nodes' business."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        # The ClusterQueues' usage and quotas as metrics, for the training dashboard's borrowed panel
        # (cmd/kueue/main.go WithResourceMetrics(cfg.Metrics.EnableClusterQueueResources)).
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {"groupKindConcurrency": {
            "Job.batch": 5, "Pod": 5, "Workload.kueue.x-k8s.io": 10, "LocalQueue.kueue.x-k8s.io": 5,
            "ClusterQueue.kueue.x-k8s.io": 5, "ResourceFlavor.kueue.x-k8s.io": 1}},
        "clientConnection": {"qps": 300, "burst": 500},
        "integrations": {"frameworks": list(INTEGRATIONS)},
        "resources": {"quotaCheckStrategy": "IgnoreUndeclared"},
        "waitForPodsReady": WAIT_FOR_PODS_READY,
    }


def kueue_values(system_node_selector: dict[str, str]) -> dict[str, Any]:
    """The chart's values: our configuration (the chart reads it with fromYaml, so JSON will do,
    templates/manager/manager-config.yaml) and the controller on the system group."""
    values: dict[str, Any] = {
        "managerConfig": {"controllerManagerConfigYaml": json.dumps(manager_config(), indent=2)},
        # The chart's ServiceMonitor (templates/prometheus/monitor.yaml): the training dashboard and alerts.
        "enablePrometheus": True,
        "metrics": {"prometheusNamespace": ep.MONITORING_NAMESPACE},
    }
    return with_node_selector(values, system_node_selector, "controllerManager.nodeSelector")


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:8]


def topology_name(levels: Sequence[str]) -> str:
    """The Topology's name, which changes with its levels: Kueue refuses any change of them
    (levels: `self == oldSelf`), so new levels are a new Topology, made before the old one goes."""
    return f"{TOPOLOGY}-{_digest(list(levels))}"


def flavor_spec(group: NodeGroup, levels: Sequence[str]) -> dict[str, Any]:
    """What Kueue puts on an admitted pod for this group (pkg/podset/podset.go: nodeLabels become its
    nodeSelector, tolerations are added): the same selector and tolerations as every GPU pod of the
    platform (gpu/profiles.py gpu_scheduling: the group's selector, its taints and the GPU taint)."""
    sched = gpu_scheduling(group)
    spec: dict[str, Any] = {"nodeLabels": dict(sched.node_selector), "tolerations": sched.tolerations}
    if levels:
        spec["topologyName"] = topology_name(levels)
    return spec


def flavor_name(group: NodeGroup, levels: Sequence[str]) -> str:
    """The group's name; with a topology, also a digest of the spec: Kueue refuses changes of
    nodeLabels, tolerations and topologyName once topologyName is set (the CRD's rules), so a changed
    flavor is a new one, which the queues move to before the old one goes (its finalizer holds it
    while a queue names it)."""
    return f"{group.name}-{_digest(flavor_spec(group, levels))}" if levels else group.name


Quota = Callable[[Optional[GroupProof]], dict[str, int]]


def resource_groups(proofs: Sequence[GroupProof], flavors: dict[str, str], quota: Quota) -> list[dict[str, Any]]:
    """A queue's resourceGroups: Kueue wants every resource in one group only and every flavor of a
    group to list the group's resources in order (pkg/webhooks/clusterqueue_webhook.go
    validateResourceGroups), so flavors sharing any resource go together, each listing all of the
    group's resources (`quota(None)` where its nodes have none)."""
    offered: dict[str, list[str]] = {}
    for p in proofs:
        offered.setdefault(p.group, []).append(p.resource)
    clusters: list[tuple[list[str], list[str]]] = []  # (groups, resources)
    for group, resources in offered.items():
        joined = [c for c in clusters if set(c[1]) & set(resources)]
        merged = ([g for c in joined for g in c[0]] + [group],
                  list(dict.fromkeys([r for c in joined for r in c[1]] + resources)))
        clusters = [c for c in clusters if c not in joined] + [merged]
    by_key = {(p.group, p.resource): p for p in proofs}
    return [{"coveredResources": resources,
             "flavors": [{"name": flavors[g], "resources": [{"name": r, **quota(by_key.get((g, r)))} for r in resources]}
                         for g in groups]}
            for groups, resources in clusters]


def serving_quota(p: Optional[GroupProof]) -> dict[str, int]:
    """Serving's peak, held: lent to nobody, and nothing admitted into it (stopPolicy Hold)."""
    return {"nominalQuota": min(p.peak, p.capacity) if p else 0, "borrowingLimit": 0, "lendingLimit": 0}


def team_quota(team: TrainingTeam, groups: dict[str, NodeGroup]) -> Quota:
    """A team's guarantee, what it may borrow (default: all training may use beyond it) and what of
    it it lends (default: all, reclaimed by preemption)."""
    def quota(p: Optional[GroupProof]) -> dict[str, int]:
        if p is None:
            return {"nominalQuota": 0, "borrowingLimit": 0, "lendingLimit": 0}
        own = dict(p.guaranteed).get(team.name, 0)
        q = next((q for q in team.quotas
                  if q.group == p.group and resource_name(groups[q.group], q.mig_profile) == p.resource), None)
        borrow = q.borrowing_limit if q is not None and q.borrowing_limit is not None else max(p.capacity - p.peak - own, 0)
        lend = q.lending_limit if q is not None and q.lending_limit is not None else own
        return {"nominalQuota": own, "borrowingLimit": borrow, "lendingLimit": lend}
    return quota


def cohort_quota(p: Optional[GroupProof]) -> dict[str, int]:
    """The unguaranteed rest, which any team may borrow (a cohort without a parent takes no limits:
    clusterqueue_webhook.go validateLimit)."""
    return {"nominalQuota": max(p.rest, 0) if p else 0}


def team_queue_spec(team: TrainingTeam, proofs: Sequence[GroupProof], flavors: dict[str, str],
                    groups: dict[str, NodeGroup]) -> dict[str, Any]:
    """The team's ClusterQueue: its namespace only (a queue selects no namespace by default), in the cohort."""
    return {
        "cohortName": COHORT,
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team.namespace}},
        "resourceGroups": resource_groups(proofs, flavors, team_quota(team, groups)),
        "preemption": {"withinClusterQueue": team.preemption.within_cluster_queue,
                       "reclaimWithinCohort": team.preemption.reclaim_within_cohort,
                       "borrowWithinCohort": {"policy": "Never"}},
    }


def serving_queue_spec(proofs: Sequence[GroupProof], flavors: dict[str, str]) -> dict[str, Any]:
    """Serving's reservation in the cohort: serving's pods are no Kueue workloads, so the queue only
    keeps its quota out of what training can borrow, and shows it beside the teams' (no namespace, held)."""
    return {"cohortName": COHORT, "stopPolicy": "Hold", "resourceGroups": resource_groups(proofs, flavors, serving_quota)}


class ObjectWithFields(k8s.apiextensions.CustomResource):
    """A custom resource whose fields sit beside its metadata, not under `spec` (a WorkloadPriorityClass's
    `value` and `description`): the Python SDK's CustomResource takes `spec` only
    (pulumi/pulumi-kubernetes#2363), while the provider applies whatever object the inputs make."""

    def __init__(self, resource_name: str, api_version: str, kind: str, metadata: dict, fields: dict,
                 opts: pulumi.ResourceOptions):
        # What CustomResource._internal_init registers, plus the fields (pulumi_kubernetes 4.x).
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(version=k8s._utilities.get_version()))
        props = {"apiVersion": api_version, "kind": kind, "metadata": metadata, **fields}
        pulumi.CustomResource.__init__(self, f"kubernetes:{api_version}:{kind}", resource_name, props, opts)


@dataclass
class KueueResources:
    """What the training side hands on: the release (CRDs, webhooks) and the team namespaces and queues."""

    release: k8s.helm.v3.Release
    namespaces: dict[str, k8s.core.v1.Namespace] = field(default_factory=dict)
    """Team name -> its namespace."""
    local_queues: dict[str, k8s.apiextensions.CustomResource] = field(default_factory=dict)
    """Team name -> its LocalQueue (named as the team)."""
    objects: list[pulumi.Resource] = field(default_factory=list)
    priority_class: Optional[pulumi.Resource] = None
    """The PriorityClass of the training pods, which must exist before any of them."""


def kueue_resources(parent: pulumi.Resource, settings: TrainingSettings, proofs: Sequence[GroupProof],
                    gpu_groups: Sequence[NodeGroup], team_namespaces: Mapping[str, pulumi.Resource], *, name: str,
                    system_node_selector: dict[str, str],
                    provider: Optional[pulumi.ProviderResource] = None,
                    depends_on: Sequence[pulumi.Resource] = ()) -> KueueResources:
    """Kueue and the training queues of `settings`, children of `parent`, with the quotas of `proofs`
    (capacity.group_proofs of the same stack); each team's LocalQueue in its namespace of
    `team_namespaces` (namespace name -> the Namespace, created with the teams' weight caches)."""
    opts = resource_opts(parent, provider=provider)
    ns = namespace(f"{name}-kueue-namespace", ep.KUEUE_NAMESPACE, opts, app="kueue", pod_security="restricted")
    release = helm_release(f"{name}-kueue", RELEASE, versions.KUEUE, ep.KUEUE_NAMESPACE,
                           kueue_values(system_node_selector),
                           resource_opts(parent, provider=provider, depends_on=[ns, *depends_on]))
    out = KueueResources(release)

    def custom(role: str, kind: str, metadata: dict, spec: Optional[dict] = None, fields: Optional[dict] = None,
               depends_on: Sequence[pulumi.Resource] = ()) -> k8s.apiextensions.CustomResource:
        # Every Kueue object after the release: its chart installs the CRDs and the webhooks that admit them.
        meta = {**metadata, "labels": standard_labels(metadata["name"])}
        child = resource_opts(parent, provider=provider, depends_on=[release, *depends_on])
        resource = (ObjectWithFields(f"{name}-{role}", API_VERSION, kind, meta, fields, child) if fields is not None
                    else k8s.apiextensions.CustomResource(f"{name}-{role}", api_version=API_VERSION, kind=kind,
                                                          metadata=meta, spec=spec, opts=child))
        out.objects.append(resource)
        return resource

    levels = list(settings.topology_levels)
    if levels:
        custom("topology", "Topology", {"name": topology_name(levels)}, {"levels": [{"nodeLabel": lv} for lv in levels]})
    used = {p.group for p in proofs}
    flavors = {g.name: flavor_name(g, levels) for g in gpu_groups if g.name in used}
    flavor_objects = [custom(f"flavor-{g.name}", "ResourceFlavor", {"name": flavors[g.name]}, flavor_spec(g, levels),
                             depends_on=out.objects[:1] if levels else ())
                      for g in gpu_groups if g.name in used]
    custom("cohort", "Cohort", {"name": COHORT}, {"resourceGroups": resource_groups(proofs, flavors, cohort_quota)},
           depends_on=flavor_objects)
    custom("serving-queue", "ClusterQueue", {"name": SERVING_QUEUE}, serving_queue_spec(proofs, flavors),
           depends_on=flavor_objects)
    for priority, value in WORKLOAD_PRIORITIES.items():
        custom(f"priority-{priority}", "WorkloadPriorityClass", {"name": priority},
               fields={"value": value, "description": f"Training jobs labelled kueue.x-k8s.io/priority-class: {priority}."})
    out.priority_class = k8s.scheduling.v1.PriorityClass(
        f"{name}-training-priority", metadata={"name": TRAINING_PRIORITY_CLASS, "labels": standard_labels(TRAINING_PRIORITY_CLASS)},
        value=TRAINING_PRIORITY, global_default=False, preemption_policy="Never",
        description="Training pods: below serving, which preempts them; they preempt nothing.", opts=opts)
    for team in settings.teams:
        queue = custom(f"queue-{team.name}", "ClusterQueue", {"name": TEAM_QUEUE_PREFIX + team.name},
                       team_queue_spec(team, proofs, flavors, {g.name: g for g in gpu_groups}),
                       depends_on=flavor_objects)
        team_ns = team_namespaces[team.namespace]
        out.namespaces[team.name] = team_ns
        out.local_queues[team.name] = custom(
            f"localqueue-{team.name}", "LocalQueue", {"name": team.name, "namespace": team.namespace},
            {"clusterQueue": TEAM_QUEUE_PREFIX + team.name}, depends_on=[team_ns, queue])
    out.objects += aggregation_stopped(parent, release, AGGREGATED_ROLES, name=name, provider=provider)
    return out
