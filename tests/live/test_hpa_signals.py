"""The HPA's signals through a saturation, evaluated by promtool on the adapter's own queries
(templated as prometheus-adapter does): queue time falls to nothing when a saturated Triton
rejects what it cannot queue (it adds queue time for successful requests only), while the
backlog of waiting requests stays high, so the HPA keeps scaling out."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from inference_platform.observability.metrics import PENDING_REQUESTS_METRIC, QUEUE_TIME_METRIC
from inference_platform.observability.observability import adapter_rules
from tests.support.adapter_query import templated

POD = 'namespace="chat",pod="chat-v1-0",model="llm",version="1"'
# 10 minutes at 100 requests a minute, each queued 2 ms with 4 waiting; then saturation: every
# request rejected (queue full), the success and queue-time counters flat, 64 waiting.
SATURATION = {
    f"nv_inference_request_success{{{POD}}}": "0+100x10 1000x20",
    f"nv_inference_queue_duration_us{{{POD}}}": "0+200000x10 2000000x20",
    f'nv_inference_request_failure{{{POD},reason="REJECTED"}}': "0x10 0+100x20",
    f"nv_inference_pending_request_count{{{POD}}}": "4x10 64x20",
}


def adapter_query(metric: str) -> str:
    rule = next(r for r in adapter_rules() if r["name"]["as"] == metric)
    return templated(rule["metricsQuery"], rule["name"]["matches"].strip("^$"), "chat", ["chat-v1-0"])


def sample(value: float) -> list[dict]:
    return [{"labels": '{pod="chat-v1-0"}', "value": value}]


def test_the_backlog_keeps_rising_where_queue_time_falls_at_saturation(tmp_path):
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: make tools (apt-get install prometheus)"
    queue, pending = adapter_query(QUEUE_TIME_METRIC), adapter_query(PENDING_REQUESTS_METRIC)
    cases = [
        {"expr": queue, "eval_time": "8m", "exp_samples": sample(2000)},     # before: 2 ms a request
        {"expr": pending, "eval_time": "8m", "exp_samples": sample(4)},
        {"expr": queue, "eval_time": "25m", "exp_samples": sample(0)},       # saturated: no success, no queue time
        {"expr": pending, "eval_time": "25m", "exp_samples": sample(64)},    # ... and 64 waiting
    ]
    test = {"interval": "1m", "input_series": [{"series": s, "values": v} for s, v in SATURATION.items()],
            "promql_expr_test": cases}
    path = tmp_path / "saturation.yml"
    path.write_text(yaml.safe_dump({"rule_files": [], "evaluation_interval": "1m", "tests": [test]}, sort_keys=False))
    result = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# --------------------------------------------------------------------------- LLM engines

from inference_platform.observability.metrics import (  # noqa: E402
    TRTLLM_ACTIVE_METRIC,
    TRTLLM_KV_CACHE_METRIC,
    VLLM_IN_FLIGHT_METRIC,
)
from inference_platform.serving.triton import hpa_spec  # noqa: E402
from inference_platform.settings.llm import Llm  # noqa: E402
from inference_platform.settings.serving import Autoscaling  # noqa: E402
from tests.support.hpa import desired_replicas, metric_replicas  # noqa: E402

PODS = ["chat-v1-0", "chat-v1-1"]
ARCH = {"parametersBillion": 8.03, "layers": 32, "kvHeads": 8, "headDim": 128}


def engine_series(engine: str, before: dict, backlog: dict) -> dict[str, str]:
    """Per pod, 10 minutes calm then 20 minutes of backlog: TensorRT-LLM's gauges (active
    requests, KV-cache blocks used of 1000), or vLLM's latency counter (60 requests a minute, each
    taking `latency` seconds end to end)."""
    series = {}
    for pod in PODS:
        labels = f'namespace="chat",pod="{pod}",model="llm",version="1"'
        if engine == "tensorrtllm":
            for kind in ("active", "used"):
                metric, label = (("nv_trt_llm_request_metrics", "request_type") if kind == "active"
                                 else ("nv_trt_llm_kv_cache_block_metrics", "kv_cache_block_type"))
                series[f'{metric}{{{labels},{label}="{kind}"}}'] = f"{before[kind]}x10 {backlog[kind]}x20"
            series[f'nv_trt_llm_kv_cache_block_metrics{{{labels},kv_cache_block_type="max"}}'] = "1000x30"
            series[f'nv_trt_llm_request_metrics{{{labels},request_type="scheduled"}}'] = "8x30"
        else:
            calm, busy = 60 * before["latency"], 60 * backlog["latency"]
            series[f'vllm:e2e_request_latency_seconds_sum{{{labels}}}'] = f"0+{calm}x10 {calm * 10}+{busy}x20"
    return series


def assert_adapter_values(tmp_path, series: dict[str, str], query: str, at: str, value: float) -> None:
    """The adapter's query gives every pod `value` at `at` (promtool)."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: make tools (apt-get install prometheus)"
    samples = [{"labels": f'{{pod="{pod}"}}', "value": value} for pod in PODS]
    test = {"interval": "1m", "input_series": [{"series": s, "values": v} for s, v in series.items()],
            "promql_expr_test": [{"expr": query, "eval_time": at, "exp_samples": samples}]}
    path = tmp_path / "engine.yml"
    path.write_text(yaml.safe_dump({"rule_files": [], "evaluation_interval": "1m", "tests": [test]}, sort_keys=False))
    result = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# (engine, series per phase, what each adapter metric reads per pod in each phase)
ENGINE_LOADS = [
    ("tensorrtllm", {"active": 10, "used": 300}, {"active": 32, "used": 950},
     {TRTLLM_ACTIVE_METRIC: (10, 32), TRTLLM_KV_CACHE_METRIC: (0.3, 0.95)}),
    # 60 requests a minute of 5 s, then of 40 s: 5, then 40 in flight (Little's law).
    ("vllm", {"latency": 5}, {"latency": 40}, {VLLM_IN_FLIGHT_METRIC: (5, 40)}),
]


@pytest.mark.parametrize("engine,before,backlog,reads", ENGINE_LOADS, ids=[e[0] for e in ENGINE_LOADS])
def test_an_llm_version_s_hpa_holds_when_calm_and_scales_out_under_an_engine_backlog(tmp_path, engine, before, backlog, reads):
    """Triton's queue stays empty in front of an LLM engine; the HPA reads the engine's own load
    through the adapter's queries, and its desired replicas follow it."""
    llm = Llm.model_validate({"engine": engine, "architecture": ARCH, "maxContextTokens": 8192, "maxConcurrentSequences": 32})
    scaling = Autoscaling.model_validate({"minReplicas": 2, "maxReplicas": 6})
    spec = hpa_spec("chat-v1", scaling, llm)
    targets = {m["pods"]["metric"]["name"]: m["pods"]["target"]["averageValue"] for m in spec["metrics"]}
    engine_metrics = {TRTLLM_ACTIVE_METRIC, TRTLLM_KV_CACHE_METRIC} if engine == "tensorrtllm" else {VLLM_IN_FLIGHT_METRIC}
    assert set(targets) == engine_metrics | {PENDING_REQUESTS_METRIC}

    def quantity(text: str) -> float:
        return float(text[:-1]) / 1000 if text.endswith("m") else float(text)

    rules = {r["name"]["as"]: r for r in adapter_rules()}
    queries = {m: templated(rules[m]["metricsQuery"], rules[m]["name"]["matches"].strip("^$"), "chat", PODS)
               for m in engine_metrics}
    series = engine_series(engine, before, backlog)
    replicas = {}
    for phase, (index, at) in {"calm": (0, "8m"), "backlog": (1, "25m")}.items():
        for metric in engine_metrics:
            assert_adapter_values(tmp_path, series, queries[metric], at, reads[metric][index])
        proposals = [metric_replicas([reads[m][index]] * len(PODS), quantity(targets[m])) for m in engine_metrics]
        replicas[phase] = desired_replicas(proposals, scaling.min_replicas, scaling.max_replicas)
    assert replicas["calm"] == scaling.min_replicas
    assert replicas["backlog"] > replicas["calm"]
