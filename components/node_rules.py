"""The GPU node contract: the labels and taints every node of a node group carries."""

from __future__ import annotations

from typing import Iterable, Mapping, Optional

from .config import NodeGroup
from .node_contract import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    GPU_MODEL_LABEL,
    GPU_TAINT,
    GROUP_LABEL,
    MAGNUM_GPU_LABEL,
    MIG_CONFIG_LABEL,
)

# --------------------------------------------------------------------------- the contract


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
    if magnum_driver == "heat" and group.advertises_whole_gpus:
        # Our cluster-autoscaler (Magnum provider, Heat clusters) counts a node with this label
        # as not ready until it advertises nvidia.com/gpu, so it adds no second node while the
        # driver installs. Nodes that advertise MIG slices or renamed shares never do, and would
        # count as unready for ever: they go without it.
        labels[MAGNUM_GPU_LABEL] = "true"
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
