"""What a version behind the OpenAI frontend (`llm.openai`) may not ask for: an image without the
frontend's packages, and server settings the frontend's main.py would silently ignore."""

from __future__ import annotations

import pytest

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from tests.plan.test_openai_frontend import with_llm_version

STACK_FILE = "stacks/Pulumi.test-dev.yaml"
V2 = "inference-platform:services[svc].versions[v2]"


def refusal(**version_keys) -> ConfigError:
    raw = with_llm_version({})
    raw["services"][0]["versions"][1].update(version_keys)
    with pytest.raises(ConfigError) as info:
        parse_settings(raw, STACK_FILE)
    assert "\n" not in info.value.one_line()
    return info.value


def test_a_frontend_version_on_the_ngc_tensorrt_llm_image_is_refused_on_its_image():
    llm = with_llm_version({})["services"][0]["versions"][1]["llm"] | {"engine": "tensorrtllm"}
    error = refusal(image="nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3", llm=llm)
    assert error.paths == [f"{V2}.image"]
    assert "does not ship the OpenAI frontend's Python packages" in error.one_line()
    assert "allowed: a -vllm-python-py3 image, or an image built from this one" in error.one_line()


def test_a_frontend_version_on_an_image_built_with_the_frontend_is_accepted():
    raw = with_llm_version({})
    raw["services"][0]["versions"][1]["image"] = "registry.example.com/tritonserver:25.01-trtllm-openai"
    assert parse_settings(raw, STACK_FILE).services[0].versions[1].serves_openai


def test_server_args_the_frontend_would_ignore_are_refused_one_key_each():
    error = refusal(serverArgs={"metrics-config": ["histogram_latencies=true"], "exit-timeout-secs": "900", "log-verbose": "1"})
    assert error.paths == [f"{V2}.serverArgs.exit-timeout-secs", f"{V2}.serverArgs.metrics-config"]
    assert "--metrics-config would be ignored; allowed with llm.openai: log-verbose" in error.one_line()


def test_log_verbose_reaches_the_frontends_own_flag():
    raw = with_llm_version({})
    raw["services"][0]["versions"][1]["serverArgs"] = {"log-verbose": "1"}
    version = parse_settings(raw, STACK_FILE).services[0].versions[1]
    from inference_platform.serving.openai_frontend import frontend_args

    assert "--tritonserver-log-verbose-level=1" in frontend_args(version, "/models/svc/v2", None)


def test_model_control_and_config_names_the_frontend_cannot_apply_are_refused():
    error = refusal(modelControl={"mode": "explicit", "load": ["llama"]}, modelConfigName="h100")
    assert error.paths == [f"{V2}.modelControl.mode", f"{V2}.modelConfigName"]


def test_a_tokenizer_needs_the_file_share():
    raw = with_llm_version({"tokenizer": "svc/v2/tokenizer"})
    raw["weightCaches"]["s3"] = {"endpoint": "https://s3.example.com", "bucket": "weights"}
    raw["s3AccessKeyId"] = raw["s3SecretAccessKey"] = "test"
    raw["services"][0]["versions"][1]["modelRepository"] = {"cache": "s3", "path": "svc/v2"}
    with pytest.raises(ConfigError) as info:
        parse_settings(raw, STACK_FILE, frozenset({"s3AccessKeyId", "s3SecretAccessKey"}))
    # A vLLM version on s3 is refused on its cache too (its model.json needs the share).
    assert info.value.paths == [f"{V2}.llm.openai.tokenizer", f"{V2}.modelRepository.cache"]
    assert "allowed: a tokenizer with modelRepository.cache fileShare" in info.value.lines()[0]
