"""Each Kubernetes object is declared by one resource.

Two resources that declare the same object fight over it on every `pulumi up`
(each overwrites the other, and deleting one deletes the object of both). The
mock runtime accepts that silently, so every rendered plan is checked here.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence

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
    # A Patch changes fields of an object someone else declares (a chart's, say); it makes none.
    if not is_k8s_object(r) or r.type.endswith("Patch"):
        return None
    key = document_key(manifest(r))
    # Computed or secret values would all compare equal to each other.
    return None if any(v in (UNKNOWN, SECRET) for v in key) else key


def document_key(doc: Mapping[str, Any]) -> ObjectKey:
    """(API group, kind, namespace, name) of a rendered manifest, as object_key has it."""
    api_version, meta = str(doc["apiVersion"]), doc["metadata"]
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return group, str(doc["kind"]), str(meta.get("namespace") or ""), str(meta["name"])


def describe(key: ObjectKey) -> str:
    group, kind, namespace, name = key
    kind = f"{kind}.{group}" if group else kind
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def check_unique_objects(plan: Plan, where: Optional[Callable[[Resource], str]] = None) -> None:
    """Raise DuplicateObjectError naming every URN and every Kubernetes object that more than one
    resource declares. `where` names the stack keys that made a resource (else its URN is named)."""
    def named(r: Resource) -> str:
        return f"{where(r)} ({r.name})" if where else r.urn

    by_urn: dict[str, list[Resource]] = {}
    owners: dict[ObjectKey, list[Resource]] = {}
    for r in plan.resources:
        by_urn.setdefault(r.urn, []).append(r)
        key = object_key(r)
        if key is not None:
            owners.setdefault(key, []).append(r)
    # The engine refuses a second registration of one URN outright (the mock runtime does not).
    duplicates = [f"{rs[0].type.rsplit(':', 1)[-1]} {rs[0].name} is registered twice (one URN) by "
                  f"{' and '.join(map(named, rs))}" for rs in by_urn.values() if len(rs) > 1]
    duplicates += [f"{describe(key)} is declared by {' and '.join(map(named, rs))}"
                   for key, rs in owners.items() if len(rs) > 1]
    if duplicates:
        raise DuplicateObjectError("duplicate resources: " + "; ".join(duplicates))


def release_object_clashes(plan: Plan, rendered: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
    """Every object that two Helm releases render, or a release and a resource of `plan` declare.
    `rendered`: release name -> the objects it installs (helm template, namespaces filled in).
    Helm refuses to install an object it finds owned by another release or by nobody
    ("invalid ownership metadata"), and an object both Pulumi and Helm write flips on every `up`."""
    owners: dict[ObjectKey, list[str]] = {}
    for r in plan.resources:
        key = object_key(r)
        if key is not None:
            owners.setdefault(key, []).append(r.name)
    for release, docs in rendered.items():
        for key in {document_key(doc) for doc in docs}:
            owners.setdefault(key, []).append(f"Helm release {release}")
    return [f"{describe(key)} is rendered by {' and '.join(names)}" for key, names in owners.items()
            if len(names) > 1 and any(n.startswith("Helm release ") for n in names)]
