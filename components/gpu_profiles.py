"""GPU resource names per sharing mode, and the scheduling pieces of a GPU workload."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .cluster import GROUP_LABEL, GPU_TAINT
from .config import NodeGroup

WHOLE_GPU = "nvidia.com/gpu"
SHARED_GPU = "nvidia.com/gpu.shared"


def resource_name(group: NodeGroup, mig_profile: Optional[str] = None) -> str:
    """The extended resource a workload requests on the group's nodes."""
    sharing = group.gpu.sharing
    if sharing.mode == "mig" and sharing.effective_mig_strategy == "mixed":
        return f"nvidia.com/mig-{mig_profile}"
    if sharing.mode in ("time-slicing", "mps") and sharing.rename_by_default:
        return SHARED_GPU
    return WHOLE_GPU


@dataclass(frozen=True)
class GpuScheduling:
    """What a pod spec needs to run on a GPU group."""

    node_selector: dict[str, str]
    tolerations: list[dict[str, str]]
    resource_name: str
    quantity: int

    @property
    def resources(self) -> dict[str, dict[str, str]]:
        """GPU requests equal limits, as Kubernetes requires for extended resources."""
        q = str(self.quantity)
        return {"requests": {self.resource_name: q}, "limits": {self.resource_name: q}}


def gpu_scheduling(group: NodeGroup, count: int = 1, mig_profile: Optional[str] = None) -> GpuScheduling:
    """Scheduling pieces for a workload on `group`; every GPU workload uses this."""
    if group.gpu is None:
        raise ValueError(f"node group {group.name!r} has no GPUs")
    return GpuScheduling(
        node_selector={GROUP_LABEL: group.name},
        tolerations=[{"key": GPU_TAINT["key"], "operator": "Equal", "value": GPU_TAINT["value"], "effect": GPU_TAINT["effect"]}],
        resource_name=resource_name(group, mig_profile),
        quantity=count,
    )
