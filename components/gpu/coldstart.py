"""Fast scale-out on GPU groups: spare capacity held by low-priority placeholder pods,
and Triton images pre-pulled on GPU nodes once their driver works, ahead of any replica.

A new Triton replica preempts a placeholder and starts at once; the evicted
placeholder turns pending, and the cluster autoscaler adds a node for it.
"""


from typing import Any, Optional, Sequence

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.args import ColdStartArgs
from inference_platform.core import endpoints as ep
from inference_platform.core import hardening, versions
from inference_platform.core.common import (
    COMPONENT_KEY,
    SKIP_AWAIT,
    deny_all_traffic_spec,
    init_component,
    namespace,
    resource_opts,
    standard_labels,
)
from inference_platform.gpu.inputs import ColdStartInputs
from inference_platform.gpu.profiles import gpu_scheduling, placeholder_request
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.component_args import validated
from inference_platform.settings.serving import Service

NAMESPACE = ep.COLDSTART_NAMESPACE
PRIORITY_CLASS = "gpu-placeholder"
# Below every default (0), so any real pod preempts a placeholder.
PLACEHOLDER_PRIORITY = -10
# Tuning runs and the pipeline's GPU steps (tuning/) wait at this class, also made here:
TUNING_PRIORITY_CLASS = "gpu-tuning"
# below serving (0), above the spare-capacity placeholders (-10) and at the cluster
# autoscaler's expendable cutoff (-10) or above, so a pending run still makes it add a node.
TUNING_PRIORITY = -5
# Pause runs as this non-root user in its image; the pull init containers reuse it.
NON_ROOT_UID = 65535
TINY = {"cpu": "10m", "memory": "16Mi"}
# Shared by every pod of the namespace's workloads; the NetworkPolicy selects it.
COMPONENT = "gpu-coldstart"
COMPONENT_LABEL = {COMPONENT_KEY: COMPONENT}

RESTRICTED_POD = {"runAsNonRoot": True, "runAsUser": NON_ROOT_UID, "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                        "readOnlyRootFilesystem": True}


def group_images(services: Sequence[Service], group: NodeGroup) -> list[str]:
    """Distinct Triton images the services place on a group, in configuration order."""
    images = [v.image for svc in services for v in svc.versions if v.gpu.group == group.name]
    return list(dict.fromkeys(images))


def _first_version(services: Sequence[Service], group: NodeGroup):
    return next((v for svc in services for v in svc.versions if v.gpu.group == group.name), None)


def _pod_template(labels: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
    # The component label stays out of the selector: adding it replaces no Deployment.
    return {"metadata": {"labels": {**labels, **COMPONENT_LABEL}},
            "spec": {"securityContext": RESTRICTED_POD, **spec}}


def network_policy_spec() -> dict[str, Any]:
    """Placeholders and pre-pull pods run pause (the kubelet, not the pod, pulls images):
    they need no traffic in or out, so none is allowed."""
    return deny_all_traffic_spec(COMPONENT)


def placeholder_pod(services: Sequence[Service], group: NodeGroup) -> dict[str, Any]:
    """Pod spec of one spare slot: a real replica's GPU request and placement, and its
    CPU and memory, so preempting it frees room for exactly such a replica."""
    sched = placeholder_request(services, group)
    first = _first_version(services, group)
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


# Set by GPU feature discovery from NVML (NVIDIA/k8s-device-plugin v0.20.0 internal/lm/nvml.go:134,
# the GPU operator v26.7.0's gfd image), whose pod waits for the toolkit, itself after the driver
# (gpu-operator assets/gpu-feature-discovery/0500_daemonset.yaml toolkit-validation): present only on a
# node whose driver works. The operator's nvidia.com/gpu.present and gpu.deploy.* labels come before the
# driver (controllers/state_manager.go gpuStateLabels), so they would not hold the pull back.
DRIVER_READY_LABEL = "nvidia.com/cuda.driver-version.major"


def prepull_pod(services: Sequence[Service], group: NodeGroup, after_driver: bool = False) -> dict[str, Any]:
    """Pod spec that pulls each Triton image of the group (as init containers that exit
    at once) and then idles; it asks for no GPU. `after_driver`: only on nodes whose driver works,
    so on a new node the driver's images are pulled first (the kubelet pulls one at a time)."""
    sched = gpu_scheduling(group)
    small = {"requests": TINY, "limits": TINY}
    pulls = [
        {"name": f"pull-{i}", "image": image, "imagePullPolicy": "IfNotPresent", "command": ["sh", "-c", "exit 0"],
         "resources": small, "securityContext": RESTRICTED_CONTAINER}
        for i, image in enumerate(group_images(services, group))
    ]
    driver_ready = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": DRIVER_READY_LABEL, "operator": "Exists"}]}]}}}} if after_driver else {}
    return {
        "nodeSelector": sched.node_selector,
        **driver_ready,
        "tolerations": sched.tolerations,
        "automountServiceAccountToken": False,
        "initContainers": pulls,
        "containers": [{"name": "pause", "image": versions.PAUSE_IMAGE, "resources": small,
                        "securityContext": RESTRICTED_CONTAINER}],
    }


class ColdStart(pulumi.ComponentResource):
    """Placeholder Deployments and pre-pull DaemonSets on the GPU groups."""

    def __init__(self, name: str, args: ColdStartArgs, opts: Optional[pulumi.ResourceOptions] = None):
        a = validated(ColdStartInputs, args, "ColdStart")
        init_component(self, "ColdStart", name, opts)
        cs, services = a.cold_start, a.services
        k8s_opts = resource_opts(self)
        self.namespace = namespace(
            f"{name}-namespace", NAMESPACE, k8s_opts, app="gpu-coldstart", pod_security="restricted"
        )
        in_namespace = resource_opts(self, depends_on=[self.namespace])
        def waiting_class(role: str, class_name: str, value: int, description: str) -> k8s.scheduling.v1.PriorityClass:
            # Pods of these classes wait for room below serving; they never evict anything themselves.
            return k8s.scheduling.v1.PriorityClass(
                f"{name}-{role}", metadata={"name": class_name, "labels": standard_labels(class_name)},
                value=value, global_default=False, preemption_policy="Never", description=description, opts=k8s_opts)

        self.priority_class = waiting_class("priority", PRIORITY_CLASS, PLACEHOLDER_PRIORITY,
                                            "Spare GPU capacity: placeholder pods that any real workload preempts.")
        # Tuning runs (tuning.py) and the GPU steps of model pipelines (pipeline.py): above the
        # placeholders, which they do not preempt either.
        tuned = any(v.tuning is not None for svc in services for v in svc.versions) or any(
            svc.pipeline is not None for svc in services)
        self.tuning_priority_class = waiting_class(
            "tuning-priority", TUNING_PRIORITY_CLASS, TUNING_PRIORITY,
            "Model Analyzer runs: below serving, which preempts them; they preempt nothing.") if tuned else None
        self.network_policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-networkpolicy",
            metadata={"name": "gpu-coldstart-deny-all", "namespace": NAMESPACE, "labels": standard_labels("gpu-coldstart")},
            spec=network_policy_spec(),
            opts=in_namespace,
        )
        self.placeholders: dict[str, k8s.apps.v1.Deployment] = {}
        self.prepulls: dict[str, k8s.apps.v1.DaemonSet] = {}
        for group in a.gpu_groups:
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
                          "template": _pod_template(labels, placeholder_pod(services, group))},
                    opts=resource_opts(self, depends_on=[self.namespace, self.priority_class]),
                )
            if cs.image_pre_pull and group_images(services, group):
                labels = standard_labels(f"prepull-{group.name}")
                self.prepulls[group.name] = k8s.apps.v1.DaemonSet(
                    f"{name}-prepull-{group.name}",
                    # Ready only once every GPU node, booting ones included, has pulled every
                    # image, one node at a time on update: nothing to wait for.
                    metadata={"namespace": NAMESPACE, "labels": labels,
                              "annotations": {**SKIP_AWAIT, **hardening.skip_annotations(hardening.PREPULL)}},
                    spec={"selector": {"matchLabels": labels},
                          "template": _pod_template(labels, prepull_pod(services, group, a.pull_after_driver))},
                    opts=in_namespace,
                )
        self.register_outputs({
            "placeholders": {g: d.metadata["name"] for g, d in self.placeholders.items()},
            "prepulls": {g: d.metadata["name"] for g, d in self.prepulls.items()},
        })
