"""GPU resource names per sharing mode, the MIG catalogue, the scheduling pieces of a
GPU workload, and the GPU checks of a stack's settings (run by validation.parse_settings).

MIG profiles, their maximum count per GPU and the `all-<profile>` names follow the
GPU operator's default mig-parted config (assets/state-mig-manager/0400_configmap.yaml,
gpu-operator v26.7.0) and NVIDIA's MIG user guide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

from inference_platform.core import versions
from inference_platform.gpu.node_labels import node_taints
from inference_platform.settings.cluster import ClusterSettings, NodeGroup
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.gpu import GpuOperatorSettings
from inference_platform.settings.serving import GpuRequest, Resources, Service, Version
from inference_platform.settings.stack import Settings

WHOLE_GPU = "nvidia.com/gpu"
SHARED_GPU = "nvidia.com/gpu.shared"


# --------------------------------------------------------------------------- MIG catalogue


@dataclass(frozen=True)
class MigProfile:
    compute: int
    """Compute slices (the `<n>g` of the name)."""
    memory: int
    """Memory slices."""
    max_count: int
    """Most instances of this profile on one GPU."""


@dataclass(frozen=True)
class MigGpu:
    compute: int
    """Compute slices of one GPU."""
    memory: int
    """Memory slices of one GPU."""
    profiles: dict[str, MigProfile]


def _gpu(compute: int, memory: int, profiles: dict[str, tuple[int, int]]) -> MigGpu:
    # profiles: name -> (memory slices, max count); compute slices are the name's "<n>g".
    return MigGpu(compute, memory, {p: MigProfile(int(p.split("g.")[0]), m, n) for p, (m, n) in profiles.items()})


# 7 compute and 8 memory slices per GPU, except the A30 (4 and 4).
_A100_80_LAYOUT = {
    "1g.10gb": (1, 7), "1g.10gb+me": (1, 1), "1g.20gb": (2, 4), "2g.20gb": (2, 3),
    "3g.40gb": (4, 2), "4g.40gb": (4, 1), "7g.80gb": (8, 1),
}
MIG_CATALOGUE: dict[str, MigGpu] = {
    "A100-40GB": _gpu(7, 8, {
        "1g.5gb": (1, 7), "1g.5gb+me": (1, 1), "1g.10gb": (2, 4), "2g.10gb": (2, 3),
        "3g.20gb": (4, 2), "4g.20gb": (4, 1), "7g.40gb": (8, 1),
    }),
    "A100-80GB": _gpu(7, 8, _A100_80_LAYOUT),
    "H100-80GB": _gpu(7, 8, _A100_80_LAYOUT),
    # H100 NVL, 94 GB.
    "H100-94GB": _gpu(7, 8, {
        "1g.12gb": (1, 7), "1g.12gb+me": (1, 1), "1g.24gb": (2, 4), "2g.24gb": (2, 3),
        "3g.47gb": (4, 2), "4g.47gb": (4, 1), "7g.94gb": (8, 1),
    }),
    "H200-141GB": _gpu(7, 8, {
        "1g.18gb": (1, 7), "1g.18gb+me": (1, 1), "1g.35gb": (2, 4), "2g.35gb": (2, 3),
        "3g.71gb": (4, 2), "4g.71gb": (4, 1), "7g.141gb": (8, 1),
    }),
    "A30-24GB": _gpu(4, 4, {
        "1g.6gb": (1, 4), "1g.6gb+me": (1, 1), "2g.12gb": (2, 2), "2g.12gb+me": (2, 1), "4g.24gb": (4, 1),
    }),
}


def mig_gpu(model: str) -> MigGpu:
    if model not in MIG_CATALOGUE:
        raise ValueError(
            f"no confirmed MIG profiles for {model}; MIG is supported here on {', '.join(sorted(MIG_CATALOGUE))}"
        )
    return MIG_CATALOGUE[model]


def named_profiles(model: str) -> dict[str, dict[str, int]]:
    """`all-<profile>` -> the mix it stands for (label values cannot hold "+", so `+me` is `.me`)."""
    return {f"all-{p.replace('+', '.')}": {p: prof.max_count} for p, prof in mig_gpu(model).profiles.items()}


def mix_problems(model: str, mix: dict[str, int]) -> list[str]:
    """Why a per-GPU MIG mix cannot be laid out on one `model` GPU (empty when it fits).

    Counts compute and memory slices; mig-parted still applies the hardware's
    placement rules, which this counting check approximates from above."""
    gpu = mig_gpu(model)
    known = ", ".join(f"{p} (max {v.max_count})" for p, v in gpu.profiles.items())
    if not mix or any(n < 1 for n in mix.values()):
        return [f"a MIG mix needs at least one profile with a count of 1 or more; {model} profiles: {known}"]
    problems = []
    for p, n in mix.items():
        if p not in gpu.profiles:
            problems.append(f"{model} has no MIG profile {p!r}; profiles: {known}")
        elif n > gpu.profiles[p].max_count:
            problems.append(f"{n} x {p} exceeds the {gpu.profiles[p].max_count} that fit on one {model}")
    if problems:
        return problems
    compute = sum(gpu.profiles[p].compute * n for p, n in mix.items())
    memory = sum(gpu.profiles[p].memory * n for p, n in mix.items())
    if compute > gpu.compute or memory > gpu.memory:
        return [
            f"the mix uses {compute} of {gpu.compute} compute slices and {memory} of {gpu.memory} memory slices "
            f"of one {model}; sizes (compute/memory slices): "
            + ", ".join(f"{p} {v.compute}/{v.memory}" for p, v in gpu.profiles.items())
        ]
    return []


def mig_mix(group: NodeGroup) -> dict[str, int]:
    """The MIG instances on each GPU of a MIG group."""
    profile = group.gpu.sharing.mig_profile
    if isinstance(profile, dict):
        return dict(profile)
    return named_profiles(group.gpu.model)[profile]


# --------------------------------------------------------------------------- scheduling


def resource_name(group: NodeGroup, mig_profile: Optional[str] = None) -> str:
    """The extended resource a workload requests on the group's nodes."""
    if group.advertises_whole_gpus:
        return WHOLE_GPU
    if group.gpu.sharing.mode == "mig":
        # MIG strategy mixed; the device plugin spells "+" (e.g. 1g.10gb+me) as "." in resource names.
        return f"nvidia.com/mig-{mig_profile}".replace("+", ".")
    return SHARED_GPU  # time-slicing or MPS with renameByDefault


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
    # Tolerate every taint of the group (the GPU taint and any configured ones).
    tolerations = [{"key": t["key"], "operator": "Equal", "value": t["value"], "effect": t["effect"]} for t in node_taints(group)]
    return GpuScheduling(
        node_selector=dict(group.selector),
        tolerations=tolerations,
        resource_name=resource_name(group, mig_profile),
        quantity=count,
    )


def container_resources(r: Resources, gpu_request: GpuRequest, group: NodeGroup) -> dict:
    """A GPU container's CPU, memory and GPU share on `group` (a Triton server, a Ray step's
    worker): requests, and limits where set."""
    gpu = gpu_scheduling(group, gpu_request.count, gpu_request.mig_profile).resources
    limits = {"memory": r.memory_limit or r.memory, **gpu["limits"]}
    if r.cpu_limit:
        limits["cpu"] = r.cpu_limit
    return {"requests": {"cpu": r.cpu, "memory": r.memory, **gpu["requests"]}, "limits": limits}


# --------------------------------------------------------------------------- capacity


def slots_per_node(group: NodeGroup) -> dict[str, int]:
    """Schedulable units of each GPU resource one node of the group offers."""
    s, per_node = group.gpu.sharing, group.gpu.per_node
    if s.mode == "mig":
        mix = mig_mix(group)
        if s.effective_mig_strategy == "mixed":
            return {resource_name(group, p): n * per_node for p, n in mix.items()}
        return {WHOLE_GPU: sum(mix.values()) * per_node}
    if s.mode in ("time-slicing", "mps"):
        return {resource_name(group): s.replicas * per_node}
    return {WHOLE_GPU: per_node}


def replica_bounds(settings: Settings, service_index: int, version: Version) -> tuple[int, int]:
    """(fewest, most) replicas of a version."""
    auto = version.autoscaling or settings.services[service_index].autoscaling
    if auto.enabled:
        return auto.min_replicas, auto.max_replicas
    return version.replicas, version.replicas


def gpu_requests(settings: Settings) -> Iterator[tuple[KeyPath, GpuRequest]]:
    """Every GPU request of the stack with its key path: service versions and graph steps."""
    for si, svc in enumerate(settings.services):
        for vi, v in enumerate(svc.versions):
            yield ("services", si, "versions", vi), v.gpu
    for gi, g in enumerate(settings.graphs):
        for st, step in enumerate(g.steps):
            yield ("graphs", gi, "steps", st), step.gpu


def gpu_consumers(settings: Settings) -> Iterator[tuple[GpuRequest, int, int]]:
    """(request, fewest, most) replicas holding each GPU request at once.

    An ensemble graph is one Triton server (its steps share the first step's request). A
    graph on Ray runs one worker per Serve replica of a step, within the step's range as the
    stack file has it now (serving/graphs.py worker_bounds), and switches to a whole new
    RayCluster on every change of its cluster spec (upgradeStrategy NewCluster): while the new
    cluster starts at its minimum the old one still serves, so a step holds its minimum twice,
    and up to max + min at most."""
    groups = {g.name: g for g in settings.gpu_groups}
    for si, svc in enumerate(settings.services):
        for v in svc.versions:
            yield (v.gpu, *replica_bounds(settings, si, v))
            # A tuning run (tuning/runs.py), and a pipeline run's engine build then its analysis, on
            # the base version: each holds one share, and its required anti-affinity to the service
            # keeps the service's replicas off its whole node (the other slices or time-slicing
            # replicas of that node serve other services at most), so it is counted as the node.
            runs = (v.tuning is not None) + (svc.pipeline is not None and v.name == svc.pipeline.base_version)
            if runs:
                yield v.gpu, 0, runs * run_hold(groups.get(v.gpu.group), v.gpu)
    for g in settings.graphs:
        if g.placement == "ensemble":
            first = g.steps[0]
            yield first.gpu, first.replicas.min, first.replicas.max
            continue
        for step in g.steps:
            yield step.gpu, 2 * step.replicas.min, step.replicas.max + step.replicas.min


def run_hold(group: Optional[NodeGroup], gpu: GpuRequest) -> int:
    """Requests of `gpu`'s size one node of `group` offers: what a tuning run takes from its service."""
    if group is None or group.gpu is None:
        return 1
    units = slots_per_node(group).get(gpu_scheduling(group, gpu.count, gpu.mig_profile).resource_name, 0)
    return max(1, units // gpu.count)


@dataclass(frozen=True)
class GroupDemand:
    group: NodeGroup
    resource: str
    at_min: int
    """Units needed with every version at its fewest replicas, plus spare slots."""
    at_max: int
    """Units needed with every version at its most replicas."""
    capacity: int
    """Units the group offers at maxNodes."""


def group_demands(settings: Settings) -> list[GroupDemand]:
    """Per GPU group and resource, the units services need against what maxNodes offers."""
    demands = []
    for group in settings.gpu_groups:
        per_node = slots_per_node(group)
        need_min: dict[str, int] = {}
        need_max: dict[str, int] = {}
        for gpu, low, high in gpu_consumers(settings):
            if gpu.group != group.name:
                continue
            res = gpu_scheduling(group, gpu.count, gpu.mig_profile).resource_name
            need_min[res] = need_min.get(res, 0) + low * gpu.count
            need_max[res] = need_max.get(res, 0) + high * gpu.count
        spare = settings.cold_start.spare_slots.get(group.name, 0)
        if spare:
            res = placeholder_request(settings.services, group).resource_name
            need_min[res] = need_min.get(res, 0) + spare
        for res in sorted(set(need_min) | set(need_max)):
            demands.append(GroupDemand(group, res, need_min.get(res, 0), need_max.get(res, 0),
                                       per_node.get(res, 0) * group.max_nodes))
    return demands


def placeholder_request(services: Sequence[Service], group: NodeGroup) -> GpuScheduling:
    """One spare slot: a unit of the resource the group's first version uses (else of its first slice)."""
    for svc in services:
        for v in svc.versions:
            if v.gpu.group == group.name:
                return gpu_scheduling(group, 1, v.gpu.mig_profile)
    s = group.gpu.sharing
    first = next(iter(mig_mix(group))) if s.mode == "mig" and s.effective_mig_strategy == "mixed" else None
    return gpu_scheduling(group, 1, first)


def capacity_warnings(settings: Settings) -> list[str]:
    """Groups whose maxNodes cannot hold every version at its most replicas."""
    out = []
    for d in group_demands(settings):
        if d.at_max > d.capacity:
            out.append(
                f"GPU group {d.group.name}: services need {d.at_max} x {d.resource} at max replicas, "
                f"but {d.group.max_nodes} nodes offer {d.capacity}; scale-out stops at {d.capacity}"
            )
    return out


# --------------------------------------------------------------------------- checks


def _group_path(i: int, *rest: str) -> KeyPath:
    return ("cluster", "nodeGroups", i, *rest)


def _mig_problems(i: int, group: NodeGroup) -> list[tuple[KeyPath, str]]:
    path = _group_path(i, "gpu", "sharing", "migProfile")
    model = group.gpu.model
    try:
        mig_gpu(model)
    except ValueError as err:
        return [(_group_path(i, "gpu", "model"), f"group {group.name!r}: {err}")]
    profile = group.gpu.sharing.mig_profile
    if isinstance(profile, str):
        names = named_profiles(model)
        if profile not in names:
            return [(path, f"group {group.name!r}: {model} has no MIG config {profile!r}; named configs: {', '.join(names)}")]
        return []
    problems = [(path, f"group {group.name!r}: {msg}") for msg in mix_problems(model, profile)]
    if not problems and group.gpu.sharing.effective_mig_strategy == "single" and len(profile) > 1:
        problems.append((path, f"group {group.name!r}: MIG strategy 'single' advertises every slice as {WHOLE_GPU}, "
                               f"so all slices must be one profile; use migStrategy: mixed for {', '.join(profile)}"))
    return problems


def default_worker_group_problems(cluster: ClusterSettings) -> list[tuple[KeyPath, str]]:
    """The default worker group runs the platform's own pods and never shrinks below one node
    (the stack and Cluster used alone)."""
    first = cluster.node_groups[0]
    if cluster.mode != "magnum" or not first.is_gpu:
        return []
    return [(_group_path(0, "gpu"), f"group {first.name!r} is the Magnum cluster's default worker group, "
             "which runs the platform's own pods and keeps at least one node; list a CPU group first")]


def driver_branch_problems(gpu_operator: GpuOperatorSettings) -> list[tuple[KeyPath, str]]:
    """Compiled drivers build the pinned driver only (the stack and GpuOperator used alone)."""
    driver = gpu_operator.driver
    if driver.mode != "compiled" or versions.GPU_DRIVER_VERSION.split(".")[0] == driver.branch:
        return []
    return [(("gpuOperator", "driver", "branch"), f"compiled drivers build the pinned driver "
             f"{versions.GPU_DRIVER_VERSION}; set branch {versions.GPU_DRIVER_VERSION.split('.')[0]}, "
             "or use mode precompiled for another branch")]


def check_gpu_settings(settings: Settings) -> list[tuple[KeyPath, str]]:
    """GPU checks: MIG layouts fit the GPU, versions ask for slices their group has,
    one MIG strategy per cluster, and minimum replicas fit the groups."""
    groups = settings.cluster.node_groups
    problems = default_worker_group_problems(settings.cluster) + driver_branch_problems(settings.gpu_operator)
    strategies: dict[str, str] = {}
    for i, g in enumerate(groups):
        if g.gpu is None or g.gpu.sharing.mode != "mig":
            continue
        problems += _mig_problems(i, g)
        strategies.setdefault(g.gpu.sharing.effective_mig_strategy, g.name)
    if len(strategies) > 1:
        problems.append((("cluster", "nodeGroups"), "the GPU operator applies one MIG strategy to the whole cluster; "
                         f"groups {' and '.join(repr(n) for n in strategies.values())} differ: use the same migStrategy"))
    if problems:
        return problems

    by_name = {g.name: g for g in groups}
    for path, gpu in gpu_requests(settings):
        group = by_name.get(gpu.group)
        if group is None or group.gpu is None:
            continue  # cross_checks reports it
        vpath: KeyPath = path + ("gpu",)
        s = group.gpu.sharing
        if s.mode == "mig" and gpu.mig_profile is not None and gpu.mig_profile not in mig_mix(group):
            problems.append((vpath + ("migProfile",), f"group {group.name!r} has no {gpu.mig_profile} slices; "
                             f"its MIG mix per GPU: {', '.join(f'{n} x {p}' for p, n in mig_mix(group).items())}"))
        if s.mode == "mps" and gpu.count > 1:
            problems.append((vpath + ("count",), f"group {group.name!r} shares GPUs with MPS, where a pod may ask "
                             "for one share only; use count: 1"))
            continue
        if problems:
            continue
        # A pod's GPU units come from one node: more than a node offers never schedules.
        resource = gpu_scheduling(group, gpu.count, gpu.mig_profile).resource_name
        per_node = slots_per_node(group).get(resource, 0)
        if gpu.count > per_node:
            problems.append((vpath + ("count",), f"a replica asks for {gpu.count} x {resource}, but one node of "
                             f"group {group.name!r} offers {per_node}; allowed: count 1-{per_node}"))
    if problems:
        return problems

    index = {g.name: i for i, g in enumerate(groups)}
    for d in group_demands(settings):
        if d.at_min <= d.capacity:
            continue
        per_node = d.capacity // d.group.max_nodes
        fits = f"; maxNodes {math.ceil(d.at_min / per_node)} would hold them" if per_node else ""
        problems.append((_group_path(index[d.group.name], "maxNodes"),
                         f"group {d.group.name!r}: minimum replicas and spare slots need {d.at_min} x {d.resource}, "
                         f"but maxNodes {d.group.max_nodes} offers {d.capacity}{fits}"))
    return problems
