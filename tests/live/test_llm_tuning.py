"""LLM tuning runs against GenAI-Perf 0.0.10 itself (the release in the pinned 25.01 SDK image):
every command line the Jobs render goes through its own parser, means what we meant, and
exports its statistics where the sweep reads them, in the shape it reads; and the Jobs' objects
validate against their schemas."""

from __future__ import annotations

import json
import subprocess

import pytest

from inference_platform.tuning import llm_runs
from inference_platform.tuning.runs import WORK_DIR
from model_tools import llm_tuning
from platformctl.plan import is_k8s_object, manifest
from tests.conftest import ROOT, render_raw
from tests.support import conformance
from tests.support.llm_tuning import S3_KEYS, llm_tuned_config

GENAI_PERF = ROOT / ".venv-genai-perf" / "bin" / "python"
needs_genai_perf = pytest.mark.skipif(not GENAI_PERF.exists(), reason="GenAI-Perf is not installed: run `make genai-perf`")


def tensorrtllm(raw: dict) -> dict:
    """The version on TensorRT-LLM: its Triton image, the ensemble, a TTFT objective only (a bound
    of Triton's first-response histogram; it exports no ITL)."""
    svc = raw["services"][0]
    version = svc["versions"][0]
    version["image"] = "nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3"
    version["llm"]["engine"] = "tensorrtllm"
    version["serverArgs"] = {"metrics-config": ["histogram_latencies=true"]}
    version["tuning"]["model"] = "ensemble"
    svc["llmObjectives"] = {"timeToFirstTokenMs": 500, "target": 0.99}
    return raw


CASES = {"vllm-share": llm_tuned_config(), "trtllm-s3": llm_tuned_config("s3"), "trtllm-share": tensorrtllm(llm_tuned_config())}


@pytest.fixture(scope="module")
def plans():
    return {case: render_raw(raw, secret_keys=tuple(S3_KEYS.keys() & raw.keys())) for case, raw in CASES.items()}


def run_objects(plan) -> tuple[dict, dict]:
    (job,) = [manifest(r) for r in plan.resources if is_k8s_object(r) and r.inputs.get("kind") == "Job"]
    (config_map,) = [manifest(r) for r in plan.resources
                     if is_k8s_object(r) and r.inputs.get("kind") == "ConfigMap" and r.inputs["metadata"]["name"] == job["metadata"]["name"]]
    return job, config_map


def sweep_configs(plans) -> dict[str, dict]:
    return {case: json.loads(run_objects(plan)[1]["data"][llm_runs.SWEEP_CONFIG]) for case, plan in plans.items()}


def genai_perf_check(commands: dict[str, list[str]]) -> dict:
    request = json.dumps({"workdir": WORK_DIR, "commands": commands})
    run = subprocess.run([str(GENAI_PERF), str(ROOT / "tests" / "support" / "genai_perf_check.py")], input=request,
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)["results"]


@needs_genai_perf
def test_genai_perf_parses_every_command_the_runs_render_as_meant(plans):
    configs = sweep_configs(plans)
    commands = {f"{case}:{r['concurrency']}": r["command"] for case, config in configs.items() for r in config["runs"]}
    results = genai_perf_check(commands)
    assert {case: r.get("error") for case, r in results.items() if not r["ok"]} == {}
    for case, config in configs.items():
        raw_version = CASES[case]["services"][0]["versions"][0]
        tuning = raw_version["tuning"]
        for run in config["runs"]:
            args = results[f"{case}:{run['concurrency']}"]["args"]
            assert args["subcommand"] == "profile" and args["model"] == [tuning["model"]]
            # Triton's KServe v2 gRPC on the pod's loopback, streamed, in the engine's request format.
            assert (args["service_kind"], args["endpoint_type"], args["u"]) == ("triton", "kserve", "localhost:8001")
            assert args["backend"] == raw_version["llm"]["engine"] and args["streaming"] is True
            assert args["concurrency"] == run["concurrency"]
            assert args["synthetic_input_tokens_mean"] == tuning["llm"]["inputTokensMean"]
            assert args["output_tokens_mean"] == tuning["llm"]["outputTokensMean"]
            assert args["output_tokens_mean_deterministic"] is True
            assert args["measurement_interval"] == 10_000
            assert args["tokenizer"] == ("/work/tokenizer" if case.endswith("s3") else "/models/llama/tokenizer")
            assert results[f"{case}:{run['concurrency']}"]["passthrough"] == []


@needs_genai_perf
def test_the_sweep_reads_the_statistics_where_and_as_genai_perf_exports_them(plans):
    configs = sweep_configs(plans)
    commands = {case: config["runs"][-1]["command"] for case, config in configs.items()}
    results = genai_perf_check(commands)
    for case, config in configs.items():
        run, result = config["runs"][-1], results[case]
        assert result["ok"], result
        assert [f"{WORK_DIR}/{e}" for e in result["exports"]] == [run["export"]]
        # The check's made-up requests: TTFT 100..190 ms, ITL 10..19 ms, read at the run's statistic.
        m = llm_tuning.measurement(result["exported"], run["concurrency"], config["statistic"], config["objectivesMs"],
                                   run["export"])
        assert m["measuredMs"]["time_to_first_token"] == result["exported"]["time_to_first_token"][config["statistic"]]
        assert 100 <= m["measuredMs"]["time_to_first_token"] <= 190 and m["meetsObjectives"]
        if "inter_token_latency" in config["objectivesMs"]:
            assert 10 <= m["measuredMs"]["inter_token_latency"] <= 19
        assert m["outputTokensPerSecond"] == 1000.0


@needs_genai_perf
def test_the_parser_check_refuses_what_genai_perf_refuses(plans):
    command = sweep_configs(plans)["vllm-share"]["runs"][0]["command"]
    backend = command.index("--backend") + 1
    results = genai_perf_check({
        "backend-spelling": [*command[:backend], "tensorrt_llm", *command[backend + 1:]],
        "export-in-a-folder": [*command[:-1], "sub/profile_export.json"],
        "openai-with-deterministic": [a if a != "triton" else "openai" for a in command],
    })
    assert {case: r["ok"] for case, r in results.items()} == dict.fromkeys(results, False)


def test_the_llm_run_objects_validate_against_their_schemas(plans):
    for plan in plans.values():
        for doc in run_objects(plan):
            conformance.validate(doc)
