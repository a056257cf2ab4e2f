"""A token followed through acme-prod's LLM service (jwt auth): the Gateway's jwt_authn and policy,
then what the gateway forwards to the pod's sidecar, its own jwt_authn and policy on the OpenAI
port (platformctl/mesh_eval.py). A valid token gets through; a missing or bad one does not."""

from __future__ import annotations

from platformctl import gateway_pods, mesh_eval
from platformctl.invariants import plan_resources
from platformctl.plan import is_k8s_object, manifest
from tests.conftest import stack_plan

ISSUER, JWKS, AUDIENCE = "https://login.acme.example.com/", "https://login.acme.example.com/.well-known/jwks.json", "llm-chat"
PATH, PORT = "/v1/chat/completions", 9000


def _policies():
    plan = stack_plan("acme-prod")
    docs = [manifest(r) for r in plan.resources if is_k8s_object(r)]
    ((_, gateway_labels),) = gateway_pods.gateway_pods(plan_resources(plan))
    pod_labels = {"app": "llm-chat", "version": "v7"}

    def applying(kind: str, labels: dict, gateway: bool) -> list[dict]:
        out = []
        for d in docs:
            spec = d.get("spec") or {}
            if d["kind"] != kind or d["metadata"]["namespace"] not in ("llm-chat", "istio-system"):
                continue
            if "targetRefs" in spec:
                if gateway and any(t["kind"] == "Gateway" and t["name"] == "llm-chat" for t in spec["targetRefs"]):
                    out.append(spec)
            elif (spec.get("selector") or {}).get("matchLabels", {}).items() <= labels.items():
                out.append(spec)
        return out

    return {side: ([r for ra in applying("RequestAuthentication", labels, gw) for r in ra["jwtRules"]],
                   applying("AuthorizationPolicy", labels, gw))
            for side, labels, gw in (("gateway", gateway_labels, True), ("pod", pod_labels, False))}


def _through(authorization, query: dict | None = None) -> str:
    policies = _policies()
    headers = {"host": "chat.acme.example.com", **({"authorization": authorization} if authorization else {})}
    rules, gateway_policy = policies["gateway"]
    passed = mesh_eval.jwt_authn(rules, headers, query)
    if passed is None:
        return "401 at the gateway"
    principal, forwarded = passed
    if not mesh_eval.allowed(gateway_policy, "", 443, PATH, host="chat.acme.example.com", headers=forwarded,
                             request_principal=principal, method="POST"):
        return "403 at the gateway"
    rules, pod_policy = policies["pod"]
    passed = mesh_eval.jwt_authn(rules, forwarded, query)
    if passed is None:
        return "401 at the pod"
    principal, _ = passed
    if not mesh_eval.allowed(pod_policy, "cluster.local/ns/llm-chat/sa/llm-chat-istio", PORT, PATH, headers=forwarded,
                             request_principal=principal, method="POST"):
        return "403 at the pod"
    return "served"


def test_a_valid_token_reaches_the_openai_port():
    assert _through("Bearer " + mesh_eval.jwt_token(ISSUER, "alice", [AUDIENCE], JWKS)) == "served"


def test_a_missing_or_bad_token_is_refused_at_the_gateway():
    assert _through(None) == "403 at the gateway"
    assert _through("Bearer " + mesh_eval.jwt_token(ISSUER, "alice", ["other"], JWKS)) == "401 at the gateway"
    assert _through("Bearer " + mesh_eval.jwt_token("https://evil.example.com/", "alice", [AUDIENCE], JWKS)) == "401 at the gateway"
    assert _through("Bearer not-a-jwt") == "401 at the gateway"


def test_a_token_in_the_query_string_is_not_read():
    # Only the Authorization header's Bearer value counts: a URL with a token ends up in traces and logs.
    token = mesh_eval.jwt_token(ISSUER, "alice", [AUDIENCE], JWKS)
    assert _through(None, {"access_token": token}) == "403 at the gateway"
