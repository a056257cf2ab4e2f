"""The alerts about graphs on Ray: promtool checks their group, and unit tests show each one
firing on Ray Serve's series of a failing graph and staying quiet on a healthy one."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from inference_platform.observability import alerts, graph_alerts
from platformctl.engine import stack_settings
from tests.conftest import observability_inputs
from tests.live import test_alerts
from tests.live.test_alerts import case, fired, write_rules
from tests.support.metric_catalogue import catalogue, metric_names

promtool = test_alerts.promtool  # the fixture that finds promtool

SETTINGS = stack_settings("studio-dev")  # speech-to-image on Ray (steps transcribe, draw: 1-2 replicas, 120 s timeout)
GROUPS = alerts.rule_groups(observability_inputs(SETTINGS))
[GRAPH] = [g for g in SETTINGS.graphs if g.placement == "ray"]
FAILURE_RATIO = SETTINGS.observability.alerts.failure_ratio
GRAPH_ALERTS = {"GraphApplicationFailed", "GraphStepErrorRatioHigh", "GraphStepLatencyHigh",
                "GraphStepReplicasMissing", "GraphStepAtMaxReplicas"}

NS = f'namespace="{GRAPH.k8s_namespace}",application="{GRAPH.name}"'
HEAD = f'{NS},pod="speech-to-image-raycluster-head"'
WORKER = f'{NS},pod="speech-to-image-raycluster-transcribe-worker-0",replica="r1",route="/"'
LABELS = {"namespace": GRAPH.k8s_namespace, "graph": GRAPH.name}
STEP_LABELS = {**LABELS, "step": "transcribe"}


def graph_group() -> dict:
    [group] = [g for g in GROUPS if g["name"] == "inference-platform.graphs"]
    return group


def step_series(deployment: str = "step-transcribe", ok: str = "", errors: str = "") -> dict[str, str]:
    sel = f'{WORKER},deployment="{deployment}"'
    series = {}
    if ok:
        series[f"ray_serve_deployment_request_counter_total{{{sel}}}"] = ok
    if errors:
        series[f'ray_serve_deployment_error_counter_total{{{sel},exception_type="InferenceServerException"}}'] = errors
    return series


def latency(seconds_bucket: float) -> dict[str, str]:
    """10 requests a minute, all in the bucket up to `seconds_bucket` (Serve's buckets, in ms)."""
    sel = f'{WORKER},deployment="step-transcribe"'
    return {f'ray_serve_deployment_processing_latency_ms_bucket{{{sel},le="{le}"}}': "0+10x50" if le == "+Inf" or le >= seconds_bucket * 1000 else "0x50"
            for le in (1000.0, 10000.0, 60000.0, 120000.0, "+Inf")}


def replicas(target: int, healthy: int) -> dict[str, str]:
    sel = f'{HEAD},deployment="step-transcribe"'
    series = {f"ray_serve_autoscaling_target_replicas{{{sel}}}": f"{target}x50"}
    series.update({f'ray_serve_deployment_replica_healthy{{{sel},replica="r{i}"}}': "1x50" for i in range(healthy)})
    return series


def app_status(values: str) -> dict[str, str]:
    return {f"ray_serve_application_status{{{HEAD}}}": values}


HEAD_POD = {"pod": "speech-to-image-raycluster-head"}
CASES = {
    # DEPLOY_FAILED (1) from minute 20: a deploy of the new config failed.
    "application-deploy-failed-fires": case(
        app_status("6x20 1x30"), "GraphApplicationFailed",
        [fired("Graph speech-to-image: its Serve application on speech-to-image-raycluster-head is DEPLOY_FAILED (1) or "
               "UNHEALTHY (2): 1 (see `serve status` on the head, or the RayService's status)",
               severity="critical", **LABELS, **HEAD_POD)]),
    "application-running-quiet": case(app_status("6x50"), "GraphApplicationFailed", []),
    "application-deploying-quiet": case(app_status("5x50"), "GraphApplicationFailed", []),
    # 1 of 10 requests raises: 10 % against a 5 % failure ratio.
    "step-errors-fire": case(
        step_series(ok="0+9x50", errors="0+1x50"), "GraphStepErrorRatioHigh",
        [fired("Graph speech-to-image step transcribe fails 10% of its requests "
               "(see ray_serve_deployment_error_counter_total's exception_type)", severity="critical", **STEP_LABELS)]),
    # A step that has never answered has no success series at all.
    "step-that-never-succeeded-fires": case(
        step_series(errors="0+5x50"), "GraphStepErrorRatioHigh",
        [fired("Graph speech-to-image step transcribe fails 100% of its requests "
               "(see ray_serve_deployment_error_counter_total's exception_type)", severity="critical", **STEP_LABELS)]),
    "step-few-errors-quiet": case(step_series(ok="0+99x50", errors="0+1x50"), "GraphStepErrorRatioHigh", []),
    # The ingress fails whenever a step does: it is no step of its own.
    "ingress-errors-quiet": case(step_series("graph", errors="0+5x50"), "GraphStepErrorRatioHigh", []),
    # Every request between 60 s and 120 s: p95 at 117 s, above half the 120 s route timeout.
    "step-slow-fires": case(
        latency(120), "GraphStepLatencyHigh",
        [fired("Graph speech-to-image step transcribe takes 1m 57s per request (p95), more than 50% of the graph's "
               "120 s route timeout", severity="warning", **STEP_LABELS)]),
    "step-fast-quiet": case(latency(1), "GraphStepLatencyHigh", []),
    "replica-missing-fires": case(
        replicas(target=2, healthy=1), "GraphStepReplicasMissing",
        [fired("Graph speech-to-image step transcribe: 1 of the replicas Serve wants have not run for 15 minutes (no worker: "
               "its group's maxReplicas or no free GPU node; or the replica fails to start)",
               severity="warning", **STEP_LABELS, **HEAD_POD)]),
    # No replica healthy at all: Serve reports no healthy series, and the step still counts as missing them.
    "no-replica-healthy-fires": case(
        replicas(target=1, healthy=0), "GraphStepReplicasMissing",
        [fired("Graph speech-to-image step transcribe: 1 of the replicas Serve wants have not run for 15 minutes (no worker: "
               "its group's maxReplicas or no free GPU node; or the replica fails to start)",
               severity="warning", **STEP_LABELS, **HEAD_POD)]),
    "every-replica-healthy-quiet": case(replicas(target=2, healthy=2), "GraphStepReplicasMissing", []),
    "step-at-max-fires": case(
        replicas(target=2, healthy=2), "GraphStepAtMaxReplicas",
        [fired("Graph speech-to-image step transcribe has wanted its maxReplicas (2) for 15 minutes; requests may queue",
               severity="warning", **STEP_LABELS, **HEAD_POD)]),
    "step-below-max-quiet": case(replicas(target=1, healthy=1), "GraphStepAtMaxReplicas", []),
}


def test_the_graph_group_passes_promtool_check(promtool, tmp_path):
    path = write_rules(tmp_path / "graphs.yml", [graph_group()])
    result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0 and "SUCCESS" in result.stdout, result.stdout + result.stderr


def test_each_ray_graph_has_its_alerts_and_an_ensemble_none():
    rules = graph_group()["rules"]
    assert {r["alert"] for r in rules} == GRAPH_ALERTS
    assert len(rules) == 1 + 4 * len(GRAPH.steps)
    # Every graph alert names its graph and namespace: a critical about a graph silences its warnings.
    for rule in rules:
        assert rule["labels"]["namespace"] == GRAPH.k8s_namespace and rule["labels"][graph_alerts.GRAPH_LABEL] == GRAPH.name
    ensembles = SETTINGS.model_copy(update={"graphs": [g for g in SETTINGS.graphs if g.placement == "ensemble"]})
    assert not alerts.alert_names(alerts.rule_groups(observability_inputs(ensembles))) & GRAPH_ALERTS
    assert not alerts.alert_names(alerts.rule_groups(observability_inputs(stack_settings("demo-dev")))) & GRAPH_ALERTS


def test_a_step_of_fixed_size_never_alerts_at_max():
    fixed = GRAPH.model_copy(update={"steps": [GRAPH.steps[0].model_copy(update={
        "replicas": GRAPH.steps[0].replicas.model_copy(update={"min": 2, "max": 2})})]})
    assert "GraphStepAtMaxReplicas" not in {r["alert"] for r in graph_alerts.graph_rules([fixed], FAILURE_RATIO)}


def test_graph_rules_read_ray_serve_names_and_their_thresholds():
    ray = set(catalogue()["ray-serve"])
    for rule in graph_group()["rules"]:
        assert metric_names(rule["expr"]) <= ray, rule["alert"]
    exprs = {r["alert"]: r["expr"] for r in graph_alerts.graph_rules(
        [GRAPH.model_copy(update={"timeout_seconds": 30})], 0.2) if r["labels"].get("step") == "draw"}
    assert exprs["GraphStepErrorRatioHigh"].endswith("> 0.2") and 'deployment="step-draw"' in exprs["GraphStepErrorRatioHigh"]
    assert exprs["GraphStepLatencyHigh"].endswith("> 15")


def test_every_graph_alert_has_a_firing_and_a_quiet_case():
    tested: dict[str, set[bool]] = {}
    for c in CASES.values():
        test = c["alert_rule_test"][0]
        tested.setdefault(test["alertname"], set()).add(bool(test["exp_alerts"]))
    assert tested == {name: {True, False} for name in GRAPH_ALERTS}


@pytest.mark.parametrize("name", sorted(CASES))
def test_promtool_unit_test(promtool, tmp_path, name):
    rules = write_rules(tmp_path / "rules.yml", GROUPS)
    tests = tmp_path / "tests.yml"
    tests.write_text(yaml.safe_dump({"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": [CASES[name]]}))
    result = subprocess.run([promtool, "test", "rules", str(tests)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
