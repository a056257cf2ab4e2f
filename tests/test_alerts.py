"""The alert and recording rules: promtool checks every group, and unit tests show
each alert firing on bad data and staying quiet on good data."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from components import alerts
from platformctl.engine import stack_settings
from tests.metric_catalogue import known_metrics, metric_names

SETTINGS = stack_settings("demo-dev")  # a 90/10 canary (resnet v1/v2) and GPU group gpu-a100 (max 3 nodes)
GROUPS = alerts.rule_groups(SETTINGS)
T = SETTINGS.observability.alerts


@pytest.fixture(scope="module")
def promtool():
    path = shutil.which("promtool")
    assert path, "promtool is missing: apt-get install prometheus"
    return path


@pytest.fixture
def rules_file(tmp_path):
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump({"groups": GROUPS}, sort_keys=False))
    return path


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
        "TritonQueueTimeHigh", "TritonFailureRatioHigh", "CanaryErrorRatioAboveStable",
        "GpuMemoryNearlyFull", "GpuXidError", "GpuPodsPending", "GpuNodeGroupAtMax",
    }


def test_rules_name_only_real_metrics():
    known = known_metrics() | alerts.recorded_names(GROUPS)
    for group in GROUPS:
        for rule in group["rules"]:
            unknown = metric_names(rule["expr"]) - known - {"vector"}
            assert not unknown, f"{rule.get('alert') or rule.get('record')}: {unknown}"


def test_thresholds_come_from_config():
    raw = SETTINGS.model_copy(update={"observability": SETTINGS.observability.model_copy(update={
        "alerts": T.model_copy(update={"queue_time_ms": 250.0, "failure_ratio": 0.2, "gpu_memory_ratio": 0.8})})})
    exprs = {r["alert"]: r["expr"] for g in alerts.rule_groups(raw) for r in g["rules"] if "alert" in r}
    assert exprs["TritonQueueTimeHigh"].endswith("> 250")
    assert exprs["TritonFailureRatioHigh"].endswith("> 0.2")
    assert exprs["GpuMemoryNearlyFull"].endswith("> 0.8")


def test_canary_rules_follow_the_weights():
    canary = [r for g in GROUPS for r in g["rules"] if r.get("alert") == "CanaryErrorRatioAboveStable"]
    assert len(canary) == 1
    assert canary[0]["labels"]["stable_version"] == "v1"
    assert 'destination_version="v2"' in canary[0]["expr"].split(">")[0]
    single = SETTINGS.model_copy(update={"services": [SETTINGS.services[0].model_copy(
        update={"versions": [SETTINGS.services[0].versions[0].model_copy(update={"weight": 100})]})]})
    assert "CanaryErrorRatioAboveStable" not in alerts.alert_names(alerts.rule_groups(single))


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
        {f'nv_inference_request_failure{{{TRITON},reason="REJECTED"}}': "0+1x50", f"nv_inference_request_success{{{TRITON}}}": "0+9x50"},
        "TritonFailureRatioHigh",
        [fired("Triton model resnet50 in resnet fails 10% of requests", severity="critical", namespace="resnet", model="resnet50")],
    ),
    "failures-quiet": case(
        {f'nv_inference_request_failure{{{TRITON},reason="REJECTED"}}': "0+1x50", f"nv_inference_request_success{{{TRITON}}}": "0+99x50"},
        "TritonFailureRatioHigh", [],
    ),
    "canary-fires": case(
        istio("1", "10"),
        "CanaryErrorRatioAboveStable",
        [fired("resnet v2 returns 5xx more often than v1: 9.091%", severity="warning", service="resnet", stable_version="v1",
               canary_version="v2", destination_workload_namespace="resnet", destination_service_name="resnet")],
    ),
    "canary-as-good-as-stable": case(istio("1", "1"), "CanaryErrorRatioAboveStable", []),
    "gpu-memory-fires": case(
        {f"DCGM_FI_DEV_FB_USED{{{GPU}}}": "79000x50", f"DCGM_FI_DEV_FB_FREE{{{GPU}}}": "1000x50"},
        "GpuMemoryNearlyFull",
        [fired("GPU 0 on gpu-a100-node-0 uses 98.75% of its memory", severity="warning", gpu="0", Hostname="gpu-a100-node-0")],
    ),
    "gpu-memory-quiet": case(
        {f"DCGM_FI_DEV_FB_USED{{{GPU}}}": "40000x50", f"DCGM_FI_DEV_FB_FREE{{{GPU}}}": "40000x50"}, "GpuMemoryNearlyFull", [],
    ),
    "xid-fires": case(
        {f"DCGM_FI_DEV_XID_ERRORS{{{GPU}}}": "0x20 79x30"},
        "GpuXidError",
        [fired("GPU 0 on gpu-a100-node-0 reported XID error 79", severity="critical", gpu="0", Hostname="gpu-a100-node-0")],
    ),
    "xid-quiet": case({f"DCGM_FI_DEV_XID_ERRORS{{{GPU}}}": "0x50"}, "GpuXidError", []),
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
    tests = tmp_path / "tests.yml"
    tests.write_text(yaml.safe_dump({"rule_files": [str(rules_file)], "evaluation_interval": "1m", "tests": [CASES[name]]}))
    result = subprocess.run([promtool, "test", "rules", str(tests)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_wrong_expectation_fails(promtool, rules_file, tmp_path):
    """promtool really compares: a firing case that expects silence fails."""
    broken = dict(CASES["xid-fires"], alert_rule_test=[dict(CASES["xid-fires"]["alert_rule_test"][0], exp_alerts=[])])
    tests = tmp_path / "tests.yml"
    tests.write_text(yaml.safe_dump({"rule_files": [str(rules_file)], "evaluation_interval": "1m", "tests": [broken]}))
    assert subprocess.run([promtool, "test", "rules", str(tests)], capture_output=True).returncode != 0
