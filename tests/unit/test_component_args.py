"""A component's argument errors name keys as the Python API spells them (snake_case), every one at once."""

from __future__ import annotations

import pytest

from inference_platform.observability.inputs import ObservabilityInputs
from inference_platform.serving.inputs import TritonServiceInputs
from inference_platform.settings.component_args import python_path, validated
from inference_platform.settings.errors import ConfigError


def triton_args(**version_keys) -> dict:
    version = {"name": "v1", "image": "nvcr.io/nvidia/tritonserver:25.01-py3", "weight": 100,
               "modelRepository": {"cache": "s3", "path": "chat/v1"}, "gpu": {"group": "gpu"}, **version_keys}
    return {"service": {"name": "chat", "hosts": ["chat.example.com"], "versions": [version]},
            "gpuGroups": [{"name": "gpu", "minNodes": 1, "maxNodes": 2, "gpu": {"model": "L4-24GB"}}],
            "weights": {"s3SecretName": "s", "s3Endpoint": "https://s3.example.com", "s3Bucket": "weights"}}


def test_a_schema_error_in_camel_case_arguments_names_the_snake_case_key():
    with pytest.raises(ConfigError) as info:
        validated(TritonServiceInputs, triton_args(serverArgs={"model-repository": "/tmp"}), "TritonService")
    assert info.value.paths == ["service.versions[v1].server_args"]


def test_a_cross_check_of_camel_case_arguments_names_the_snake_case_key():
    args = triton_args(modelRepository={"cache": "fileShare", "path": "chat/v1"})
    with pytest.raises(ConfigError) as info:
        validated(TritonServiceInputs, args, "TritonService")
    assert info.value.paths == ["service.versions[v1].model_repository.cache"]


def test_names_a_user_chose_stay_as_written_in_an_error_path():
    assert python_path(ObservabilityInputs, ("alertReceiverSecrets", "pagerDuty")) == ("alert_receiver_secrets", "pagerDuty")
    assert python_path(TritonServiceInputs, ("service", "versions", 0, "modelRepository", "cache")) == (
        "service", "versions", 0, "model_repository", "cache")


def refused(args: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        validated(TritonServiceInputs, args, "TritonService")
    return info.value.lines()


def test_every_schema_error_comes_at_once_with_the_allowed_keys_in_python_names():
    # Two misspelt keys and a value out of range, in one version: three lines, none hidden by another.
    lines = refused(triton_args(weight=150, max_replicas=3, modelRepo={"cache": "s3"}))
    head = "TritonServiceArgs: invalid configuration: service.versions[v1]."
    assert [line.split(": ")[2] for line in lines] == [
        "service.versions[v1].weight", "service.versions[v1].max_replicas", "service.versions[v1].modelRepo"], lines
    assert lines[0].startswith(head + "weight: Input should be less than or equal to 100")
    allowed = ("unknown key; allowed keys here: autoscaling, gpu, image, llm, llm_backend, model_config_name, "
               "model_control, model_load_seconds, model_repository, name, provenance, replicas, resources, "
               "server_args, startup_budget_seconds, tuning, weight")
    assert lines[1] == f"{head}max_replicas: {allowed}"
    assert lines[2] == f"{head}modelRepo: {allowed}"


def test_every_check_problem_comes_at_once():
    args = triton_args(weight=60, gpu={"group": "nope"})
    lines = refused(args)
    assert [line.split(": ")[2] for line in lines] == ["service.versions", "service.versions[v1].gpu.group"], lines


def test_the_keys_a_message_names_are_in_python_names_and_quoted_values_stay_as_written():
    arch = {"parametersBillion": 8.03, "layers": 32, "kvHeads": 8, "headDim": 128}
    (line,) = refused(triton_args(llmBackend="tensorrtllm", llm={"engine": "vllm", "architecture": arch, "maxContextTokens": 4096}))
    assert line.endswith("service.versions[v1]: llm_backend tensorrtllm differs from llm.engine vllm; allowed: the same "
                         "backend, or llm_backend left out"), line
    (line,) = refused(triton_args(modelRepository={"cache": "fileShare", "path": "chat/v1"}))
    assert line.endswith("model_repository.cache: weight cache 'fileShare' needs weights.claim_name"), line


def test_python_message_converts_keys_only():
    from inference_platform.settings.component_args import _python_names, python_message

    names = _python_names(TritonServiceInputs)
    assert python_message("maxReplicas 3 exceeds weights.s3SecretName; `minReplicas: 1` 'llmBackend' --serverArgs",
                          names) == "max_replicas 3 exceeds weights.s3_secret_name; `minReplicas: 1` 'llmBackend' --serverArgs"
    assert "fileShare" not in names  # a choice of `cache` as well as a key: left as written
