"""The pods istiod deploys for each Gateway API Gateway, and the selectors that must leave them alone.

istiod renders a Gateway of class `istio` into a Deployment, Service and ServiceAccount named
`<gateway>-istio` (istio 1.30.3 pilot/pkg/config/kube/gatewaycommon/deploymentcontroller.go,
istiod chart files/kube-gateway.yaml). The pod template's labels are, in this order (later wins):
`sidecar.istio.io/inject`, `service.istio.io/canonical-name` and `-revision`; the Gateway's
`spec.infrastructure.labels` (keys under `gateway.networking.k8s.io/` dropped) or, when it sets
none, a copy of the Gateway's own metadata labels (extractInfrastructureMetadata; the copy is
PILOT_ENABLE_GATEWAY_API_COPY_LABELS_ANNOTATIONS, default true, pilot/pkg/features/experimental.go);
then `gateway.networking.k8s.io/gateway-name`, `-class-name` and `gateway.istio.io/managed`.
(`istio.io/dataplane-mode: none` is added only under PILOT_ENABLE_AMBIENT, which the platform
leaves off.) A workload's label on the Gateway thus puts the gateway pods under the workload's
NetworkPolicy, mesh policies, PodMonitor and Service.

A selector meant for gateway pods matches them by the labels istiod sets itself (the gateway's
name, or the canonical name every proxy carries), a namespace-wide one by none; a selector that
matches them only through a label copied from the Gateway was meant for other pods, and is a
violation. So is a gateway pod isolated by a NetworkPolicy that does not admit each listener
port from anywhere.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, NamedTuple, Optional

GATEWAY = ("gateway.networking.k8s.io", "Gateway")
GATEWAY_NAME_LABEL = "gateway.networking.k8s.io/gateway-name"
ISTIO_CLASS = "istio"
# Istio's root namespace (meshConfig.rootNamespace default): its selector policies apply mesh-wide.
ROOT_NAMESPACE = "istio-system"
COPY_LABELS_ENV = "PILOT_ENABLE_GATEWAY_API_COPY_LABELS_ANNOTATIONS"
ISTIO_POLICY_KINDS = ("AuthorizationPolicy", "PeerAuthentication", "RequestAuthentication")


def _documents(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    docs = []
    for r in resources:
        inputs = r.get("inputs") or {}
        if r.get("custom") and r["type"].startswith("kubernetes:") and "apiVersion" in inputs and "kind" in inputs:
            meta = dict(inputs.get("metadata") or {})
            meta.setdefault("name", ((r.get("outputs") or {}).get("metadata") or {}).get("name", r["name"]))
            docs.append({**inputs, "metadata": meta})
    return docs


def _group_kind(doc: Mapping[str, Any]) -> tuple[str, str]:
    api = str(doc["apiVersion"])
    return (api.rsplit("/", 1)[0] if "/" in api else ""), str(doc["kind"])


def copies_labels(resources: list[dict[str, Any]]) -> bool:
    """Whether the plan's istiod copies a Gateway's labels (its env, else Istio's default)."""
    for r in resources:
        if r["type"] == "kubernetes:helm.sh/v3:Release" and (r.get("inputs") or {}).get("chart", "").endswith("istiod"):
            value = ((r["inputs"].get("values") or {}).get("env") or {}).get(COPY_LABELS_ENV)
            if value is not None:
                return str(value).lower() == "true"
    return True


def pod_labels(gateway: Mapping[str, Any], copy_labels: bool = True) -> dict[str, str]:
    """The labels of the pods istiod deploys for a Gateway of class `istio` (kube-gateway.yaml);
    `copy_labels` False: those istiod sets itself, without the Gateway's own."""
    meta, spec = gateway["metadata"], gateway.get("spec") or {}
    name, klass = str(meta["name"]), str(spec["gatewayClassName"])
    infrastructure = (spec.get("infrastructure") or {}).get("labels")
    if infrastructure is not None:
        copied = {k: v for k, v in infrastructure.items() if not k.startswith("gateway.networking.k8s.io/")}
    else:
        copied = dict(meta.get("labels") or {}) if copy_labels else {}
    return {"sidecar.istio.io/inject": "false", "service.istio.io/canonical-name": f"{name}-{klass}",
            "service.istio.io/canonical-revision": "latest", **copied,
            GATEWAY_NAME_LABEL: name, "gateway.networking.k8s.io/gateway-class-name": klass,
            "gateway.istio.io/managed": "istio.io-gateway-controller"}


def gateway_pods(resources: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Optional[dict[str, str]]]]:
    """(Gateway, its pods' labels) for every Gateway API Gateway of the plan; None for a class
    whose controller's pods are not modelled here."""
    copy = copies_labels(resources)
    found = []
    for doc in _documents(resources):
        if _group_kind(doc) == GATEWAY:
            klass = (doc.get("spec") or {}).get("gatewayClassName")
            found.append((doc, pod_labels(doc, copy) if klass == ISTIO_CLASS else None))
    return found


def matches(selector: Optional[Mapping[str, Any]], labels: Mapping[str, str]) -> bool:
    """A Kubernetes LabelSelector (matchLabels, matchExpressions) against a pod's labels."""
    selector = selector or {}
    unknown = set(selector) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise ValueError(f"label selector fields not modelled: {sorted(unknown)}")
    if not all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], e.get("values") or []
        ok = {"In": labels.get(key) in values, "NotIn": labels.get(key) not in values,
              "Exists": key in labels, "DoesNotExist": key not in labels}.get(op)
        if ok is None:
            raise ValueError(f"label selector operator not modelled: {op}")
        if not ok:
            return False
    return True


def _namespace_labels(docs: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Each Namespace of the plan's labels, with the one the API server sets on every namespace."""
    return {d["metadata"]["name"]: {**(d["metadata"].get("labels") or {}), "kubernetes.io/metadata.name": d["metadata"]["name"]}
            for d in docs if _group_kind(d) == ("", "Namespace")}


class Selection(NamedTuple):
    what: str
    selector: Optional[Mapping[str, Any]]
    in_scope: Callable[[str, Mapping[str, str]], bool]
    """Whether pods of a namespace (name, labels) are within the selector's reach."""
    isolates: Optional[Mapping[str, Any]] = None
    """The NetworkPolicy spec, when the selection is one that isolates its pods for ingress."""


def _in(namespace: str) -> Callable[[str, Mapping[str, str]], bool]:
    return lambda n, _labels: n == namespace


def _anywhere(_n: str, _labels: Mapping[str, str]) -> bool:
    return True


def _network_policy(what: str, ns: str, spec: Mapping[str, Any]) -> Iterator[Selection]:
    ingress = "Ingress" in spec.get("policyTypes", ["Ingress"])
    yield Selection(what, spec.get("podSelector"), _in(ns), spec if ingress else None)
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for peer in (p for rule in spec.get(direction) or [] for p in rule.get(peers) or [] if "podSelector" in p):
            if "namespaceSelector" in peer:
                scope = lambda _n, labels, chosen=peer["namespaceSelector"]: matches(chosen, labels)  # noqa: E731
            else:
                scope = _in(ns)
            yield Selection(f"{what} ({direction} peer)", peer["podSelector"], scope)


def _pod_monitor_scope(ns: str, spec: Mapping[str, Any]) -> Callable[[str, Mapping[str, str]], bool]:
    chosen = spec.get("namespaceSelector") or {}
    if chosen.get("any"):
        return _anywhere
    if chosen.get("matchNames"):
        return lambda n, _labels: n in chosen["matchNames"]
    return _in(ns)


def selections(docs: list[dict[str, Any]]) -> Iterator[Selection]:
    """Every pod selector of the plan's NetworkPolicies (their pods and peers), Istio security
    policies, PodMonitors and Services."""
    for d in docs:
        group, kind = _group_kind(d)
        ns, spec = d["metadata"].get("namespace") or "default", d.get("spec") or {}
        what = f"{kind} {ns}/{d['metadata']['name']}"
        if (group, kind) == ("networking.k8s.io", "NetworkPolicy"):
            yield from _network_policy(what, ns, spec)
        elif group == "security.istio.io" and kind in ISTIO_POLICY_KINDS and "selector" in spec:
            # Istio selectors are matchLabels only; targetRefs name their Gateway outright.
            yield Selection(what, {"matchLabels": spec["selector"].get("matchLabels") or {}},
                            _anywhere if ns == ROOT_NAMESPACE else _in(ns))
        elif (group, kind) == ("monitoring.coreos.com", "PodMonitor"):
            yield Selection(what, spec.get("selector"), _pod_monitor_scope(ns, spec))
        elif (group, kind) == ("", "Service") and spec.get("selector"):
            yield Selection(what, {"matchLabels": spec["selector"]}, _in(ns))


def _admits_from_anywhere(policy: Mapping[str, Any], port: int) -> bool:
    """Whether a NetworkPolicy lets every source reach TCP `port`."""
    def covers(p: Mapping[str, Any]) -> bool:
        return p.get("protocol", "TCP") == "TCP" and ("port" not in p or p["port"] <= port <= p.get("endPort", p["port"]))
    return any(not rule.get("from") and (not rule.get("ports") or any(map(covers, rule["ports"])))
               for rule in policy.get("ingress") or [])


def violations(resources: list[dict[str, Any]]) -> list[str]:
    """Every selector that takes in a Gateway's pods without being meant for them, and every
    Gateway whose pods a NetworkPolicy isolates without admitting each listener port."""
    docs = _documents(resources)
    namespaces = _namespace_labels(docs)
    found = []
    for gateway, labels in gateway_pods(resources):
        ns, name = gateway["metadata"].get("namespace") or "default", gateway["metadata"]["name"]
        if labels is None:
            found.append(f"Gateway {ns}/{name}: the pods of class {gateway['spec'].get('gatewayClassName')!r} are not "
                         "modelled, so no selector can be checked against them")
            continue
        ns_labels = namespaces.get(ns, {"kubernetes.io/metadata.name": ns})
        chosen = [s for s in selections(docs) if s.in_scope(ns, ns_labels) and matches(s.selector, labels)]
        own = pod_labels(gateway, copy_labels=False)
        for s in chosen:
            if not matches(s.selector, own):
                shared = sorted((s.selector or {}).get("matchLabels", {}).items())
                found.append(f"{s.what} selects the pods istiod deploys for Gateway {ns}/{name} by labels "
                             f"copied from the Gateway ({shared})")
        isolating = [s for s in chosen if s.isolates is not None]
        for listener in (gateway.get("spec") or {}).get("listeners") or []:
            if isolating and not any(_admits_from_anywhere(s.isolates, int(listener["port"])) for s in isolating):
                found.append(f"Gateway {ns}/{name}: {', '.join(s.what for s in isolating)} isolates its pods and "
                             f"admits nothing on its listener port {listener['port']}")
    return found
