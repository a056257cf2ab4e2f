"""Write a rendered plan to disk and summarise it as a component tree."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from .engine import Plan, Resource

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
# Kubernetes object inputs that are not part of the manifest itself.
_NOT_MANIFEST = {"apiVersion", "kind", "metadata"}


def is_k8s_object(r: Resource) -> bool:
    return r.custom and r.type.startswith("kubernetes:") and r.type != HELM_RELEASE and "apiVersion" in r.inputs


def manifest(r: Resource) -> dict[str, Any]:
    """The Kubernetes object a resource declares, named as the engine would name it."""
    doc = {"apiVersion": r.inputs["apiVersion"], "kind": r.inputs["kind"]}
    meta = dict(r.inputs.get("metadata") or {})
    meta.setdefault("name", (r.outputs.get("metadata") or {}).get("name", r.name))
    doc["metadata"] = meta
    doc.update({k: v for k, v in r.inputs.items() if k not in _NOT_MANIFEST})
    return doc


def helm_release(r: Resource) -> dict[str, Any]:
    i = r.inputs
    return {
        "release": i.get("name", r.name),
        "namespace": i.get("namespace"),
        "chart": i.get("chart"),
        "version": i.get("version"),
        "repository": (i.get("repositoryOpts") or {}).get("repo"),
        "values": i.get("values") or {},
    }


def _file_name(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(p for p in parts if p)) + ".yaml"


def write_plan(plan: Plan, out_dir: Path) -> Path:
    """build/STACK/resources.json and build/STACK/manifests/ (one object or release per file)."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    manifests = out_dir / "manifests"
    manifests.mkdir(parents=True)
    (out_dir / "resources.json").write_text(json.dumps(plan.to_json(), indent=2, sort_keys=True) + "\n")
    for r in plan.resources:
        if is_k8s_object(r):
            doc = manifest(r)
            name = _file_name(doc["kind"].lower(), doc["metadata"].get("namespace", ""), doc["metadata"]["name"])
            (manifests / name).write_text(yaml.safe_dump(doc, sort_keys=False))
        elif r.type == HELM_RELEASE:
            rel = helm_release(r)
            (manifests / _file_name("helm", r.name)).write_text(yaml.safe_dump(rel, sort_keys=False))
    return out_dir


def tree(plan: Plan) -> str:
    """Components as a tree, each with the count of custom resources beneath it."""
    components = [r for r in plan.resources if not r.custom]
    children: dict[str | None, list[Resource]] = {}
    for r in plan.resources:
        children.setdefault(r.parent, []).append(r)
    urns = {r.urn for r in plan.resources}

    def count(r: Resource) -> int:
        return sum(1 if c.custom else count(c) for c in children.get(r.urn, []))

    def kinds(r: Resource) -> str:
        c = Counter(x.type.rsplit(":", 1)[-1] for x in children.get(r.urn, []) if x.custom)
        return ", ".join(f"{n} {k}" for k, n in sorted(c.items()))

    lines: list[str] = []

    def walk(r: Resource, depth: int) -> None:
        own = kinds(r)
        lines.append(f"{'  ' * depth}{r.name} ({r.type}): {count(r)} resources" + (f" [{own}]" if own else ""))
        for c in sorted(children.get(r.urn, []), key=lambda x: x.name):
            if not c.custom:
                walk(c, depth + 1)

    for root in sorted((r for r in components if r.parent not in urns), key=lambda x: x.name):
        walk(root, 0)
    total = sum(1 for r in plan.resources if r.custom)
    lines.append(f"{total} resources in stack {plan.stack}")
    return "\n".join(lines)
