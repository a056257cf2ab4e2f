"""LLM latency objectives: the burn-rate alerts fire in promtool as the SRE workbook's windows
say (a fast burn pages, a slow one opens a ticket, a healthy service stays quiet), read the
engines' histograms at the objective's bound in both `le` spellings, and refuse objectives no
series can measure."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from inference_platform.observability import alerts
from inference_platform.observability.llm_slo import le_matcher
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from tests.conftest import base_config, observability_inputs

TTFT = "LlmTimeToFirstTokenBudgetBurn"
ITL = "LlmInterTokenLatencyBudgetBurn"
ARCH = {"parametersBillion": 8.03, "layers": 32, "kvHeads": 8, "headDim": 128}


def vllm_service(**objectives) -> dict:
    raw = base_config()
    version = raw["services"][0]["versions"][0]
    version["llm"] = {"engine": "vllm", "architecture": ARCH, "maxContextTokens": 4096, "maxConcurrentSequences": 16}
    version["image"] = "nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3"
    raw["services"][0]["llmObjectives"] = objectives
    return raw


def trtllm_chat():
    """A service `llm-chat` on TensorRT-LLM (no OpenAI frontend): time to first token within
    500 ms for 99%, read from Triton's first-response histogram."""
    raw = base_config()
    svc = raw["services"][0]
    svc.update(name="llm-chat", hosts=["chat.example.com"], llmObjectives={"timeToFirstTokenMs": 500, "target": 0.99})
    version = svc["versions"][0]
    version.update(name="v7", image="nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3",
                   modelRepository={"cache": "fileShare", "path": "llm-chat/v7"},
                   serverArgs={"metrics-config": ["histogram_latencies=true"]})
    version["llm"] = {"engine": "tensorrtllm", "architecture": ARCH, "maxContextTokens": 4096, "maxConcurrentSequences": 16}
    return parse_settings(raw, "stacks/Pulumi.test-dev.yaml")


def first_token_series(slow_per_minute: int, le: str = "500") -> dict[str, str]:
    """llm-chat v7's pod answers 100 requests a minute, `slow_per_minute` of them after 500 ms."""
    pod = 'namespace="llm-chat",pod="llm-chat-v7-0"'
    h = f'{pod},model="ensemble",version="1"'
    return {
        f'nv_inference_first_response_histogram_ms_bucket{{{h},le="{le}"}}': f"0+{100 - slow_per_minute}x400",
        f'nv_inference_first_response_histogram_ms_bucket{{{h},le="+Inf"}}': "0+100x400",
        f"nv_inference_first_response_histogram_ms_count{{{h}}}": "0+100x400",
        f'kube_pod_labels{{{pod},label_app="llm-chat",label_version="v7"}}': "1x400",
    }


def fired(severity: str, service: str = "llm-chat") -> dict:
    return {"exp_labels": {"severity": severity, "namespace": service, "triton_service": service}}


def run(tmp_path, groups, series: dict[str, str], alertname: str, expected: list[dict], at: str = "90m") -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: make tools (apt-get install prometheus)"
    rules = tmp_path / "rules.yml"
    rules.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    case = {"interval": "1m", "input_series": [{"series": s, "values": v} for s, v in series.items()],
            "alert_rule_test": [{"eval_time": at, "alertname": alertname,
                                 "exp_alerts": [{"exp_labels": e["exp_labels"]} for e in expected]}]}
    tests = tmp_path / "tests.yml"
    tests.write_text(yaml.safe_dump({"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": [case]}, sort_keys=False))
    result = subprocess.run([promtool, "test", "rules", str(tests)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def only_annotations_free(groups):
    """promtool compares annotations too; the cases check who is alerted, so drop them."""
    return [dict(g, rules=[{k: v for k, v in r.items() if k != "annotations"} for r in g["rules"]]) for g in groups]


ACME_GROUPS = only_annotations_free(alerts.rule_groups(observability_inputs(trtllm_chat())))


@pytest.mark.parametrize("slow,expected", [
    (50, ["critical", "warning"]),  # burn rate 50: the page and the ticket
    (8, ["warning"]),               # burn rate 8: a ticket only (under 14.4, over 6)
    (0, []),                        # within the objective
])
def test_the_burn_rate_decides_who_is_alerted(tmp_path, slow, expected):
    run(tmp_path, ACME_GROUPS, first_token_series(slow), TTFT, [fired(s) for s in expected])


def test_a_bucket_bound_spelt_as_prometheus_3_normalises_it_counts_the_same(tmp_path):
    run(tmp_path, ACME_GROUPS, first_token_series(50, le="500.0"), TTFT, [fired("critical"), fired("warning")])


def test_the_page_stops_once_the_burn_stops_while_the_long_window_still_remembers(tmp_path):
    series = first_token_series(0)
    key = next(k for k in series if 'le="500"' in k)
    series[key] = "0+50x60 3000+100x340"  # half the requests slow for an hour, then none
    run(tmp_path, ACME_GROUPS, series, TTFT, [fired("warning")], at="75m")


def test_inter_token_latency_on_vllm_reads_its_seconds_histogram(tmp_path):
    settings = parse_settings(vllm_service(interTokenLatencyMs=100), "stacks/Pulumi.test-dev.yaml")
    groups = only_annotations_free(alerts.rule_groups(observability_inputs(settings)))
    pod = 'namespace="svc",pod="svc-v1-0"'
    h = f'{pod},model="llm",version="1"'
    series = {
        f'vllm:time_per_output_token_seconds_bucket{{{h},le="0.1"}}': "0+800x200",  # 20% slow: burn rate 20
        f"vllm:time_per_output_token_seconds_count{{{h}}}": "0+1000x200",
        f'kube_pod_labels{{{pod},label_app="svc",label_version="v1"}}': "1x200",
    }
    run(tmp_path, groups, series, ITL, [fired("critical", "svc"), fired("warning", "svc")])


def test_le_matcher_takes_both_spellings_and_escapes_dots():
    assert le_matcher(500) == "500|500\\\\.0"
    assert le_matcher(0.1) == "0\\\\.1"


@pytest.mark.parametrize("objectives,engine,expected", [
    ({"timeToFirstTokenMs": 300}, "vllm", "llmObjectives.timeToFirstTokenMs: 300 ms is not a bound of vllm's time to first token histogram"),
    ({"interTokenLatencyMs": 100}, "tensorrtllm", "engine tensorrtllm exports no inter-token latency metric"),
    ({"target": 0.99}, "vllm", "llmObjectives: names no objective"),
])
def test_objectives_no_series_can_measure_are_refused_naming_the_key(objectives, engine, expected):
    raw = vllm_service(**objectives)
    raw["services"][0]["versions"][0]["llm"]["engine"] = engine
    with pytest.raises(ConfigError) as info:
        parse_settings(raw, "stacks/Pulumi.test-dev.yaml")
    assert expected in info.value.one_line()


def test_objectives_on_a_service_without_llm_versions_are_refused():
    raw = base_config()
    raw["services"][0]["llmObjectives"] = {"timeToFirstTokenMs": 500}
    with pytest.raises(ConfigError) as info:
        parse_settings(raw, "stacks/Pulumi.test-dev.yaml")
    assert "services[svc].llmObjectives: the service has no version with `llm`" in info.value.one_line()


def test_the_objective_rules_name_only_catalogued_metrics():
    from tests.support.metric_catalogue import known_metrics, metric_names

    rules = [r for g in ACME_GROUPS if g["name"] == "inference-platform.llm-objectives" for r in g["rules"]]
    assert len(rules) == 2
    for rule in rules:
        assert metric_names(rule["expr"]) <= known_metrics(), rule["expr"]
