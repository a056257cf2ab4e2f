"""Fast scale-out on GPU groups: spare capacity held by low-priority placeholder pods,
and Triton images pre-pulled on GPU nodes while the GPU operator installs drivers.

A new Triton replica preempts a placeholder and starts at once; the evicted
placeholder turns pending, and the cluster autoscaler adds a node for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from . import endpoints as ep
from . import hardening, versions
from .cluster import ClusterHandle
from .common import COMPONENT_KEY, SKIP_AWAIT, deny_all_traffic_spec, namespace, resource_opts, standard_labels
from .config import NodeGroup, Settings
from .gpu_profiles import gpu_scheduling, placeholder_request

NAMESPACE = ep.COLDSTART_NAMESPACE
PRIORITY_CLASS = "gpu-placeholder"
# Below every default (0), so any real pod preempts a placeholder.
PLACEHOLDER_PRIORITY = -10
# Pause runs as this non-root user in its image; the pull init containers reuse it.
NON_ROOT_UID = 65535
TINY = {"cpu": "10m", "memory": "16Mi"}
# Shared by every pod of the namespace's workloads; the NetworkPolicy selects it.
COMPONENT = "gpu-coldstart"
COMPONENT_LABEL = {COMPONENT_KEY: COMPONENT}

RESTRICTED_POD = {"runAsNonRoot": True, "runAsUser": NON_ROOT_UID, "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                        "readOnlyRootFilesystem": True}


def group_images(settings: Settings, group: NodeGroup) -> list[str]:
    """Distinct Triton images the services place on a group, in configuration order."""
    images = [v.image for svc in settings.services for v in svc.versions if v.gpu.group == group.name]
    return list(dict.fromkeys(images))


def _first_version(settings: Settings, group: NodeGroup):
    return next((v for svc in settings.services for v in svc.versions if v.gpu.group == group.name), None)


def _pod_template(labels: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
    # The component label stays out of the selector: adding it replaces no Deployment.
    return {"metadata": {"labels": {**labels, **COMPONENT_LABEL}},
            "spec": {"securityContext": RESTRICTED_POD, **spec}}


def network_policy_spec() -> dict[str, Any]:
    """Placeholders and pre-pull pods run pause (the kubelet, not the pod, pulls images):
    they need no traffic in or out, so none is allowed."""
    return deny_all_traffic_spec(COMPONENT)


def placeholder_pod(settings: Settings, group: NodeGroup) -> dict[str, Any]:
    """Pod spec of one spare slot: a real replica's GPU request and placement, and its
    CPU and memory, so preempting it frees room for exactly such a replica."""
    sched = placeholder_request(settings, group)
    first = _first_version(settings, group)
    requests = {"cpu": first.resources.cpu, "memory": first.resources.memory} if first else dict(TINY)
    # Limits equal to the requests: pause uses almost nothing, and limits never change
    # where the slot schedules or what a preempting replica finds free.
    limits = {**requests, **sched.resources["limits"]}
    return {
        "priorityClassName": PRIORITY_CLASS,
        "terminationGracePeriodSeconds": 0,
        "nodeSelector": sched.node_selector,
        "tolerations": sched.tolerations,
        "automountServiceAccountToken": False,
        "containers": [{
            "name": "pause",
            "image": versions.PAUSE_IMAGE,
            "resources": {"requests": {**requests, **sched.resources["requests"]}, "limits": limits},
            "securityContext": RESTRICTED_CONTAINER,
        }],
    }


def prepull_pod(settings: Settings, group: NodeGroup) -> dict[str, Any]:
    """Pod spec that pulls each Triton image of the group (as init containers that exit
    at once) and then idles; it asks for no GPU, so it runs while drivers install."""
    sched = gpu_scheduling(group)
    small = {"requests": TINY, "limits": TINY}
    pulls = [
        {"name": f"pull-{i}", "image": image, "imagePullPolicy": "IfNotPresent", "command": ["sh", "-c", "exit 0"],
         "resources": small, "securityContext": RESTRICTED_CONTAINER}
        for i, image in enumerate(group_images(settings, group))
    ]
    return {
        "nodeSelector": sched.node_selector,
        "tolerations": sched.tolerations,
        "automountServiceAccountToken": False,
        "initContainers": pulls,
        "containers": [{"name": "pause", "image": versions.PAUSE_IMAGE, "resources": small,
                        "securityContext": RESTRICTED_CONTAINER}],
    }


class ColdStart(pulumi.ComponentResource):
    """Placeholder Deployments and pre-pull DaemonSets on the GPU groups."""

    def __init__(self, name: str, settings: Settings, cluster: ClusterHandle,
                 opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("inference-platform:coldstart:ColdStart", name, None, opts)
        cs = settings.cold_start
        k8s_opts = resource_opts(self, provider=cluster.provider)
        self.namespace = namespace(
            f"{name}-namespace", NAMESPACE, k8s_opts, app="gpu-coldstart", pod_security="restricted"
        )
        in_namespace = resource_opts(self, provider=cluster.provider, depends_on=[self.namespace])
        self.priority_class = k8s.scheduling.v1.PriorityClass(
            f"{name}-priority",
            metadata={"name": PRIORITY_CLASS, "labels": standard_labels(PRIORITY_CLASS)},
            value=PLACEHOLDER_PRIORITY,
            global_default=False,
            # Placeholders wait for room; they never evict anything themselves.
            preemption_policy="Never",
            description="Spare GPU capacity: placeholder pods that any real workload preempts.",
            opts=k8s_opts,
        )
        self.network_policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-networkpolicy",
            metadata={"name": "gpu-coldstart-deny-all", "namespace": NAMESPACE, "labels": standard_labels("gpu-coldstart")},
            spec=network_policy_spec(),
            opts=in_namespace,
        )
        self.placeholders: dict[str, k8s.apps.v1.Deployment] = {}
        self.prepulls: dict[str, k8s.apps.v1.DaemonSet] = {}
        for group in settings.gpu_groups:
            spare = cs.spare_slots.get(group.name, 0)
            if spare > 0:
                labels = standard_labels(f"placeholder-{group.name}")
                self.placeholders[group.name] = k8s.apps.v1.Deployment(
                    f"{name}-placeholder-{group.name}",
                    # Placeholders evicted by real replicas stay Pending until a node arrives:
                    # never ready by design, so `pulumi up` must not wait for them.
                    metadata={"namespace": NAMESPACE, "labels": labels,
                              "annotations": {**SKIP_AWAIT, **hardening.skip_annotations(hardening.PLACEHOLDER)}},
                    spec={"replicas": spare, "selector": {"matchLabels": labels},
                          "template": _pod_template(labels, placeholder_pod(settings, group))},
                    opts=resource_opts(self, provider=cluster.provider,
                                       depends_on=[self.namespace, self.priority_class]),
                )
            if cs.image_pre_pull and group_images(settings, group):
                labels = standard_labels(f"prepull-{group.name}")
                self.prepulls[group.name] = k8s.apps.v1.DaemonSet(
                    f"{name}-prepull-{group.name}",
                    # Ready only once every GPU node, booting ones included, has pulled every
                    # image, one node at a time on update: nothing to wait for.
                    metadata={"namespace": NAMESPACE, "labels": labels,
                              "annotations": {**SKIP_AWAIT, **hardening.skip_annotations(hardening.PREPULL)}},
                    spec={"selector": {"matchLabels": labels},
                          "template": _pod_template(labels, prepull_pod(settings, group))},
                    opts=in_namespace,
                )
        self.register_outputs({
            "placeholders": {g: d.metadata["name"] for g, d in self.placeholders.items()},
            "prepulls": {g: d.metadata["name"] for g, d in self.prepulls.items()},
        })


# --------------------------------------------------------------------------- estimate

@dataclass(frozen=True)
class Stage:
    name: str
    seconds: int
    note: str = ""
    """Why the stage is removed, overlapped or longer than configured."""


@dataclass(frozen=True)
class GroupEstimate:
    group: str
    spare_slots: int
    new_node: list[Stage]
    """Stages when the replica needs a new node (no spare slot left)."""
    spare: list[Stage]
    """Stages when the replica preempts a placeholder."""

    @property
    def without_spare_seconds(self) -> int:
        return sum(s.seconds for s in self.new_node)

    @property
    def with_spare_seconds(self) -> int:
        return sum(s.seconds for s in self.spare)


def _driver_stage(settings: Settings) -> Stage:
    seconds = settings.cold_start.stage_seconds.driver_install
    mode = settings.gpu_operator.driver.mode
    if mode == "preinstalled":
        return Stage("driver install", 0, "removed: driver in the node image")
    if mode == "compiled":
        extra = settings.cold_start.stage_seconds.driver_compile
        return Stage("driver install", seconds + extra,
                     f"compiled on the node: +{extra}s (stageSeconds.driverCompile); precompiled drivers remove it")
    return Stage("driver install", seconds, "precompiled driver")


def cold_start_estimate(settings: Settings) -> list[GroupEstimate]:
    """Per GPU group, the stages a new Triton replica passes, from configured stage times."""
    st = settings.cold_start.stage_seconds
    pre_pull = settings.cold_start.image_pre_pull
    out = []
    for group in settings.gpu_groups:
        versions_here = [v for svc in settings.services for v in svc.versions if v.gpu.group == group.name]
        load = max((v.model_load_seconds for v in versions_here), default=st.model_load)
        # Triton copies an s3:// model repository to local disk before it loads (the csi-s3
        # mount is for other readers; Triton keeps its s3:// URL); from the file share it
        # reads in place, so that stage is part of the model load.
        if any(v.model_repository.cache == "s3" for v in versions_here):
            weights = Stage("weight fetch", st.weight_fetch, "Triton downloads the S3 model repository before loading")
        else:
            weights = Stage("weight fetch", 0, "removed: weights read in place from the file share")
        model = Stage("model load", load)
        driver = _driver_stage(settings)
        if pre_pull:
            pull = Stage("image pull", max(0, st.image_pull - driver.seconds),
                         f"{st.image_pull}s, overlapped with driver install by pre-pull")
        else:
            pull = Stage("image pull", st.image_pull)
        new_node = [Stage("node boot", st.node_boot), driver, pull, weights, model]
        spare = [
            Stage("preempt spare", 0, "placeholder evicted at once"),
            Stage("node boot", 0, "removed: spare node is up"),
            Stage("driver install", 0, "removed: spare node is ready"),
            Stage("image pull", 0, "removed: pre-pulled on the node") if pre_pull else Stage("image pull", st.image_pull),
            weights,
            model,
        ]
        out.append(GroupEstimate(group.name, settings.cold_start.spare_slots.get(group.name, 0), new_node, spare))
    return out


def format_estimate(estimates: list[GroupEstimate]) -> str:
    lines = ["Cold start of a new replica per GPU group (estimate from configured stage times, not a measurement):"]
    for e in estimates:
        lines.append(f"  {e.group}:")
        for title, stages, total in (("new node", e.new_node, e.without_spare_seconds),
                                     ("spare slot", e.spare, e.with_spare_seconds)):
            parts = ", ".join(f"{s.name} {s.seconds}s" + (f" ({s.note})" if s.note else "") for s in stages)
            lines.append(f"    {title}: {total}s = {parts}")
        held = f"{e.spare_slots} spare slot(s) held" if e.spare_slots else "no spare slots held: every scale-out takes the new-node path"
        lines.append(f"    {held}")
    return "\n".join(lines)
