"""Serving first, proven before apply: per GPU group and GPU resource, serving's peak plus every
team's guaranteed training fits the group at maxNodes, and training borrows only the rest.

Serving's peak is what the serving capacity model already counts (gpu/profiles.py group_demands:
every version and graph step at its most replicas, tuning and pipeline runs), plus one surge
replica per version (a Triton Deployment rolls with maxSurge 1, serving/triton.py) and the spare
slots the placeholders hold (gpu/coldstart.py). Kueue never sees serving's pods (its integrations
are the training kinds only, training/kueue.py), so the proof is what keeps admitted training off
the room serving may need: the queues get exactly these numbers.

Pure functions of the settings: the loader runs the checks before any resource exists, and the
offline plan prints the proof (platformctl/gpu_report.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from inference_platform.core.endpoints import PLATFORM_NAMESPACES
from inference_platform.gpu.profiles import group_demands, mig_mix, placeholder_request, resource_name, slots_per_node
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.serving import GpuRequest, gpu_request_problems
from inference_platform.settings.stack import Settings


@dataclass(frozen=True)
class GroupProof:
    """One GPU resource of one group: what serving may need at its peak and what teams are guaranteed."""

    group: str
    index: int
    """The group's index in cluster.nodeGroups."""
    resource: str
    per_node: int
    max_nodes: int
    serving: int
    """Units of every version and graph step at its most replicas, with tuning and pipeline runs."""
    surge: int
    """One replica per version while it rolls out (maxSurge 1)."""
    spare: int
    """Spare slots the placeholders hold."""
    guaranteed: tuple[tuple[str, int], ...]
    """(team, units) of every team's guarantee on this resource, in the stack file's order."""

    @property
    def capacity(self) -> int:
        return self.per_node * self.max_nodes

    @property
    def peak(self) -> int:
        return self.serving + self.surge + self.spare

    @property
    def training(self) -> int:
        return sum(units for _, units in self.guaranteed)

    @property
    def rest(self) -> int:
        """What training may borrow beyond the guarantees (negative: the proof fails)."""
        return self.capacity - self.peak - self.training

    @property
    def fits(self) -> bool:
        return self.rest >= 0

    def describe(self) -> str:
        teams = ", ".join(f"{team} {units}" for team, units in self.guaranteed if units) or "none"
        return (f"peak serving {self.peak} x {self.resource} (at max replicas {self.serving} + surge {self.surge} "
                f"+ spare slots {self.spare}) + guaranteed training {self.training} ({teams}) = "
                f"{self.peak + self.training} of {self.capacity} ({self.max_nodes} nodes x {self.per_node})")


def _surge(settings: Settings, group: str, resource: str) -> int:
    # serving/triton.py: every version's Deployment rolls with maxSurge 1, maxUnavailable 0, so a
    # version at its most replicas runs one more while its rollout lasts.
    nodes = {g.name: g for g in settings.gpu_groups}
    return sum(v.gpu.count for svc in settings.services for v in svc.versions
               if v.gpu.group == group and resource_name(nodes[group], v.gpu.mig_profile) == resource)


def group_proofs(settings: Settings) -> list[GroupProof]:
    """The proof for every GPU resource of every GPU group, in the stack file's order (none without `training`)."""
    if settings.training is None:
        return []
    at_max = {(d.group.name, d.resource): d.at_max for d in group_demands(settings)}
    proofs = []
    for index, group in enumerate(settings.cluster.node_groups):
        if not group.is_gpu:
            continue
        spare = settings.cold_start.spare_slots.get(group.name, 0)
        spare_resource = placeholder_request(settings.services, group).resource_name
        for resource, per_node in slots_per_node(group).items():
            guaranteed = tuple(
                (team.name, sum(q.gpus for q in team.quotas
                                if q.group == group.name and resource_name(group, q.mig_profile) == resource))
                for team in settings.training.teams)
            proofs.append(GroupProof(
                group.name, index, resource, per_node, group.max_nodes, at_max.get((group.name, resource), 0),
                _surge(settings, group.name, resource), spare if resource == spare_resource else 0, guaranteed))
    return proofs


def _quota_problems(settings: Settings) -> list[tuple[KeyPath, str]]:
    """Teams in namespaces of their own, with quotas on slices their groups have (unique names: the
    `training` section's own checks, settings/training.py, which run first)."""
    problems: list[tuple[KeyPath, str]] = []
    groups = {g.name: g for g in settings.cluster.node_groups}
    served = {w.k8s_namespace: f"{kind} {w.name!r}" for kind, items in (("service", settings.services), ("graph", settings.graphs))
              for w in items}
    namespaces: set[str] = set()
    for ti, team in enumerate(settings.training.teams):
        base: KeyPath = ("training", "teams", ti)
        ns = team.namespace
        if ns in namespaces:
            problems.append((base + ("namespace",), f"namespace {ns!r} is another team's; allowed: one team per namespace"))
        elif ns in PLATFORM_NAMESPACES or ns == "default" or ns.startswith("kube-"):
            problems.append((base + ("namespace",), f"{ns!r} is a namespace of the platform or of Kubernetes; "
                             "allowed: a namespace of the team's own"))
        elif ns in served:
            problems.append((base + ("namespace",), f"{ns!r} is the namespace of {served[ns]} (in the mesh, where a "
                             "job's sidecar never lets it finish); allowed: a namespace of the team's own"))
        namespaces.add(ns)
        seen: set[tuple[str, Optional[str]]] = set()
        for qi, q in enumerate(team.quotas):
            path = base + ("quotas", qi)
            request = GpuRequest(group=q.group, **({"mig_profile": q.mig_profile} if q.mig_profile else {}))
            found = gpu_request_problems(request, groups)
            if found:
                problems += [(path + rel[1:], msg) for rel, msg in found]  # ("gpu", key) -> (key,)
                continue
            group = groups[q.group]
            if q.mig_profile is not None and q.mig_profile not in mig_mix(group):
                problems.append((path + ("migProfile",), f"group {group.name!r} has no {q.mig_profile} slices; its MIG "
                                 f"mix per GPU: {', '.join(f'{n} x {p}' for p, n in mig_mix(group).items())}"))
            if (q.group, q.mig_profile) in seen:
                problems.append((path, f"a second quota on group {q.group!r}"
                                 + (f" slice {q.mig_profile}" if q.mig_profile else "") + "; allowed: one per group and slice"))
            seen.add((q.group, q.mig_profile))
    return problems


def _refusal(settings: Settings, p: GroupProof) -> tuple[KeyPath, str]:
    """One line: the group, the numbers, and the keys that would make it fit."""
    teams = settings.training.teams
    path: KeyPath = ("cluster", "nodeGroups", p.index, "maxNodes")
    for ti, team in enumerate(teams):
        for qi, q in enumerate(team.quotas):
            if q.group == p.group and q.gpus and resource_name(settings.node_group(p.group), q.mig_profile) == p.resource:
                path = ("training", "teams", ti, "quotas", qi, "gpus")
                break
        else:
            continue
        break
    nodes = math.ceil((p.peak + p.training) / p.per_node)
    return path, (f"GPU group {p.group!r} cannot keep serving first: {p.describe()}; allowed: guaranteed training of at "
                  f"most {max(p.capacity - p.peak, 0)} x {p.resource} there. "
                  f"Lower training.teams[].quotas[].gpus on {p.group}, services' maxReplicas or coldStart.spareSlots."
                  f"{p.group}, or raise cluster.nodeGroups[{p.index}].maxNodes to {nodes}")


def training_capacity_problems(settings: Settings) -> list[tuple[KeyPath, str]]:
    """The teams' quotas, then the serving-first proof of every GPU group (nothing without `training`)."""
    if settings.training is None:
        return []
    problems = _quota_problems(settings)
    if problems:
        return problems
    return [_refusal(settings, p) for p in group_proofs(settings) if not p.fits]


def proof_report(settings: Settings) -> list[str]:
    """One line per GPU group and resource for the plan output."""
    return [f"Serving first, GPU group {p.group}: {p.describe()}; training borrows only the rest, {max(p.rest, 0)}"
            for p in group_proofs(settings)]


def proof_table(settings: Settings) -> str:
    """The proof as a Markdown table (docs/training-quotas.md shows the example stack's)."""
    rows = ["| group | resource | nodes x per node | max replicas | surge | spare slots | peak serving "
            "| guaranteed training | rest (training borrows) |", "|---|---|---|---|---|---|---|---|---|"]
    for p in group_proofs(settings):
        teams = ", ".join(f"{team} {units}" for team, units in p.guaranteed if units) or "none"
        rows.append(f"| {p.group} | `{p.resource}` | {p.max_nodes} x {p.per_node} = {p.capacity} | {p.serving} "
                    f"| {p.surge} | {p.spare} | {p.peak} | {p.training} ({teams}) | {max(p.rest, 0)} |")
    return "\n".join(rows)
