"""Every alert and recording rule of every stack selects Istio series that the plan's workloads
really produce: a gateway's requests (`reporter="source"`) only to the destinations its routes name,
a pod's (`reporter="destination"`) only from a Deployment the plan declares, and only under a
`destination_service_name` of a Service some gateway sends requests to, in the pod's series and in
every series recorded from them. A rule about a path no request takes can never fire."""

from __future__ import annotations

import re

import pytest

from inference_platform.core.controller_names import inference_pool_service_name
from platformctl.invariants import plan_resources
from tests.conftest import STACKS, stack_plan

MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
ISTIO_SELECTOR = re.compile(r"istio_requests_total\{([^}]*)\}")


def fqdn(host: str, namespace: str) -> str:
    return host if "." in host else f"{host}.{namespace}.svc.cluster.local"


def _of(resources, suffix):
    return [r["inputs"] for r in resources if r["type"].endswith(suffix)]


def gateway_routes(resources: list[dict]) -> dict[tuple[str, str], set[str]]:
    """(gateway workload, its namespace) -> the destination_service hosts its routes send to."""
    routes: dict[tuple[str, str], set[str]] = {}
    # Classic: the gateway chart's Deployment (named after its release) serves the Istio Gateways of
    # its namespace, and the VirtualServices bound to them (mesh/routes.py).
    for release in [r["inputs"] for r in resources if r["type"] == "kubernetes:helm.sh/v3:Release"
                    and str(r["inputs"].get("chart", "")).rsplit("/", 1)[-1] == "gateway"]:
        ns, hosts = release["namespace"], set()
        for vs in _of(resources, ":networking.istio.io/v1:VirtualService"):
            if any(g.startswith(f"{ns}/") for g in vs["spec"].get("gateways") or ()):
                vs_ns = vs["metadata"]["namespace"]
                hosts |= {fqdn(d["destination"]["host"], vs_ns) for h in vs["spec"].get("http") or ()
                          for d in h.get("route") or ()}
        routes[(release["name"], ns)] = hosts
    # Gateway API: istiod deploys `<gateway>-<class>` (deploymentcontroller.go); an InferencePool
    # backend goes to the pool's shadow Service (conversion.go buildDestination).
    for gw in _of(resources, ":gateway.networking.k8s.io/v1:Gateway"):
        name, ns = gw["metadata"]["name"], gw["metadata"]["namespace"]
        hosts = set()
        for route in _of(resources, ":gateway.networking.k8s.io/v1:HTTPRoute"):
            if not any(p.get("name") == name and p.get("namespace", route["metadata"]["namespace"]) == ns
                       for p in route["spec"].get("parentRefs") or ()):
                continue
            for rule in route["spec"].get("rules") or ():
                for ref in rule.get("backendRefs") or ():
                    target = inference_pool_service_name(ref["name"]) if ref.get("kind") == "InferencePool" else ref["name"]
                    hosts.add(fqdn(target, ref.get("namespace", route["metadata"]["namespace"])))
        routes[(f"{name}-{gw['spec']['gatewayClassName']}", ns)] = hosts
    return routes


def _matches(op: str, pattern: str, value: str) -> bool:
    ok = value == pattern if op in ("=", "!=") else re.fullmatch(pattern, value) is not None
    return ok if op in ("=", "=~") else not ok


def destination_records(resources: list[dict]) -> set[str]:
    """The recorded series made of the pods' own reports (`reporter="destination"`), which keep
    their `destination_service_name`."""
    return {rule["record"] for rule_object in _of(resources, ":monitoring.coreos.com/v1:PrometheusRule")
            for group in rule_object["spec"]["groups"] for rule in group["rules"]
            if "record" in rule and any('reporter="destination"' in sel for sel in ISTIO_SELECTOR.findall(rule["expr"]))}


def routed_service_problem(name: str, m: dict, routes: dict[tuple[str, str], set[str]]) -> str | None:
    """A pod's sidecar names the Service whose port the request arrived on (for a gateway's
    request, the Service its route sends to: istio_stats.cc takes the inbound cluster's Service):
    a `destination_service_name` that no gateway sends to in that namespace is never recorded."""
    if m.get("destination_service_name", ("",))[0] != "=":
        return None
    service, ns = m["destination_service_name"][1], m.get("destination_workload_namespace", ("=~", ".*"))
    routed = {host.split(".")[0] for hosts in routes.values() for host in hosts if _matches(*ns, host.split(".")[1])}
    if service in routed:
        return None
    return f"{name}: no gateway sends requests to Service {service} (destination_service_name), only to {sorted(routed)}"


def selector_problems(resources: list[dict]) -> list[str]:
    routes = gateway_routes(resources)
    recorded = [(record, re.compile(re.escape(record) + r"\{([^}]*)\}")) for record in destination_records(resources)]
    # A Deployment's name, or the one Pulumi gives it (auto-naming: the plan records it in outputs).
    deployments = {(r["inputs"]["metadata"].get("namespace"),
                    r["inputs"]["metadata"].get("name") or r["outputs"]["metadata"]["name"])
                   for r in resources if r["type"].endswith(":apps/v1:Deployment")}
    found = []
    for rule_object in _of(resources, ":monitoring.coreos.com/v1:PrometheusRule"):
        for group in rule_object["spec"]["groups"]:
            for rule in group["rules"]:
                name = rule.get("alert") or rule.get("record")
                for selector in ISTIO_SELECTOR.findall(rule["expr"]):
                    m = {k: (op, v.replace("\\\\", "\\")) for k, op, v in MATCHER.findall(selector)}
                    reporter = m.get("reporter", ("=", ""))[1]
                    if reporter == "source" and m.get("source_workload", ("",))[0] == "=":
                        workload = m["source_workload"][1]
                        ns = m.get("source_workload_namespace", ("=~", ".*"))
                        sent = {h for (w, n), hosts in routes.items() if w == workload and _matches(*ns, n) for h in hosts}
                        if not sent:
                            found.append(f"{name}: no gateway workload {workload} routes anything ({selector})")
                        elif "destination_service" in m and not any(_matches(*m["destination_service"], h) for h in sent):
                            found.append(f"{name}: {workload} routes to none of destination_service "
                                         f"{m['destination_service'][1]} (it routes to {sorted(sent)})")
                    if reporter == "destination" and m.get("destination_workload", ("",))[0] == "=":
                        ns = m.get("destination_workload_namespace", ("=~", ".*"))
                        if not any(w == m["destination_workload"][1] and _matches(*ns, n) for n, w in deployments):
                            found.append(f"{name}: no Deployment {m['destination_workload'][1]} receives requests")
                    if reporter == "destination":
                        found += filter(None, [routed_service_problem(name, m, routes)])
                for record, pattern in recorded:
                    for selector in pattern.findall(rule["expr"]):
                        m = {k: (op, v) for k, op, v in MATCHER.findall(selector)}
                        found += filter(None, [routed_service_problem(f"{name} ({record})", m, routes)])
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_every_rule_selects_requests_the_plan_routes(stack):
    assert selector_problems(plan_resources(stack_plan(stack))) == []


def test_the_llm_gateway_routes_to_the_pools_shadow_services():
    routes = gateway_routes(plan_resources(stack_plan("acme-prod")))
    assert routes[("llm-chat-istio", "llm-chat")] == {
        "llm-chat-v7-ip-ae5b730a.llm-chat.svc.cluster.local", "llm-chat-v8-ip-27aecd8d.llm-chat.svc.cluster.local"}
    assert "llm-chat.llm-chat.svc.cluster.local" not in routes[("istio-ingressgateway", "istio-system")]


def test_a_rule_on_the_customer_gateway_for_an_llm_service_is_named():
    resources = plan_resources(stack_plan("acme-prod"))
    rule = {"alert": "X", "expr": 'sum(rate(istio_requests_total{reporter="source",source_workload="istio-ingressgateway",'
                                  'destination_service="llm-chat.llm-chat.svc.cluster.local"}[5m])) > 0'}
    extra = {"type": "kubernetes:monitoring.coreos.com/v1:PrometheusRule",
             "inputs": {"spec": {"groups": [{"name": "g", "rules": [rule]}]}}}
    (problem,) = selector_problems(resources + [extra])
    assert problem.startswith("X: istio-ingressgateway routes to none of destination_service llm-chat.llm-chat.svc.cluster.local")


def test_a_pods_series_under_a_service_no_gateway_sends_to_is_named():
    resources = plan_resources(stack_plan("acme-prod"))
    record = "inference_platform:istio_request_error_ratio:rate5m"
    rule = {"alert": "X", "expr": f'{record}{{destination_workload_namespace="llm-chat",destination_service_name="llm-chat",'
                                  'destination_version="v8"} > 0'}
    extra = {"type": "kubernetes:monitoring.coreos.com/v1:PrometheusRule",
             "inputs": {"spec": {"groups": [{"name": "g", "rules": [rule]}]}}}
    (problem,) = selector_problems(resources + [extra])
    assert problem.startswith(f"X ({record}): no gateway sends requests to Service llm-chat (destination_service_name), "
                              "only to ['llm-chat-v7-ip-ae5b730a', 'llm-chat-v8-ip-27aecd8d']")
