"""The alert and recording rules: promtool checks every group, and unit tests show
each alert firing on bad data and staying quiet on good data."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from inference_platform.observability import alerts
from inference_platform.settings.observability import AlertingSettings
from platformctl.engine import stack_settings
from tests.conftest import observability_inputs
from tests.support.metric_catalogue import known_metrics, metric_names

SETTINGS = stack_settings("demo-dev")  # a 90/10 canary (resnet v1/v2) and GPU group gpu-a100 (max 3 nodes)
GROUPS = alerts.rule_groups(observability_inputs(SETTINGS))
T = SETTINGS.observability.alerts
BUDGET = max(v.startup_budget_seconds for v in SETTINGS.services[0].versions)


def with_llm_canary(settings):
    """demo-dev whose canary v2 runs vLLM, which reserves most GPU memory by design."""
    svc = settings.services[0]
    versions = [svc.versions[0], svc.versions[1].model_copy(update={"llm_backend": "vllm"})]
    return settings.model_copy(update={"services": [svc.model_copy(update={"versions": versions})]})


LLM_GROUPS = alerts.rule_groups(observability_inputs(with_llm_canary(SETTINGS)))


@pytest.fixture(scope="module")
def promtool():
    path = shutil.which("promtool")
    assert path, "promtool is missing: apt-get install prometheus"
    return path


def write_rules(path, groups):
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return path


@pytest.fixture
def rules_file(tmp_path):
    return write_rules(tmp_path / "rules.yml", GROUPS)


def test_every_group_passes_promtool_check(promtool, tmp_path):
    for group in GROUPS:
        path = tmp_path / f"{group['name']}.yml"
        path.write_text(yaml.safe_dump({"groups": [group]}, sort_keys=False))
        result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "SUCCESS" in result.stdout


def test_promtool_rejects_a_broken_rule(promtool, tmp_path):
    """The check above would notice a broken expression."""
    path = tmp_path / "broken.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "x", "rules": [{"alert": "X", "expr": "sum(rate(x[5m])"}]}]}))
    assert subprocess.run([promtool, "check", "rules", str(path)], capture_output=True).returncode != 0


def test_every_alert_the_issue_asks_for_exists():
    assert alerts.alert_names(GROUPS) == {
        "TritonQueueTimeHigh", "TritonFailureRatioHigh", "TritonPodNotReady", "TritonHpaAtMax", "ServiceRouteTimeouts",
        "CanaryErrorRatioAboveStable", "CanaryNotServing",
        "GpuMemoryNearlyFull", "GpuXidFault", "GpuXidError", "GpuPodsPending", "GpuNodeGroupAtMax",
    }


def test_every_alert_has_a_severity_alertmanager_routes():
    for group in GROUPS + LLM_GROUPS:
        for rule in group["rules"]:
            if "alert" in rule:
                assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]


def test_xid_fault_codes_and_grpc_codes_are_disjoint_sets_of_known_codes():
    """Every XID is either a GPU fault or not; the gRPC codes are server-side ones, never a client's."""
    assert len(set(alerts.GPU_FAULT_XIDS)) == len(alerts.GPU_FAULT_XIDS)
    client_codes = {1, 3, 5, 6, 7, 9, 10, 11, 16}  # CANCELLED, INVALID_ARGUMENT, NOT_FOUND, ..., UNAUTHENTICATED
    assert not client_codes & set(alerts.GRPC_SERVER_ERROR_CODES)
    assert 0 not in alerts.GRPC_SERVER_ERROR_CODES


def test_rules_name_only_real_metrics():
    known = known_metrics() | alerts.recorded_names(GROUPS)
    for group in GROUPS:
        for rule in group["rules"]:
            unknown = metric_names(rule["expr"]) - known - {"vector"}
            assert not unknown, f"{rule.get('alert') or rule.get('record')}: {unknown}"


def test_thresholds_come_from_config():
    raw = SETTINGS.model_copy(update={"observability": SETTINGS.observability.model_copy(update={
        "alerts": T.model_copy(update={"queue_time_ms": 250.0, "failure_ratio": 0.2, "gpu_memory_ratio": 0.8})})})
    exprs = {r["alert"]: r["expr"] for g in alerts.rule_groups(observability_inputs(raw)) for r in g["rules"] if "alert" in r}
    assert exprs["TritonQueueTimeHigh"].endswith("> 250")
    assert "> 0.2, " in exprs["TritonFailureRatioHigh"]
    assert exprs["GpuMemoryNearlyFull"].endswith("> 0.8")


def test_canary_rules_follow_the_weights():
    canary = [r for g in GROUPS for r in g["rules"] if r.get("alert") == "CanaryErrorRatioAboveStable"]
    assert len(canary) == 1
    assert canary[0]["labels"]["stable_version"] == "v1"
    assert canary[0]["labels"]["namespace"] == "resnet"  # so criticals about resnet inhibit it
    assert 'destination_version="v2"' in canary[0]["expr"].split(">")[0]
    single = SETTINGS.model_copy(update={"services": [SETTINGS.services[0].model_copy(
        update={"versions": [SETTINGS.services[0].versions[0].model_copy(update={"weight": 100})]})]})
    assert not {"CanaryErrorRatioAboveStable", "CanaryNotServing"} & alerts.alert_names(alerts.rule_groups(observability_inputs(single)))


def test_gpu_memory_alert_skips_only_preallocating_versions():
    plain = next(r for g in GROUPS for r in g["rules"] if r.get("alert") == "GpuMemoryNearlyFull")
    llm = next(r for g in LLM_GROUPS for r in g["rules"] if r.get("alert") == "GpuMemoryNearlyFull")
    assert "unless" not in plain["expr"]
    assert 'label_version=~"v2"' in llm["expr"] and '"v1' not in llm["expr"]


# --------------------------------------------------------------------------- promtool test rules


def case(series: dict[str, str], alert: str, expected: list[dict], eval_time: str = "40m") -> dict:
    return {
        "interval": "1m",
        "input_series": [{"series": s, "values": v} for s, v in series.items()],
        "alert_rule_test": [{"eval_time": eval_time, "alertname": alert, "exp_alerts": expected}],
    }


def fired(summary: str, **labels: str) -> dict:
    return {"exp_labels": labels, "exp_annotations": {"summary": summary}}


TRITON = 'namespace="resnet",pod="resnet-v1-0",model="resnet50",version="1"'
ISTIO = 'reporter="destination",destination_workload_namespace="resnet",destination_service_name="resnet"'
GPU = 'gpu="0",Hostname="gpu-a100-node-0"'
NODE = 'kube_node_labels{{node="gpu-a100-node-{i}",label_inference_platform_node_group="gpu-a100"}}'


def istio(v1_errors: str, v2_errors: str) -> dict[str, str]:
    return {
        f'istio_requests_total{{{ISTIO},destination_version="v1",response_code="200"}}': "0+100x50",
        f'istio_requests_total{{{ISTIO},destination_version="v1",response_code="503"}}': f"0+{v1_errors}x50",
        f'istio_requests_total{{{ISTIO},destination_version="v2",response_code="200"}}': "0+100x50",
        f'istio_requests_total{{{ISTIO},destination_version="v2",response_code="503"}}': f"0+{v2_errors}x50",
    }


GATEWAY = ('reporter="source",source_workload="istio-ingressgateway",source_workload_namespace="istio-system",'
           'destination_service="resnet.resnet.svc.cluster.local",destination_service_name="resnet"')


def grpc(v2_status: str) -> dict[str, str]:
    """gRPC traffic: every answer is HTTP 200; v2 fails 10% with the given grpc-status."""
    ok = f'{ISTIO},request_protocol="grpc",response_code="200",grpc_response_status="0"'
    return {
        f'istio_requests_total{{{ok},destination_version="v1"}}': "0+100x50",
        f'istio_requests_total{{{ok},destination_version="v2"}}': "0+100x50",
        f'istio_requests_total{{{ISTIO},request_protocol="grpc",response_code="200",grpc_response_status="{v2_status}",'
        f'destination_version="v2"}}': "0+11x50",
    }


def canary_traffic(gateway: bool, stable: bool, canary: bool) -> dict[str, str]:
    """The gateway's source-side series (503 UH to an unknown version when no canary pod is ready),
    and the destination-side series of the versions that answer."""
    series = {}
    if gateway:
        series[f'istio_requests_total{{{GATEWAY},destination_version="v1",response_code="200",response_flags="-"}}'] = "0+90x50"
        series[f'istio_requests_total{{{GATEWAY},destination_version="unknown",response_code="503",response_flags="UH"}}'] = "0+10x50"
    if stable:
        series[f'istio_requests_total{{{ISTIO},destination_version="v1",response_code="200"}}'] = "0+90x50"
    # A canary that stopped answering 20 minutes ago leaves a flat counter behind.
    series[f'istio_requests_total{{{ISTIO},destination_version="v2",response_code="200"}}'] = "0+10x50" if canary else "0+10x20 200x30"
    return series


def failures(**versions: tuple[str, int, int]) -> dict[str, str]:
    """Per version of resnet: (failure reason, failures a minute, successes a minute) on one pod."""
    series = {}
    for version, (reason, failed, ok) in versions.items():
        pod = f'namespace="resnet",pod="resnet-{version}-0"'
        labels = f'{pod},model="resnet50",version="1"'
        series[f'nv_inference_request_failure{{{labels},reason="{reason}"}}'] = f"0+{failed}x50"
        series[f"nv_inference_request_success{{{labels}}}"] = f"0+{ok}x50"
        series[f'kube_pod_labels{{{pod},label_app="resnet",label_version="{version}"}}'] = "1x50"
    return series


def gateway_answers(ok: int, timed_out: int) -> dict[str, str]:
    """The gateway's source-side series for resnet: `ok` answers a minute, `timed_out` 504s (UT)."""
    return {
        f'istio_requests_total{{{GATEWAY},destination_version="v1",response_code="200",response_flags="-"}}': f"0+{ok}x50",
        f'istio_requests_total{{{GATEWAY},destination_version="v1",response_code="504",response_flags="UT"}}': f"0+{timed_out}x50",
    }


def low_traffic_healthy_canary() -> dict[str, str]:
    """3 requests a minute through the gateway, all to the stable version by the luck of a 10%
    weight; the canary is ready and its counter was last moved an hour ago."""
    return {
        f'istio_requests_total{{{GATEWAY},destination_version="v1",response_code="200",response_flags="-"}}': "0+3x50",
        f'istio_requests_total{{{ISTIO},destination_version="v1",response_code="200"}}': "0+3x50",
        f'istio_requests_total{{{ISTIO},destination_version="v2",response_code="200"}}': "7x50",
    }


def not_ready(ready_after_minutes: int) -> dict[str, str]:
    pod = 'namespace="resnet",pod="resnet-v1-abc",uid="u1"'
    ready = f"0x{ready_after_minutes} 1x{50 - ready_after_minutes}"
    return {
        f'kube_pod_status_ready{{{pod},condition="true"}}': ready,
        f'kube_pod_status_phase{{{pod},phase="Running"}}': "1x50",
        f'kube_pod_labels{{{pod},label_app="resnet",label_version="v1"}}': "1x50",
    }


def hpa(current: int, min_replicas: int = 1) -> dict[str, str]:
    h = 'namespace="resnet",horizontalpodautoscaler="resnet-v1-hpa-1a2b3c"'
    return {
        f"kube_horizontalpodautoscaler_status_current_replicas{{{h}}}": f"{current}x50",
        f"kube_horizontalpodautoscaler_spec_max_replicas{{{h}}}": "4x50",
        f"kube_horizontalpodautoscaler_spec_min_replicas{{{h}}}": f"{min_replicas}x50",
    }


def gpu_memory_of_pod(version: str) -> dict[str, str]:
    """A full GPU used by a resnet pod (DCGM's namespace/pod arrive as exported_*)."""
    gpu = f'{GPU},exported_namespace="resnet",exported_pod="resnet-{version}-0"'
    pod = f'namespace="resnet",pod="resnet-{version}-0"'
    return {
        f"DCGM_FI_DEV_FB_USED{{{gpu}}}": "79000x50", f"DCGM_FI_DEV_FB_FREE{{{gpu}}}": "1000x50",
        f'kube_pod_labels{{{pod},label_app="resnet",label_version="{version}"}}': "1x50",
    }


def pending(priority_class: str) -> dict[str, str]:
    pod = 'namespace="resnet",pod="p"'
    return {
        f'kube_pod_status_phase{{{pod},phase="Pending"}}': "1x50",
        f'kube_pod_container_resource_requests{{{pod},container="triton",resource="nvidia_com_gpu"}}': "1x50",
        f'kube_pod_info{{{pod},priority_class="{priority_class}"}}': "1x50",
    }


CASES = {
    # 10 requests a minute, each queued 200 ms (firing) or 50 ms (quiet); threshold 100 ms.
    "queue-time-fires": case(
        {f"nv_inference_queue_duration_us{{{TRITON}}}": "0+2000000x50", f"nv_inference_request_success{{{TRITON}}}": "0+10x50"},
        "TritonQueueTimeHigh",
        [fired(f"Triton resnet/resnet-v1-0 model resnet50: requests wait 200 ms in the queue (threshold {T.queue_time_ms:g} ms)",
               severity="warning", namespace="resnet", pod="resnet-v1-0", model="resnet50")],
    ),
    "queue-time-quiet": case(
        {f"nv_inference_queue_duration_us{{{TRITON}}}": "0+500000x50", f"nv_inference_request_success{{{TRITON}}}": "0+10x50"},
        "TritonQueueTimeHigh", [],
    ),
    "failures-fire": case(
        failures(v1=("REJECTED", 1, 9)),
        "TritonFailureRatioHigh",
        [fired("Triton model resnet50 of resnet v1 in resnet fails 10% of requests", severity="critical", namespace="resnet",
               model="resnet50", label_app="resnet", label_version="v1", triton_service="resnet")],
    ),
    "failures-quiet": case(failures(v1=("REJECTED", 1, 99)), "TritonFailureRatioHigh", []),
    # Clients hanging up (a closed stream, a cancelled call) are not the server failing.
    "cancellations-quiet": case(failures(v1=("CANCELED", 5, 5)), "TritonFailureRatioHigh", []),
    # A canary failing 20% is not averaged away by a busy stable version that fails none.
    "failing-canary-beside-a-healthy-stable-fires": case(
        failures(v1=("REJECTED", 0, 1000), v2=("BACKEND", 2, 8)),
        "TritonFailureRatioHigh",
        [fired("Triton model resnet50 of resnet v2 in resnet fails 20% of requests", severity="critical", namespace="resnet",
               model="resnet50", label_app="resnet", label_version="v2", triton_service="resnet")],
    ),
    "canary-fires": case(
        istio("1", "10"),
        "CanaryErrorRatioAboveStable",
        [fired("resnet v2 fails (5xx, gRPC server error or Triton failure) more often than v1: 9.091%", severity="warning", triton_service="resnet",
               namespace="resnet", stable_version="v1", canary_version="v2", destination_workload_namespace="resnet",
               destination_service_name="resnet")],
    ),
    "canary-as-good-as-stable": case(istio("1", "1"), "CanaryErrorRatioAboveStable", []),
    # gRPC UNAVAILABLE (14) with HTTP 200 is a server failure; INVALID_ARGUMENT (3) is the client's.
    "canary-grpc-unavailable-fires": case(
        grpc("14"),
        "CanaryErrorRatioAboveStable",
        [fired("resnet v2 fails (5xx, gRPC server error or Triton failure) more often than v1: 9.91%", severity="warning", triton_service="resnet",
               namespace="resnet", stable_version="v1", canary_version="v2", destination_workload_namespace="resnet",
               destination_service_name="resnet")],
    ),
    "canary-grpc-invalid-argument-quiet": case(grpc("3"), "CanaryErrorRatioAboveStable", []),
    # A streaming canary failing inside its gRPC streams: every call ends status OK at the proxy,
    # Triton counts 20% of v2's requests failed (BACKEND); the stable version fails none.
    "canary-failing-inside-grpc-streams-fires": case(
        grpc("0") | failures(v1=("BACKEND", 0, 100), v2=("BACKEND", 2, 8)),
        "CanaryErrorRatioAboveStable",
        [fired("resnet v2 fails (5xx, gRPC server error or Triton failure) more often than v1: 20%", severity="warning",
               triton_service="resnet", namespace="resnet", stable_version="v1", canary_version="v2",
               destination_workload_namespace="resnet", destination_service_name="resnet")],
    ),
    # Streams the client closed (CANCELED) are no worse canary.
    "canary-streams-cancelled-by-clients-quiet": case(
        grpc("0") | failures(v1=("BACKEND", 0, 100), v2=("CANCELED", 2, 8)), "CanaryErrorRatioAboveStable", []),
    "canary-down-behind-gateway-fires": case(
        canary_traffic(gateway=True, stable=False, canary=False),
        "CanaryNotServing",
        [fired("resnet v2 gets traffic but answers none of it: no ready pod behind its subset (clients see 503)",
               severity="critical", triton_service="resnet", namespace="resnet", stable_version="v1", canary_version="v2")],
    ),
    # Only the stable version answered in the window, and no client got a 503 for want of a pod:
    # a healthy canary that drew no request (a 10% weight at 3 requests a minute) stays quiet.
    "quiet-canary-no-503-quiet": case(canary_traffic(gateway=False, stable=True, canary=False), "CanaryNotServing", []),
    "low-traffic-healthy-canary-quiet": case(low_traffic_healthy_canary(), "CanaryNotServing", []),
    # Requests cut by the route timeout are answered 504 by the gateway's Envoy: only its series show them.
    "route-timeouts-fire": case(
        gateway_answers(ok=90, timed_out=10),
        "ServiceRouteTimeouts",
        [fired("resnet: 10% of its requests end 504 at the gateway, cut by the route timeout (60 s)", severity="warning",
               namespace="resnet", triton_service="resnet")],
    ),
    "few-route-timeouts-quiet": case(gateway_answers(ok=99, timed_out=1), "ServiceRouteTimeouts", []),
    "canary-answering-quiet": case(canary_traffic(gateway=True, stable=True, canary=True), "CanaryNotServing", []),
    "no-traffic-at-all-quiet": case(canary_traffic(gateway=False, stable=False, canary=False), "CanaryNotServing", []),
    "gpu-memory-fires": case(
        {f"DCGM_FI_DEV_FB_USED{{{GPU}}}": "79000x50", f"DCGM_FI_DEV_FB_FREE{{{GPU}}}": "1000x50"},
        "GpuMemoryNearlyFull",
        [fired("GPU 0 on gpu-a100-node-0 uses 98.75% of its memory", severity="warning", gpu="0", Hostname="gpu-a100-node-0")],
    ),
    "gpu-memory-quiet": case(
        {f"DCGM_FI_DEV_FB_USED{{{GPU}}}": "40000x50", f"DCGM_FI_DEV_FB_FREE{{{GPU}}}": "40000x50"}, "GpuMemoryNearlyFull", [],
    ),
    "llm-gpu-memory-of-plain-version-fires": case(
        gpu_memory_of_pod("v1"),
        "GpuMemoryNearlyFull",
        [fired("GPU 0 on gpu-a100-node-0 uses 98.75% of its memory", severity="warning", gpu="0", Hostname="gpu-a100-node-0",
               exported_namespace="resnet", exported_pod="resnet-v1-0")],
    ),
    "llm-gpu-memory-of-vllm-version-quiet": case(gpu_memory_of_pod("v2"), "GpuMemoryNearlyFull", []),
    # XID 79 (fallen off the bus) at minute 30: a fault.
    "xid-fault-fires": case(
        {f"DCGM_FI_DEV_XID_ERRORS{{{GPU}}}": "0x30 79x20"},
        "GpuXidFault",
        [fired("GPU 0 on gpu-a100-node-0 reported XID 79, a hardware fault: drain the node and reset or replace the GPU",
               severity="critical", gpu="0", Hostname="gpu-a100-node-0")],
    ),
    # A broken GPU stays broken: still firing 39 minutes after its XID, until a reset clears the gauge.
    "xid-fault-fires-until-the-gpu-is-reset": case(
        {f"DCGM_FI_DEV_XID_ERRORS{{{GPU}}}": "0x10 79x40"},
        "GpuXidFault",
        [fired("GPU 0 on gpu-a100-node-0 reported XID 79, a hardware fault: drain the node and reset or replace the GPU",
               severity="critical", gpu="0", Hostname="gpu-a100-node-0")],
    ),
    "xid-fault-clears-after-a-reset": case({f"DCGM_FI_DEV_XID_ERRORS{{{GPU}}}": "0x10 79x20 0x20"}, "GpuXidFault", []),
    "xid-application-error-is-no-fault": case({f"DCGM_FI_DEV_XID_ERRORS{{{GPU}}}": "0x30 13x20"}, "GpuXidFault", []),
    "xid-application-error-warns": case(
        {f"DCGM_FI_DEV_XID_ERRORS{{{GPU}}}": "0x30 13x20"},
        "GpuXidError",
        [fired("GPU 0 on gpu-a100-node-0 reported XID 13 (usually the application's; see the pod's log)",
               severity="warning", gpu="0", Hostname="gpu-a100-node-0")],
    ),
    "xid-old-application-error-quiet": case({f"DCGM_FI_DEV_XID_ERRORS{{{GPU}}}": "0x5 13x45"}, "GpuXidError", []),
    "xid-fault-is-no-warning": case({f"DCGM_FI_DEV_XID_ERRORS{{{GPU}}}": "0x30 79x20"}, "GpuXidError", []),
    "pod-not-ready-fires": case(
        not_ready(50), "TritonPodNotReady",
        [fired(f"Triton pod resnet/resnet-v1-abc (resnet v1) has not been ready for {BUDGET}s: a model failed to load (see its log)",
               severity="warning", label_app="resnet", label_version="v1", namespace="resnet", pod="resnet-v1-abc", uid="u1",
               condition="true", triton_service="resnet")],
        eval_time="49m",
    ),
    "pod-ready-within-budget-quiet": case(not_ready(10), "TritonPodNotReady", [], eval_time="49m"),
    "pod-of-another-app-quiet": case(
        {k.replace('label_app="resnet"', 'label_app="other"'): v for k, v in not_ready(50).items()}, "TritonPodNotReady", [],
        eval_time="49m"),
    "hpa-at-max-fires": case(
        hpa(4), "TritonHpaAtMax",
        [fired("HPA resnet/resnet-v1-hpa-1a2b3c has run at maxReplicas (4) for 15 minutes; queue time may grow",
               severity="warning", namespace="resnet", horizontalpodautoscaler="resnet-v1-hpa-1a2b3c")],
    ),
    "hpa-below-max-quiet": case(hpa(3), "TritonHpaAtMax", []),
    "hpa-of-fixed-size-quiet": case(hpa(4, min_replicas=4), "TritonHpaAtMax", []),
    "pending-gpu-pod-fires": case(
        pending("system-cluster-critical"), "GpuPodsPending",
        [fired("Pod resnet/p has waited 10 minutes for a GPU", severity="warning", namespace="resnet", pod="p")],
    ),
    "pending-placeholder-quiet": case(pending(alerts.PLACEHOLDER_PRIORITY_CLASS), "GpuPodsPending", []),
    "node-group-at-max-fires": case(
        {NODE.format(i=i): "1x50" for i in range(3)},
        "GpuNodeGroupAtMax",
        [fired("GPU node group gpu-a100 has reached maxNodes (3); it cannot grow further", severity="warning", node_group="gpu-a100")],
    ),
    "node-group-below-max-quiet": case({NODE.format(i=i): "1x50" for i in range(2)}, "GpuNodeGroupAtMax", []),
}


def test_every_alert_has_a_firing_and_a_quiet_case():
    alerts_tested = {}
    for c in CASES.values():
        test = c["alert_rule_test"][0]
        alerts_tested.setdefault(test["alertname"], set()).add(bool(test["exp_alerts"]))
    assert alerts_tested == {name: {True, False} for name in alerts.alert_names(GROUPS)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_promtool_unit_test(promtool, rules_file, tmp_path, name):
    if name.startswith("llm-"):
        rules_file = write_rules(tmp_path / "llm-rules.yml", LLM_GROUPS)
    tests = tmp_path / "tests.yml"
    tests.write_text(yaml.safe_dump({"rule_files": [str(rules_file)], "evaluation_interval": "1m", "tests": [CASES[name]]}))
    result = subprocess.run([promtool, "test", "rules", str(tests)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_wrong_expectation_fails(promtool, rules_file, tmp_path):
    """promtool really compares: a firing case that expects silence fails."""
    broken = dict(CASES["xid-fault-fires"], alert_rule_test=[dict(CASES["xid-fault-fires"]["alert_rule_test"][0], exp_alerts=[])])
    tests = tmp_path / "tests.yml"
    tests.write_text(yaml.safe_dump({"rule_files": [str(rules_file)], "evaluation_interval": "1m", "tests": [broken]}))
    assert subprocess.run([promtool, "test", "rules", str(tests)], capture_output=True).returncode != 0


# --------------------------------------------------------------------------- Alertmanager routing

ROUTED = SETTINGS.model_copy(update={
    "observability": SETTINGS.observability.model_copy(update={"alerting": AlertingSettings.model_validate({
        "receivers": [
            {"name": "oncall", "pagerduty": {}},
            {"name": "team-chat", "slack": {"channel": "#inference"}},
            {"name": "ops-mail", "email": {"to": "ops@example.com", "from": "am@example.com",
                                           "smarthost": "smtp.example.com:587", "authUsername": "am"}},
            {"name": "ticketing", "webhook": {}},
        ],
        "critical": ["oncall", "team-chat"],
        "warning": ["team-chat", "ops-mail", "ticketing"],
    })}),
})
FAKE_SECRETS = {
    "oncall": "0123456789abcdef0123456789abcdef",
    "team-chat": "https://hooks.slack.com/services/T000/B000/XXXX",
    "ops-mail": "smtp-password-123",
    "ticketing": "https://tickets.example.com/alertmanager",
}


@pytest.fixture(scope="module")
def amtool():
    path = shutil.which("amtool")
    assert path, "amtool is missing: apt-get install prometheus-alertmanager"
    return path


def am_config_file(tmp_path, settings, secrets) -> str:
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(alerts.alertmanager_config(settings.observability.alerting, secrets), sort_keys=False))
    return str(path)


@pytest.mark.parametrize("settings,secrets", [(SETTINGS, {}), (ROUTED, FAKE_SECRETS)], ids=["no-receivers", "every-kind"])
def test_alertmanager_config_passes_amtool(amtool, tmp_path, settings, secrets):
    result = subprocess.run([amtool, "check-config", am_config_file(tmp_path, settings, secrets)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_amtool_rejects_a_broken_config(amtool, tmp_path):
    """The check above would notice a route to a receiver that does not exist."""
    config = alerts.alertmanager_config(ROUTED.observability.alerting, FAKE_SECRETS)
    config["receivers"] = [r for r in config["receivers"] if r["name"] != "oncall"]
    path = tmp_path / "broken.yml"
    path.write_text(yaml.safe_dump(config))
    assert subprocess.run([amtool, "check-config", str(path)], capture_output=True).returncode != 0


def routed_to(amtool, config_file: str, **labels: str) -> list[str]:
    """Receivers Alertmanager picks for an alert with these labels (amtool's own routing)."""
    result = subprocess.run([amtool, "config", "routes", "test", f"--config.file={config_file}",
                             *(f"{k}={v}" for k, v in labels.items())], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip().split(",")


def test_severities_reach_their_receivers(amtool, tmp_path):
    config = am_config_file(tmp_path, ROUTED, FAKE_SECRETS)
    assert routed_to(amtool, config, alertname="GpuXidFault", severity="critical") == ["oncall", "team-chat"]
    assert routed_to(amtool, config, alertname="TritonHpaAtMax", severity="warning") == ["team-chat", "ops-mail", "ticketing"]
    assert routed_to(amtool, config, alertname="Watchdog", severity="none") == ["null"]


def test_without_receivers_everything_goes_to_null(amtool, tmp_path):
    config = am_config_file(tmp_path, SETTINGS, {})
    assert routed_to(amtool, config, alertname="GpuXidFault", severity="critical") == ["null"]
    assert alerts.alertmanager_config(SETTINGS.observability.alerting, {})["receivers"] == [{"name": "null"}]


def test_each_receiver_carries_its_credential_in_the_field_of_its_kind():
    receivers = {r["name"]: r for r in alerts.alertmanager_config(ROUTED.observability.alerting, FAKE_SECRETS)["receivers"]}
    assert receivers["oncall"]["pagerduty_configs"][0]["routing_key"] == FAKE_SECRETS["oncall"]
    assert receivers["team-chat"]["slack_configs"][0]["api_url"] == FAKE_SECRETS["team-chat"]
    assert receivers["team-chat"]["slack_configs"][0]["channel"] == "#inference"
    assert receivers["ops-mail"]["email_configs"][0]["auth_password"] == FAKE_SECRETS["ops-mail"]
    assert receivers["ticketing"]["webhook_configs"][0]["url"] == FAKE_SECRETS["ticketing"]


def test_criticals_inhibit_warnings_about_the_same_thing_only():
    rules = alerts.alertmanager_config(ROUTED.observability.alerting, FAKE_SECRETS)["inhibit_rules"]
    # Never a namespace or a scrape target's `service` alone (tests/live/test_alert_inhibition.py
    # shows what those silence in a real Alertmanager).
    assert {tuple(r["equal"]) for r in rules} == {("Hostname",), ("namespace", "pod"), ("namespace", "triton_service"),
                                                ("namespace", "graph")}
    for rule in rules:
        for label in rule["equal"]:
            # Alertmanager treats a label missing on both sides as equal: each side must have it.
            assert f'{label}=~".+"' in rule["source_matchers"] and f'{label}=~".+"' in rule["target_matchers"]
        assert 'severity="critical"' in rule["source_matchers"] and 'severity="warning"' in rule["target_matchers"]
