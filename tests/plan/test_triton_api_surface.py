"""Triton's API surface through the gateway: of every HTTP endpoint and gRPC method tritonserver
r25.01 serves (tests/catalogues/tritonserver-r25.01-api.txt), a client reaches exactly inference,
health and metadata, by the rendered routes and policies; Triton itself closes every other
category to requests without the service's admin key."""

from __future__ import annotations

import functools
import json
import re
from typing import NamedTuple, Optional

import pytest

from inference_platform.settings.triton_flags import triton_flag_problem
from platformctl import mesh_eval
from tests.conftest import ROOT, stack_plan

CATALOGUE = ROOT / "tests" / "catalogues" / "tritonserver-r25.01-api.txt"
OPEN = {"health", "metadata", "inference"}
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
PORTS = {8000: "http", 8001: "grpc"}
# Values for a `[^/]+` segment: a model name, and names that collide with Triton's own path words.
SEGMENTS = ("m", "stats", "ready", "index", "config")


class Endpoint(NamedTuple):
    protocol: str
    category: str
    pattern: str
    handler: str


@functools.cache
def catalogue() -> tuple[Endpoint, ...]:
    rows = [line.split() for line in CATALOGUE.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return tuple(Endpoint(*row) for row in rows)


def _alternatives(pattern: str) -> list[str]:
    """The top-level '|' alternatives of a pattern."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(pattern):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
    return [*parts, pattern[start:]]


def instances(pattern: str) -> set[str]:
    """Every path of a catalogue pattern, with SEGMENTS for `[^/]+` and 1 for `[0-9]+`: the
    patterns use only literals, groups with alternatives, `(?:...)?` and those two classes."""
    if "|" in pattern and len(_alternatives(pattern)) > 1:
        return set().union(*(instances(a) for a in _alternatives(pattern)))
    if pattern.startswith("[^/]+"):
        return {s + rest for s in SEGMENTS for rest in instances(pattern[5:])}
    if pattern.startswith("[0-9]+"):
        return {"1" + rest for rest in instances(pattern[6:])}
    if pattern.startswith("("):
        end, depth = 0, 1
        while depth:
            end += 1
            depth += {"(": 1, ")": -1}.get(pattern[end], 0)
        inner = pattern[3:end] if pattern.startswith("(?:") else pattern[1:end]
        optional = pattern[end + 1:end + 2] == "?"
        rest = instances(pattern[end + 2:] if optional else pattern[end + 1:])
        heads = instances(inner) | ({""} if optional else set())
        return {h + r for h in heads for r in rest}
    if not pattern:
        return {""}
    assert pattern[0] not in "[]{}*+?\\", f"pattern syntax not modelled: {pattern}"
    return {pattern[0] + rest for rest in instances(pattern[1:])}


def triton_endpoint(protocol: str, path: str) -> Optional[Endpoint]:
    """The endpoint Triton serves a path with: HTTP, the first row in dispatch order that fully
    matches; gRPC, the method of that path. None: Triton answers 404 / UNIMPLEMENTED."""
    for e in catalogue():
        if e.protocol == protocol and (re.fullmatch(e.pattern, path) if protocol == "http" else e.pattern == path):
            return e
    return None


@functools.cache
def samples() -> tuple[tuple[str, str, Endpoint], ...]:
    """(protocol, path, the endpoint Triton serves it with) for every instance of every row: a
    path may belong to an earlier row (`/v2/models/stats` is the statistics of every model)."""
    out = set()
    for e in catalogue():
        for path in instances(e.pattern) if e.protocol == "http" else {e.pattern}:
            served = triton_endpoint(e.protocol, path)
            assert served is not None, path
            out.add((e.protocol, path, served))
    return tuple(sorted(out))


def triton_services(plan) -> list[tuple[dict, dict, list[dict]]]:
    """(pod labels and namespace, VirtualService spec, AuthorizationPolicy specs that apply to
    the pods) of each Triton service of a plan."""
    policies = [r.inputs for r in plan.resources if r.inputs.get("kind") == "AuthorizationPolicy"]
    routes = {r.inputs["metadata"]["namespace"]: r.inputs["spec"] for r in plan.resources
              if r.inputs.get("kind") == "VirtualService"}
    out, seen = [], set()
    for d in plan.of_type(DEPLOYMENT):
        pod = d.inputs["spec"]["template"]
        if pod["spec"]["containers"][0].get("command") != ["tritonserver"]:
            continue
        ns, labels = d.inputs["metadata"]["namespace"], pod["metadata"]["labels"]
        # An LLM service has no VirtualService: its Gateway API route is tested in test_llm_routing.py.
        if ns in seen or ns not in routes:
            continue
        seen.add(ns)

        out.append(({"namespace": ns, **labels}, routes[ns], [p.get("spec", {}) for p in policies if applies(p, ns, labels)]))
    return out


def applies(policy: dict, namespace: str, labels: dict) -> bool:
    """Whether an AuthorizationPolicy applies to pods: in their namespace or the root namespace,
    with a selector their labels satisfy (or none)."""
    selector = policy.get("spec", {}).get("selector", {}).get("matchLabels", {})
    return policy["metadata"]["namespace"] in (namespace, "istio-system") and selector.items() <= labels.items()


def credential(vs: dict) -> Optional[str]:
    """An Authorization value the forwarding routes let through: one Basic credential, any (the
    gateway's basic_auth filter checks it first and its DENY policy refuses what the filter did
    not accept: tests/unit/test_basic_auth.py)."""
    values = {m["headers"]["authorization"]["regex"] for r in vs["http"] if "route" in r
              for m in r.get("match", []) if "authorization" in m.get("headers", {})}
    assert len(values) <= 1
    if not values:
        return None
    value = "Basic dXNlcjpwYXNzd29yZA=="
    assert re.fullmatch(values.pop(), value)
    return value


def reached(vs: dict, policies: list[dict], principal: str, authorization: Optional[str],
            accepted_user: Optional[str] = None) -> set[tuple[str, str]]:
    """(protocol, path) of every sample endpoint a request from the internet reaches: the
    gateway's route forwards it to a Triton port, the sidecar admits it there (with the
    Authorization the gateway forwards: the username its filter accepted), and Triton's
    server on that port serves that path. Sent as JSON and as gRPC: a client chooses its
    content type."""
    out = set()
    forwarded = {"authorization": accepted_user} if accepted_user else {}
    for _, path, _ in samples():
        for content_type in ("application/json", "application/grpc"):
            headers = {"content-type": content_type, **({"authorization": authorization} if authorization else {})}
            kind, port = mesh_eval.route(vs, path, headers)
            if kind != "forward" or not mesh_eval.allowed(policies, principal, port, path, host=vs["hosts"][0],
                                                          headers={**headers, **forwarded}):
                continue
            served = triton_endpoint(PORTS[port], path)
            if served is not None:
                out.add((served.protocol, path))
    return out


@pytest.fixture(scope="module")
def acme_prod():
    return stack_plan("acme-prod")


def ingress_principal(plan) -> str:
    return next(p for _, _, policies in triton_services(plan) for spec in policies for r in spec.get("rules", [])
                for f in r.get("from", []) for p in f["source"].get("principals", []))


def test_the_catalogue_holds_every_triton_category_and_grpc_method():
    rows = catalogue()
    assert {e.category for e in rows} == {"health", "metadata", "inference", "shared-memory", "model-config",
                                          "model-repository", "statistics", "trace", "logging"}
    # grpc_service.proto's 20 methods and the health service's Check.
    assert len([e for e in rows if e.protocol == "grpc"]) == 21
    assert len(samples()) > 100


def test_a_client_reaches_exactly_inference_health_and_metadata(acme_prod):
    services = triton_services(acme_prod)
    assert {labels["app"] for labels, _, _ in services} == {"embed"}
    principal = ingress_principal(acme_prod)
    allow_list = {(protocol, path) for protocol, path, served in samples() if served.category in OPEN}
    assert {s.category for _, _, s in samples() if s.category in OPEN} == OPEN
    for labels, vs, policies in services:
        got = reached(vs, policies, principal, credential(vs), accepted_user=labels["app"])
        closed = {(p, path, s.category) for p, path, s in samples() if (p, path) in got and s.category not in OPEN}
        assert closed == set(), labels["app"]
        assert got == allow_list, labels["app"]
        # The gateway's DENY policy selects the gateway's pods only: a change of it (a rotation, a
        # service added) reaches no sidecar. The gateway refuses what its filter did not accept
        # (tests/unit/test_basic_auth.py); the sidecar admits only the gateway's principal.
        assert all(p.get("action") != "DENY" for p in policies), labels["app"]


def test_the_routes_and_the_policy_each_alone_let_through_only_the_allow_list(acme_prod):
    """Enforced twice: the gateway's routes without any policy, and the sidecar's policy behind
    a route that forwarded everything, each stop every closed endpoint."""
    principal = ingress_principal(acme_prod)
    allow_list = {(protocol, path) for protocol, path, served in samples() if served.category in OPEN}
    for labels, vs, policies in triton_services(acme_prod):
        assert reached(vs, [], principal, credential(vs)) == allow_list, labels["app"]
        admitted = {(protocol, path) for protocol, path, _ in samples()
                    if mesh_eval.allowed(policies, principal, 8000 if protocol == "http" else 8001, path)}
        assert admitted == allow_list, labels["app"]


def test_without_credentials_nothing_reaches_triton(acme_prod):
    principal = ingress_principal(acme_prod)
    for labels, vs, policies in triton_services(acme_prod):
        assert credential(vs) is not None
        assert reached(vs, policies, principal, None) == set(), labels["app"]


def test_a_caller_other_than_the_gateway_is_refused_by_the_sidecar(acme_prod):
    for labels, _, policies in triton_services(acme_prod):
        for protocol, path, _ in samples():
            port = 8000 if protocol == "http" else 8001
            assert not mesh_eval.allowed(policies, f"cluster.local/ns/{labels['namespace']}/sa/other", port, path)


def test_the_model_statistics_path_is_closed_although_it_looks_like_a_model(acme_prod):
    # Triton answers /v2/models/stats with every model's statistics before it looks for a model.
    assert triton_endpoint("http", "/v2/models/stats").category == "statistics"
    principal = ingress_principal(acme_prod)
    for _, vs, policies in triton_services(acme_prod):
        headers = {"content-type": "application/json", "authorization": credential(vs)}
        assert mesh_eval.route(vs, "/v2/models/stats", headers) == ("status", 404)
        assert not mesh_eval.allowed(policies, principal, 8000, "/v2/models/stats")
        assert mesh_eval.route(vs, "/v2/models/stats/ready", headers) == ("forward", 8000)


def _restriction(args: list[str], flag: str) -> tuple[set[str], str, str]:
    """(categories, header, value) of Triton's `--<flag>=<categories>:<header>=<value>`
    (command_line_parser.cc ParseRestrictedFeatureOption / ParseGenericConfigOption)."""
    [value] = [a.split("=", 1)[1] for a in args if a.startswith(f"--{flag}=")]
    categories, _, setting = value.partition(":")
    header, _, key = setting.partition("=")
    return set(categories.split(",")), header, key


def test_triton_closes_every_other_category_to_requests_without_the_admin_key(acme_prod):
    every = {e.category for e in catalogue()}
    secrets = {(r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"]): r
               for r in acme_prod.of_type("kubernetes:core/v1:Secret")}
    deployments = [d for d in acme_prod.of_type(DEPLOYMENT)
                   if d.inputs["spec"]["template"]["spec"]["containers"][0].get("command") == ["tritonserver"]]
    # embed, and llm-chat's two versions behind the OpenAI frontend (which takes no restriction
    # flag at 25.01: the mesh's allow-list alone closes those, serving/openai_frontend.py).
    assert len(deployments) == 1
    for d in deployments:
        container = d.inputs["spec"]["template"]["spec"]["containers"][0]
        http, grpc = (_restriction(container["args"], f) for f in ("http-restricted-api", "grpc-restricted-protocol"))
        assert http == grpc
        categories, header, key = http
        assert categories == every - OPEN and header
        # Kubernetes expands $(VAR) from the container's env; the key itself is only in the Secret.
        assert key == "$(TRITON_ADMIN_KEY)"
        [env] = [e for e in container["env"] if e["name"] == "TRITON_ADMIN_KEY"]
        ref = env["valueFrom"]["secretKeyRef"]
        secret = secrets[(d.inputs["metadata"]["namespace"], ref["name"])]
        assert secret.inputs["stringData"] == "[secret]"
        assert any(u == secret.urn for u in d.depends_on)


def test_the_admin_key_is_generated_per_service_and_never_in_the_plan(acme_prod):
    keys = [r for r in acme_prod.of_type("random:index/randomPassword:RandomPassword") if r.name.endswith("-admin-key")]
    assert {k.name for k in keys} == {"llm-chat-admin-key", "embed-admin-key"}
    text = json.dumps(acme_prod.to_json())
    assert all(k.outputs["result"] not in text for k in keys)


@pytest.mark.parametrize("flag", ["http-restricted-api", "grpc-restricted-protocol"])
def test_server_args_cannot_reopen_or_rekey_a_category(flag):
    problem = triton_flag_problem(flag, "model-repository:x=y")
    assert problem is not None and "is not allowed here" in problem
