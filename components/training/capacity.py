"""Serving first, proven before apply: per GPU group and GPU resource, serving's peak plus every
team's guaranteed training fits the group at maxNodes, and training borrows only the rest.

Serving's peak is what the serving capacity model already counts (gpu/profiles.py group_demands:
every version and graph step at its most replicas, tuning and pipeline runs), plus one surge
replica per version (a Triton Deployment rolls with maxSurge 1, serving/triton.py) and the spare
slots the placeholders hold (gpu/coldstart.py). Kueue never sees serving's pods (its integrations
are the training kinds only, training/kueue.py), so the proof is what keeps admitted training off
the room serving may need: the queues get exactly these numbers.

Units are not places: a pod needs its GPUs free on one node, and the scheduler spreads serving's
pods over the nodes. So each job is also proven in whole pods per node (ShapeProof): with serving's
pods and the other teams' guaranteed pods anywhere, its team's guarantee still finds room for its pods.

Pure functions of the settings: the loader runs the checks before any resource exists, and the
offline plan prints the proof (platformctl/gpu_report.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from inference_platform.core.endpoints import PLATFORM_NAMESPACES
from inference_platform.gpu.profiles import gpu_consumers, group_demands, mig_mix, placeholder_request, resource_name, slots_per_node
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


@dataclass(frozen=True)
class ShapeProof:
    """One job's pods against one GPU resource of its group, counted in whole pods per node.

    Units alone do not place a pod: the default scheduler scores nodes LeastAllocated and so spreads
    serving's replicas and placeholders over the nodes, and a pod of `pod` units needs that many
    free on one node. A pod of `s` units on a node takes at most ceil(s / pod) of the node's places
    for a job's pod (floor(F / pod) - floor((F - s) / pod) <= ceil(s / pod)), and never more than the
    node had, so whatever the placement, at least `slots - lost` places stay free."""

    group: str
    index: int
    """The group's index in cluster.nodeGroups."""
    resource: str
    per_node: int
    max_nodes: int
    job: str
    job_index: int
    """The job's index in training.jobs."""
    team: str
    pod: int
    """Units of the resource one node pod of the job takes."""
    job_pods: int
    """The job's node pods (Kueue admits them all at once)."""
    team_units: int
    """The team's guarantee on this resource."""
    serving_pods: tuple[int, ...]
    """Units of each pod serving may run at its peak: replicas at their most, a surge replica per version, placeholders."""
    other_pods: tuple[int, ...]
    """Units of each pod the other teams' guarantees hold, at their smallest job's pod."""

    @property
    def places_per_node(self) -> int:
        return self.per_node // self.pod

    @property
    def slots(self) -> int:
        return self.max_nodes * self.places_per_node

    @property
    def lost(self) -> int:
        """Places for this job's pods that serving's and the other teams' pods may take, at worst."""
        k = self.places_per_node
        return sum(min(math.ceil(units / self.pod), k) for units in self.serving_pods + self.other_pods)

    @property
    def free(self) -> int:
        return max(self.slots - self.lost, 0)

    @property
    def guaranteed_pods(self) -> int:
        """Pods of the job the team's guarantee admits at once (more only by borrowing)."""
        return self.team_units // self.pod

    @property
    def fits(self) -> bool:
        return self.free >= self.guaranteed_pods

    @property
    def within_guarantee(self) -> bool:
        """The whole job fits its team's guarantee, so it always finds room (else it waits for borrowed room)."""
        return self.job_pods <= self.guaranteed_pods

    @property
    def nodes_needed(self) -> int:
        return math.ceil((self.lost + self.guaranteed_pods) / self.places_per_node)

    def describe(self) -> str:
        return (f"job {self.job!r} of team {self.team!r} runs pods of {self.pod} x {self.resource}, "
                f"{self.places_per_node} per node: {self.max_nodes} nodes offer {self.slots} places; serving's "
                f"{len(self.serving_pods)} pods at peak and the other teams' {len(self.other_pods)} guaranteed pods, "
                f"spread by the scheduler, may take {min(self.lost, self.slots)}, leaving {self.free}; the team's "
                f"guarantee of {self.team_units} admits {self.guaranteed_pods} such pods")


def _serving_pods(settings: Settings, group, resource: str) -> tuple[int, ...]:
    """Units of every pod serving may run on the group's `resource` at its peak (the pods behind
    GroupProof's serving, surge and spare)."""
    pods: list[int] = []
    for gpu, _low, high in gpu_consumers(settings):
        if gpu.group == group.name and resource_name(group, gpu.mig_profile) == resource:
            pods += [gpu.count] * high
    pods += [v.gpu.count for svc in settings.services for v in svc.versions
             if v.gpu.group == group.name and resource_name(group, v.gpu.mig_profile) == resource]
    if placeholder_request(settings.services, group).resource_name == resource:
        pods += [1] * settings.cold_start.spare_slots.get(group.name, 0)
    return tuple(pods)


def shape_proofs(settings: Settings) -> list[ShapeProof]:
    """Every job's pods against the group it runs on, in the stack file's order (none without `training`)."""
    if settings.training is None:
        return []
    groups = {g.name: (i, g) for i, g in enumerate(settings.cluster.node_groups)}
    proofs = []
    for ji, job in enumerate(settings.training.jobs):
        if job.gpu.group not in groups or groups[job.gpu.group][1].gpu is None:
            continue
        index, group = groups[job.gpu.group]
        resource = resource_name(group, job.gpu.mig_profile)
        per_node = slots_per_node(group).get(resource, 0)
        if job.gpu.count < 1 or job.gpu.count > per_node:
            continue  # the job's own checks refuse it

        def on_resource(j, group=group, resource=resource) -> bool:
            return j.gpu.group == group.name and resource_name(group, j.gpu.mig_profile) == resource

        shapes = [j.gpu.count for j in settings.training.jobs if on_resource(j) and j.gpu.count >= 1]
        units: dict[str, int] = {}
        for team in settings.training.teams:
            units[team.name] = sum(q.gpus for q in team.quotas
                                   if q.group == group.name and resource_name(group, q.mig_profile) == resource)
        others: list[int] = []
        for team, held in units.items():
            if team == job.team or not held:
                continue
            # A team's guarantee held by pods of its smallest job here (no job here: the smallest job's).
            own = [j.gpu.count for j in settings.training.jobs if j.team == team and on_resource(j) and j.gpu.count >= 1]
            pod = min(own or shapes)
            others += [pod] * (held // pod)
        proofs.append(ShapeProof(group.name, index, resource, per_node, group.max_nodes, job.name, ji, job.team,
                                 job.gpu.count, job.nodes, units.get(job.team, 0), _serving_pods(settings, group, resource),
                                 tuple(others)))
    return proofs


def _shape_refusal(p: ShapeProof) -> tuple[KeyPath, str]:
    return (("training", "jobs", p.job_index, "gpu", "count"),
            f"GPU group {p.group!r} cannot keep this job's guarantee beside serving in whole pods: {p.describe()}, "
            f"so it may wait with serving at its peak although the units fit; allowed: at most {p.free} guaranteed "
            f"pods of {p.pod} there. Lower services' maxReplicas or coldStart.spareSlots.{p.group}, run smaller pods, "
            f"lower the team's guarantee on {p.group}, or raise cluster.nodeGroups[{p.index}].maxNodes to {p.nodes_needed}")


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
                                 f"mix per GPU: {_mix(group)}"))
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


def _mix(group) -> str:
    return ", ".join(f"{n} x {p}" for p, n in mig_mix(group).items())


def job_shape_problems(settings: Settings) -> list[tuple[KeyPath, str]]:
    """Jobs whose node pods no node, or no count of the group's nodes, can ever hold: a MIG slice the
    group does not have, more units per pod than one node offers, more pods than maxNodes hold."""
    groups = {g.name: g for g in settings.cluster.node_groups}
    problems: list[tuple[KeyPath, str]] = []
    for ji, job in enumerate(settings.training.jobs):
        at: KeyPath = ("training", "jobs", ji)
        group = groups.get(job.gpu.group)
        if group is None or group.gpu is None:
            continue  # the job's own checks refuse it
        if job.gpu.mig_profile is not None and job.gpu.mig_profile not in mig_mix(group):
            problems.append((at + ("gpu", "migProfile"), f"group {group.name!r} has no {job.gpu.mig_profile} slices; "
                             f"its MIG mix per GPU: {_mix(group)}; allowed: one of its slices"))
            continue
        resource = resource_name(group, job.gpu.mig_profile)
        per_node = slots_per_node(group).get(resource, 0)
        if job.gpu.count > per_node:
            problems.append((at + ("gpu", "count"), f"a node pod asks for {job.gpu.count} x {resource}, but one node of "
                             f"group {group.name!r} offers {per_node}; allowed: count 1-{per_node}"))
            continue
        pods_per_node = per_node // job.gpu.count
        needed = -(-job.nodes // pods_per_node)
        if needed > group.max_nodes:
            problems.append((at + ("nodes",), f"{job.nodes} node pods of {job.gpu.count} x {resource} need {needed} nodes "
                             f"of {group.name!r} ({pods_per_node} per node), which has at most {group.max_nodes}; "
                             f"allowed: at most {pods_per_node * group.max_nodes} node pods"))
    return problems


def queue_admits(settings: Settings, team: str, p: GroupProof) -> int:
    """The most units of `p`'s resource the team's ClusterQueue can ever be given at once: its
    guarantee and what it may borrow (training/kueue.py team_quota: borrowingLimit, default all
    training may use beyond the guarantee), and no more than the cohort holds to lend (the
    unguaranteed rest and the other teams' lendingLimit)."""
    own = dict(p.guaranteed).get(team, 0)
    group = settings.node_group(p.group)

    def quota(name: str):
        t = settings.training.team(name)
        return next((q for q in t.quotas if q.group == p.group and resource_name(group, q.mig_profile) == p.resource), None)

    mine = quota(team)
    borrow = mine.borrowing_limit if mine is not None and mine.borrowing_limit is not None else max(p.capacity - p.peak - own, 0)
    lent = sum(q.lending_limit if q.lending_limit is not None else units
               for name, units in p.guaranteed if name != team and (q := quota(name)) is not None)
    return min(own + borrow, own + max(p.rest, 0) + lent)


def job_queue_problems(settings: Settings) -> list[tuple[KeyPath, str]]:
    """Jobs larger than their team's queue can ever admit: Kueue admits a job's pods together
    (one Workload, all-or-nothing), so such a job stays pending for good."""
    proofs = {(p.group, p.resource): p for p in group_proofs(settings)}
    problems: list[tuple[KeyPath, str]] = []
    for ji, job in enumerate(settings.training.jobs):
        group = settings.node_group(job.gpu.group)
        p = proofs.get((group.name, resource_name(group, job.gpu.mig_profile)))
        if p is None or settings.training.team(job.team) is None:
            continue
        units, admits = job.nodes * job.gpu.count, queue_admits(settings, job.team, p)
        if units > admits:
            problems.append((("training", "jobs", ji, "nodes"), (
                f"the job needs {units} x {p.resource} at once ({job.nodes} node pods x {job.gpu.count}; Kueue admits a "
                f"job's pods together), but team {job.team!r}'s queue can never hold more than {admits} there (its "
                f"guarantee, what it may borrow, and what the cohort has to lend), so it would wait for good; allowed: "
                f"at most {admits // job.gpu.count} node pods, or raise the team's quota or borrowingLimit on {p.group}")))
    return problems


def training_capacity_problems(settings: Settings) -> list[tuple[KeyPath, str]]:
    """The teams' quotas, the jobs' pods against their groups, the serving-first proof of every GPU
    group, the jobs against their teams' queues, then in whole pods (nothing without `training`)."""
    if settings.training is None:
        return []
    problems = _quota_problems(settings) or job_shape_problems(settings)
    if problems:
        return problems
    refused = [_refusal(settings, p) for p in group_proofs(settings) if not p.fits]
    return refused or job_queue_problems(settings) or [_shape_refusal(p) for p in shape_proofs(settings) if not p.fits]


def proof_report(settings: Settings) -> list[str]:
    """One line per GPU group and resource for the plan output."""
    lines = [f"Serving first, GPU group {p.group}: {p.describe()}; training borrows only the rest, {max(p.rest, 0)}"
             for p in group_proofs(settings)]
    for p in shape_proofs(settings):
        whole = f"the whole job ({p.job_pods} x {p.pod})"
        verdict = (f"so {whole} always finds room" if p.within_guarantee
                   else f"so {whole} exceeds the guarantee: it starts only on room it borrows")
        lines.append(f"Serving first, whole pods on {p.group}: {p.describe()}, {verdict}")
    return lines


def proof_table(settings: Settings) -> str:
    """The proof as a Markdown table (docs/training-quotas.md shows the example stack's)."""
    rows = ["| group | resource | nodes x per node | max replicas | surge | spare slots | peak serving "
            "| guaranteed training | rest (training borrows) |", "|---|---|---|---|---|---|---|---|---|"]
    for p in group_proofs(settings):
        teams = ", ".join(f"{team} {units}" for team, units in p.guaranteed if units) or "none"
        rows.append(f"| {p.group} | `{p.resource}` | {p.max_nodes} x {p.per_node} = {p.capacity} | {p.serving} "
                    f"| {p.surge} | {p.spare} | {p.peak} | {p.training} ({teams}) | {max(p.rest, 0)} |")
    return "\n".join(rows)
