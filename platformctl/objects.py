"""Each Kubernetes object is declared by one resource.

Two resources that declare the same object fight over it on every `pulumi up`
(each overwrites the other, and deleting one deletes the object of both). The
mock runtime accepts that silently, so every rendered plan is checked here.
"""

from __future__ import annotations

from typing import Optional

from .errors import UsageError
from .plan import is_k8s_object, manifest
from .plan_model import SECRET, UNKNOWN, Plan, Resource

ObjectKey = tuple[str, str, str, str]


class DuplicateObjectError(UsageError):
    pass


def object_key(r: Resource) -> Optional[ObjectKey]:
    """(API group, kind, namespace, name) of the object a resource declares; None when not
    knowable offline. The version is left out: v1 and v1beta1 of a group are one object.
    A missing namespace counts as "" (cluster-scoped kinds have none)."""
    if not is_k8s_object(r):
        return None
    doc = manifest(r)
    api_version, meta = str(doc["apiVersion"]), doc["metadata"]
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    key = (group, str(doc["kind"]), str(meta.get("namespace") or ""), str(meta["name"]))
    # Computed or secret values would all compare equal to each other.
    return None if any(v in (UNKNOWN, SECRET) for v in key) else key


def describe(key: ObjectKey) -> str:
    group, kind, namespace, name = key
    kind = f"{kind}.{group}" if group else kind
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def check_unique_objects(plan: Plan) -> None:
    """Raise DuplicateObjectError naming every Kubernetes object that more than one resource declares."""
    owners: dict[ObjectKey, list[str]] = {}
    for r in plan.resources:
        key = object_key(r)
        if key is not None:
            owners.setdefault(key, []).append(r.urn)
    duplicates = [f"{describe(key)} is declared by {' and '.join(urns)}" for key, urns in owners.items() if len(urns) > 1]
    if duplicates:
        raise DuplicateObjectError("duplicate Kubernetes objects: " + "; ".join(duplicates))
