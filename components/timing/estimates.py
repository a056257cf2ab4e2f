"""The cold-start estimate: the stages a new Triton replica passes on each GPU group.

Plain data from configured stage times (not a measurement). The platform computes it
once per stack and hands each component the groups it needs: rollout waits, Helm
waits for DaemonSets on GPU nodes and the plan's cold-start table all read it.
"""

from __future__ import annotations

from typing import Sequence

from pydantic import Field

from inference_platform.settings.base import Model, Text
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.gpu import ColdStartSettings, GpuOperatorSettings, StageSeconds
from inference_platform.settings.serving import Service
from inference_platform.settings.stack import Settings


class Stage(Model):
    """One stage of a replica's start."""

    name: Text
    """Stage name: node boot, driver install, image pull, weight fetch, model load, preempt spare."""
    seconds: int = Field(ge=0, le=86400)
    """Seconds the stage takes."""
    note: str = ""
    """Why the stage is removed, overlapped or longer than configured."""


class GroupEstimate(Model):
    """How long a new replica takes to start on one GPU group."""

    group: Text
    """The GPU node group."""
    spare_slots: int = Field(default=0, ge=0)
    """Spare slots held on the group."""
    new_node: list[Stage]
    """Stages when the replica needs a new node (no spare slot left)."""
    spare: list[Stage]
    """Stages when the replica preempts a placeholder."""
    first_up: list[Stage] = []
    """Stages on the group's first `up` when it starts below its maxNodes: a replica may need a node the autoscaler adds only once the group's first node advertises its GPUs, and that node then passes the new-node path. Empty: the new-node path."""
    start: str = ""
    """How the group starts on its first `up`: the nodes its driver creates, against what its services need."""

    @property
    def without_spare_seconds(self) -> int:
        return sum(s.seconds for s in self.new_node)

    @property
    def with_spare_seconds(self) -> int:
        return sum(s.seconds for s in self.spare)

    @property
    def first_up_path(self) -> list[Stage]:
        return self.first_up or self.new_node

    @property
    def first_up_seconds(self) -> int:
        return sum(s.seconds for s in self.first_up_path)


def _driver_stage(stage_seconds: StageSeconds, driver_mode: str) -> Stage:
    seconds = stage_seconds.driver_install
    if driver_mode == "preinstalled":
        return Stage(name="driver install", seconds=0, note="removed: driver in the node image")
    if driver_mode == "compiled":
        extra = stage_seconds.driver_compile
        return Stage(name="driver install", seconds=seconds + extra,
                     note=f"compiled on the node: +{extra}s (stageSeconds.driverCompile); precompiled drivers remove it")
    return Stage(name="driver install", seconds=seconds, note="precompiled driver")


def cold_start_estimate(gpu_groups: Sequence[NodeGroup], services: Sequence[Service],
                        cold_start: ColdStartSettings, driver_mode: str) -> list[GroupEstimate]:
    """Per GPU group, the stages a new Triton replica passes, from configured stage times."""
    st = cold_start.stage_seconds
    pre_pull = cold_start.image_pre_pull
    out = []
    for group in gpu_groups:
        versions_here = [v for svc in services for v in svc.versions if v.gpu.group == group.name]
        load = max((v.model_load_seconds for v in versions_here), default=st.model_load)
        # Triton copies an s3:// model repository to local disk before it loads (the csi-s3
        # mount is for other readers; Triton keeps its s3:// URL); from the file share it
        # reads in place, so that stage is part of the model load.
        if any(v.model_repository.cache == "s3" for v in versions_here):
            weights = Stage(name="weight fetch", seconds=st.weight_fetch, note="Triton downloads the S3 model repository before loading")
        else:
            weights = Stage(name="weight fetch", seconds=0, note="removed: weights read in place from the file share")
        model = Stage(name="model load", seconds=load)
        driver = _driver_stage(st, driver_mode)
        # On a new node the pull follows the driver, pre-pull or not: the kubelet pulls one image at a
        # time (KubeletConfiguration serializeImagePulls, true by default; neither Magnum driver changes
        # it), so a pre-pull that starts first only delays the driver's images by as much.
        pull = Stage(name="image pull", seconds=st.image_pull,
                     note="one image at a time: the pre-pull saves it only on nodes that are up" if pre_pull else "")
        new_node = [Stage(name="node boot", seconds=st.node_boot), driver, pull, weights, model]
        spare = [
            Stage(name="preempt spare", seconds=0, note="placeholder evicted at once"),
            Stage(name="node boot", seconds=0, note="removed: spare node is up"),
            Stage(name="driver install", seconds=0, note="removed: spare node is ready"),
            Stage(name="image pull", seconds=0, note="removed: pre-pulled on the node") if pre_pull
            else Stage(name="image pull", seconds=st.image_pull),
            weights,
            model,
        ]
        out.append(GroupEstimate(group=group.name, spare_slots=cold_start.spare_slots.get(group.name, 0),
                                 new_node=new_node, spare=spare))
    return out


def estimates_or_defaults(gpu_groups: Sequence[NodeGroup], services: Sequence[Service],
                          given: Sequence[GroupEstimate]) -> dict[str, GroupEstimate]:
    """Per GPU group, the cold-start estimate given, else one from the default stage times
    (a component used alone, without the platform's estimate)."""
    defaults = cold_start_estimate(gpu_groups, services, ColdStartSettings(), GpuOperatorSettings().driver.mode)
    return {e.group: e for e in [*defaults, *given]}


def gpu_node_ready_seconds(settings: Settings) -> int:
    """From a new VM to a GPU node that advertises its GPUs: boot, then the driver."""
    st, driver = settings.cold_start.stage_seconds, settings.gpu_operator.driver.mode
    if driver == "preinstalled" or not settings.gpu_operator.enabled:
        return st.node_boot
    return st.node_boot + st.driver_install + (st.driver_compile if driver == "compiled" else 0)


GPU_READY_STAGE = "first node GPU-ready"


def stack_estimates(settings: Settings) -> list[GroupEstimate]:
    """The estimate of a whole stack: every GPU group, with every service placed on it (its first `up`:
    gpu/first_up.py, which counts the nodes the group's workloads need)."""
    return cold_start_estimate(settings.gpu_groups, settings.workloads, settings.cold_start,
                               settings.gpu_operator.driver.mode)


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
