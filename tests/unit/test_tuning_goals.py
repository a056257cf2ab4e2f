"""What a tuning run can measure: the shapes and data Perf Analyzer sends a model with variable
inputs, and goals a MIG share cannot report (LLM versions tune with GenAI-Perf: test_llm_tuning.py)."""

from __future__ import annotations

import copy

import pytest
import yaml

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from inference_platform.tuning import runs
from inference_platform.tuning.perf_inputs import shape_problems
from tests.conftest import base_config

STACK = "stacks/Pulumi.test.yaml"
TUNING = {"model": "embed", "objectives": {"throughput": 10}, "constraints": {"latencyP99Ms": 20}}
MIG = {"mode": "mig", "migStrategy": "single", "migProfile": "all-1g.10gb"}
TEXT_MODEL = """name: "embed"
platform: "onnxruntime_onnx"
max_batch_size: 32
input [{ name: "input_ids" data_type: TYPE_INT64 dims: [-1] },
       { name: "attention_mask" data_type: TYPE_INT64 dims: [-1] },
       { name: "pixel" data_type: TYPE_FP32 dims: [3, -1] }]
output [{ name: "embedding" data_type: TYPE_FP32 dims: [1024] }]
"""


def tuned(**tuning) -> dict:
    raw = base_config()
    raw["services"][0]["versions"][0]["tuning"] = copy.deepcopy(TUNING) | tuning
    return raw


def parse(raw: dict):
    secrets = {"s3AccessKeyId": "key", "s3SecretAccessKey": "secret"} if "s3" in raw["weightCaches"] else {}
    return parse_settings(raw | secrets, STACK, frozenset(secrets))


def refused(raw: dict) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse(raw)
    return info.value


def analyzer_yaml(raw: dict) -> dict:
    settings = parse(raw)
    version = settings.services[0].versions[0]
    return yaml.safe_load(yaml.safe_dump(runs.analyzer_config(version.tuning, version.tuning.model)))


def test_perf_analyzer_gets_a_shape_per_variable_input_and_the_data_asked_for():
    config = analyzer_yaml(tuned(shapes={"pixel": [3, 224], "input_ids": [128]}, inputData="zero"))
    assert config["perf_analyzer_flags"] == {"shape": ["input_ids:128", "pixel:3,224"], "input-data": "zero"}


def test_a_model_with_fixed_inputs_sends_perf_analyzer_no_flags():
    assert "perf_analyzer_flags" not in analyzer_yaml(tuned())


@pytest.mark.parametrize("shapes", [{"input_ids": [0]}, {"input_ids": []}, {"bad name": [1]}, {"x": [1] * 9}])
def test_a_shape_perf_analyzer_would_refuse_is_refused(shapes):
    error = refused(tuned(shapes=shapes))
    assert all(p.startswith("inference-platform:services[svc].versions[v1].tuning.shapes") for p in error.paths)


def test_a_variable_input_without_a_shape_is_named_with_the_shape_it_needs():
    problems = shape_problems(TEXT_MODEL, "src/embed/config.pbtxt", {"input_ids": [128]}, "embed")
    assert [path for path, _ in problems] == [("shapes", "attention_mask"), ("shapes", "pixel")]
    assert "attention_mask" in problems[0][1] and "shapes.attention_mask: [<n>]" in problems[0][1]
    assert "pixel" in problems[1][1] and "[3, <n>]" in problems[1][1]


def test_a_shape_that_does_not_fit_its_input_is_refused():
    shapes = {"input_ids": [128], "attention_mask": [128], "pixel": [4, 224], "token_type_ids": [128]}
    problems = shape_problems(TEXT_MODEL, "src/embed/config.pbtxt", shapes, "embed")
    assert [path for path, _ in problems] == [("shapes", "pixel"), ("shapes", "token_type_ids")]
    good = {"input_ids": [128], "attention_mask": [128], "pixel": [3, 224]}
    assert shape_problems(TEXT_MODEL, "src/embed/config.pbtxt", good, "embed") == []


def test_a_config_without_inputs_tells_nothing_about_shapes():
    assert shape_problems('name: "embed"\nplatform: "onnxruntime_onnx"\n', "c", {}, "embed") == []


def test_an_uploaded_text_model_without_shapes_fails_the_plan(tmp_path, monkeypatch):
    (tmp_path / "repo" / "embed").mkdir(parents=True)
    (tmp_path / "repo" / "embed" / "config.pbtxt").write_text(TEXT_MODEL)
    monkeypatch.chdir(tmp_path)
    raw = tuned()
    raw["weightCaches"]["s3"] = {"endpoint": "https://s3.example.com", "bucket": "weights",
                                 "uploads": [{"source": "repo", "prefix": "svc"}]}
    raw["services"][0]["versions"][0]["modelRepository"] = {"cache": "s3", "path": "svc"}
    error = refused(raw)
    assert error.paths == [f"inference-platform:services[svc].versions[v1].tuning.shapes.{name}"
                           for name in ("input_ids", "attention_mask", "pixel")]
    assert "weightCaches.s3.uploads[0].source/embed/config.pbtxt" in error.one_line()
    raw["services"][0]["versions"][0]["tuning"]["shapes"] = {"input_ids": [64], "attention_mask": [64], "pixel": [3, 64]}
    parse(raw)


def on_mig(raw: dict) -> dict:
    raw["cluster"]["nodeGroups"][1]["gpu"]["sharing"] = copy.deepcopy(MIG)
    return raw


def test_a_gpu_memory_constraint_on_a_mig_share_is_refused():
    error = refused(on_mig(tuned(constraints={"latencyP99Ms": 20, "maxGpuMemoryMb": 9000})))
    assert error.paths == ["inference-platform:services[svc].versions[v1].tuning.constraints.maxGpuMemoryMb"]
    assert "server#5324" in error.one_line()
    parse(on_mig(tuned()))
    parse(tuned(constraints={"maxGpuMemoryMb": 9000}))


def test_gpu_metric_objectives_on_a_mig_share_are_refused_for_runs_and_pipelines():
    raw = on_mig(tuned(objectives={"throughput": 5, "gpuUtilization": 3}))
    raw["services"][0]["pipeline"] = {"baseVersion": "v1", "model": "m", "inputs": {"input": [3]}, "repositoryPrefix": "p",
                                      "tuning": {"objectives": {"gpuMemory": 1}}}
    raw["modelPipeline"] = {"enabled": True}
    error = refused(raw)
    assert error.paths == ["inference-platform:services[svc].versions[v1].tuning.objectives.gpuUtilization",
                           "inference-platform:services[svc].pipeline.tuning.objectives.gpuMemory"]


def test_the_new_perf_analyzer_keys_rename_a_run_only_when_set():
    def name(raw: dict) -> str:
        settings = parse(raw)
        service = settings.services[0]
        group = next(g for g in settings.cluster.node_groups if g.name == "gpu")
        return runs.job_name(service, service.versions[0], runs.run_id(runs.run_inputs(service, service.versions[0], group, {})))

    unchanged = name(tuned())
    assert name(tuned(shapes={}, inputData="random")) == unchanged
    # Runs named before these keys existed keep their names (an upgrade does not run them again).
    settings = parse(tuned())
    service = settings.services[0]
    group = next(g for g in settings.cluster.node_groups if g.name == "gpu")
    assert not {"shapes", "input_data"} & set(runs.run_inputs(service, service.versions[0], group, {})["version"]["tuning"])
    assert len({unchanged, name(tuned(shapes={"input_ids": [128]})), name(tuned(inputData="zero"))}) == 3


def test_capacity_counts_a_tuning_run_as_the_node_it_keeps_its_service_off():
    from inference_platform.gpu.profiles import group_demands

    def at_max(raw: dict) -> int:
        (demand,) = group_demands(parse(raw))
        return demand.at_max

    # all-1g.10gb: seven slices per A100 node, and the run's anti-affinity keeps the service off all seven.
    assert at_max(on_mig(tuned())) == at_max(on_mig(base_config())) + 7
    assert at_max(tuned()) == at_max(base_config()) + 1
