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
from typing import Optional

from inference_platform.gpu.profiles import group_demands, placeholder_request
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.stack import Settings
from inference_platform.timing.estimates import GPU_READY_STAGE, GroupEstimate, Stage, stack_estimates


def start_nodes(settings: Settings, group: NodeGroup) -> tuple[int, str]:
    """Nodes a group has when its creation completes, and why.

    Both Cluster API drivers leave an autoscaled group's MachineDeployment replicas unset
    (magnum-cluster-api 0.38.1 resources.py:749; magnum-capi-helm 1.4.0 driver.py:716-726 with the
    openstack-cluster chart's machine-deployment.yaml, which omits replicas under autoscale), and
    Cluster API defaults a new MachineDeployment's replicas to its min-size annotation
    (cluster-api v1.13.2, the version magnum-cluster-api 0.38.1 installs in devstack/plugin.sh,
    internal/webhooks/machinedeployment.go:331-382): minNodes, whatever
    initialNodes says. Heat creates the group's node_count, initialNodes."""
    labeller = settings.cluster.magnum_labeller
    if labeller in ("magnum-cluster-api", "magnum-capi-helm"):
        # The settings refuse an initialNodes above minNodes here (cluster_problems).
        return group.min_nodes, f"{labeller}: Cluster API starts an autoscaled group at minNodes"
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


def with_first_up(settings: Settings, estimate: GroupEstimate) -> GroupEstimate:
    """The estimate with the group's first `up`: a group that starts below its maxNodes may have to
    grow, and the autoscaler adds a node only after the first has booted and installed its driver.

    The group's bounds decide, not what its workloads need now: a replica that fits on the starting
    nodes today may not once a version is added, and a version added or removed must not change the
    waits (and progressDeadlineSeconds) of the others. The need is shown beside it."""
    group = next(g for g in settings.gpu_groups if g.name == estimate.group)
    have, why = start_nodes(settings, group)
    need = nodes_needed(settings, group)
    start = (f"starts with {have} node{'s' if have != 1 else ''} of at most {group.max_nodes} ({why}); "
             f"its services need {need} at their fewest replicas")
    if have >= group.max_nodes:
        return estimate.model_copy(update={"start": start})
    ready = [s for s in estimate.new_node if s.name in ("node boot", "driver install")]
    gate = Stage(name=GPU_READY_STAGE, seconds=sum(s.seconds for s in ready),
                 note=f"{' + '.join(f'{s.name} {s.seconds}s' for s in ready)}: the autoscaler adds a node to the "
                      "group only once a node of it advertises its GPUs")
    return estimate.model_copy(update={"start": start, "first_up": [gate, *estimate.new_node]})


# Every Triton Deployment's budget asks for them; a stack is one frozen Settings object.
_last: tuple[Optional[Settings], dict[str, GroupEstimate]] = (None, {})


def first_up_estimates(settings: Settings) -> dict[str, GroupEstimate]:
    """The stack's cold-start estimate per GPU group, each with its first `up`: what the platform hands
    the components, and what the plan's await check and timeline read."""
    global _last
    if _last[0] is not settings:
        _last = (settings, {e.group: with_first_up(settings, e) for e in stack_estimates(settings)})
    return _last[1]
