"""Whether Kubernetes NetworkPolicies let one pod open a TCP connection to another's port.

The semantics of networking.k8s.io/v1 (the API reference's NetworkPolicySpec and
NetworkPolicyPeer): a pod is isolated for ingress once a policy of its namespace selects it with
`Ingress` among its policyTypes (the default); an isolated pod admits what some such policy's
ingress rule admits, a rule with no `from` admitting every source and one with no `ports` every
port. A peer with only `podSelector` means pods of the policy's own namespace, one with only
`namespaceSelector` every pod of the namespaces it selects, both together the pods it selects in
those namespaces. Egress is the mirror image: a pod is isolated for egress by a policy of its
namespace with `Egress` among its policyTypes (the default when the policy has egress rules), and
its `to` peers select destinations as `from` peers select sources. `ipBlock` peers and named ports are not modelled: they raise, so a policy
using them cannot pass unnoticed.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, NamedTuple

from platformctl.gateway_pods import matches


class Pod(NamedTuple):
    namespace: str
    labels: Mapping[str, str]

    @property
    def namespace_labels(self) -> dict[str, str]:
        # The label the API server puts on every namespace (its name), which policies select by.
        return {"kubernetes.io/metadata.name": self.namespace}


def _isolating(policy: Mapping[str, Any]) -> bool:
    spec = policy["spec"]
    return "Ingress" in spec.get("policyTypes", ["Ingress"])


def _peer_matches(peer: Mapping[str, Any], policy_namespace: str, source: Pod) -> bool:
    if "ipBlock" in peer:
        raise ValueError(f"ipBlock peers are not modelled: {peer}")
    if "namespaceSelector" in peer:
        if not matches(peer["namespaceSelector"], source.namespace_labels):
            return False
    elif source.namespace != policy_namespace:
        return False
    return "podSelector" not in peer or matches(peer["podSelector"], source.labels)


def _port_matches(entry: Mapping[str, Any], port: int) -> bool:
    if entry.get("protocol", "TCP") != "TCP":
        return False
    if "port" not in entry:
        return True
    if not isinstance(entry["port"], int):
        raise ValueError(f"named ports are not modelled: {entry}")
    return entry["port"] <= port <= entry.get("endPort", entry["port"])


def _isolating_egress(policy: Mapping[str, Any]) -> bool:
    spec = policy["spec"]
    return "Egress" in spec.get("policyTypes", ["Ingress", "Egress"] if "egress" in spec else ["Ingress"])


def admits(policies: Iterable[Mapping[str, Any]], source: Pod, target: Pod, port: int,
           source_policies: Iterable[Mapping[str, Any]] = ()) -> bool:
    """Whether `source` may connect to TCP `port` of `target` under `policies` (NetworkPolicy
    objects of any namespace; only the target's namespace's count) and, for egress, under
    `source_policies` (only the source's namespace's count; none given: egress is open)."""
    policies = list(policies)
    selecting = [p for p in policies if (p["metadata"].get("namespace") or "default") == target.namespace
                 and _isolating(p) and matches(p["spec"].get("podSelector"), target.labels)]
    if selecting and not any(
            (not rule.get("from") or any(_peer_matches(peer, target.namespace, source) for peer in rule["from"]))
            and (not rule.get("ports") or any(_port_matches(entry, port) for entry in rule["ports"]))
            for policy in selecting for rule in policy["spec"].get("ingress") or ()):
        return False
    egress = [p for p in source_policies if (p["metadata"].get("namespace") or "default") == source.namespace
              and _isolating_egress(p) and matches(p["spec"].get("podSelector"), source.labels)]
    return not egress or any(
        (not rule.get("to") or any(_peer_matches(peer, source.namespace, target) for peer in rule["to"]))
        and (not rule.get("ports") or any(_port_matches(entry, port) for entry in rule["ports"]))
        for policy in egress for rule in policy["spec"].get("egress") or ())
