"""The first `up` of each GPU group as a timeline: what runs when on its nodes, and the waits it must fit.

Read from the cold-start model the await budgets come from (components/gpu/first_up.py: a group's
first-`up` path), so the timeline ends where the Triton Deployments' create budget does; the waits are
the ones the plan gives those Deployments (awaits.effective_wait). A group whose timeline outlasts a
wait is reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from inference_platform.gpu.first_up import first_up_estimates
from inference_platform.settings.stack import Settings
from inference_platform.timing.estimates import GPU_READY_STAGE, GroupEstimate, Stage
from inference_platform.timing.readiness import NODE_STAGES

from .awaits import effective_wait, label, runs_tritonserver

DEPLOYMENT = "apps/v1/Deployment"
# What a node runs in each stage of its start, in the order the kubelet pulls (one image at a time).
STAGE_WORK = {
    "node boot": "the VM boots and joins",
    "driver install": "the NFD worker and marker images, then the GPU operator's driver, toolkit and device plugin; GPUs advertised",
    "image pull": "the Triton images, after the driver's",
    "weight fetch": "the model repository",
    "model load": "Triton loads the models; the replica turns ready",
}


@dataclass(frozen=True)
class Await:
    """A Triton Deployment on the group and how long `pulumi up` waits for it on create."""

    name: str
    seconds: float
    source: str


@dataclass(frozen=True)
class GroupTimeline:
    estimate: GroupEstimate
    rows: list[tuple[int, int, str]]
    """(start, end, what) in seconds after the group's node group is created."""
    awaits: list[Await]

    @property
    def ready_seconds(self) -> int:
        return self.estimate.first_up_seconds

    @property
    def late(self) -> list[Await]:
        """The waits the first `up` outlasts."""
        return [a for a in self.awaits if a.seconds < self.ready_seconds]


def _rows(estimate: GroupEstimate) -> list[tuple[int, int, str]]:
    rows: list[tuple[int, int, str]] = []
    at = 0

    def add(stage: Stage, who: str) -> None:
        nonlocal at
        what = f"{who}{stage.name}: {STAGE_WORK.get(stage.name, stage.name)}" + (f" ({stage.note})" if stage.note else "")
        rows.append((at, at + stage.seconds, what))
        at += stage.seconds

    for stage in estimate.first_up_path:
        if stage.name == GPU_READY_STAGE:
            for first in (s for s in estimate.new_node if s.name in ("node boot", "driver install")):
                add(first, "first node, ")
            rows.append((at, at, stage.note.split(": ", 1)[-1]))
            continue
        add(stage, "")
    return rows


def _triton_awaits(resources: Iterable[dict[str, Any]], settings: Settings) -> dict[str, list[Await]]:
    """Per GPU group, the create wait of every Triton Deployment placed on it."""
    groups = {(s.k8s_namespace, s.name, v.name): v.gpu.group for s in settings.services for v in s.versions}
    out: dict[str, list[Await]] = {}
    for r in resources:
        inputs = r.get("inputs") or {}
        if f"{inputs.get('apiVersion')}/{inputs.get('kind')}" != DEPLOYMENT:
            continue
        if not runs_tritonserver(((inputs.get("spec") or {}).get("template") or {}).get("spec") or {}):
            continue
        meta = inputs.get("metadata") or {}
        labels = meta.get("labels") or {}
        group = groups.get((meta.get("namespace"), labels.get("app"), labels.get("version")))
        wait = effective_wait(r)
        if group is not None and wait is not None and wait.create is not None:
            out.setdefault(group, []).append(Await(label(r), wait.create, wait.source))
    return out


def timelines(resources: list[dict[str, Any]], settings: Settings) -> list[GroupTimeline]:
    waits = _triton_awaits(resources, settings)
    return [GroupTimeline(e, _rows(e), sorted(waits.get(e.group, []), key=lambda a: a.name))
            for e in first_up_estimates(settings).values()]


def format_timelines(found: list[GroupTimeline]) -> str:
    lines = ["First `up` per GPU group (the cold-start model; seconds after the group's node group is created):"]
    for t in found:
        e = t.estimate
        lines.append(f"  {e.group}: {e.start}")
        width = len(str(max((end for _, end, _ in t.rows), default=0)))
        for start, end, what in t.rows:
            lines.append(f"    {start:>{width}}s-{end:>{width}}s  {what}")
        joined = sum(s.seconds for s in e.new_node if s.name in NODE_STAGES)
        lines.append(f"    a joining node's DaemonSet pods (NFD worker, markers, node exporter) may queue {joined}s behind "
                     "the images before theirs: every wait on them allows for it")
        if not t.awaits:
            lines.append(f"    ready at {t.ready_seconds}s; no Triton Deployment on the group is awaited")
            continue
        for a in t.awaits:
            verdict = (f"fits, {a.seconds - t.ready_seconds:g}s to spare" if a.seconds >= t.ready_seconds
                       else f"EXCEEDS it by {t.ready_seconds - a.seconds:g}s")
            lines.append(f"    ready at {t.ready_seconds}s; {a.name} waits {a.seconds:g}s on create ({a.source}): {verdict}")
    return "\n".join(lines)


def late_problems(found: list[GroupTimeline]) -> list[str]:
    """One sentence per wait a group's first `up` outlasts."""
    return [f"GPU group {t.estimate.group}: its first `up` takes {t.ready_seconds}s but {a.name} waits "
            f"{a.seconds:g}s on create ({a.source})" for t in found for a in t.late]
