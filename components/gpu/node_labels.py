"""The node contract applied to a group: the labels and taints its nodes carry, the
tolerations for them, and the checks that Node Feature Discovery can apply them.

Pure functions of the settings, shared by the settings checks (validation.py), GPU
workload placement (gpu_profiles.py) and the objects that put labels and taints on the
nodes (node_rules.py, gpu.py); the names themselves are in node_contract.py.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Optional

from inference_platform.core.node_contract import (
    CLUSTER_API_GPU_LABEL,
    DEVICE_PLUGIN_CONFIG_LABEL,
    GPU_MODEL_LABEL,
    GPU_TAINT,
    GROUP_LABEL,
    MAGNUM_GPU_LABEL,
    MIG_CONFIG_LABEL,
)
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.gpu import GpuOperatorSettings
from inference_platform.settings.stack import Settings


def mig_config_name(group: NodeGroup) -> str:
    """Value of the group's `nvidia.com/mig.config` label: the mig-parted config it applies."""
    profile = group.gpu.sharing.mig_profile
    return profile if isinstance(profile, str) else f"custom-{group.name}"


def device_plugin_config_name(group: NodeGroup) -> str:
    """Value of the group's `nvidia.com/device-plugin.config` label (time-slicing / MPS)."""
    s = group.gpu.sharing
    return f"{s.mode}-{s.replicas}" + ("-renamed" if s.rename_by_default else "")


def sharing_labels(group: NodeGroup) -> dict[str, str]:
    """Node labels that select the group's MIG layout or device-plugin sharing config."""
    if group.gpu is None:
        return {}
    mode = group.gpu.sharing.mode
    if mode == "mig":
        return {MIG_CONFIG_LABEL: mig_config_name(group)}
    if mode in ("time-slicing", "mps"):
        return {DEVICE_PLUGIN_CONFIG_LABEL: device_plugin_config_name(group)}
    return {}


def node_labels(group: NodeGroup, magnum_driver: Optional[str] = None) -> dict[str, str]:
    """Labels every node of the group carries; `magnum_driver` is the Magnum driver that
    labels the cluster's nodes (`MagnumCluster.node_labeller`), None on an existing cluster."""
    labels = {GROUP_LABEL: group.name, **group.labels}
    if group.gpu is not None:
        labels[GPU_MODEL_LABEL] = group.gpu.model
        labels.update(sharing_labels(group))
    if magnum_driver is not None and group.advertises_whole_gpus:
        # The autoscaler's GPU label (Heat: the Magnum provider's; Cluster API drivers: the clusterapi
        # provider's): it counts a node with it as not ready until it advertises nvidia.com/gpu, so
        # it adds no second node while the driver installs. Nodes that advertise MIG slices or
        # renamed shares never do, and would count as unready for ever: they go without it. On Heat
        # the kubelet registers it already (cluster/registration.py); the Cluster API drivers let
        # no node group label reach their nodes, so there it arrives with NFD, after Ready.
        if magnum_driver == "heat":
            labels[MAGNUM_GPU_LABEL] = "true"
        else:
            labels[CLUSTER_API_GPU_LABEL] = group.gpu.model
    return labels


def node_taints(group: NodeGroup) -> list[dict[str, str]]:
    """Taints of the group's nodes: the configured ones, plus the GPU taint on GPU groups."""
    taints = [t.model_dump() for t in group.taints]
    if group.gpu is not None and not any(t["key"] == GPU_TAINT["key"] for t in taints):
        taints.append(dict(GPU_TAINT))
    return taints


def tolerations(taints: Iterable[Mapping[str, str]]) -> list[dict[str, str]]:
    """One toleration per (key, effect) of the taints, of any value, in a stable order."""
    seen = {(t["key"], t["effect"]) for t in taints}
    return [{"key": key, "operator": "Exists", "effect": effect} for key, effect in sorted(seen)]


def group_taints(groups: Iterable[NodeGroup]) -> list[dict[str, str]]:
    """Every taint the groups' nodes carry."""
    return [t for g in groups for t in node_taints(g)]


def _nfd_key_problem(key: str) -> Optional[str]:
    # nfd-master drops labels and taints whose key has no prefix or a kubernetes.io prefix
    # (pkg/apis/nfd/validate/validate.go, NFD v0.19.0).
    prefix = key.rpartition("/")[0]
    if not prefix:
        return "has no prefix"
    if prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io"):
        return "is in a kubernetes.io namespace"
    return None


def contract_problems(settings: Settings) -> list[tuple[KeyPath, str]]:
    return node_contract_problems(settings.cluster.node_groups, settings.cluster.magnum_labeller, settings.gpu_operator)


def node_contract_problems(groups: list[NodeGroup], magnum: Optional[str],
                           gpu_operator: GpuOperatorSettings) -> list[tuple[KeyPath, str]]:
    """What keeps NFD from giving the groups' nodes their labels and taints (`magnum`: the
    Magnum driver that labels the nodes, None on an existing cluster). The stack and GpuOperator
    used alone both run it."""
    if not gpu_operator.enabled:
        needy = [g.name for g in groups if g.is_gpu or g.labels or g.taints]
        if magnum is None or not needy:
            return []
        return [(("gpuOperator", "enabled"), "false leaves the nodes of Magnum groups " + ", ".join(needy)
                 + " without their labels and taints (Node Feature Discovery, which applies them, comes with the "
                 "GPU operator); allowed: true, or no GPU groups and no node labels or taints")]
    contract = {GROUP_LABEL, GPU_MODEL_LABEL, MIG_CONFIG_LABEL, DEVICE_PLUGIN_CONFIG_LABEL, MAGNUM_GPU_LABEL,
                CLUSTER_API_GPU_LABEL}
    problems: list[tuple[KeyPath, str]] = []
    for i, g in enumerate(groups):
        base: KeyPath = ("cluster", "nodeGroups", i)
        for key in g.labels:
            problem = _nfd_key_problem(key)
            if problem:
                problem = f"{problem}, which Node Feature Discovery refuses; use your own prefix (example.com/{key.rpartition('/')[2]})"
            elif key in contract:
                problem = "is set by the platform; choose another key"
            elif key in g.selector:
                problem = "is in the group's selector, whose labels belong to whoever puts the nodes in the group"
            if problem:
                problems.append((base + ("labels", key), f"label key {key!r} {problem}"))
        seen: set[tuple[str, str]] = set()
        for ti, t in enumerate(g.taints):
            path = base + ("taints", ti)
            problem = _nfd_key_problem(t.key)
            if problem:
                problems.append((path + ("key",), f"taint key {t.key!r} {problem}, which Node Feature Discovery "
                                 f"refuses; use your own prefix (example.com/{t.key.rpartition('/')[2]})"))
            if (t.key, t.effect) in seen:
                problems.append((path, f"a second {t.key} taint with effect {t.effect}; a node holds one per key and effect"))
            seen.add((t.key, t.effect))
            if magnum is not None and t.key == GPU_TAINT["key"] and t.model_dump() != GPU_TAINT:
                problems.append((path + ("key",), "on a Magnum cluster every NVIDIA GPU node is tainted "
                                 f"{GPU_TAINT['key']}={GPU_TAINT['value']}:{GPU_TAINT['effect']}; remove this taint"))
    return problems


# magnum-capi-helm clusters run their own GPU operator and NFD: azimuth-cloud/capi-helm-charts
# cluster-addons (values.yaml nvidiaGPUOperator/nodeFeatureDiscovery, enabled by default;
# templates/nvidia-gpu-operator.yaml: release nvidia-gpu-operator in gpu-operator), and the
# driver (openstack/magnum-capi-helm 1.4.0 driver.py _update_helm_release) passes no value and
# reads no label that turns them off. The platform reuses them and adds its NodeFeatureRules;
# what needs the operator's or NFD's own values cannot be had.
CLUSTER_GPU_OPERATOR_RELEASE = "nvidia-gpu-operator"


def cluster_operator_problems(settings: Settings) -> list[tuple[KeyPath, str]]:
    return cluster_gpu_operator_problems(settings.cluster.node_groups, settings.cluster.magnum_labeller, settings.gpu_operator)


def cluster_gpu_operator_problems(groups: list[NodeGroup], magnum: Optional[str],
                                  gpu_operator: GpuOperatorSettings) -> list[tuple[KeyPath, str]]:
    """What the GPU operator and NFD a magnum-capi-helm cluster runs already cannot do for the
    groups (the stack and GpuOperator used alone)."""
    if magnum != "magnum-capi-helm" or not gpu_operator.enabled:
        return []
    why = "magnum-capi-helm clusters run their own GPU operator (capi-helm-charts addon), whose values the platform cannot set"
    problems: list[tuple[KeyPath, str]] = []
    for key in ("driver", "dcgm_exporter"):
        if key in gpu_operator.model_fields_set:
            name = "dcgmExporter" if key == "dcgm_exporter" else key
            problems.append((("gpuOperator", name), f"{why}; remove the key (the chart installs the driver and the DCGM exporter)"))
    for i, g in enumerate(groups):
        base: KeyPath = ("cluster", "nodeGroups", i)
        if g.taints:
            # NFD's chart default master.enableTaints is false, and the addon does not set it.
            problems.append((base + ("taints",), "the Node Feature Discovery of a magnum-capi-helm cluster applies no taints "
                             "(enableTaints is off in its addon); remove the key"))
        if g.gpu is None:
            continue
        s, sharing = g.gpu.sharing, base + ("gpu", "sharing")
        if s.mode in ("time-slicing", "mps"):
            problems.append((sharing + ("mode",), f"{s.mode} needs a device-plugin config in the GPU operator's values; "
                             f"{why}; allowed: none or mig"))
        elif s.mode == "mig" and isinstance(s.mig_profile, dict):
            problems.append((sharing + ("migProfile",), f"a custom MIG mix needs a mig-parted config in the GPU operator's values; "
                             f"{why}; allowed: a named profile such as all-1g.10gb"))
        elif s.mode == "mig" and s.effective_mig_strategy != "single":
            problems.append((sharing + ("migStrategy",), f"the cluster's GPU operator runs MIG strategy single; {why}; allowed: single"))
    return problems
