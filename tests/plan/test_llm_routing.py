"""LLM services routed through the Gateway API Inference Extension (serving/llm_routing.py): the
HTTPRoute carries the canary, a canary edit touches nothing else, the pods admit the gateway."""

import copy
from pathlib import Path

import pytest

from platformctl import ordering
from platformctl.__main__ import main
from platformctl.engine import render_stack, stack_settings
from platformctl.invariants import plan_resources
from platformctl.plan import write_plan
from tests.conftest import STACKS, stack_plan

ROOT = Path(__file__).resolve().parents[2]
HTTPROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"


def _canary_stack_file(tmp_path: Path, weights: tuple[int, int]) -> Path:
    text = (ROOT / "stacks" / "Pulumi.acme-prod.yaml").read_text()
    assert text.count("          weight: 90\n") == 1 and text.count("          weight: 10\n") == 1
    text = text.replace("          weight: 90\n", f"          weight: {weights[0]}\n")
    text = text.replace("          weight: 10\n", f"          weight: {weights[1]}\n")
    stack_file = tmp_path / "Pulumi.acme-prod.yaml"
    stack_file.write_text(text)
    return stack_file


def _render_canary(tmp_path: Path, weights: tuple[int, int]):
    return render_stack("acme-prod", _canary_stack_file(tmp_path, weights))


def _acme_llm_canary(tmp_path: Path, weights: tuple[int, int]) -> Path:
    stack_file = _canary_stack_file(tmp_path, weights)
    return write_plan(render_stack("acme-prod", stack_file), tmp_path / "edited", stack_file)


def test_the_httproute_sends_the_openai_paths_to_each_versions_pool_by_its_canary_weight():
    (route,) = stack_plan("acme-prod").of_type(HTTPROUTE)
    (rule,) = route.inputs["spec"]["rules"]
    # The stable pool last: its endpoint picker is the one Istio 1.30.3 calls for the rule.
    assert [(b["kind"], b["name"], b["weight"]) for b in rule["backendRefs"]] == [
        ("InferencePool", "llm-chat-v8", 10), ("InferencePool", "llm-chat-v7", 90)]
    assert [m["path"]["value"] for m in rule["matches"]] == ["/v1/chat/completions", "/v1/completions", "/v1/models"]
    # The service's timeoutSeconds bounds a whole stream at the gateway.
    assert rule["timeouts"] == {"request": "120s"}


def picker_problems(resources: list[dict]) -> list[str]:
    """Every HTTPRoute rule with two or more weighted InferencePool backends whose last one is not of the
    highest weight. Istio 1.30.3 calls one endpoint picker per rule, the last backendRef's
    (pilot/pkg/config/kube/gateway/conversion.go buildHTTPDestination, `ipCfg = ipconfig` per backend;
    istio/istio#61594): it must be the stable pool's, or an empty canary answers 503 for all of it."""
    found = []
    for r in resources:
        if r["type"] != HTTPROUTE:
            continue
        meta = r["inputs"]["metadata"]
        for i, rule in enumerate(r["inputs"]["spec"].get("rules") or ()):
            # Gateway API: weight defaults to 1; Istio drops weight-0 backends before the loop.
            pools = [(b["name"], b.get("weight", 1)) for b in rule.get("backendRefs") or ()
                     if b.get("kind") == "InferencePool" and b.get("weight", 1) > 0]
            if len(pools) > 1 and pools[-1][1] < max(w for _, w in pools):
                found.append(f"HTTPRoute {meta['namespace']}/{meta['name']} rules[{i}]: the last InferencePool is "
                             f"{pools[-1][0]} at weight {pools[-1][1]}, so its picker serves the rule's "
                             f"{', '.join(f'{n} ({w})' for n, w in pools)}")
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_the_highest_weight_pool_is_last_in_every_rule_so_its_picker_serves_the_rule(stack):
    assert picker_problems(plan_resources(stack_plan(stack))) == []


def test_the_picker_invariant_names_a_rule_whose_canary_pool_is_last():
    route = {"type": HTTPROUTE, "inputs": {"metadata": {"name": "r", "namespace": "n"}, "spec": {"rules": [
        {"backendRefs": [{"kind": "InferencePool", "name": "v7", "weight": 90},
                         {"kind": "InferencePool", "name": "v8", "weight": 10},
                         {"kind": "InferencePool", "name": "v9", "weight": 0}]}]}}}
    assert picker_problems([route]) == [
        "HTTPRoute n/r rules[0]: the last InferencePool is v8 at weight 10, so its picker serves the rule's "
        "v7 (90), v8 (10)"]


def test_an_llm_canary_shift_updates_only_the_httproute(tmp_path, capsys):
    main_plan = write_plan(stack_plan("acme-prod"), tmp_path / "main")
    assert main(["diff", str(main_plan), str(_acme_llm_canary(tmp_path, (50, 50)))]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == [
        "0 to create, 1 to update, 0 to replace, 0 to delete; 0 errors",
        "inference-platform:index:TritonService llm-chat:",
        "  ~ update kubernetes:gateway.networking.k8s.io/v1:HTTPRoute llm-chat-httproute",
        "      inputs.spec.rules[0].backendRefs[0].weight: 10 -> 50",
        "      inputs.spec.rules[0].backendRefs[1].weight: 90 -> 50",
    ]


def test_an_llm_service_has_no_virtualservice_and_its_host_leaves_the_customer_gateway():
    plan = stack_plan("acme-prod")
    names = {r.name for r in plan.resources}
    assert "llm-chat-virtualservice" not in names and "embed-virtualservice" in names
    (customer,) = [r for r in plan.resources if r.name.endswith("gateway-customer")]
    assert all("chat.acme.example.com" not in s["hosts"] for s in customer.inputs["spec"]["servers"])


def test_the_llm_pods_admit_their_gateway_and_the_pickers_on_the_openai_port():
    plan = stack_plan("acme-prod")
    (policy,) = [r for r in plan.resources if r.name == "llm-chat-authorizationpolicy"]
    gateway_rule = policy.inputs["spec"]["rules"][-1]
    assert gateway_rule["from"][0]["source"] == {"principals": ["cluster.local/ns/llm-chat/sa/llm-chat-istio"],
                                                 "requestPrincipals": ["*"]}
    assert gateway_rule["to"][0]["operation"]["ports"] == ["9000"]
    (netpol,) = [r for r in plan.resources if r.name == "llm-chat-networkpolicy"]
    ingress = netpol.inputs["spec"]["ingress"]
    assert {"from": [{"podSelector": {"matchLabels": {"gateway.networking.k8s.io/gateway-name": "llm-chat"}}}],
            "ports": [{"protocol": "TCP", "port": 9000}]} in ingress
    assert {"from": [{"podSelector": {"matchLabels": {"llm-d-router-gateway": f"llm-chat-{v}-epp"}}} for v in ("v7", "v8")],
            "ports": [{"protocol": "TCP", "port": 9000}]} in ingress


def test_istiod_reads_inference_pools_only_in_a_stack_with_an_llm_service():
    def istiod_env(stack):
        (release,) = [r for r in stack_plan(stack).resources if r.name.endswith("-mesh-istiod")]
        return release.inputs["values"].get("env")
    assert istiod_env("acme-prod") == {"ENABLE_GATEWAY_API_INFERENCE_EXTENSION": "true"}
    assert istiod_env("demo-dev") is None


def test_the_gateway_api_crds_are_kept_when_the_stack_drops_them():
    crds = [r for r in stack_plan("acme-prod").resources if r.type.endswith(":CustomResourceDefinition")]
    assert sorted(r.inputs["metadata"]["name"] for r in crds) == sorted([
        *(f"{p}.gateway.networking.k8s.io" for p in ("backendtlspolicies", "gatewayclasses", "gateways", "grpcroutes",
                                                      "httproutes", "listenersets", "referencegrants", "tlsroutes")),
        "inferencepools.inference.networking.k8s.io"])
    assert all(r.retain_on_delete for r in crds)


def test_basic_auth_on_an_llm_service_is_checked_at_its_gateway_before_the_route_exists(tmp_path):
    """The gateway filter and the policy that fails closed (mesh/basic_auth.py) cover the LLM
    service's hosts, and its HTTPRoute, which admits a Basic credential, waits for both."""
    text = (ROOT / "stacks" / "Pulumi.acme-prod.yaml").read_text()
    jwt = text[text.index("      auth:\n        mode: jwt"):text.index("          audiences: [llm-chat]\n") + len("          audiences: [llm-chat]\n")]
    stack_file = tmp_path / "Pulumi.acme-prod.yaml"
    stack_file.write_text(text.replace(jwt, "      auth:\n        mode: basic\n", 1))
    plan = render_stack("acme-prod", stack_file)
    filters = {r.inputs["metadata"]["name"]: r for r in plan.resources if r.type.endswith("EnvoyFilter")}
    policies = {r.inputs["metadata"]["name"]: r for r in plan.resources if r.type.endswith("AuthorizationPolicy")}
    envoy_filter, policy = filters["basic-auth.llm-chat.llm-chat"], policies["basic-auth.llm-chat.llm-chat"]
    assert policy.inputs["spec"]["action"] == "DENY"
    assert "chat.acme.example.com" in policy.inputs["spec"]["rules"][0]["to"][0]["operation"]["hosts"]
    (route,) = plan.of_type(HTTPROUTE)
    assert {envoy_filter.urn, policy.urn} <= set(route.depends_on)
    assert all(m["headers"][0]["name"] == "Authorization" for m in route.inputs["spec"]["rules"][0]["matches"])


def _route_and_deployments(resources: list[dict]) -> tuple[dict, dict[str, dict]]:
    (route,) = [r for r in resources if r["type"] == HTTPROUTE]
    deployments = {r["inputs"]["metadata"]["name"]: r for r in resources if r["type"] == "kubernetes:apps/v1:Deployment"
                   and r["inputs"]["metadata"].get("namespace") == "llm-chat"}
    return route, deployments


@pytest.mark.parametrize("stack", STACKS)
def test_every_route_comes_after_the_rollouts_of_the_versions_it_gives_weight(stack):
    problems = [p for p in ordering.violations(plan_resources(stack_plan(stack))) if "route-after-weighted-rollouts" in p]
    assert problems == []


def test_the_httproute_waits_for_the_deployments_of_its_weighted_versions_and_the_rule_names_a_missing_one():
    resources = copy.deepcopy(plan_resources(stack_plan("acme-prod")))
    route, deployments = _route_and_deployments(resources)
    assert {deployments["llm-chat-v7"]["urn"], deployments["llm-chat-v8"]["urn"]} <= set(route["dependsOn"])
    route["dependsOn"].remove(deployments["llm-chat-v8"]["urn"])
    (problem,) = [p for p in ordering.violations(resources) if "route-after-weighted-rollouts" in p]
    assert problem.startswith("HTTPRoute llm-chat/llm-chat must come after Deployment llm-chat/llm-chat-v8 "
                              "(route-after-weighted-rollouts: an endpoint picker whose pool has no Ready pod answers 503")


def test_a_version_at_weight_zero_is_not_waited_for(tmp_path):
    """Added at 0, a version's cold start delays no weight shift of the others; shifted to it later,
    the route waits for its rollout then (which, unchanged, is no wait)."""
    resources = plan_resources(_render_canary(tmp_path, (100, 0)))
    route, deployments = _route_and_deployments(resources)
    assert deployments["llm-chat-v7"]["urn"] in route["dependsOn"]
    assert deployments["llm-chat-v8"]["urn"] not in route["dependsOn"]
    assert [p for p in ordering.violations(resources) if "route-after-weighted-rollouts" in p] == []


SIDECAR = "kubernetes:networking.istio.io/v1:Sidecar"
# triton-inference-server/server r25.01 python/openai/openai_frontend/frontend/fastapi_frontend.py:
# uvicorn.Config(..., timeout_keep_alive=5): the frontend closes a connection idle for 5 s.
FRONTEND_KEEP_ALIVE_SECONDS = 5


@pytest.mark.parametrize("stack", STACKS)
def test_the_proxy_closes_idle_connections_to_the_openai_frontend_before_the_frontend_does(stack):
    plan = stack_plan(stack)
    sidecars = {(r.inputs["metadata"]["namespace"], r.inputs["spec"]["workloadSelector"]["labels"]["app"]): r
                for r in plan.of_type(SIDECAR)}
    for service in stack_settings(stack).services:
        if not any(v.serves_openai for v in service.versions):
            continue
        sidecar = sidecars.get((service.k8s_namespace, service.name))
        assert sidecar is not None, f"{stack} {service.name}: no Sidecar on the frontend's pods"
        idle = sidecar.inputs["spec"]["inboundConnectionPool"]["http"]["idleTimeout"]
        assert idle.endswith("s") and float(idle[:-1]) < FRONTEND_KEEP_ALIVE_SECONDS, idle


def test_an_llm_services_pods_admit_no_caller_on_tritons_own_ports():
    """No route of the ingress gateway leads to an LLM service's Triton HTTP and gRPC ports: its
    pods' AuthorizationPolicy and NetworkPolicy admit nobody there, the ingress gateway included."""
    from inference_platform.mesh.ref import INGRESS_PRINCIPAL
    from inference_platform.serving.triton import GRPC_PORT, HTTP_PORT
    from platformctl import mesh_eval

    plan = stack_plan("acme-prod")
    policy = plan.get("kubernetes:security.istio.io/v1:AuthorizationPolicy", "llm-chat-authorizationpolicy").inputs["spec"]
    network = plan.get("kubernetes:networking.k8s.io/v1:NetworkPolicy", "llm-chat-networkpolicy").inputs["spec"]
    for port, path in ((HTTP_PORT, "/v2/models/llama/infer"), (GRPC_PORT, "/inference.GRPCInferenceService/ModelInfer")):
        assert not mesh_eval.allowed([policy], INGRESS_PRINCIPAL, port, path, request_principal="https://issuer/sub")
        assert all(port not in [p["port"] for p in rule["ports"]] for rule in network["ingress"]), port
