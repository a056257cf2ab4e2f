"""The first `up` of a GPU group: the nodes it starts with and whether the autoscaler must add more.

A group starts with the nodes its driver creates, then the cluster autoscaler adds what its services
need at their fewest replicas. It can add GPU nodes only once a node of the group advertises its GPUs:
it filters a GPU-labelled node without allocatable GPUs out of the ready nodes
(cluster-autoscaler 1.34.5 processors/customresources/gpu_processor.go:40-69, called from
core/static_autoscaler.go:1011) and builds a group's template node from ready nodes only
(static_autoscaler.go:351); the drivers' own templates carry no GPUs (the Cluster API MachineDeployment
annotations of both Cluster API drivers have no capacity.cluster-autoscaler.kubernetes.io/gpu-count;
Heat's Magnum provider builds them from the flavor). So a group that starts too small waits for its
first node's driver before a second node even boots.
"""

from __future__ import annotations

import math

from inference_platform.gpu.profiles import group_demands, placeholder_request
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.stack import Settings


def start_nodes(settings: Settings, group: NodeGroup) -> tuple[int, str]:
    """Nodes a group has when its creation completes, and why.

    Both Cluster API drivers leave an autoscaled group's MachineDeployment replicas unset
    (magnum-cluster-api 0.38.1 resources.py:749; magnum-capi-helm 1.4.0 driver.py:716-726 with the
    openstack-cluster chart's machine-deployment.yaml, which omits replicas under autoscale), and
    Cluster API defaults a new MachineDeployment's replicas to its min-size annotation
    (cluster-api v1.13.2 internal/webhooks/machinedeployment.go:331-370): minNodes, whatever
    initialNodes says. Heat creates the group's node_count, initialNodes."""
    labeller = settings.cluster.magnum_labeller
    if labeller in ("magnum-cluster-api", "magnum-capi-helm"):
        ignored = (f"; initialNodes {group.initial_nodes} is not used"
                   if group.initial_nodes is not None and group.initial_nodes != group.min_nodes else "")
        return group.min_nodes, f"{labeller}: Cluster API starts an autoscaled group at minNodes{ignored}"
    if labeller == "heat":
        return group.start_nodes, "heat: the group's node count"
    return group.min_nodes, "an existing cluster: its nodes at minNodes"


def nodes_needed(settings: Settings, group: NodeGroup) -> int:
    """Nodes that hold the group's workloads at their fewest replicas. Spare slots are left out: a
    real replica preempts a placeholder, so placeholders never hold one back."""
    spare = settings.cold_start.spare_slots.get(group.name, 0)
    spare_resource = placeholder_request(settings.workloads, group).resource_name if spare else None
    needed = 0
    for d in group_demands(settings):
        if d.group.name != group.name:
            continue
        units = d.at_min - (spare if d.resource == spare_resource else 0)
        per_node = d.capacity // d.group.max_nodes
        if units > 0 and per_node:
            needed = max(needed, math.ceil(units / per_node))
    return needed
