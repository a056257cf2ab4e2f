"""Every dashboard query, variable query, adapter rule and recording rule evaluated by
a real Prometheus scraping the platform's real metric names."""

from __future__ import annotations

import pytest

from inference_platform.observability import alerts
from inference_platform.observability.graph_alerts import graph_rules, serve_deployment
from inference_platform.observability.metrics import (
    PENDING_REQUESTS_METRIC,
    QUEUE_TIME_METRIC,
    REQUEST_RATE_METRIC,
    TRTLLM_ACTIVE_METRIC,
    TRTLLM_KV_CACHE_METRIC,
    VLLM_IN_FLIGHT_METRIC,
)
from inference_platform.observability.observability import ADAPTER_WINDOW, adapter_rules
from inference_platform.serving.triton import hpa_spec
from inference_platform.settings.serving import Autoscaling
from platformctl.engine import stack_settings
from tests.conftest import observability_inputs
from tests.support import dashboards
from tests.support.adapter_query import templated
from tests.support.promstack import Pod, PrometheusServer


@pytest.fixture(scope="module")
def prom(tmp_path_factory, reference):
    server = PrometheusServer(stack_settings("demo-dev"), tmp_path_factory.mktemp("prometheus"))
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def assert_series(prom: PrometheusServer, expr: str) -> list[dict]:
    result = prom.query(expr)
    assert result["status"] == "success", f"{expr}\n{result.get('error')}"
    data = result["data"]
    series = data["result"] if data["resultType"] in ("vector", "matrix") else [data["result"]]
    assert series, f"no series for {expr}"
    return series


PANEL_QUERIES = dashboards.targets("prometheus")


def test_dashboards_have_many_queries():
    assert len(PANEL_QUERIES) >= 30


@pytest.mark.parametrize("dashboard,panel,expr", PANEL_QUERIES, ids=[f"{d}:{p}" for d, p, _ in PANEL_QUERIES])
def test_panel_query_returns_series(prom, dashboard, panel, expr):
    assert_series(prom, dashboards.substitute(expr))


VARIABLES = dashboards.variable_queries()


@pytest.mark.parametrize("dashboard,variable,selector,label", VARIABLES, ids=[f"{d}:{v}" for d, v, _, _ in VARIABLES])
def test_variable_query_returns_values(prom, dashboard, variable, selector, label):
    series = assert_series(prom, f"group by ({label}) ({dashboards.substitute(selector)})")
    assert any(s["metric"].get(label) for s in series), f"{variable}: no values of {label}"


def queue_time(prom: PrometheusServer, pod: Pod, metric_selector: dict | None = None) -> float:
    """The value prometheus-adapter serves an HPA for one pod."""
    rule = next(r for r in adapter_rules() if r["name"]["as"] == QUEUE_TIME_METRIC)
    expr = templated(rule["metricsQuery"], "nv_inference_queue_duration_us", pod.namespace, [pod.name], metric_selector)
    [series] = assert_series(prom, expr)
    return float(series["value"][1])


@pytest.mark.parametrize("rule", adapter_rules(), ids=lambda r: r["name"]["as"])
def test_adapter_rule_serves_every_triton_pod(prom, rule):
    """Triton's rules serve every Triton pod; an LLM engine's rules every pod of that engine."""
    engine = {TRTLLM_ACTIVE_METRIC: "tensorrtllm", TRTLLM_KV_CACHE_METRIC: "tensorrtllm", VLLM_IN_FLIGHT_METRIC: "vllm"}
    assert rule["name"]["as"] in (QUEUE_TIME_METRIC, PENDING_REQUESTS_METRIC, REQUEST_RATE_METRIC, *engine)
    series_name = rule["name"]["matches"].strip("^$")
    # The seriesQuery finds the Triton series, with the labels the resources map from.
    found = assert_series(prom, rule["seriesQuery"])
    assert all(s["metric"]["namespace"] and s["metric"]["pod"] for s in found)
    backend = engine.get(rule["name"]["as"])
    pods = [p for p in prom.topology.triton_pods if (p.llm_backend == backend if backend else p.namespace == "resnet")]
    values = assert_series(prom, templated(rule["metricsQuery"], series_name, pods[0].namespace, [p.name for p in pods]))
    assert {s["metric"]["pod"] for s in values} == {p.name for p in pods}
    assert set(values[0]["metric"]) == {"pod"}
    for s in values:
        assert float(s["value"][1]) > 0


def test_queue_time_is_microseconds_per_request(prom):
    """The exporter queues each request for 1.5 ms; the adapter's value must say so."""
    assert queue_time(prom, prom.topology.triton_pods[0]) == pytest.approx(1500, rel=0.05)


def test_an_ensemble_scales_on_its_bottleneck_queue(prom):
    """Each ensemble request counts once per step and the ensemble's own queue is ~0: the
    pod's value is the bottleneck step's queue time, not an average over the steps."""
    pod = prom.topology.ensemble_pod
    bottleneck = max(pod.models, key=lambda m: m.queue_us)
    assert queue_time(prom, pod) == pytest.approx(bottleneck.queue_us, rel=0.05)
    # What a pod-wide ratio reports (the review's finding): a fraction of the bottleneck.
    pod_wide = (
        f'sum(rate(nv_inference_queue_duration_us{{pod="{pod.name}"}}[{ADAPTER_WINDOW}]))'
        f' / sum(rate(nv_inference_request_success{{pod="{pod.name}"}}[{ADAPTER_WINDOW}]))'
    )
    assert float(assert_series(prom, pod_wide)[0]["value"][1]) < bottleneck.queue_us / 2


@pytest.mark.parametrize("model", ["preprocess", "bottleneck", "pipeline"])
def test_a_named_model_scales_its_version_on_that_model(prom, model):
    """autoscaling.queueTimeModel becomes the HPA metric's selector, which the adapter adds to its matchers."""
    scaling = Autoscaling.model_validate({"queueTimeModel": model})
    selector = hpa_spec("graph-v1", scaling)["metrics"][0]["pods"]["metric"]["selector"]
    pod = prom.topology.ensemble_pod
    expected = next(m.queue_us for m in pod.models if m.name == model)
    assert queue_time(prom, pod, selector) == pytest.approx(expected, rel=0.05, abs=1)


def test_a_model_no_pod_serves_gives_no_value(prom):
    rule = next(r for r in adapter_rules() if r["name"]["as"] == QUEUE_TIME_METRIC)
    pod = prom.topology.ensemble_pod
    expr = templated(rule["metricsQuery"], "nv_inference_queue_duration_us", pod.namespace, [pod.name],
                     {"matchLabels": {"model": "absent"}})
    result = prom.query(expr)
    assert result["status"] == "success" and result["data"]["result"] == []


def test_recording_rules_produce_series(prom):
    groups = alerts.rule_groups(observability_inputs(stack_settings("demo-dev")))
    for name in alerts.recorded_names(groups):
        assert_series(prom, name)
    for record in (alerts.ERROR_RATIO_RECORD, alerts.TRITON_FAILURE_RATIO_RECORD):
        ratios = assert_series(prom, record)
        # The Triton of a graph's step (its Ray worker, labelled with the graph as `app`, no
        # version) counts too, without a version: it compares with no canary.
        assert {s["metric"]["destination_version"] for s in ratios if "destination_version" in s["metric"]} == {"v1", "v2"}, record


def test_alert_expressions_evaluate(prom):
    """Every alert expression parses and runs against real data (whether it fires is test_alerts')."""
    for group in alerts.rule_groups(observability_inputs(stack_settings("demo-dev"))):
        for rule in group["rules"]:
            result = prom.query(rule["expr"])
            assert result["status"] == "success", f"{rule['expr']}: {result.get('error')}"
    # The exporter has one replica waiting for a GPU and one preempted placeholder: only the replica counts.
    pending = assert_series(prom, alerts.pending_gpu_pods_expr())
    assert [s["metric"]["pod"] for s in pending] == ["resnet-v1-pending"]


def test_without_a_named_model_the_hpa_metric_has_no_selector():
    metric = hpa_spec("resnet-v1", Autoscaling())["metrics"][0]["pods"]["metric"]
    assert metric == {"name": QUEUE_TIME_METRIC}


def _panel_values(prom: PrometheusServer, title: str) -> list[float]:
    [expr] = [e for d, p, e in PANEL_QUERIES if d == "llm" and p == title][:1]
    return [float(s["value"][1]) for s in assert_series(prom, dashboards.substitute(expr))]


def test_llm_panels_read_the_backends_values(prom):
    """KV-cache use is used over max blocks; vLLM's inter-token latency is per token, not per request."""
    assert _panel_values(prom, "KV cache blocks in use") == [pytest.approx(4100 / 6239, rel=1e-3)]
    p50 = _panel_values(prom, "Inter-token latency (vLLM)")
    assert all(0.005 < v < 0.1 for v in p50)


def _firing(prom: PrometheusServer, rules: list[dict]) -> dict[str, list[dict]]:
    out = {}
    for rule in rules:
        result = prom.query(rule["expr"])
        assert result["status"] == "success", f"{rule['expr']}: {result.get('error')}"
        out.setdefault(rule["alert"], []).extend(result["data"]["result"])
    return out


def test_graph_alerts_stay_quiet_on_a_healthy_graph_and_its_series_reach_them(prom):
    """The Ray pods report a running application and healthy steps: no graph alert fires. The same
    rules made sensitive (any error, any latency) fire on the same series, so quiet is not blind."""
    graphs = prom.topology.ray_graphs
    assert not any(_firing(prom, graph_rules(graphs, 0.05)).values())
    sensitive = [g.model_copy(update={"timeout_seconds": 0.001}) for g in graphs]
    fired = _firing(prom, graph_rules(sensitive, 0.001))
    steps = sum(len(g.steps) for g in graphs)
    assert len(fired["GraphStepErrorRatioHigh"]) == len(fired["GraphStepLatencyHigh"]) == steps
    assert not fired["GraphApplicationFailed"] and not fired["GraphStepReplicasMissing"]


def test_graph_replica_panel_counts_healthy_replicas_against_serves_target(prom):
    """Healthy counts the replicas that pass Serve's health check, one series each; the target
    is Serve's own number: on a healthy graph they agree per step (2 for a step of min 2)."""
    healthy, target = (
        {s["metric"]["deployment"]: float(s["value"][1]) for s in assert_series(prom, dashboards.substitute(e))}
        for d, p, e in PANEL_QUERIES if d == "graphs" and p == "Replicas per step: healthy vs target")
    assert healthy == target
    steps = [s for g in prom.topology.ray_graphs for s in g.steps]
    assert {serve_deployment(s): s.replicas.min for s in steps}.items() <= healthy.items()
    assert any(s.replicas.min > 1 for s in steps)
