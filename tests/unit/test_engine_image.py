"""An LLM version's engine against the backends its NGC Triton image carries: `-py3` and the
framework flavours have neither vLLM nor TensorRT-LLM, `-vllm-python-py3` only vLLM,
`-trtllm-python-py3` only TensorRT-LLM; images of one's own cannot be judged and are accepted."""

from __future__ import annotations

import pytest

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from tests.conftest import base_config

STACK_FILE = "stacks/Pulumi.test-dev.yaml"
V1 = "inference-platform:services[svc].versions[v1]"
ARCH = {"parametersBillion": 8.03, "layers": 32, "kvHeads": 8, "headDim": 128}
DIGEST = "@sha256:" + "ab" * 32


def stack(image: str, engine: str | None = "vllm", backend: str | None = None) -> dict:
    raw = base_config()
    raw["services"][0]["name"] = "svc"
    version = raw["services"][0]["versions"][0]
    version["name"] = "v1"
    version["image"] = image
    if engine:
        version["llm"] = {"engine": engine, "architecture": ARCH, "maxContextTokens": 4096, "maxConcurrentSequences": 16}
    if backend:
        version["llmBackend"] = backend
    return raw


def refused(raw: dict) -> str:
    with pytest.raises(ConfigError) as info:
        parse_settings(raw, STACK_FILE)
    (line,) = info.value.lines()
    return line


@pytest.mark.parametrize("flavour", ["py3", "pyt-python-py3", "tf2-python-py3", "trtllm-python-py3"])
def test_vllm_on_an_ngc_image_without_the_vllm_backend_is_refused_on_the_image(flavour):
    image = f"nvcr.io/nvidia/tritonserver:25.01-{flavour}"
    line = refused(stack(image))
    assert line.startswith(f"{STACK_FILE}: invalid configuration: {V1}.image: {image} has no vLLM backend "
                           f"(NGC's -{flavour} image), so Triton cannot load the version's model with llm.engine vllm; "
                           "allowed: nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3, or an image of your own"), line


@pytest.mark.parametrize("flavour", ["py3", "vllm-python-py3"])
def test_tensorrtllm_on_an_ngc_image_without_its_backend_is_refused(flavour):
    line = refused(stack(f"nvcr.io/nvidia/tritonserver:24.12-{flavour}", engine="tensorrtllm"))
    assert f"{V1}.image: " in line and "has no TensorRT-LLM backend" in line
    assert "allowed: nvcr.io/nvidia/tritonserver:24.12-trtllm-python-py3" in line


def test_an_llm_backend_label_alone_is_checked_too():
    line = refused(stack("nvcr.io/nvidia/tritonserver:25.01-py3", engine=None, backend="vllm"))
    assert "has no vLLM backend" in line and "with llmBackend vllm" in line


def test_a_pinned_digest_does_not_hide_the_tag():
    assert "has no vLLM backend" in refused(stack(f"nvcr.io/nvidia/tritonserver:25.01-py3{DIGEST}"))


@pytest.mark.parametrize("image, engine", [
    ("nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3", "vllm"),
    (f"nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3{DIGEST}", "vllm"),
    ("nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3", "tensorrtllm"),
    # Not NGC's, or a flavour whose backends are not known: accepted, not judged.
    ("registry.example.com/tritonserver:25.01-py3", "vllm"),
    ("registry.example.com/triton-vllm:25.01", "vllm"),
    ("nvcr.io/nvidia/tritonserver:25.01-py3-igpu", "vllm"),
])
def test_an_image_with_the_backend_or_one_that_cannot_be_judged_is_accepted(image, engine):
    settings = parse_settings(stack(image, engine), STACK_FILE)
    assert settings.services[0].versions[0].llm_backend == engine


def test_a_classic_version_on_the_py3_image_is_untouched():
    assert parse_settings(stack("nvcr.io/nvidia/tritonserver:25.01-py3", engine=None), STACK_FILE).services
