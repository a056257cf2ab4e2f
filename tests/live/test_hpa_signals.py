"""The HPA's signals through a saturation, evaluated by promtool on the adapter's own queries
(templated as prometheus-adapter does): queue time falls to nothing when a saturated Triton
rejects what it cannot queue (it adds queue time for successful requests only), while the
backlog of waiting requests stays high, so the HPA keeps scaling out."""

from __future__ import annotations

import shutil
import subprocess

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
