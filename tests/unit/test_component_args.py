"""A component's argument errors name keys as the Python API spells them (snake_case)."""

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
