"""TritonService: versions, canary weights, mesh auth, autoscaling, probes."""

from __future__ import annotations

import base64
import copy
import json

import pytest

from inference_platform.serving.triton import virtual_service_spec
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from platformctl.diff import diff_plans
from tests.conftest import STACKS, base_config, render_raw, stack_plan

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
HPA = "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"
PDB = "kubernetes:policy/v1:PodDisruptionBudget"


def two_versions(w1: int, w2: int) -> dict:
    raw = base_config()
    v1 = raw["services"][0]["versions"][0]
    raw["services"][0]["versions"] = [dict(v1, weight=w1), dict(copy.deepcopy(v1), name="v2", weight=w2)]
    return raw


def cr(plan, kind: str, name: str):
    found = [r for r in plan.resources if r.type.endswith(f":{kind}") and r.inputs.get("kind") == kind and r.inputs["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind} {name}: {len(found)}"
    return found[0]


def route_weights(vs) -> dict[str, dict[str, int]]:
    return {
        rule["name"]: {d["destination"]["subset"]: d["weight"] for d in rule.get("route", [])}
        for rule in vs.inputs["spec"]["http"]
    }


def test_demo_dev_splits_90_10():
    vs = cr(stack_plan("demo-dev"), "VirtualService", "resnet")
    weights = route_weights(vs)
    assert weights["http"] == {"v1": 90, "v2": 10}
    assert weights["grpc"] == {"v1": 90, "v2": 10}


def test_weights_summing_to_99_are_refused():
    with pytest.raises(ConfigError, match=r"services\[svc\]\.versions: version weights sum to 99"):
        render_raw(two_versions(90, 9))


def test_changing_only_weights_changes_only_the_virtual_service():
    before = render_raw(two_versions(90, 10)).to_json()
    after = render_raw(two_versions(70, 30)).to_json()
    d = diff_plans(before, after)
    assert d["added"] == [] and d["removed"] == []
    assert list(d["changed"]) == ["inference-platform::inference-platform:index:InferencePlatform$inference-platform:index:TritonService$kubernetes:networking.istio.io/v1:VirtualService::svc-virtualservice"]
    assert all(p.startswith("inputs.spec.http[") and p.endswith("].weight") for p in d["changed"][next(iter(d["changed"]))])


def test_promotion_then_removal_touches_only_the_old_version():
    canary = render_raw(two_versions(80, 20)).to_json()
    promoted = render_raw(two_versions(0, 100)).to_json()
    raw = two_versions(0, 100)
    raw["services"][0]["versions"] = raw["services"][0]["versions"][1:]
    removed = render_raw(raw).to_json()

    step1 = diff_plans(canary, promoted)
    assert step1["added"] == [] and step1["removed"] == []
    # The routes move; the canary alert follows the version that now carries the traffic.
    assert sorted(k.rsplit("::", 1)[1] for k in step1["changed"]) == ["svc-virtualservice", "test-dev-observability-rules"]
    # At weight 0 a version keeps its Deployment but loses its routes.
    vs = next(r for r in promoted["resources"] if r["name"] == "svc-virtualservice")
    forwarding = [rule for rule in vs["inputs"]["spec"]["http"] if "route" in rule]
    assert len(forwarding) == 2
    assert all({d["destination"]["subset"] for d in rule["route"]} == {"v2"} for rule in forwarding)

    step2 = diff_plans(promoted, removed)
    assert [k.rsplit("::", 1)[1] for k in step2["removed"]] == ["svc-v1", "svc-v1-hpa"]
    assert step2["added"] == []
    assert [k.rsplit("::", 1)[1] for k in step2["changed"]] == ["svc-destinationrule"]


def test_credentials_never_unredacted():
    plan = stack_plan("demo-dev")
    password = next(r for r in plan.resources if r.type == "random:index/randomPassword:RandomPassword").outputs["result"]
    text = json.dumps(plan.to_json())
    assert password not in text
    assert base64.b64encode(f"resnet:{password}".encode()).decode() not in text
    assert plan.outputs["services"]["resnet"]["credentials"] == "[secret]"


def test_basic_auth_routes_require_a_basic_credential_and_answer_401_without_one():
    settings = parse_settings(base_config(), "stacks/Pulumi.test-dev.yaml")
    spec = virtual_service_spec(settings.services[0], "istio-system/gw")
    forward = [r for r in spec["http"] if "route" in r]
    # The credential itself is checked by the gateway's basic_auth filter, never written in the routes.
    assert all(m["headers"]["authorization"] == {"regex": "Basic [A-Za-z0-9+/]+={0,2}"} for r in forward for m in r["match"])
    last = spec["http"][-1]
    assert last["directResponse"]["status"] == 401
    assert last["headers"]["response"]["set"]["WWW-Authenticate"] == 'Basic realm="svc"'
    assert "match" not in last


def test_auth_secret_holds_generated_credentials():
    plan = stack_plan("demo-dev")
    secret = plan.get("kubernetes:core/v1:Secret", "resnet-basic-auth")
    assert secret.inputs["type"] == "kubernetes.io/basic-auth"
    assert secret.inputs["stringData"] == "[secret]"
    assert plan.outputs["services"]["resnet"]["authSecret"] == "resnet-basic-auth"
    assert plan.outputs["services"]["resnet"]["weights"] == {"v1": 90, "v2": 10}
    assert plan.outputs["services"]["resnet"]["urls"] == ["http://resnet.demo.example.com"]


def test_jwt_mode_renders_request_authentication():
    raw = base_config()
    raw["services"][0]["auth"] = {"mode": "jwt", "jwt": {"issuer": "https://idp.example.com", "jwksUri": "https://idp.example.com/jwks"}}
    plan = render_raw(raw)
    ra = cr(plan, "RequestAuthentication", "svc")
    assert ra.inputs["spec"]["jwtRules"] == [{"issuer": "https://idp.example.com", "jwksUri": "https://idp.example.com/jwks",
                                              "fromHeaders": [{"name": "Authorization", "prefix": "Bearer "}]}]
    ap = cr(plan, "AuthorizationPolicy", "svc")
    assert ap.inputs["spec"]["rules"][0]["from"][0]["source"]["requestPrincipals"] == ["*"]
    assert not plan.of_type("kubernetes:core/v1:Secret") or all("basic-auth" not in r.name for r in plan.of_type("kubernetes:core/v1:Secret"))
    assert plan.of_type("kubernetes:networking.istio.io/v1alpha3:EnvoyFilter") == []
    assert "unauthorized" not in route_weights(cr(plan, "VirtualService", "svc"))


def test_auth_none_has_no_credentials_or_401():
    raw = base_config()
    raw["services"][0]["auth"] = {"mode": "none"}
    plan = render_raw(raw)
    # The service's only generated password is Triton's admin key, no Basic Auth credential.
    assert [r.name for r in plan.of_type("random:index/randomPassword:RandomPassword") if r.name.startswith("svc-")] \
        == ["svc-admin-key"]
    assert plan.outputs["services"]["svc"]["credentials"] is None
    assert [r["name"] for r in forwarding_rules(plan, "svc")] == ["grpc", "http"]
    assert "unauthorized" not in route_weights(cr(plan, "VirtualService", "svc"))


def test_startup_probe_covers_model_load():
    raw = base_config()
    raw["services"][0]["versions"][0] |= {"modelLoadSeconds": 1500, "startupBudgetSeconds": 1800}
    plan = render_raw(raw)
    container = plan.get(DEPLOYMENT, "svc-v1").inputs["spec"]["template"]["spec"]["containers"][0]
    probe = container["startupProbe"]
    assert probe["periodSeconds"] * probe["failureThreshold"] >= 1800 >= 1500
    assert probe["httpGet"]["path"] == "/v2/health/ready"
    assert container["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"


def test_hpa_scales_on_queue_time_and_backlog_and_deployment_has_no_replicas():
    raw = base_config()
    raw["services"][0]["autoscaling"] = {"minReplicas": 2, "maxReplicas": 5, "queueTimeTargetUs": 30000,
                                         "pendingRequestsTarget": 12}
    plan = render_raw(raw)
    deployment = plan.get(DEPLOYMENT, "svc-v1")
    assert "replicas" not in deployment.inputs["spec"]
    hpa = plan.get(HPA, "svc-v1-hpa").inputs["spec"]
    assert hpa["scaleTargetRef"]["name"] == deployment.outputs["metadata"]["name"]
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (2, 5)
    targets = {m["pods"]["metric"]["name"]: m["pods"]["target"] for m in hpa["metrics"]}
    assert targets == {"avg_time_queue_us": {"type": "AverageValue", "averageValue": "30000"},
                       "triton_pending_requests": {"type": "AverageValue", "averageValue": "12"}}
    assert plan.get(PDB, "svc-v1-pdb").inputs["spec"]["maxUnavailable"] == 1


def test_without_autoscaling_the_deployment_sets_replicas():
    raw = base_config()
    raw["services"][0]["autoscaling"] = {"enabled": False}
    raw["services"][0]["versions"][0]["replicas"] = 3
    raw["cluster"]["nodeGroups"][1]["maxNodes"] = 3
    plan = render_raw(raw)
    assert plan.get(DEPLOYMENT, "svc-v1").inputs["spec"]["replicas"] == 3
    assert not plan.of_type(HPA)
    assert plan.get(PDB, "svc-v1-pdb")


def test_pod_meets_restricted_profile_and_rolls_without_downtime():
    spec = stack_plan("demo-dev").get(DEPLOYMENT, "resnet-v1").inputs["spec"]
    pod = spec["template"]["spec"]
    c = pod["containers"][0]["securityContext"]
    assert c["allowPrivilegeEscalation"] is False and c["capabilities"]["drop"] == ["ALL"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert pod["topologySpreadConstraints"][0]["topologyKey"] == "kubernetes.io/hostname"
    shm = next(v for v in pod["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": "1Gi"}


def test_mirror_copies_traffic_to_shadow_version():
    raw = two_versions(100, 0)
    raw["services"][0]["mirror"] = {"version": "v2", "percent": 25}
    vs = cr(render_raw(raw), "VirtualService", "svc")
    forwarding = [rule for rule in vs.inputs["spec"]["http"] if "route" in rule]
    assert len(forwarding) == 2
    for rule in forwarding:
        assert rule["mirror"]["subset"] == "v2"
        assert rule["mirrorPercentage"] == {"value": 25}


def test_server_flags_outside_allow_list_refused():
    raw = base_config()
    raw["services"][0]["versions"][0]["serverArgs"] = {"model-repository": "/tmp"}
    with pytest.raises(ConfigError, match=r"serverArgs: Value error, Triton flag 'model-repository' is not allowed|serverArgs: Triton flag 'model-repository' is not allowed"):
        parse_settings(raw, "stacks/Pulumi.test-dev.yaml")


def test_tuning_flags_reach_tritonserver():
    raw = base_config()
    raw["services"][0]["versions"][0] |= {
        "serverArgs": {"log-verbose": "1"},
        "modelConfigName": "h100-batch",
        "modelControl": {"mode": "explicit", "load": ["resnet50"]},
    }
    args = render_raw(raw).get(DEPLOYMENT, "svc-v1").inputs["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--model-control-mode=explicit" in args
    assert "--load-model=resnet50" in args
    assert "--model-config-name=h100-batch" in args
    assert "--log-verbose=1" in args


def test_mesh_objects_restrict_callers():
    plan = stack_plan("demo-dev")
    ns = plan.get("kubernetes:core/v1:Namespace", "demo-dev-namespaces-resnet")
    assert ns.inputs["metadata"]["labels"]["istio-injection"] == "enabled"
    pa = cr(plan, "PeerAuthentication", "resnet")
    assert pa.inputs["spec"]["mtls"]["mode"] == "STRICT"
    np_ = plan.get("kubernetes:networking.k8s.io/v1:NetworkPolicy", "resnet-networkpolicy").inputs["spec"]
    assert np_["policyTypes"] == ["Ingress"]
    assert {p["port"] for p in np_["ingress"][0]["ports"]} == {8000, 8001}
    dr = cr(plan, "DestinationRule", "resnet").inputs["spec"]
    assert [s["name"] for s in dr["subsets"]] == ["v1", "v2"]
    # A busy pod answers 503 (Triton's queue is full): that must not eject it, or its load moves
    # onto the others and saturates them in turn. Only failures to answer at all eject a pod.
    outlier = dr["trafficPolicy"]["outlierDetection"]
    assert outlier["splitExternalLocalOriginErrors"] is True and outlier["consecutiveLocalOriginFailures"] > 0
    assert outlier["consecutive5xxErrors"] == 0 and "consecutiveGatewayErrors" not in outlier
    # Retries are bounded by the load, so a retry storm cannot multiply an overload.
    assert dr["trafficPolicy"]["retryBudget"] == {"percent": 20, "minRetryConcurrency": 3}


def test_versions_read_weights_from_their_cache():
    plan = stack_plan("acme-prod")
    chat = plan.get(DEPLOYMENT, "llm-chat-v7").inputs["spec"]["template"]["spec"]
    claim = next(v for v in chat["volumes"] if v["name"] == "models")["persistentVolumeClaim"]
    assert claim == {"claimName": "model-weights", "readOnly": True}
    assert "--model-repository=/models/llm-chat/v7" in chat["containers"][0]["args"]
    embed = plan.get(DEPLOYMENT, "embed-v1").inputs["spec"]["template"]["spec"]["containers"][0]
    assert embed["envFrom"] == [{"secretRef": {"name": "model-weights-s3"}}]
    # Triton's form for a non-AWS endpoint over HTTPS: s3://https://host:port/bucket/path
    assert "--model-repository=s3://https://s3.acme-cloud.example:443/acme-prod-model-weights/embed/v1" in embed["args"]
    # The Deployment waits for the claim and the credentials in its namespace.
    deps = {plan.by_urn(u).type for u in plan.get(DEPLOYMENT, "embed-v1").depends_on}
    assert "kubernetes:core/v1:Secret" in deps


def test_platformctl_diff_of_a_weight_edit_in_a_stack_file_shows_one_change(tmp_path):
    import subprocess
    import sys

    from tests.conftest import ROOT

    # The edit and its plan stay in tmp_path: other tests collect stacks/ while this one runs.
    edited = tmp_path / "Pulumi.demo-dev.yaml"
    text = (ROOT / "stacks" / "Pulumi.demo-dev.yaml").read_text()
    edited.write_text(text.replace("weight: 90", "weight: 70").replace("weight: 10", "weight: 30"))
    ctl = [sys.executable, "-m", "platformctl"]
    subprocess.run([*ctl, "plan", "demo-dev", "--stack-file", str(edited), "--out", str(tmp_path / "plan")],
                   cwd=ROOT, capture_output=True, check=True)
    out = subprocess.run([*ctl, "diff", "demo-dev", str(tmp_path / "plan")],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "0 to create, 1 to update, 0 to replace, 0 to delete; 0 errors" in out.splitlines()
    assert "~ update kubernetes:networking.istio.io/v1:VirtualService resnet-virtualservice" in out
    assert "inputs.spec.http[0].route[0].weight: 90 -> 70" in out


def test_route_durations_are_exact_protobuf_durations():
    raw = base_config()
    raw["services"][0]["timeoutSeconds"] = 1234.5678
    raw["services"][0]["retries"] = {"perTryTimeoutSeconds": 0.25}
    spec = virtual_service_spec(parse_settings(raw, "stacks/Pulumi.t.yaml").services[0], "istio-system/gw")
    for route in (r for r in spec["http"] if "route" in r):
        assert route["timeout"] == "1234568ms"
        assert route["retries"]["perTryTimeout"] == "250ms"


# --------------------------------------------------------------------------- timeouts and retries

# Envoy conditions (router filter docs, x-envoy-retry-on / x-envoy-retry-grpc-on) that fire
# only when Triton never started the request: no connection, REFUSED_STREAM, or a gRPC
# UNAVAILABLE status in the response headers (Triton's answer while not ready).
BEFORE_TRITON_RAN = {"connect-failure", "refused-stream", "unavailable"}


def forwarding_rules(plan, service: str) -> list[dict]:
    return [rule for rule in cr(plan, "VirtualService", service).inputs["spec"]["http"] if "route" in rule]


def test_a_long_llm_request_is_never_cut_and_rerun():
    # acme-prod's llm-chat: 120 s route timeout; a 40 s generation must run once, to the end.
    # It is an LLM service: its HTTPRoute (serving/llm_routing.py) bounds the whole stream and never retries.
    (route,) = [r for r in stack_plan("acme-prod").resources if r.name == "llm-chat-httproute"]
    (rule,) = route.inputs["spec"]["rules"]
    assert rule["timeouts"] == {"request": "120s"}
    assert "retry" not in rule


def test_a_shorter_per_try_timeout_is_rendered():
    raw = base_config()
    raw["services"][0] |= {"timeoutSeconds": 90, "retries": {"perTryTimeoutSeconds": 30, "retryOn": "reset,503"}}
    spec = virtual_service_spec(parse_settings(raw, "stacks/Pulumi.t.yaml").services[0], "istio-system/gw")
    assert {r["name"]: r["retries"] for r in spec["http"] if "route" in r} == {
        name: {"attempts": 2, "retryOn": "reset,503", "perTryTimeout": "30s"} for name in ("grpc", "http")
    }


def test_zero_attempts_turns_retries_off_instead_of_istios_default():
    raw = base_config()
    raw["services"][0]["retries"] = {"attempts": 0}
    spec = virtual_service_spec(parse_settings(raw, "stacks/Pulumi.t.yaml").services[0], "istio-system/gw")
    # Without a retries block Istio would retry twice; attempts 0 sets no retry policy.
    assert [r["retries"] for r in spec["http"] if "route" in r] == [{"attempts": 0}, {"attempts": 0}]


def test_per_try_timeout_above_the_route_timeout_is_refused():
    raw = base_config()
    raw["services"][0] |= {"timeoutSeconds": 60, "retries": {"perTryTimeoutSeconds": 61}}
    with pytest.raises(ConfigError) as info:
        parse_settings(raw, "stacks/Pulumi.t.yaml")
    assert info.value.paths == ["inference-platform:services[svc].retries.perTryTimeoutSeconds"]
    assert "exceeds the service's timeoutSeconds (60 s)" in info.value.one_line()


# --------------------------------------------------------------------------- graceful shutdown

def _stack_files() -> list:
    from tests.conftest import ROOT

    return sorted(ROOT.glob("stacks/Pulumi.*.yaml")) + sorted(ROOT.glob("tests/data/Pulumi.*.yaml"))


def _pod_templates(settings):
    """(service, version, pod template) of every version, as deployment_spec builds them
    (an ensemble graph's TritonService among them)."""
    from inference_platform.serving.triton import deployment_spec
    from inference_platform.settings.graphs import graph_workload

    ensembles = [graph_workload(g) for g in settings.graphs if g.placement == "ensemble"]
    for service in [*settings.services, *ensembles]:
        for version in service.versions:
            spec = deployment_spec(service, version, settings.node_group(version.gpu.group), "sa", "/models/x",
                                   s3_secret=None, claim="weights", autoscaled=True, mount_path="/models")
            yield service, version, spec["template"]


@pytest.mark.parametrize("path", _stack_files(), ids=lambda p: p.name)
def test_every_version_drains_for_its_route_timeout(path):
    from inference_platform.serving.shutdown import shutdown_problems
    from platformctl.engine import stack_settings

    templates = list(_pod_templates(stack_settings(path)))
    assert templates
    for service, version, template in templates:
        assert shutdown_problems(template, service.timeout_seconds) == [], f"{service.name}/{version.name}"


def long_generation_pod() -> dict:
    """A tritonserver version whose route allows 120 s generations (the test stack's svc)."""
    raw = base_config()
    raw["services"][0]["timeoutSeconds"] = 120
    return render_raw(raw).get(DEPLOYMENT, "svc-v1").inputs["spec"]["template"]


def test_a_long_generation_pod_drains_past_its_120s_timeout():
    pod = long_generation_pod()
    triton = pod["spec"]["containers"][0]
    assert "--exit-timeout-secs=120" in triton["args"]
    assert triton["lifecycle"] == {"preStop": {"sleep": {"seconds": 15}}}
    assert pod["spec"]["terminationGracePeriodSeconds"] == 150
    assert pod["metadata"]["annotations"]["sidecar.istio.io/nativeSidecar"] == "true"
    assert json.loads(pod["metadata"]["annotations"]["proxy.istio.io/config"]) == {"terminationDrainDuration": "135s"}


@pytest.mark.parametrize("breakage,words", [
    (lambda t: t["spec"].update(terminationGracePeriodSeconds=60), "grace period 60s does not outlast"),
    (lambda t: t["spec"]["containers"][0]["args"].append("--exit-timeout-secs=30"), "exit timeout 30s is shorter than the route timeout 120s"),
    (lambda t: t["metadata"]["annotations"].pop("sidecar.istio.io/nativeSidecar"), None),
    (lambda t: t["metadata"].pop("annotations"), "a classic sidecar drains 5s"),
], ids=["grace-60", "triton-default-exit", "classic-sidecar-with-drain", "classic-sidecar-default-drain"])
def test_a_broken_shutdown_combination_is_caught(breakage, words):
    from inference_platform.serving.shutdown import shutdown_problems

    template = copy.deepcopy(long_generation_pod())
    breakage(template)
    problems = shutdown_problems(template, 120)
    if words is None:  # a classic sidecar told to drain long enough is fine
        assert problems == []
    else:
        assert any(words in p for p in problems), problems


def test_exit_timeout_in_server_args_may_only_raise_the_platforms():
    raw = base_config()
    raw["services"][0]["timeoutSeconds"] = 90
    raw["services"][0]["versions"][0]["serverArgs"] = {"exit-timeout-secs": "300"}
    args = render_raw(raw).get(DEPLOYMENT, "svc-v1").inputs["spec"]["template"]["spec"]["containers"][0]["args"]
    assert [a for a in args if a.startswith("--exit-timeout-secs")] == ["--exit-timeout-secs=300"]
    raw["services"][0]["versions"][0]["serverArgs"] = {"exit-timeout-secs": 60}
    with pytest.raises(ConfigError) as info:
        parse_settings(raw, "stacks/Pulumi.t.yaml")
    assert info.value.paths == ["inference-platform:services[svc].versions[v1].serverArgs.exit-timeout-secs"]
    assert "allowed: at least 90" in info.value.one_line()


# --------------------------------------------------------------------------- Triton flags

def _flag_catalogue() -> dict[str, bool]:
    """tritonserver r25.01's long options -> repeatable?"""
    from tests.conftest import ROOT

    rows = (ROOT / "tests" / "catalogues" / "tritonserver-r25.01-flags.txt").read_text().splitlines()
    return {r.split()[0]: r.split()[1:] == ["repeatable"] for r in rows if r and not r.startswith("#")}


def test_every_allowed_flag_is_a_real_tritonserver_flag():
    from inference_platform.settings.triton_flags import TRITON_REPEATABLE_FLAGS, TRITON_SERVER_FLAGS

    catalogue = _flag_catalogue()
    assert len(catalogue) == 87
    assert sorted(TRITON_SERVER_FLAGS - set(catalogue)) == []
    # A list is offered exactly where Triton keeps every occurrence.
    assert TRITON_REPEATABLE_FLAGS == {f for f in TRITON_SERVER_FLAGS if catalogue[f]}


def test_flags_the_platform_sets_are_not_allowed():
    from inference_platform.serving.triton_server import triton_args
    from inference_platform.settings.loader import parse_settings
    from inference_platform.settings.triton_flags import EXIT_TIMEOUT_FLAG, TRITON_SERVER_FLAGS

    raw = base_config()
    raw["services"][0]["versions"][0] |= {"modelConfigName": "h100", "modelControl": {"mode": "explicit", "load": ["m"]}}
    explicit = parse_settings(raw, "stacks/Pulumi.t.yaml").services[0].versions[0]
    raw["services"][0]["versions"][0]["modelControl"] = {"mode": "poll"}
    poll = parse_settings(raw, "stacks/Pulumi.t.yaml").services[0].versions[0]
    platform_flags = {a[2:].split("=")[0] for v in (explicit, poll) for a in triton_args(v, "/models", 60)}
    assert {"model-repository", "model-control-mode", "load-model", "repository-poll-secs", "http-port"} <= platform_flags
    # The exit timeout is the platform's too, but serverArgs may raise it (checked above).
    assert platform_flags & TRITON_SERVER_FLAGS == {EXIT_TIMEOUT_FLAG}
    catalogue = _flag_catalogue()
    assert platform_flags <= set(catalogue)


def test_repeatable_flags_render_one_flag_per_item_in_order():
    raw = base_config()
    raw["services"][0]["versions"][0]["serverArgs"] = {
        "backend-config": ["tensorrtllm,decoupled=true", "python,shm-default-byte-size=16777216", "tensorrtllm,a=1"],
        "metrics-config": ["summary_latencies=true"],
        "log-verbose": 1,
    }
    args = render_raw(raw).get(DEPLOYMENT, "svc-v1").inputs["spec"]["template"]["spec"]["containers"][0]["args"]
    assert [a for a in args if a.startswith("--backend-config")] == [
        "--backend-config=tensorrtllm,decoupled=true",
        "--backend-config=python,shm-default-byte-size=16777216",
        "--backend-config=tensorrtllm,a=1",
    ]
    assert "--metrics-config=summary_latencies=true" in args and "--log-verbose=1" in args


@pytest.mark.parametrize("args,words", [
    ({"log-verbose": ["1", "2"]}, "--log-verbose takes one value, not a list"),
    ({"backend-config": []}, "--backend-config needs at least one value"),
    ({"backend-config": ["python,a=1", "--model-repository=/"]}, "must be one token"),
    ({"buffer-management-thread-count": "2"}, "'buffer-management-thread-count' is not allowed"),
    ({"model-load-gpu-limit": ["0:1.5"]}, "<GPU device id>:<fraction 0-1>"),
    ({"cuda-memory-pool-byte-size": ["0=64"]}, "<GPU device id>:<bytes>"),
], ids=["list-on-single-flag", "empty-list", "hostile-item", "old-misspelt-flag", "gpu-limit-over-1", "pool-bad-pair"])
def test_bad_server_args_are_refused(args, words):
    raw = base_config()
    raw["services"][0]["versions"][0]["serverArgs"] = args
    with pytest.raises(ConfigError) as info:
        parse_settings(raw, "stacks/Pulumi.t.yaml")
    assert info.value.paths == ["inference-platform:services[svc].versions[v1].serverArgs"]
    assert words in info.value.one_line() and "\n" not in info.value.one_line()


def test_buffer_manager_thread_count_reaches_tritonserver():
    raw = base_config()
    raw["services"][0]["versions"][0]["serverArgs"] = {"buffer-manager-thread-count": "4", "model-load-gpu-limit": ["0:0.9", "1:0.8"]}
    args = render_raw(raw).get(DEPLOYMENT, "svc-v1").inputs["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--buffer-manager-thread-count=4" in args
    assert [a for a in args if "gpu-limit" in a] == ["--model-load-gpu-limit=0:0.9", "--model-load-gpu-limit=1:0.8"]


@pytest.mark.parametrize("stack", STACKS)
def test_no_triton_pod_keeps_an_idle_gpu_node_from_scaling_down(stack):
    """cluster-autoscaler 1.34.5 utils/drain/drain.go HasBlockingLocalStorage: every disk-backed
    emptyDir of a pod, the platform's and the ones istiod's injector adds (istio 1.30.3
    injection-template.yaml: workload-socket, credential-socket, workload-certs, istio-data), blocks
    its node's scale-down unless safe-to-evict-local-volumes names it."""
    injected = {"workload-socket", "credential-socket", "workload-certs", "istio-data"}
    for deployment in stack_plan(stack).of_type(DEPLOYMENT):
        template = deployment.inputs["spec"]["template"]
        pod = template["spec"]
        if not any(c.get("name") == "triton" for c in pod["containers"]):
            continue
        disk = {v["name"] for v in pod.get("volumes", []) if "emptyDir" in v and v["emptyDir"].get("medium") != "Memory"}
        named = set(template["metadata"]["annotations"].get(
            "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes", "").split(","))
        assert disk | injected <= named, (deployment.name, sorted((disk | injected) - named))
