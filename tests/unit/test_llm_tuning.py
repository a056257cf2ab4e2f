"""LLM versions tune with GenAI-Perf: what `tuning` may say on such a version, which statistic
stands for the objectives' target, and how the sweep judges and publishes its measurements."""

from __future__ import annotations

import json
import subprocess

import pytest

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from inference_platform.tuning.llm_runs import objective_statistic
from model_tools import llm_tuning
from tests.conftest import base_config
from tests.support.llm_tuning import S3_KEYS, llm_tuned_config

STACK = "stacks/Pulumi.test.yaml"
AT = "inference-platform:services[svc].versions[v1].tuning"


def refused(raw: dict) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_settings(raw, STACK, frozenset(S3_KEYS) & raw.keys())
    return caught.value


def test_an_llm_version_with_a_tokenizer_and_objectives_is_accepted():
    settings = parse_settings(llm_tuned_config(), STACK, frozenset())
    assert settings.services[0].versions[0].tuning.llm.concurrency == [1, 4, 16]


def test_an_llm_version_without_the_genai_perf_block_is_refused_asking_for_it():
    raw = llm_tuned_config()
    del raw["services"][0]["versions"][0]["tuning"]["llm"]
    error = refused(raw)
    assert error.paths == [AT]
    assert "required: llm" in error.one_line() and "GenAI-Perf" in error.one_line()


def test_an_llmbackend_label_alone_is_enough_to_need_genai_perf():
    raw = base_config()
    raw["services"][0]["versions"][0] |= {"llmBackend": "vllm", "tuning": {"model": "m"},
                                          "image": "nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3"}
    assert refused(raw).paths == [AT]


def test_model_analyzer_keys_on_an_llm_version_are_refused_each_by_name():
    raw = llm_tuned_config(objectives={"throughput": 10}, shapes={"input_ids": [128]}, keep=2)
    error = refused(raw)
    assert error.paths == [f"{AT}.keep", f"{AT}.objectives", f"{AT}.shapes"]
    assert "allowed: model, llm, deadlineHours, run, sdkImage" in error.one_line()


def test_the_genai_perf_block_on_a_classic_version_is_refused():
    raw = base_config()
    raw["services"][0]["versions"][0]["tuning"] = {"model": "m", "llm": {"tokenizer": "t"}}
    error = refused(raw)
    assert error.paths == [f"{AT}.llm"]


def test_an_llm_sweep_without_service_objectives_is_refused():
    raw = llm_tuned_config()
    del raw["services"][0]["llmObjectives"]
    error = refused(raw)
    assert error.paths == [f"{AT}.llm"]
    assert "llmObjectives" in error.one_line()


def test_concurrency_beyond_the_engine_s_sequences_and_prompts_beyond_its_context_are_refused():
    raw = llm_tuned_config(llm={"tokenizer": "t", "concurrency": [8, 16, 32], "inputTokensMean": 8000,
                                "outputTokensMean": 500})
    error = refused(raw)
    assert error.paths == [f"{AT}.llm.concurrency[2]", f"{AT}.llm.outputTokensMean"]
    assert "allowed: 1..16" in error.one_line()
    assert "up to 8192" in error.one_line()


def test_a_concurrency_list_out_of_order_is_refused_at_the_list():
    error = refused(llm_tuned_config(llm={"tokenizer": "t", "concurrency": [4, 4, 8]}))
    assert error.paths == [f"{AT}.llm.concurrency"]


@pytest.mark.parametrize("target,statistic", [(0.5, "p50"), (0.9, "p90"), (0.95, "p95"), (0.96, "p99"),
                                              (0.99, "p99"), (0.995, "max"), (0.9999, "max")])
def test_the_objective_is_judged_at_the_lowest_reported_percentile_covering_its_target(target, statistic):
    assert objective_statistic(target) == statistic


# --------------------------------------------------------------------------- the sweep in the pod


def stats(ttft: float, itl: float) -> dict:
    return {"time_to_first_token": {"unit": "ms", "avg": ttft / 2, "p95": ttft},
            "inter_token_latency": {"unit": "ms", "avg": itl / 2, "p95": itl},
            "output_token_throughput": {"unit": "tokens/sec", "avg": 1000.0},
            "request_throughput": {"unit": "requests/sec", "avg": 4.0}}


def sweep_config(tmp_path, figures: dict[int, tuple[float, float]]) -> dict:
    return {"statistic": "p95", "objectivesMs": {"time_to_first_token": 500, "inter_token_latency": 50},
            "runs": [{"concurrency": c, "command": ["genai-perf", "profile", "--concurrency", str(c)],
                      "export": str(tmp_path / f"c{c}" / "profile_export_genai_perf.json")} for c in figures]}


def fake_genai_perf(tmp_path, figures: dict[int, tuple[float, float]], ran: list[int]):
    def run(command):
        c = int(command[-1])
        ran.append(c)
        (tmp_path / f"c{c}").mkdir()
        (tmp_path / f"c{c}" / "profile_export_genai_perf.json").write_text(json.dumps(stats(*figures[c])))
        return subprocess.CompletedProcess(command, 0)
    return run


def test_the_sweep_keeps_the_highest_concurrency_within_both_objectives_and_stops_at_the_first_miss(tmp_path):
    figures = {1: (80, 20), 4: (200, 30), 16: (480, 55), 32: (900, 70)}
    ran: list[int] = []
    summary = llm_tuning.sweep(sweep_config(tmp_path, figures), tmp_path / "results", fake_genai_perf(tmp_path, figures, ran))
    assert ran == [1, 4, 16]  # 16 misses the ITL objective: 32 is not measured
    assert summary["bestConcurrency"] == 4
    assert [m["meetsObjectives"] for m in summary["measurements"]] == [True, True, False]
    assert json.loads((tmp_path / "results" / "summary.json").read_text()) == summary


def test_publish_copies_the_results_under_the_run_s_tag(tmp_path):
    figures = {1: (80, 20), 4: (200, 30)}
    results = tmp_path / "results"
    llm_tuning.sweep(sweep_config(tmp_path, figures), results, fake_genai_perf(tmp_path, figures, []))
    (results / "concurrency-4").mkdir()
    (results / "concurrency-4" / "profile_export_genai_perf.csv").write_text("x")
    assert llm_tuning.main(["publish", f"--results={results}", "--tag=tuned-abc", f"--dest={tmp_path / 'model'}"]) == 0
    published = tmp_path / "model" / "tuning" / "tuned-abc"
    assert json.loads((published / "summary.json").read_text())["bestConcurrency"] == 4
    assert (published / "concurrency-4" / "profile_export_genai_perf.csv").read_text() == "x"


def test_when_no_concurrency_meets_the_objectives_publish_writes_nothing_and_fails(tmp_path, capsys):
    figures = {1: (800, 20)}
    results = tmp_path / "results"
    llm_tuning.sweep(sweep_config(tmp_path, figures), results, fake_genai_perf(tmp_path, figures, []))
    assert llm_tuning.main(["publish", f"--results={results}", "--tag=tuned-abc", f"--dest={tmp_path / 'model'}"]) == 3
    assert not (tmp_path / "model").exists()
    assert "no concurrency met the objectives" in capsys.readouterr().err


def test_a_failing_genai_perf_stops_the_sweep(tmp_path):
    def run(command):
        return subprocess.CompletedProcess(command, 1)
    with pytest.raises(llm_tuning.TuningError) as caught:
        llm_tuning.sweep(sweep_config(tmp_path, {1: (1, 1), 2: (1, 1)}), tmp_path / "results", run)
    assert caught.value.code == 4 and "concurrency 1" in str(caught.value)


def test_a_measurement_without_the_objective_s_metric_is_an_error_not_a_pass():
    with pytest.raises(llm_tuning.TuningError):
        llm_tuning.measurement({"time_to_first_token": {"p95": 10}}, 1, "p95",
                               {"time_to_first_token": 500, "inter_token_latency": 50}, "x.json")


def test_a_classic_run_s_name_does_not_depend_on_the_genai_perf_key():
    from inference_platform.tuning import runs

    raw = base_config()
    raw["services"][0]["versions"][0]["tuning"] = {"model": "m"}
    settings = parse_settings(raw, STACK, frozenset())
    service = settings.services[0]
    group = next(g for g in settings.cluster.node_groups if g.name == "gpu")
    inputs = runs.run_inputs(service, service.versions[0], group, {})
    # Runs named before tuning.llm existed keep their names (and are not run again).
    assert "llm" not in inputs["version"]["tuning"] and "llm" not in inputs["version"]
