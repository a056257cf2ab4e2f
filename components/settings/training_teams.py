"""`training.teams` and `training.topologyLevels`: the teams that train on the GPU groups, each with
its namespace and its guaranteed share of each group, and the node labels of topology-aware
placement. Kueue turns them into queues (training/kueue.py); the serving-first proof
(training/capacity.py) checks the guarantees against what serving may need (docs/training-quotas.md)."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, Field, model_validator

from inference_platform.core import grammar
from inference_platform.settings.base import DnsLabel, Model, ShortName

# Bounds of a quota in units of a group's GPU resource: far above any group (1000 nodes of 16 GPUs
# time-sliced 16 ways would be 256000; the cluster checks bound the groups themselves).
MAX_UNITS = 1_000_000
# Kueue 0.19.2 Topology CRD: spec.levels maxItems 16; a node label key each.
MAX_TOPOLOGY_LEVELS = 16
HOSTNAME_LABEL = "kubernetes.io/hostname"


def _topology_levels(levels: list[str]) -> list[str]:
    # The Topology CRD's own rules (kueue 0.19.2 kueue.x-k8s.io_topologies.yaml): unique levels,
    # kubernetes.io/hostname only as the lowest.
    if len(set(levels)) != len(levels):
        raise ValueError("each node label may be one level only")
    if HOSTNAME_LABEL in levels[:-1]:
        raise ValueError(f"{HOSTNAME_LABEL} may only be the last (lowest) level")
    return levels


# A node label key each (the CRD: levels[].nodeLabel, a qualified name).
NodeLabelKey = Annotated[str, AfterValidator(grammar.qualified_key)]
TopologyLevels = Annotated[list[NodeLabelKey], Field(max_length=MAX_TOPOLOGY_LEVELS), AfterValidator(_topology_levels)]


class TeamQuota(Model):
    group: DnsLabel
    """GPU node group the quota is on."""
    mig_profile: Optional[str] = Field(default=None, pattern=r"^[0-9]g\.[0-9]+gb(\+me)?$")
    """MIG slice the quota counts, for groups with MIG strategy `mixed` (e.g. `1g.10gb`); one quota per slice."""
    gpus: int = Field(ge=0, le=MAX_UNITS)
    """Guaranteed units of the group's GPU resource (whole GPUs, time-slicing or MPS shares, or MIG slices): the team's `nominalQuota`, always free for it because the serving-first proof keeps serving's peak apart."""
    borrowing_limit: Optional[int] = Field(default=None, ge=0, le=MAX_UNITS)
    """Most units the team may borrow beyond `gpus` (default: everything training may use on the group beyond its own guarantee)."""
    lending_limit: Optional[int] = Field(default=None, ge=0, le=MAX_UNITS)
    """Most of its idle guarantee the team lends to other teams, which it reclaims by preemption (default: all of it)."""

    @model_validator(mode="after")
    def _lends_what_it_has(self) -> "TeamQuota":
        if self.lending_limit is not None and self.lending_limit > self.gpus:
            raise ValueError(f"lendingLimit ({self.lending_limit}) exceeds gpus ({self.gpus}); allowed: 0..gpus")
        return self


class TeamPreemption(Model):
    """Kueue ClusterQueue `spec.preemption` (kueue 0.19.2 v1beta2)."""

    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "LowerPriority"
    """Whether a pending job of the team preempts the team's own admitted jobs of lower priority (`training-urgent` over `training`)."""
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Any"
    """Whether the team takes back its lent guarantee by preempting other teams' borrowing jobs (`Any`: whatever their priority)."""


class TrainingTeam(Model):
    name: ShortName
    """Team name (DNS label): its ClusterQueue `training-<name>` and its LocalQueue `<name>`."""
    namespace: DnsLabel
    """Namespace of the team's jobs, created by the platform, where its LocalQueue is; one team per namespace."""
    quotas: list[TeamQuota] = Field(default=[], max_length=64)
    """Guaranteed GPUs per GPU group (a group left out: nothing guaranteed, borrowing only)."""
    preemption: TeamPreemption = TeamPreemption()
    """How the team's queue preempts."""
