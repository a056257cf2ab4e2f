"""Which keys of the stack file made a rendered resource: errors about the plan (two resources
declaring one object) point at what the user wrote, not at URNs only."""

from __future__ import annotations

from typing import Callable, Optional

from inference_platform.settings.errors import KeyPath, format_path
from inference_platform.settings.stack import Settings

from .plan_model import Plan, Resource

PLATFORM = "inference-platform:index:InferencePlatform"
# The platform's parts built from one section of the stack file (platform.py), by type token.
SECTION_OF_PART = {
    "Cluster": ("cluster",), "GpuOperator": ("gpuOperator",), "ColdStart": ("coldStart",), "Mesh": ("mesh",),
    "Observability": ("observability",), "WeightCaches": ("weightCaches",), "InferenceNamespaces": ("services",),
    "ModelPipeline": ("modelPipeline",),
}


def stack_keys(plan: Plan, settings: Settings) -> Callable[[Resource], str]:
    """resource -> the key path of the stack file that made it (`inference-platform:services[1]`):
    the service or graph whose component holds it, a service's pipeline, or the platform part's section."""
    by_urn = {r.urn: r for r in plan.resources}
    services = {svc.name: i for i, svc in enumerate(settings.services)}
    graphs = {g.name: i for i, g in enumerate(settings.graphs)}

    def part(r: Resource) -> Optional[Resource]:
        """The platform's direct child that holds r (r itself when it is one)."""
        while r.parent is not None and r.parent in by_urn:
            parent = by_urn[r.parent]
            if parent.type == PLATFORM:
                return r
            r = parent
        return None

    def path(r: Resource) -> KeyPath:
        top = part(r)
        if top is None:
            return ()
        kind = top.type.rsplit(":", 1)[-1]
        if kind == "TritonService" and top.name in services:
            return ("services", services[top.name])
        if kind == "InferenceGraph" and top.name in graphs:
            return ("graphs", graphs[top.name])
        if kind == "ModelPipeline":
            # Its children are named `<part>-<service>-<role>`: the longest service name that fits.
            owners = [n for n in services if r.name.startswith(f"{top.name}-{n}-")]
            if owners:
                return ("services", services[max(owners, key=len)], "pipeline")
        return SECTION_OF_PART.get(kind, ())

    def where(r: Resource) -> str:
        found = path(r)
        return format_path(found) if found else f"the platform ({r.type})"

    return where
