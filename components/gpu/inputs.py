"""What GpuOperator and ColdStart take: their settings and the names they consume."""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from inference_platform.gpu.node_labels import cluster_gpu_operator_problems, node_contract_problems
from inference_platform.gpu.profiles import driver_branch_problems
from inference_platform.settings.base import Labels, Model
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.gpu import ColdStartSettings, GpuOperatorSettings
from inference_platform.settings.serving import Service
from inference_platform.timing.estimates import GroupEstimate


class GpuOperatorInputs(Model):
    """The NVIDIA GPU operator, its MIG and sharing configs, and the GPU node contract on the node groups."""

    gpu_operator: GpuOperatorSettings = GpuOperatorSettings()
    """Driver mode and DCGM exporter (the stack file's `gpuOperator`)."""
    node_groups: list[NodeGroup] = Field(min_length=1)
    """The cluster's node groups: GPU groups get the node contract, every group's taints are tolerated by the operator's node agents."""
    magnum_labeller: Optional[str] = None
    """The Magnum driver that labels the nodes (`magnum-cluster-api`, `magnum-capi-helm`, `heat`); unset on an existing cluster."""
    cold_start: list[GroupEstimate] = []
    """Per GPU group, the cold-start estimate: how long a joining GPU node takes before the operator's pods run on it (the Helm wait allows for it)."""
    system_node_selector: Labels = {}
    """Node labels the GPU operator's own Deployment and Node Feature Discovery's master and garbage collector (not the node agents, which run on GPU nodes) select, so that they stay off GPU nodes: the platform's system group (on Magnum the cluster's first, CPU group). Empty: any node that admits them."""

    @property
    def gpu_groups(self) -> list[NodeGroup]:
        return [g for g in self.node_groups if g.is_gpu]

    def problems(self) -> list[tuple[KeyPath, str]]:
        """The stack file's checks of the driver and the node contract, for the component used alone."""
        groups = [(("node_groups", *path[2:]) if path[:2] == ("cluster", "nodeGroups") else path, why)
                  for path, why in node_contract_problems(self.node_groups, self.magnum_labeller, self.gpu_operator)
                  + cluster_gpu_operator_problems(self.node_groups, self.magnum_labeller, self.gpu_operator)]
        return driver_branch_problems(self.gpu_operator) + groups


class ColdStartInputs(Model):
    """Spare GPU capacity (placeholder pods) and image pre-pull on the GPU node groups."""

    cold_start: ColdStartSettings = ColdStartSettings()
    """Spare slots per group and image pre-pull (the stack file's `coldStart`)."""
    gpu_groups: list[NodeGroup] = []
    """The GPU node groups."""
    services: list[Service] = []
    """The services placed on those groups: their images are pre-pulled, and a spare slot is sized like the first version on its group."""
    pull_after_driver: bool = False
    """Pre-pull only on nodes whose GPU driver works: nodes GPU feature discovery has labelled, which a GPU operator (the platform's or the Magnum driver's) runs once the driver and toolkit are ready. Off: on every node of the group at once, which on a new node delays the driver's images behind the Triton images (the kubelet pulls one image at a time); leave it off where no GPU operator labels the nodes."""

    def problems(self) -> list[tuple[KeyPath, str]]:
        """Spare slots only on the given GPU groups (the stack file's check), for the component used alone."""
        names = sorted(g.name for g in self.gpu_groups)
        return [(("cold_start", "spareSlots", group), f"no GPU node group named {group!r}; GPU groups: {', '.join(names) or 'none'}")
                for group in self.cold_start.spare_slots if group not in names]
