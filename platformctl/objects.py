"""Each Kubernetes object is declared by one resource.

Two resources that declare the same object fight over it on every `pulumi up`
(each overwrites the other, and deleting one deletes the object of both). The
mock runtime accepts that silently, so every rendered plan is checked here. So are
the objects controllers and charts make at `up` time (core/controller_names.py): a
declared object of one of their names has two writers too, and a ServiceAccount
shared with a controller's pods gives both one identity.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from inference_platform.core import controller_names, versions
from inference_platform.core.controller_names import ObjectKey, describe

from .errors import UsageError
from .plan import HELM_RELEASE, is_k8s_object, manifest
from .plan_model import SECRET, UNKNOWN, Plan, Resource


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


def _known(*values: Any) -> bool:
    return all(isinstance(v, str) and v not in (UNKNOWN, SECRET) for v in values)


def made_at_up(docs: Iterable[Mapping[str, Any]], router_releases: Iterable[tuple[str, str]] = ()) -> list[tuple[ObjectKey, str]]:
    """Every object made at `up` time that no document of `docs` is, with what makes it: istiod's
    for each Gateway of class istio (with the overlays of its parameters ConfigMap) and for each
    InferencePool, KubeRay's for each RayService; and the objects of `router_releases` ((namespace, name) of the endpoint picker's
    releases that are not among `docs`, as controller_names models them)."""
    docs = list(docs)
    config_maps = {(d["metadata"].get("namespace") or "", d["metadata"]["name"]): d for d in docs
                   if d.get("apiVersion") == "v1" and d.get("kind") == "ConfigMap"}
    made: list[tuple[ObjectKey, str]] = []
    pools = []
    for namespace, release in router_releases:
        maker = f"Helm release {namespace}/{release}"
        made += [(key, maker) for key in controller_names.router_release_objects(namespace, release)]
        pools.append((namespace, release))
    for d in docs:
        meta, spec = d["metadata"], d.get("spec") or {}
        namespace, name = meta.get("namespace") or "", meta.get("name")
        group = str(d.get("apiVersion", "")).rsplit("/", 1)[0]
        if (group, d.get("kind")) == ("inference.networking.k8s.io", "InferencePool") and _known(namespace, name):
            pools.append((namespace, name))
        elif (group, d.get("kind")) == ("gateway.networking.k8s.io", "Gateway") and _known(namespace, name) \
                and spec.get("gatewayClassName") == controller_names.ISTIO_GATEWAY_CLASS:
            ref = (spec.get("infrastructure") or {}).get("parametersRef") or {}
            overlays = (config_maps.get((namespace, ref.get("name"))) or {}).get("data") or {}
            made += [(key, f"istiod for Gateway {namespace}/{name}")
                     for key in controller_names.istio_gateway_objects(namespace, name, overlays)]
        elif (group, d.get("kind")) == ("ray.io", "RayService") and _known(namespace, name):
            made += [(key, f"KubeRay for RayService {namespace}/{name}")
                     for key in controller_names.rayservice_objects(namespace, name)]
    for namespace, pool in pools:
        made += [(key, f"istiod for InferencePool {namespace}/{pool}")
                 for key in controller_names.inference_pool_objects(namespace, pool)]
    return made


def router_releases(plan: Plan) -> list[tuple[str, str]]:
    """(namespace, name) of the plan's releases of the endpoint picker's chart."""
    return [(r.inputs["namespace"], r.inputs["name"]) for r in plan.of_type(HELM_RELEASE)
            if str(r.inputs.get("chart", "")).rsplit("/", 1)[-1] == versions.LLM_D_ROUTER.name
            and _known(r.inputs.get("namespace"), r.inputs.get("name"))]


def check_unique_objects(plan: Plan, where: Optional[Callable[[Resource], str]] = None) -> None:
    """Raise DuplicateObjectError naming every URN and every Kubernetes object that more than one
    resource declares, or that a resource declares and a controller or the endpoint picker's chart
    makes at `up` time (made_at_up), or that two of those make. `where` names the stack keys that
    made a resource (else its URN is named)."""
    def named(r: Resource) -> str:
        return f"{where(r)} ({r.name})" if where else r.urn

    by_urn: dict[str, list[Resource]] = {}
    owners: dict[ObjectKey, list[str]] = {}
    declared = []
    for r in plan.resources:
        by_urn.setdefault(r.urn, []).append(r)
        key = object_key(r)
        if key is not None:
            owners.setdefault(key, []).append(named(r))
            declared.append(manifest(r))
    for key, maker in made_at_up(declared, router_releases(plan)):
        owners.setdefault(key, []).append(f"{maker} (made at `up` time)")
    # The engine refuses a second registration of one URN outright (the mock runtime does not).
    duplicates = [f"{rs[0].type.rsplit(':', 1)[-1]} {rs[0].name} is registered twice (one URN) by "
                  f"{' and '.join(map(named, rs))}" for rs in by_urn.values() if len(rs) > 1]
    duplicates += [f"{describe(key)} is declared by {' and '.join(names)}"
                   for key, names in owners.items() if len(names) > 1]
    if duplicates:
        raise DuplicateObjectError("duplicate resources: " + "; ".join(duplicates))


def release_object_clashes(plan: Plan, rendered: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
    """Every object that two Helm releases render, or a release and a resource of `plan` declare,
    or that a controller makes (made_at_up, over the declared and the rendered objects) beside
    either or another controller. `rendered`: release name -> the objects it installs (helm
    template, namespaces filled in). Helm refuses to install an object it finds owned by another
    release or by nobody ("invalid ownership metadata"), and an object two writers write flips on
    every `up`."""
    owners: dict[ObjectKey, list[str]] = {}
    declared = []
    for r in plan.resources:
        key = object_key(r)
        if key is not None:
            owners.setdefault(key, []).append(r.name)
            declared.append(manifest(r))
    for release, docs in rendered.items():
        for key in {document_key(doc) for doc in docs}:
            owners.setdefault(key, []).append(f"Helm release {release}")
    for key, maker in made_at_up([*declared, *(doc for docs in rendered.values() for doc in docs)]):
        owners.setdefault(key, []).append(maker)
    resources = {r.name for r in plan.resources}
    return [f"{describe(key)} is rendered by {' and '.join(names)}" for key, names in owners.items()
            if len(names) > 1 and not all(n in resources for n in names)]


# Istio's SPIFFE principal of a ServiceAccount (trust domain cluster.local, the mesh's default).
_PRINCIPAL = re.compile(r"^cluster\.local/ns/([^/*]+)/sa/([^/*]+)$")
_POD_SPEC = {"Deployment": ("spec", "template", "spec"), "StatefulSet": ("spec", "template", "spec"),
             "DaemonSet": ("spec", "template", "spec"), "ReplicaSet": ("spec", "template", "spec"),
             "Job": ("spec", "template", "spec"), "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
             "Pod": ("spec",)}


def _principals(value: Any) -> Iterable[str]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            if k in ("principals", "notPrincipals") and isinstance(v, list):
                yield from (p for p in v if isinstance(p, str))
            else:
                yield from _principals(v)
    elif isinstance(value, list):
        for v in value:
            yield from _principals(v)


def _service_account(doc: Mapping[str, Any]) -> Optional[tuple[str, str]]:
    path = _POD_SPEC.get(str(doc.get("kind")))
    spec: Any = doc
    for step in path or ():
        spec = (spec or {}).get(step) if isinstance(spec, Mapping) else None
    if path is None or not isinstance(spec, Mapping):
        return None
    return str(doc["metadata"].get("namespace") or ""), str(spec.get("serviceAccountName") or "default")


def admitted_identity_problems(plan: Plan, rendered: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
    """Every ServiceAccount an AuthorizationPolicy admits by its principal must be made by one maker
    only (a Pulumi resource, one Helm release, or a controller: made_at_up), and every workload
    running under it made by that maker: else another workload holds the identity the policy means.
    `rendered` as release_object_clashes has it; the workloads controllers deploy count (istiod's
    gateway Deployment runs as its own ServiceAccount)."""
    makers: dict[ObjectKey, list[str]] = {}
    sources: list[tuple[str, Mapping[str, Any]]] = []
    for r in plan.resources:
        if object_key(r) is not None:
            sources.append(("the stack's resources", manifest(r)))
    for release, docs in rendered.items():
        sources += [(f"Helm release {release}", doc) for doc in docs]
    for maker, doc in sources:
        key = document_key(doc)
        if key[1] == "ServiceAccount":
            makers.setdefault(key, []).append(maker)
    made = made_at_up([doc for _, doc in sources])
    for key, maker in made:
        if key[1] == "ServiceAccount":
            makers.setdefault(key, []).append(maker)
    # istiod's Deployment runs as the ServiceAccount it makes beside it (kube-gateway.yaml).
    runners = [(maker, _service_account(doc)) for maker, doc in sources]
    runners += [(maker, (key[2], key[3])) for key, maker in made if key[1] == "Deployment"]
    admitted = {}
    for _, doc in sources:
        if document_key(doc)[:2] == ("security.istio.io", "AuthorizationPolicy"):
            for principal in _principals(doc.get("spec") or {}):
                match = _PRINCIPAL.match(principal)
                if match:
                    admitted.setdefault(match.groups(), describe(document_key(doc)))
    problems = []
    for (namespace, account), policy in sorted(admitted.items()):
        owners = sorted(set(makers.get(("", "ServiceAccount", namespace, account), [])))
        what = f"ServiceAccount {namespace}/{account}, admitted by {policy},"
        if len(owners) != 1:
            problems.append(f"{what} is made by {' and '.join(owners) if owners else 'nothing the plan knows'}")
            continue
        strangers = sorted({maker for maker, runs in runners if runs == (namespace, account) and maker != owners[0]})
        if strangers:
            problems.append(f"{what} made by {owners[0]}, is also the identity of workloads of {' and '.join(strangers)}")
    return problems
