"""Compare two plans: added, removed and changed resources with the changed key paths."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import UsageError

COMPARED = ("inputs", "parent", "provider", "dependsOn", "protect", "retainOnDelete", "deleteBeforeReplace", "ignoreChanges")


class NotAPlan(UsageError):
    pass


def load_plan_json(path: Path) -> dict[str, Any]:
    """A saved plan: a plan directory or its resources.json; raises NotAPlan for anything else."""
    file = path / "resources.json" if path.is_dir() else path
    if not file.is_file():  # also keeps devices and FIFOs from being read
        raise NotAPlan(f"{path} is not a plan: {'no resources.json in the directory' if path.is_dir() else 'not a regular file'}")
    try:
        data = json.loads(file.read_bytes())
    except (ValueError, RecursionError) as err:  # ValueError covers bad JSON and bad UTF-8
        raise NotAPlan(f"{file} is not a plan: not JSON: {err}") from None
    problem = plan_shape_problem(data)
    if problem:
        raise NotAPlan(f"{file} is not a plan: {problem}")
    return data


def plan_shape_problem(data: Any) -> str | None:
    """What keeps a JSON value from being a plan (resources.json) that diff and policy can read."""
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    if not isinstance(data.get("stack"), str):
        return "no stack name"
    if not isinstance(data.get("resources"), list):
        return "no resources list"
    for i, r in enumerate(data["resources"]):
        if not isinstance(r, dict) or not all(isinstance(r.get(k), str) for k in ("urn", "type", "name")):
            return f"resources[{i}] has no urn, type and name"
        if not all(isinstance(r.get(k), t) for k, t in (("inputs", dict), ("outputs", dict), ("dependsOn", list)) if r.get(k) is not None):
            return f"resources[{i}] has inputs, outputs or dependsOn of the wrong type"
    return None


def _key(resource: dict[str, Any]) -> str:
    # Stack names differ between two stacks; the URN without the stack part identifies a resource.
    urn = resource["urn"]
    return urn.split("::", 1)[1] if "::" in urn else urn


def _strip_stack(value: Any, stack: str) -> Any:
    if isinstance(value, str):
        # The stack's name appears in every URN and in the root Stack resource's own name.
        return value.replace(f"urn:pulumi:{stack}::", "urn:pulumi:STACK::").replace(
            f"pulumi:pulumi:Stack::inference-platform-{stack}", "pulumi:pulumi:Stack::inference-platform-STACK"
        )
    if isinstance(value, list):
        return [_strip_stack(v, stack) for v in value]
    if isinstance(value, dict):
        return {k: _strip_stack(v, stack) for k, v in value.items()}
    return value


def changed_paths(a: Any, b: Any, path: str = "") -> list[str]:
    """Key paths (a.b[0].c) where two JSON values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b)):
            sub = f"{path}.{k}" if path else k
            if k not in a or k not in b:
                out.append(sub)
            else:
                out += changed_paths(a[k], b[k], sub)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out += changed_paths(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [path or "."]


def diff_plans(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    ra = {_key(r): _strip_stack(r, a["stack"]) for r in a["resources"]}
    rb = {_key(r): _strip_stack(r, b["stack"]) for r in b["resources"]}
    changed = {}
    for key in sorted(set(ra) & set(rb)):
        paths = []
        for field in COMPARED:
            paths += changed_paths(ra[key].get(field), rb[key].get(field), field)
        if paths:
            changed[key] = paths
    return {
        "added": sorted(set(rb) - set(ra)),
        "removed": sorted(set(ra) - set(rb)),
        "changed": changed,
    }


def format_diff(d: dict[str, Any]) -> str:
    lines = [f"+ {k}" for k in d["added"]] + [f"- {k}" for k in d["removed"]]
    for key, paths in d["changed"].items():
        lines.append(f"~ {key}")
        lines += [f"    {p}" for p in paths]
    lines.append(f"{len(d['added'])} added, {len(d['removed'])} removed, {len(d['changed'])} changed")
    return "\n".join(lines)
