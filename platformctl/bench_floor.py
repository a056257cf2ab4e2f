"""The SDK floor of a plan: the same resources registered bare, with no component logic.

The plan bench's reference row. A plan's resources (types, names, parents, providers,
dependencies, options and inputs as resources.json records them) are registered again
as plain `pulumi.ComponentResource` / `CustomResource` / `ProviderResource` under the
same engine (`engine.render_function`: the mock runtime, the recording monitor). What
that costs is what any program declaring those resources costs under the Pulumi SDK on
this machine; what the real plan costs above it is ours (components, settings, Outputs
passed between resources).
"""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path
from typing import Any, Callable

import pulumi

from .engine import render_function
from .plan_model import Plan

PROVIDER_PREFIX = "pulumi:providers:"


def _alias(spec: dict[str, Any]) -> Any:
    """A recorded alias as the option that sends it again (engine._aliases records what was sent)."""
    if "urn" in spec:
        return spec["urn"]
    parent: Any = ...  # unset: the resource's own parent
    if spec.get("noParent"):
        parent = None
    elif "parentUrn" in spec:
        parent = spec["parentUrn"]
    return pulumi.Alias(name=spec.get("name", ...), type_=spec.get("type", ...), parent=parent,
                        stack=spec.get("stack", ...), project=spec.get("project", ...))


def _in_registration_order(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each resource after its parent, provider and dependencies (the objects its options name)."""
    by_urn = {r["urn"]: r for r in resources}
    done: set[str] = set()
    ordered: list[dict[str, Any]] = []
    for start in resources:
        stack = [(start, False)]
        while stack:
            r, expanded = stack.pop()
            if r["urn"] in done:
                continue
            if expanded:
                done.add(r["urn"])
                ordered.append(r)
                continue
            stack.append((r, True))
            before = [r.get("parent"), r.get("provider"), *r.get("dependsOn", [])]
            stack.extend((by_urn[u], False) for u in before if u in by_urn and u not in done)
    return ordered


def bare_program(resources: list[dict[str, Any]]) -> Callable[[], None]:
    """A program that registers `resources` (resources.json's entries) as they were, bare."""
    ordered = _in_registration_order(resources)

    def program() -> None:
        made: dict[str, pulumi.Resource] = {}
        for r in ordered:
            timeouts = r.get("customTimeouts") or {}
            opts = pulumi.ResourceOptions(
                parent=made.get(r.get("parent")),
                provider=made.get(r.get("provider")),
                depends_on=[made[u] for u in r.get("dependsOn", []) if u in made],
                protect=r.get("protect") or None,
                retain_on_delete=r.get("retainOnDelete") or None,
                delete_before_replace=r.get("deleteBeforeReplace") or None,
                ignore_changes=r.get("ignoreChanges") or None,
                replace_on_changes=r.get("replaceOnChanges") or None,
                custom_timeouts=pulumi.CustomTimeouts(**timeouts) if timeouts else None,
                aliases=[_alias(a) for a in r.get("aliases", [])] or None,
            )
            if not r["custom"]:
                made[r["urn"]] = pulumi.ComponentResource(r["type"], r["name"], None, opts)
            elif r["type"].startswith(PROVIDER_PREFIX):
                made[r["urn"]] = pulumi.ProviderResource(
                    r["type"].removeprefix(PROVIDER_PREFIX), r["name"], dict(r["inputs"]), opts)
            else:
                made[r["urn"]] = pulumi.CustomResource(r["type"], r["name"], dict(r["inputs"]), opts)

    return program


def floor_plan(resources: list[dict[str, Any]], stack: str) -> Plan:
    """The plan of `resources` registered bare under the engine the plan used."""
    return render_function(bare_program(resources), stack)


def run_floor(resources_json: Path) -> dict[str, Any]:
    """Time and peak memory of registering a plan's resources bare (its resources.json, loaded
    first and not timed: a program holds its inputs too)."""
    saved = json.loads(resources_json.read_text())
    resources = saved["resources"]
    start, cpu_start = time.perf_counter(), time.process_time()
    plan = floor_plan(resources, saved["stack"])
    end, cpu_end = time.perf_counter(), time.process_time()
    return {"resources": len(plan.resources), "seconds": end - start, "cpu_seconds": cpu_end - cpu_start,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
