"""An LLM version's `tuning` renders a GenAI-Perf Job: the version's server as it serves, a sweep of
the stack's concurrency list judged against the service's objectives, the results published
into the version's repository; placed, prioritised and isolated like a Model Analyzer run,
which stays as it was."""

from __future__ import annotations

import copy
import json

import pytest

from inference_platform.tuning import llm_runs
from platformctl.plan import is_k8s_object, manifest
from tests.conftest import base_config, render_raw
from tests.support.llm_tuning import S3_KEYS, llm_tuned_config


def objects(plan, kind: str) -> list[dict]:
    return [manifest(r) for r in plan.resources if is_k8s_object(r) and r.inputs.get("kind") == kind]


def run_of(plan, namespace: str = "svc") -> tuple[dict, dict]:
    (job,) = [j for j in objects(plan, "Job") if j["metadata"]["namespace"] == namespace]
    (config_map,) = [c for c in objects(plan, "ConfigMap") if c["metadata"]["name"] == job["metadata"]["name"]]
    return job, config_map


def steps(job: dict) -> dict[str, dict]:
    pod = job["spec"]["template"]["spec"]
    return {c["name"]: c for c in pod["initContainers"] + pod["containers"]}


def render(raw: dict):
    return render_raw(raw, secret_keys=tuple(S3_KEYS.keys() & raw.keys()))


@pytest.fixture(scope="module")
def on_share():
    return render(llm_tuned_config())


@pytest.fixture(scope="module")
def on_s3():
    return render(llm_tuned_config("s3"))


def test_an_llm_version_s_tuning_is_a_genai_perf_job_against_the_server_as_served(on_share):
    job, config_map = run_of(on_share)
    assert job["metadata"]["name"].startswith("tune-svc-v1-")
    assert job["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == "genai-perf"
    pod = job["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["initContainers"]] == ["triton", "sweep"]
    assert [c["name"] for c in pod["containers"]] == ["publish"]
    server = pod["initContainers"][0]
    # The models load as the version loads them (model control `none`: all), not Model Analyzer's empty server.
    assert "--model-control-mode=none" in server["args"] and "--model-control-mode=explicit" not in server["args"]
    assert server["restartPolicy"] == "Always" and server["startupProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert server["image"] == "nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3"
    sweep = steps(job)["sweep"]
    assert sweep["image"] == "nvcr.io/nvidia/tritonserver:25.01-py3-sdk"
    assert "model_tools.llm_tuning sweep" in sweep["command"][-1]
    # The tokenizer is read from the claim, which the sweep may not write.
    assert {"name": "models", "mountPath": "/models", "readOnly": True} in sweep["volumeMounts"]
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in sweep["env"]
    publish = steps(job)["publish"]
    assert {"name": "models", "mountPath": "/models"} in publish["volumeMounts"]
    tag = "tuned-" + job["metadata"]["name"].rsplit("-", 1)[1]
    assert publish["command"] == ["python3", "-m", "model_tools.llm_tuning", "publish", "--results=/work/results",
                                  f"--tag={tag}", "--dest=/models/svc/v1/llama"]
    assert sorted(config_map["data"]) == ["__init__.py", "genai-perf.json", "llm_tuning.py"]


def test_the_sweep_runs_genai_perf_once_per_concurrency_against_the_service_objectives(on_share):
    _, config_map = run_of(on_share)
    config = json.loads(config_map["data"][llm_runs.SWEEP_CONFIG])
    # target 0.95: genai-perf's p95; TTFT 500 ms and ITL 50 ms from services[svc].llmObjectives.
    assert config["statistic"] == "p95"
    assert config["objectivesMs"] == {"time_to_first_token": 500, "inter_token_latency": 50}
    assert [r["concurrency"] for r in config["runs"]] == [1, 4, 16]
    first = config["runs"][0]["command"]
    assert first[:4] == ["genai-perf", "profile", "-m", "llama"]
    assert first[first.index("--backend") + 1] == "vllm"
    assert first[first.index("--tokenizer") + 1] == "/models/llama/tokenizer"
    assert first[first.index("--synthetic-input-tokens-mean") + 1] == "1024"
    assert first[first.index("--output-tokens-mean") + 1] == "128"
    assert "--streaming" in first
    assert config["runs"][2]["export"] == "/work/results/concurrency-16/profile_export_genai_perf.json"


def test_on_s3_the_tokenizer_is_copied_in_and_the_results_uploaded(on_s3):
    job, config_map = run_of(on_s3)
    pod = job["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["initContainers"]] == ["triton", "tokenizer", "sweep", "publish"]
    assert [c["name"] for c in pod["containers"]] == ["upload"]
    tokenizer = steps(job)["tokenizer"]
    assert tokenizer["args"] == ["copy", "--checksum", "weights:test-weights/llama/tokenizer", "/work/tokenizer"]
    config = json.loads(config_map["data"][llm_runs.SWEEP_CONFIG])
    command = config["runs"][0]["command"]
    assert command[command.index("--tokenizer") + 1] == "/work/tokenizer"
    assert "--dest=/work/publish/llama" in steps(job)["publish"]["command"]


def test_the_llm_run_is_placed_and_isolated_like_a_model_analyzer_run(on_share):
    job, _ = run_of(on_share)
    pod = job["spec"]["template"]["spec"]
    (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["labelSelector"]["matchLabels"] == {"app": "svc"}
    assert pod["priorityClassName"] == "gpu-tuning"
    assert job["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    (policy,) = [n for n in objects(on_share, "NetworkPolicy") if n["metadata"]["name"] == "svc-tuning"]
    run_label = job["spec"]["template"]["metadata"]["labels"]["inference-platform/tuning"]
    assert policy["spec"]["podSelector"]["matchExpressions"][0]["values"] == [run_label]
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]


def test_an_llm_run_reruns_when_the_engine_or_the_objectives_change():
    def name(raw: dict) -> str:
        return run_of(render(raw))[0]["metadata"]["name"]

    base = name(llm_tuned_config())
    engine = llm_tuned_config()
    engine["services"][0]["versions"][0]["llm"]["maxConcurrentSequences"] = 32
    objectives = llm_tuned_config()
    objectives["services"][0]["llmObjectives"]["timeToFirstTokenMs"] = 250
    traffic = llm_tuned_config()
    traffic["services"][0]["autoscaling"] = {"maxReplicas": 5}
    assert name(traffic) == base
    assert len({base, name(engine), name(objectives)}) == 3


def test_a_classic_run_is_unchanged_beside_an_llm_run():
    classic = base_config()
    classic["services"][0]["versions"][0]["tuning"] = {"model": "m", "objectives": {"throughput": 10}}
    alone = render(classic)
    both = copy.deepcopy(classic)
    llm_service = llm_tuned_config()["services"][0] | {"name": "chat", "hosts": ["chat.example.com"]}
    both["services"].append(llm_service)
    both["cluster"]["nodeGroups"][1]["maxNodes"] = 4
    together = render(both)
    assert run_of(together, "svc") == run_of(alone, "svc")
    job, config_map = run_of(alone, "svc")
    assert sorted(config_map["data"]) == ["__init__.py", "model-analyzer.yaml", "perf_shapes.py", "publish.py"]
    assert [c["name"] for c in job["spec"]["template"]["spec"]["initContainers"]] == ["check-shapes", "triton", "analyze"]
