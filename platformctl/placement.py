"""Every pod the plan declares can land somewhere: each nodeSelector and required node
affinity is satisfied by the labels some node of some group will really carry.

A node's labels come from who puts them there: the Magnum driver (its group label, valued
with the group's real name: the one the plan shows, auto-named or given), Node Feature
Discovery applying the node contract (components/gpu/node_labels.py), the group's own
selector on an existing cluster, the kubelet's well-known labels and NFD's feature labels.
Selectors are found wherever a manifest or a Helm release's values hold a `nodeSelector`
or an `affinity`, so the platform's own values for charts are checked too.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional

from inference_platform.core.node_contract import MAGNUM_DEFAULT_WORKER, MAGNUM_GROUP_LABELS, capi_helm_sanitized
from inference_platform.gpu.node_labels import node_labels
from inference_platform.settings.stack import Settings

from .plan_model import SECRET, UNKNOWN

NODE_GROUP = "openstack:containerinfra/nodeGroup:NodeGroup"
CONTROL_PLANE_GROUP = "control plane"
ANY = None  # a label every node carries, with a value the plan cannot know
# Set on every node by the kubelet (k8s.io/api/core/v1 well_known_labels.go) or the cloud provider.
WELL_KNOWN = {"kubernetes.io/os": "linux", "kubernetes.io/arch": ANY, "kubernetes.io/hostname": ANY,
              "node.kubernetes.io/instance-type": ANY, "topology.kubernetes.io/zone": ANY,
              "topology.kubernetes.io/region": ANY}
# Label prefixes NFD and GPU feature discovery write from what they find on the node.
DISCOVERED_PREFIXES = ("feature.node.kubernetes.io/",)
GPU_DISCOVERED_PREFIXES = ("nvidia.com/",)


def _magnum_group_name(resources: list[dict], group: str, index: int) -> Optional[str]:
    """The name Magnum knows the group by: its own worker group's, else the NodeGroup's
    `name` as given, or as the provider will make it (resources.json outputs.name)."""
    if index == 0:
        return MAGNUM_DEFAULT_WORKER
    for r in resources:
        if r["type"] == NODE_GROUP and r["inputs"].get("role") == group:
            return r["inputs"].get("name") or (r.get("outputs") or {}).get("name")
    return None


def group_node_labels(resources: list[dict], settings: Settings) -> dict[str, dict[str, Optional[str]]]:
    """Per group, the labels its nodes carry (value ANY where any value may be there)."""
    cluster = settings.cluster
    driver = cluster.magnum_labeller
    nodes: dict[str, dict[str, Optional[str]]] = {}
    for i, group in enumerate(cluster.node_groups):
        labels: dict[str, Optional[str]] = dict(WELL_KNOWN)
        if driver is None:
            labels.update(group.selector)
        else:
            real = _magnum_group_name(resources, group.name, i)
            if real is not None:
                labels[MAGNUM_GROUP_LABELS[driver]] = capi_helm_sanitized(real) if driver == "magnum-capi-helm" else real
        if settings.gpu_operator.enabled:
            labels.update(node_labels(group, driver))
        nodes[group.name] = labels
    if driver is not None:
        # Magnum's control plane nodes: kubeadm labels them (the Cluster API drivers), and the
        # Heat driver does in enable-services-master.sh (openstack/magnum stable/2026.1).
        nodes[CONTROL_PLANE_GROUP] = {**WELL_KNOWN, "node-role.kubernetes.io/control-plane": ""}
    return nodes


def _has(labels: dict[str, Optional[str]], key: str, gpu: bool) -> bool:
    prefixes = DISCOVERED_PREFIXES + (GPU_DISCOVERED_PREFIXES if gpu else ())
    return key in labels or key.startswith(prefixes)


def _value(labels: dict[str, Optional[str]], key: str) -> Optional[str]:
    return labels.get(key, ANY)


def _unknown(value: Any) -> bool:
    return isinstance(value, str) and (UNKNOWN in value or value == SECRET)


def _selector_ok(selector: dict, labels: dict, gpu: bool) -> bool:
    for key, want in selector.items():
        if _unknown(want) or _unknown(key):
            continue
        if not _has(labels, key, gpu):
            return False
        have = _value(labels, key)
        if have is not ANY and str(want) != have:
            return False
    return True


def _expression_ok(expr: dict, labels: dict, gpu: bool) -> bool:
    key, op, values = expr.get("key", ""), expr.get("operator"), [str(v) for v in expr.get("values") or []]
    if _unknown(key) or any(_unknown(v) for v in values):
        return True
    present = _has(labels, key, gpu)
    have = _value(labels, key) if present else None
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present or key not in labels  # a discovered label may be absent
    if op == "In":
        return present and (have is ANY or have in values)
    if op == "NotIn":
        return not present or have is ANY or have not in values
    return present  # Gt / Lt on a value the plan does not know


def _term_ok(term: dict, labels: dict, gpu: bool) -> bool:
    # matchFields select by node name, which the plan does not know: taken as satisfiable.
    return all(_expression_ok(e, labels, gpu) for e in term.get("matchExpressions") or [])


def _required_terms(affinity: Any) -> list[dict]:
    node = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(node, dict) else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    return [t for t in terms or [] if isinstance(t, dict)]


def _placements(value: Any, path: str) -> Iterator[tuple[str, dict, list[dict]]]:
    """(path, nodeSelector, required affinity terms) of every mapping that holds either."""
    if isinstance(value, dict):
        selector = value.get("nodeSelector")
        selector = selector if isinstance(selector, dict) else {}
        terms = _required_terms(value.get("affinity"))
        if selector or terms:
            yield path, selector, terms
        for key, item in value.items():
            if key not in ("nodeSelector", "affinity"):
                yield from _placements(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _placements(item, f"{path}[{i}]")


def _where(r: dict) -> Any:
    return r["inputs"].get("values", {}) if r["type"] == "kubernetes:helm.sh/v3:Release" else r["inputs"]


def violations(resources: list[dict], settings: Settings) -> list[str]:
    """One line per selector no node of any group satisfies."""
    nodes = group_node_labels(resources, settings)
    gpu = {g.name: g.is_gpu for g in settings.cluster.node_groups} | {CONTROL_PLANE_GROUP: False}
    found = []
    for r in resources:
        if not r["type"].startswith("kubernetes:"):
            continue
        for path, selector, terms in _placements(_where(r), ""):
            fits = [name for name, labels in nodes.items()
                    if _selector_ok(selector, labels, gpu[name])
                    and (not terms or any(_term_ok(t, labels, gpu[name]) for t in terms))]
            if not fits:
                what = f"nodeSelector {selector}" if selector else "required node affinity"
                keys = list(selector) + [e.get("key") for t in terms for e in t.get("matchExpressions") or []]
                carried = "; ".join(f"{n}: " + (", ".join(f"{k}={labels[k] if labels[k] is not ANY else '*'}"
                                                          for k in dict.fromkeys(keys) if k in labels) or "none of these keys")
                                    for n, labels in nodes.items())
                found.append(f"{r['type'].rpartition(':')[2]} {r['name']}: {path or 'spec'}: {what} matches no node of "
                             f"any group ({carried})")
    return found


def _mounts(template: dict) -> set[str]:
    main = template.get("container") or template.get("script") or {}
    pods = [main, *(template.get("sidecars") or []), *(template.get("initContainers") or [])]
    return {m.get("name") for c in pods if isinstance(c, dict) for m in c.get("volumeMounts") or []}


def _pod_placement(template: dict) -> tuple[str, str, str]:
    return tuple(repr(template.get(k)) for k in ("nodeSelector", "tolerations", "affinity"))  # type: ignore[return-value]


def shared_claim_violations(resources: list[dict]) -> list[str]:
    """Argo workflows whose steps share a ReadWriteOnce claim (volumeClaimTemplates): the claim
    binds where its first pod runs (WaitForFirstConsumer: a node or a zone), so every step that
    mounts it must be placed alike, or a later step may find no node it may use there."""
    found = []
    for r in resources:
        inputs = r["inputs"]
        if not r["type"].startswith("kubernetes:argoproj.io/") or not isinstance(inputs.get("spec"), dict):
            continue
        spec = inputs["spec"]
        rwo = {c.get("metadata", {}).get("name") for c in spec.get("volumeClaimTemplates") or []
               if "ReadWriteOnce" in (c.get("spec") or {}).get("accessModes", [])}
        for claim in sorted(n for n in rwo if n):
            users = {t.get("name"): _pod_placement(t) for t in spec.get("templates") or [] if claim in _mounts(t)}
            if len(set(users.values())) > 1:
                found.append(f"{r['type'].rpartition(':')[2]} {r['name']}: steps {', '.join(sorted(users))} share the "
                             f"ReadWriteOnce claim {claim!r} but not one placement (nodeSelector, tolerations, affinity): "
                             "the claim binds where the first runs, and a later step may have no node there")
    return found
