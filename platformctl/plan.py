"""Write a rendered plan to disk and summarise it as a component tree."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections import Counter
from pathlib import Path
from typing import Any, Optional

from .atomic import replace_dir
from .errors import UsageError
from .plan_marker import MARKER, marker_text
from .plan_model import Plan, Resource
from .yaml_text import manifest_yaml

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


# Longest file name stem we write; Kubernetes names alone may reach 253 characters.
_MAX_STEM = 200


class PlanDirRefused(UsageError):
    pass


def _file_stem(*parts: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(p for p in parts if p))
    if len(stem) > _MAX_STEM:
        stem = f"{stem[:_MAX_STEM - 11]}-{_short_hash(stem)}"
    return stem


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def manifest_files(plan: Plan) -> dict[str, dict[str, Any]]:
    """File name -> document, one per Kubernetes object or Helm release.

    Names read `<kind>-<namespace>-<name>.yaml` (`helm-<name>.yaml`). Sanitising and
    joining can map two resources to one name (and case-insensitive file systems fold
    case); every resource in such a group gets a suffix hashed from its URN without
    the stack, so names are unique, stable across stacks and independent of order.
    """
    entries: list[tuple[str, str, dict[str, Any]]] = []
    for r in plan.resources:
        if is_k8s_object(r):
            doc = manifest(r)
            meta = doc["metadata"]
            stem = _file_stem(str(doc["kind"]).lower(), str(meta.get("namespace") or ""), str(meta["name"]))
        elif r.type == HELM_RELEASE:
            doc, stem = helm_release(r), _file_stem("helm", r.name)
        else:
            continue
        entries.append((r.urn, stem, doc))
    shared = Counter(stem.casefold() for _, stem, _ in entries)
    files: dict[str, dict[str, Any]] = {}
    taken: dict[str, str] = {}
    for urn, stem, doc in entries:
        if shared[stem.casefold()] > 1:
            stem = f"{stem}-{_short_hash(urn.split('::', 1)[-1])}"
        name = f"{stem}.yaml"
        if name.casefold() in taken:
            raise ValueError(f"manifest file name {name} of {urn} is also that of {taken[name.casefold()]}")
        taken[name.casefold()] = urn
        files[name] = doc
    return files


def _earlier_plan(out_dir: Path, entries: dict[str, bool]) -> bool:
    """A plan from before the marker existed: exactly resources.json and manifests/ of YAML files."""
    if entries != {"resources.json": True, "manifests": False}:
        return False
    with os.scandir(out_dir / "manifests") as listing:
        return all(e.is_file(follow_symlinks=False) and e.name.endswith(".yaml") for e in listing)


def plan_dir_replaceable(out_dir: Path) -> None:
    """Raise PlanDirRefused unless out_dir is absent, an empty directory or a plan directory."""
    try:
        if not stat.S_ISDIR(os.lstat(out_dir).st_mode):  # a symbolic link counts as not a directory
            raise PlanDirRefused(f"{out_dir} exists and is not a directory; refusing to replace it")
        # One listing decides both, so a concurrent swap cannot fall between two looks.
        with os.scandir(out_dir) as listing:
            entries = {e.name: e.is_file(follow_symlinks=False) for e in listing}
        if not entries or entries.get(MARKER) or _earlier_plan(out_dir, entries):
            return
    except FileNotFoundError:
        return  # absent, or moved aside meanwhile by a concurrent plan
    raise PlanDirRefused(
        f"{out_dir} exists and is not a plan written by platformctl (no {MARKER}); "
        "refusing to replace it: remove it or choose another --out"
    )


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as err:
        err.filename = err.filename or str(path)  # write(2) errors (disk full) carry no path
        raise


def write_plan(plan: Plan, out_dir: Path, stack_file: Optional[Path] = None) -> Path:
    """out_dir/resources.json and out_dir/manifests/ (one object or release per file),
    replacing a previous plan in out_dir atomically; never a directory the tool did not write.
    The marker records stack_file (path and sha256), the file the plan was rendered from."""
    files = manifest_files(plan)
    resources = json.dumps(plan.to_json(), indent=2, sort_keys=True) + "\n"

    def fill(tmp: Path) -> None:
        _write(tmp / MARKER, marker_text(plan.stack, stack_file))
        _write(tmp / "resources.json", resources)
        manifests = tmp / "manifests"
        manifests.mkdir()
        for name, doc in files.items():
            _write(manifests / name, manifest_yaml(doc))

    plan_dir_replaceable(out_dir)
    return replace_dir(out_dir, fill, plan_dir_replaceable)


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
