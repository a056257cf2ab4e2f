"""Basic Auth: the plaintext credential lives only in Secrets, and a rotation keeps both credentials for a while."""

from __future__ import annotations

import base64
import json

from inference_platform.mesh.basic_auth import htpasswd_line
from platformctl.diff import diff_plans
from tests.conftest import base_config, render_raw, stack_plan

PASSWORD = "random:index/randomPassword:RandomPassword"
SECRET = "kubernetes:core/v1:Secret"
ENVOY_FILTER = "kubernetes:networking.istio.io/v1alpha3:EnvoyFilter"
POLICY = "kubernetes:security.istio.io/v1:AuthorizationPolicy"


def rotated(generation: int, previous: int | None = None) -> dict:
    raw = base_config()
    raw["services"][0]["auth"] = {"mode": "basic", "basic": {"generation": generation}
                                  | ({"previous": previous} if previous else {})}
    return raw


def test_no_plaintext_credential_in_any_object_but_a_secret():
    plan = stack_plan("acme-prod")
    passwords = [r for r in plan.resources if r.type == PASSWORD and r.name in ("embed-password", "llm-chat-password")]
    # llm-chat checks tokens on its own Gateway (an LLM service takes no Basic Auth).
    assert {r.name for r in passwords} == {"embed-password"}
    leaks = []
    for pw in passwords:
        user = pw.name.removesuffix("-password")
        password = pw.outputs["result"]
        forms = [password, base64.b64encode(password.encode()).decode(),
                 base64.b64encode(f"{user}:{password}".encode()).decode()]
        for r in plan.resources:
            if r.type.startswith("kubernetes:") and r.type != SECRET:
                text = json.dumps(r.inputs)
                leaks += [(r.name, f) for f in forms if f in text]
    assert leaks == []
    # A secret-marked leaf in a non-Secret object is plaintext to whoever can read that object.
    assert [r.name for r in plan.resources if r.type.startswith("kubernetes:") and r.type != SECRET
            and "[secret]" in json.dumps(r.inputs)] == []


def test_the_gateway_filter_holds_the_hash_of_each_accepted_generation():
    plan = render_raw(rotated(2, previous=1))
    old, new = plan.get(PASSWORD, "svc-password"), plan.get(PASSWORD, "svc-password-g2")
    (envoy_filter,) = plan.of_type(ENVOY_FILTER)
    assert envoy_filter.inputs["metadata"]["namespace"] == "istio-system"
    (per_host,) = [p["patch"]["value"]["typed_per_filter_config"] for p in envoy_filter.inputs["spec"]["configPatches"][1:]]
    users = next(iter(per_host.values()))["config"]["users"]["inline_string"]
    assert users == (htpasswd_line("svc-g2", new.outputs["result"]) + "\n"
                     + htpasswd_line("svc", old.outputs["result"]) + "\n")


def test_a_rotation_updates_the_filter_and_the_secret_in_place_and_the_old_credential_goes_later():
    before, during, after = (render_raw(r).to_json() for r in (base_config(), rotated(2, previous=1), rotated(2)))
    start = diff_plans(before, during)
    assert [k.rsplit("::", 1)[1] for k in start["added"]] == ["svc-password-g2"]
    assert start["removed"] == [] and start["errors"] == []
    assert sorted(k.rsplit("::", 1)[1] for k in start["changed"]) == ["svc-basic-auth", "svc-basic-auth-filter"]
    # The filter is updated in place (istiod pushes it; the gateway pods keep running), and only
    # in its virtual hosts' users: the gateway's policy does not change; the Secret's contents
    # replace it (the provider's enableSecretMutable is off); no Deployment or Helm release
    # changes, so no pod restarts.
    actions = {c.key.rsplit("::", 1)[1]: c.action for c in start["changes"] if c.paths}
    assert actions == {"svc-basic-auth-filter": "update", "svc-basic-auth": "replace"}
    (filter_change,) = [c for c in start["changes"] if c.key.endswith("::svc-basic-auth-filter")]
    assert all(".configPatches[0]" not in path for path in filter_change.paths), filter_change.paths

    end = diff_plans(during, after)
    assert [k.rsplit("::", 1)[1] for k in end["removed"]] == ["svc-password"]
    assert end["added"] == [] and end["errors"] == []
    assert sorted(k.rsplit("::", 1)[1] for k in end["changed"]) == ["svc-basic-auth-filter"]


def test_the_gateway_policy_names_every_generation_of_the_service_and_stays_the_same_through_a_rotation():
    for config in (base_config(), rotated(2, previous=1), rotated(2)):
        policy = render_raw(config).get(POLICY, "svc-basic-auth-policy")
        assert policy.inputs["metadata"]["namespace"] == "istio-system"
        accepted, basic_left = policy.inputs["spec"]["rules"]
        assert accepted["when"] == [{"key": "request.headers[authorization]", "notValues": ["svc", "svc-g*"]}]
        # Any Basic value the filter left is denied too, whatever other values come with it.
        assert basic_left["when"] == [{"key": "request.headers[authorization]", "values": ["Basic *"]}]
        assert basic_left["to"] == accepted["to"]


def test_the_routes_change_only_after_the_filter_that_checks_the_credential_exists():
    plan = stack_plan("studio-dev")
    for vs in plan.of_type("kubernetes:networking.istio.io/v1:VirtualService"):
        owner = vs.name.removesuffix("-virtualservice")
        checks = [r for r in plan.resources if r.name in (f"{owner}-basic-auth-filter", f"{owner}-basic-auth-policy")]
        assert all(r.urn in vs.depends_on for r in checks), vs.name
    assert len(plan.of_type(ENVOY_FILTER)) == 2


GATEWAY = "kubernetes:networking.istio.io/v1:Gateway"
API_GATEWAY = "kubernetes:gateway.networking.k8s.io/v1:Gateway"


def test_the_gateway_policy_selects_the_gateway_pods_not_every_sidecar_of_the_mesh():
    # In Istio's root namespace a policy without a selector applies to every workload: each
    # rotation or new service would reach every sidecar. It selects what the customer Gateway does.
    plan = render_raw(base_config())
    policy = plan.get(POLICY, "svc-basic-auth-policy")
    (gateway,) = plan.of_type(GATEWAY)
    assert policy.inputs["spec"]["selector"] == {"matchLabels": gateway.inputs["spec"]["selector"]}


def test_an_llm_services_gateway_policy_selects_the_pods_istiod_deploys_for_its_gateway():
    from tests.unit.test_llm_routing_checks import stack as llm_stack

    raw = llm_stack(maxConcurrentSequences=32)
    raw["services"][0]["auth"] = {"mode": "basic"}
    plan = render_raw(raw)
    (gateway,) = plan.of_type(API_GATEWAY)
    policy = plan.get(POLICY, "svc-basic-auth-policy")
    # istiod 1.30.3 files/kube-gateway.yaml labels the Deployment's pods with the Gateway's name.
    assert policy.inputs["spec"]["selector"] == {
        "matchLabels": {"gateway.networking.k8s.io/gateway-name": gateway.inputs["metadata"]["name"]}}


def test_outside_istios_root_namespace_the_gateway_policy_applies_to_that_namespaces_workloads():
    from inference_platform.mesh.basic_auth import gateway_selector

    assert gateway_selector("istio-ingress", None) is None


def test_the_clients_secret_changes_only_after_the_filter_and_the_policy_that_accept_its_credential():
    plan = render_raw(rotated(2, previous=1))
    secret = plan.get(SECRET, "svc-basic-auth")
    checks = [plan.get(ENVOY_FILTER, "svc-basic-auth-filter"), plan.get(POLICY, "svc-basic-auth-policy")]
    assert all(r.urn in secret.depends_on for r in checks)


def _redirecting_hosts(plan) -> set[str]:
    """Hosts whose plain-HTTP server of the customer Gateway redirects to HTTPS."""
    (gateway,) = plan.of_type(GATEWAY)
    return {h for s in gateway.inputs["spec"]["servers"] if (s.get("tls") or {}).get("httpsRedirect") for h in s["hosts"]}


def test_plain_http_to_a_basic_auth_host_is_refused_not_redirected_and_other_hosts_are_redirected():
    """With TLS on, plain HTTP gets Envoy's redirect route, on which the basic_auth filter stays off;
    the gateway's DENY policy then refuses every request to a Basic Auth host with 403, a valid
    credential too (which has crossed in clear already), while other hosts get the 301."""
    from platformctl import mesh_eval

    plan = stack_plan("acme-prod")
    password = plan.get(PASSWORD, "embed-password").outputs["result"]
    valid = "Basic " + base64.b64encode(f"embed:{password}".encode()).decode()
    vs = plan.get("kubernetes:networking.istio.io/v1:VirtualService", "embed-virtualservice").inputs["spec"]
    policies = [p.inputs["spec"] for p in plan.of_type(POLICY) if p.inputs["metadata"]["namespace"] == "istio-system"
                and p.inputs["spec"].get("action") == "DENY"]
    (envoy_filter,) = [f.inputs["spec"] for f in plan.of_type(ENVOY_FILTER)]
    redirecting = _redirecting_hosts(plan)
    (embed,) = vs["hosts"]
    assert embed in redirecting
    for headers in ({}, {"authorization": valid}):
        assert mesh_eval.gateway(vs, policies, envoy_filter, embed, "/v2/health/ready", headers) != ("status", 301)
        assert mesh_eval.gateway(vs, policies, envoy_filter, embed, "/v2/health/ready", headers,
                                 redirected=True) == ("status", 403)
    # Over HTTPS the valid credential is served.
    assert mesh_eval.gateway(vs, policies, envoy_filter, embed, "/v2/health/ready", {"authorization": valid})[0] == "forward"
    assert redirecting - {embed}, "acme-prod serves its UIs on the same Gateway"
    for host in redirecting - {embed}:
        assert mesh_eval.gateway(vs, policies, envoy_filter, host, "/", {}, redirected=True) == ("status", 301), host
