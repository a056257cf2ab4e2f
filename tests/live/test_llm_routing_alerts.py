"""The routing alerts of acme-prod's LLM service llm-chat (observability/llm_alerts.py): promtool
checks the group, and its unit tests fire each alert on the series the LLM path produces (its
Gateway's pods `llm-chat-istio`, the pools' shadow Services, the pods' Deployments, the pickers'
scrape jobs) and keep it quiet on healthy ones. CanaryErrorRatioAboveStable (alerts.py) is tested
on the same path: the pods' sidecars name each version's shadow Service."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from inference_platform.observability import alerts
from platformctl.engine import stack_settings
from tests.conftest import observability_inputs
from tests.support.metric_catalogue import known_metrics, metric_names

SETTINGS = stack_settings("acme-prod")  # llm-chat: v7 at 90, v8 at 10, timeoutSeconds 120, FailOpen
GROUPS = alerts.rule_groups(observability_inputs(SETTINGS))
(LLM_GROUP,) = [g for g in GROUPS if g["name"] == "inference-platform.llm-routing"]
(CANARY_GROUP,) = [g for g in GROUPS if g["name"] == "inference-platform.canary"]
RATIO = SETTINGS.observability.alerts.failure_ratio

GATEWAY = 'reporter="source",source_workload="llm-chat-istio",source_workload_namespace="llm-chat"'
SHADOW = {"v7": "llm-chat-v7-ip-ae5b730a.llm-chat.svc.cluster.local",
          "v8": "llm-chat-v8-ip-27aecd8d.llm-chat.svc.cluster.local"}
ABOUT = {"namespace": "llm-chat", "triton_service": "llm-chat"}


@pytest.fixture(scope="module")
def promtool():
    path = shutil.which("promtool")
    assert path, "promtool is missing: apt-get install prometheus"
    return path


def run_promtool(promtool, tmp_path, case: dict, group: dict = LLM_GROUP) -> subprocess.CompletedProcess:
    rules = tmp_path / "rules.yml"
    rules.write_text(yaml.safe_dump({"groups": [group]}, sort_keys=False))
    tests = tmp_path / "tests.yml"
    tests.write_text(yaml.safe_dump({"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": [case]}))
    return subprocess.run([promtool, "test", "rules", str(tests)], capture_output=True, text=True)


def case(series: dict[str, str], alert: str, expected: list[dict]) -> dict:
    return {"interval": "1m", "input_series": [{"series": s, "values": v} for s, v in series.items()],
            "alert_rule_test": [{"eval_time": "40m", "alertname": alert, "exp_alerts": expected}]}


def fired(summary: str, severity: str, **labels: str) -> dict:
    return {"exp_labels": {"severity": severity, **ABOUT, **labels}, "exp_annotations": {"summary": summary}}


def gateway(version: str, code: str, per_minute: int, flags: str = "-") -> dict[str, str]:
    labels = f'{GATEWAY},destination_service="{SHADOW[version]}",response_code="{code}",response_flags="{flags}"'
    return {f"istio_requests_total{{{labels}}}": f"0+{per_minute}x50"}


def pods(version: str, per_minute: int) -> dict[str, str]:
    """What the version's pods' sidecars report (a flat counter when they answer nothing)."""
    labels = (f'reporter="destination",destination_workload="llm-chat-{version}",'
              f'destination_workload_namespace="llm-chat",response_code="200"')
    return {f"istio_requests_total{{{labels}}}": f"0+{per_minute}x50" if per_minute else "7x50"}


def up(version: str, value: int) -> dict[str, str]:
    return {f'up{{job="llm-chat-{version}-epp",namespace="llm-chat",pod="llm-chat-{version}-epp-0",'
            f'instance="10.0.0.{7 if version == "v7" else 8}:9090"}}': f"{value}x50"}


PICKERS_UP = up("v7", 1) | up("v8", 1)
POLL = 'llm_d_epp_datalayer_poll_errors_total{job="llm-chat-v7-epp",namespace="llm-chat",source_type="metrics-data-source"}'

CASES = {
    "route-timeouts-fire": case(
        gateway("v7", "200", 80) | gateway("v7", "504", 10, "UT") | gateway("v8", "200", 10), "ServiceRouteTimeouts",
        [fired("llm-chat: 10% of its requests end 504 at its gateway llm-chat-istio, cut by the route timeout (120 s)",
               "warning")]),
    "few-route-timeouts-quiet": case(gateway("v7", "200", 99) | gateway("v7", "504", 1, "UT"), "ServiceRouteTimeouts", []),
    # The stable pool's picker finds no Ready pod: it refuses every request with 503, no flag set.
    "gateway-errors-fire": case(
        gateway("v7", "503", 90) | gateway("v8", "503", 10), "LlmGatewayErrorRatioHigh",
        [fired("llm-chat: 100% of its requests end 5xx at its gateway llm-chat-istio (503: a pool without a Ready pod, "
               "or its endpoint picker refusing)", "critical")]),
    "gateway-errors-quiet": case(gateway("v7", "200", 99) | gateway("v7", "503", 1), "LlmGatewayErrorRatioHigh", []),
    # The canary's pool has no Ready pod: its share ends 503 UH ("no healthy upstream") at the gateway.
    "canary-not-serving-fires": case(
        gateway("v7", "200", 90) | gateway("v8", "503", 10, "UH") | pods("v7", 90) | pods("v8", 0), "CanaryNotServing",
        [fired("llm-chat v8 gets traffic but answers none of it: its InferencePool has no Ready pod (its gateway answers 503)",
               "critical", canary_version="v8", stable_version="v7")]),
    "canary-answering-quiet": case(
        gateway("v7", "200", 90) | gateway("v8", "503", 1, "UH") | pods("v7", 90) | pods("v8", 9), "CanaryNotServing", []),
    "canary-without-503-quiet": case(gateway("v7", "200", 3) | pods("v7", 3) | pods("v8", 0), "CanaryNotServing", []),
    "picker-down-fires": case(
        up("v7", 1) | up("v8", 0), "EndpointPickerDown",
        [fired("llm-chat v8: endpoint picker llm-chat-v8-epp is not scraped (down or no pod); with failureMode FailOpen "
               "the gateway routes without it when the picker it calls does not answer", "warning", version="v8",
               job="llm-chat-v8-epp", pod="llm-chat-v8-epp-0", instance="10.0.0.8:9090")]),
    "picker-gone-fires": case(
        up("v8", 1), "EndpointPickerDown",
        [fired("llm-chat v7: endpoint picker llm-chat-v7-epp is not scraped (down or no pod); with failureMode FailOpen "
               "the gateway routes without it when the picker it calls does not answer", "warning", version="v7",
               job="llm-chat-v7-epp")]),
    "pickers-up-quiet": case(PICKERS_UP, "EndpointPickerDown", []),
    "picker-poll-errors-fire": case(
        PICKERS_UP | {POLL: "0+5x50"}, "EndpointPickerPollErrors",
        [fired("llm-chat: endpoint picker llm-chat-v7-epp cannot read its pods' /metrics "
               "(llm_d_epp_datalayer_poll_errors_total)", "warning", job="llm-chat-v7-epp")]),
    "picker-poll-errors-stopped-quiet": case(PICKERS_UP | {POLL: "0+5x10 50x40"}, "EndpointPickerPollErrors", []),
}


def sidecars(version: str, ok: int, failed: int) -> dict[str, str]:
    """What the version's pods' sidecars report for the gateway's requests: the inbound cluster of
    the OpenAI frontend's port names the version's shadow Service."""
    labels = (f'reporter="destination",destination_workload_namespace="llm-chat",'
              f'destination_service_name="{SHADOW[version].split(".")[0]}",destination_version="{version}"')
    return {f'istio_requests_total{{{labels},response_code="200"}}': f"0+{ok}x50",
            f'istio_requests_total{{{labels},response_code="503"}}': f"0+{failed}x50"}


def triton(version: str, ok: int, failed: int) -> dict[str, str]:
    """What the version's Triton counts (the OpenAI frontend's requests go through Triton core)."""
    pod = f'namespace="llm-chat",pod="llm-chat-{version}-0"'
    labels = f'{pod},model="llama-3.1-8b-instruct",version="1"'
    return {f'nv_inference_request_failure{{{labels},reason="BACKEND"}}': f"0+{failed}x50",
            f"nv_inference_request_success{{{labels}}}": f"0+{ok}x50",
            f'kube_pod_labels{{{pod},label_app="llm-chat",label_version="{version}"}}': "1x50"}


def canary_fired(ratio: str) -> dict:
    return fired(f"llm-chat v8 fails (5xx, gRPC server error or Triton failure) more often than v7: {ratio}", "warning",
                 canary_version="v8", stable_version="v7", destination_workload_namespace="llm-chat",
                 destination_service_name="llm-chat")


CANARY_CASES = {
    # v8's engine is gone: its sidecar answers 20% 503 and Triton counts nothing of it.
    "canary-sidecar-errors-fire": case(
        sidecars("v7", 90, 0) | sidecars("v8", 8, 2) | triton("v7", 90, 0) | triton("v8", 8, 0),
        "CanaryErrorRatioAboveStable", [canary_fired("20%")]),
    # Triton fails 20% of v8's requests (sent inside answers the proxy saw as 200).
    "canary-triton-failures-fire": case(
        sidecars("v7", 90, 0) | sidecars("v8", 10, 0) | triton("v7", 90, 0) | triton("v8", 8, 2),
        "CanaryErrorRatioAboveStable", [canary_fired("20%")]),
    # v7's sidecar sees 10% 503, v8's Triton 5% failures: the canary is no worse than stable.
    "canary-no-worse-than-a-failing-stable-quiet": case(
        sidecars("v7", 81, 9) | sidecars("v8", 10, 0) | triton("v7", 81, 0) | triton("v8", 19, 1),
        "CanaryErrorRatioAboveStable", []),
}


@pytest.mark.parametrize("name", sorted(CANARY_CASES))
def test_the_canary_is_compared_with_stable_on_both_halves(promtool, tmp_path, name):
    result = run_promtool(promtool, tmp_path, CANARY_CASES[name], CANARY_GROUP)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_group_passes_promtool_check(promtool, tmp_path):
    path = tmp_path / "llm-routing.yml"
    path.write_text(yaml.safe_dump({"groups": [LLM_GROUP]}, sort_keys=False))
    result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0 and "SUCCESS" in result.stdout, result.stdout + result.stderr


def test_every_llm_routing_alert_has_a_firing_and_a_quiet_case():
    tested: dict[str, set[bool]] = {}
    for c in CASES.values():
        test = c["alert_rule_test"][0]
        tested.setdefault(test["alertname"], set()).add(bool(test["exp_alerts"]))
    assert tested == {name: {True, False} for name in alerts.alert_names([LLM_GROUP])}


@pytest.mark.parametrize("name", sorted(CASES))
def test_promtool_unit_test(promtool, tmp_path, name):
    result = run_promtool(promtool, tmp_path, CASES[name])
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_classic_gateway_series_fire_none_of_them(promtool, tmp_path):
    """What the old rules selected, the customer gateway's requests to the service's own Service,
    never happens for llm-chat; sent anyway, they leave the LLM rules quiet."""
    classic = ('reporter="source",source_workload="istio-ingressgateway",source_workload_namespace="istio-system",'
               'destination_service="llm-chat.llm-chat.svc.cluster.local"')
    series = {f'istio_requests_total{{{classic},response_code="504"}}': "0+50x50",
              f'istio_requests_total{{{classic},response_code="503",response_flags="UH"}}': "0+50x50"}
    for alert in ("ServiceRouteTimeouts", "CanaryNotServing", "LlmGatewayErrorRatioHigh"):
        assert run_promtool(promtool, tmp_path, case(series, alert, [])).returncode == 0


def test_the_rules_name_only_real_metrics_and_the_classic_ones_leave_llm_chat_alone():
    known = known_metrics() | alerts.recorded_names(GROUPS)
    for rule in LLM_GROUP["rules"]:
        assert not metric_names(rule["expr"]) - known - {"vector"}, rule["alert"]
    classic = [r for g in GROUPS if g is not LLM_GROUP for r in g["rules"]
               if r.get("alert") in ("ServiceRouteTimeouts", "CanaryNotServing")]
    assert classic and all(r["labels"]["triton_service"] != "llm-chat" for r in classic)
    assert {r["alert"] for r in LLM_GROUP["rules"]} == {
        "ServiceRouteTimeouts", "LlmGatewayErrorRatioHigh", "CanaryNotServing", "EndpointPickerDown", "EndpointPickerPollErrors"}
