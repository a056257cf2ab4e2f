"""Who may reach what inside the cluster (platformctl/reach.py), for every stack and every example
program, over the plan's objects and a real `helm template` of each of its releases:

- every connection the platform wires (Prometheus's scrapes, the datasources and URLs in the
  releases' values, the gateways' routes and pickers, spans, KubeRay's calls) is admitted by every
  layer: NetworkPolicies, mutual TLS and AuthorizationPolicies;
- any other pod (a user's tool in any namespace the platform uses, with or without a sidecar)
  reaches a backend only by a grant of platformctl/reach.py's GRANTS, under the NetworkPolicies alone
  as under all layers together: each layer holds on its own.
"""

from __future__ import annotations

import copy
import functools

import pytest

from platformctl import reach
from platformctl.plan import is_k8s_object, manifest
from tests.conftest import STACKS, stack_plan
from tests.plan.test_examples import example_plan, example_programs
from tests.support import helm

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
# The cluster's own control plane, which a stack's ServiceMonitors scrape and the plan does not render.
CLUSTER_NAMESPACES = {"kube-system"}
def objects_of(plan) -> reach.Objects:
    docs = [manifest(r) for r in plan.resources if is_k8s_object(r) and r.type != RELEASE_TYPE]
    releases = [r.inputs for r in plan.resources if r.type == RELEASE_TYPE]
    return reach.Objects(docs, releases, lambda release: helm.helm_template(release, include_crds=False))


PLANS = [("stack", s) for s in STACKS] + [("example", e) for e in example_programs()]


@functools.cache
def _objects(kind: str, name: str) -> reach.Objects:
    return objects_of(stack_plan(name) if kind == "stack" else example_plan(name))


def _broken_wires(objects: reach.Objects) -> list[str]:
    out = []
    for edge in reach.wiring(objects):
        answer = reach.edge_answer(objects, edge)
        in_cluster = edge.service.rsplit(".", 1)[-1] in CLUSTER_NAMESPACES
        outside = not edge.sources  # a caller the plan does not render (an example's cluster's own)
        if answer != reach.REACHES and not (in_cluster and answer == "no pods") and not (outside and answer == "no source pods"):
            out.append(f"{edge.why}: {', '.join(edge.sources) or '(no caller)'} -> {edge.service}:{edge.port}: {answer}")
    return out


def _ungranted(objects: reach.Objects, network_only: bool) -> list[str]:
    by_name = {s.name: s for s in reach.strangers(objects)}
    return [f"{row.source} -> {row.backend}" for row in reach.reach_rows(objects, by_name.values(), network_only)
            if not reach.granted(by_name[row.source].namespace, row.backend)]


@pytest.mark.parametrize("kind,name", PLANS, ids=[n for _, n in PLANS])
def test_every_connection_the_platform_wires_is_admitted_by_every_layer(kind, name, reference):
    objects = _objects(kind, name)
    assert _broken_wires(objects) == []


@pytest.mark.parametrize("kind,name", PLANS, ids=[n for _, n in PLANS])
@pytest.mark.parametrize("layers", ["network policies alone", "every layer"])
def test_any_other_pod_reaches_a_guarded_backend_only_by_a_granted_rule(kind, name, layers, reference):
    assert _ungranted(_objects(kind, name), network_only=layers != "every layer") == []


def test_the_wiring_is_what_the_stack_configures(reference):
    """acme-prod's wiring names each kind of connection, so an empty model cannot pass the checks."""
    whys = {e.why.split(" ")[0] for e in reach.wiring(_objects("stack", "acme-prod"))}
    assert {"PodMonitor", "ServiceMonitor", "InferencePool", "release", "istiod", "Grafana"} <= whys
    studio = {e.why for e in reach.wiring(_objects("stack", "studio-dev"))}
    assert any(w.startswith("KubeRay submits") for w in studio) and any("workers join" in w for w in studio)
    assert any(w.startswith("VirtualService") for w in studio)


def _without(objects: reach.Objects, drop) -> reach.Objects:
    """The same plan with the NetworkPolicies `drop` rejects replaced or removed."""
    changed = copy.copy(objects)
    changed.network_policies = [p for p in (drop(copy.deepcopy(p)) for p in objects.network_policies) if p is not None]
    return changed


def test_a_policy_that_drops_prometheus_breaks_a_scrape_and_a_missing_policy_lets_any_pod_in(reference):
    objects = _objects("stack", "acme-prod")

    def no_monitoring(policy):
        if policy["metadata"]["name"] == "embed":
            policy["spec"]["ingress"] = [r for r in policy["spec"]["ingress"] if "monitoring" not in str(r.get("from"))]
        return policy

    assert any("PodMonitor" in line and "embed" in line for line in _broken_wires(_without(objects, no_monitoring)))
    opened = _ungranted(_without(objects, lambda p: None if p["metadata"]["name"] == "embed" else p), network_only=True)
    assert "any other pod of istio-system -> embed.embed:8000" in opened


def test_a_model_servers_policy_that_forgets_its_gateway_breaks_the_route(reference):
    """The LLM pods admit anyone on GET /metrics of the frontend's port: the route's own paths,
    with the token the gateway forwards, are what must be admitted."""
    objects = _objects("stack", "acme-prod")
    changed = copy.copy(objects)

    def forget_gateway(doc):
        if doc["kind"] == "AuthorizationPolicy" and doc["metadata"]["name"] == "llm-chat":
            doc = copy.deepcopy(doc)
            doc["spec"]["rules"] = [r for r in doc["spec"]["rules"] if "llm-chat-istio" not in str(r.get("from"))]
        return doc

    changed.docs = [forget_gateway(d) for d in objects.docs]
    assert any(line.startswith("InferencePool llm-chat/llm-chat-v7: Gateway pods llm-chat/llm-chat-istio") and line.endswith(": 403")
               for line in _broken_wires(changed))


def test_a_policy_admitting_the_whole_ingress_namespace_is_a_hole_under_the_network_layer(reference):
    """The ingress gateway's namespace holds istiod, Kiali and Jaeger too: a rule admitting the
    namespace instead of the gateway's pods lets any of them in, whatever the mesh decides."""
    objects = _objects("stack", "acme-prod")

    def whole_namespace(policy):
        if policy["metadata"]["name"] == "embed":
            for rule in policy["spec"]["ingress"]:
                for peer in rule.get("from", []):
                    peer.pop("podSelector", None)
        return policy

    opened = _ungranted(_without(objects, whole_namespace), network_only=True)
    assert "any other pod of istio-system -> embed.embed:8000" in opened
    assert "any other pod of istio-system -> embed.embed:8000" not in _ungranted(_without(objects, whole_namespace), network_only=False)


def test_the_table_lists_each_workloads_backends_and_no_model_server_reaches_another(reference):
    rows = reach.reach_rows(_objects("stack", "acme-prod"))
    text = reach.table(rows)
    assert "| Deployment istio-system/istio-ingressgateway | " in text
    gateway = {r.backend for r in rows if r.source == "Gateway pods llm-chat/llm-chat-istio"}
    assert {"InferencePool llm-chat-v7.llm-chat:9000", "llm-chat-v7-epp.llm-chat:9002"} <= gateway
    serving = {"embed", "llm-chat"}
    for source in ("Deployment embed/embed-v1", "Deployment llm-chat/llm-chat-v7"):
        reached = {r.backend for r in rows if r.source == source}
        assert reached and not {b for b in reached if b.split(":")[0].rsplit(".", 1)[-1] in serving}, (source, reached)
