"""Settings of an LLM version its engine cannot honour are refused with one line naming the key
(settings/llm.py llm_setting_problems, settings/serving.py first_response_histogram_problems)."""

from __future__ import annotations

import pytest

from inference_platform.settings.loader import parse_settings
from tests.unit.test_llm_memory import STACK_FILE, refused, stack

TRTLLM_IMAGE = "nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3"
HISTOGRAMS_ON = {"metrics-config": ["histogram_latencies=true"]}


def trtllm(server_args: dict | None = None, **llm_keys) -> dict:
    raw = stack(engine="tensorrtllm", maxConcurrentSequences=32, **llm_keys)
    version = raw["services"][0]["versions"][0]
    version["image"] = TRTLLM_IMAGE
    if server_args is not None:
        version["serverArgs"] = server_args
    return raw


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_a_kv_cache_type_vllm_refuses_is_refused_for_vllm(dtype):
    line = refused(stack(maxConcurrentSequences=32, kvCacheDtype=dtype))
    assert f"services[svc].versions[v1].llm.kvCacheDtype: is {dtype}, which vLLM 0.6.3" in line
    assert "allowed with engine vllm: auto, fp8" in line


@pytest.mark.parametrize("dtype", ["auto", "fp8"])
def test_the_kv_cache_types_vllm_takes_are_accepted(dtype):
    parse_settings(stack(maxConcurrentSequences=32, kvCacheDtype=dtype), STACK_FILE)


def test_tensorrt_llm_takes_the_kv_cache_type_its_engine_was_built_with():
    # The key describes the built engine there (the backend's config.pbtxt has no KV-cache type).
    parse_settings(trtllm(kvCacheDtype="float16"), STACK_FILE)


def test_a_kv_cache_use_target_on_vllm_is_refused_and_on_tensorrt_llm_accepted():
    line = refused(stack(maxConcurrentSequences=32, autoscaling={"kvCacheUseTarget": 0.7}))
    assert "services[svc].versions[v1].llm.autoscaling.kvCacheUseTarget: the vLLM backend exports no KV-cache gauge" in line
    parse_settings(trtllm(autoscaling={"kvCacheUseTarget": 0.7}), STACK_FILE)


@pytest.mark.parametrize("kv_heads,tp,ok", [(8, 2, True), (8, 8, True), (4, 8, True), (1, 4, True),
                                            (8, 3, False), (6, 4, False), (12, 8, False)])
def test_tensor_parallelism_must_split_or_replicate_the_kv_heads_evenly(kv_heads, tp, ok):
    # 96 query heads: divisible by every TP here, so only the KV heads decide.
    arch = {"parametersBillion": 8.03, "layers": 32, "kvHeads": kv_heads, "headDim": 128, "attentionHeads": 96}
    raw = stack({"model": "H100-80GB", "perNode": 8}, {"count": tp}, architecture=arch, tensorParallelSize=tp,
                maxConcurrentSequences=8)
    if ok:
        parse_settings(raw, STACK_FILE)
        return
    line = refused(raw)
    assert f"services[svc].versions[v1].llm.tensorParallelSize: is {tp}, which does not split the model's {kv_heads} KV heads" in line
    assert "allowed: a divisor of architecture.kvHeads" in line


def tensor_parallel(tp: int, engine: str = "vllm", **architecture) -> dict:
    arch = {"parametersBillion": 8.03, "layers": 32, "kvHeads": 1, "headDim": 128, **architecture}
    raw = stack({"model": "H100-80GB", "perNode": 8}, {"count": tp}, architecture=arch, tensorParallelSize=tp,
                maxConcurrentSequences=8, engine=engine)
    if engine == "tensorrtllm":
        raw["services"][0]["versions"][0]["image"] = TRTLLM_IMAGE
    return raw


@pytest.mark.parametrize("engine", ["vllm", "tensorrtllm"])
def test_tensor_parallelism_must_divide_the_attention_heads(engine):
    # One KV head is replicated on every GPU (allowed), but 12 query heads do not split over 8.
    line = refused(tensor_parallel(8, engine, attentionHeads=12))
    assert "services[svc].versions[v1].llm.tensorParallelSize: is 8, which does not divide the model's 12 attention heads" in line
    assert "allowed: a divisor of architecture.attentionHeads (1, 2, 3, 4, 6, 12)" in line
    parse_settings(tensor_parallel(4, engine, attentionHeads=12), STACK_FILE)


def test_the_attention_heads_are_required_above_one_gpu_only():
    line = refused(tensor_parallel(2))
    assert "services[svc].versions[v1].llm.architecture.attentionHeads: required with tensorParallelSize 2" in line
    assert "allowed: architecture.attentionHeads, num_attention_heads of the model's config.json" in line
    parse_settings(tensor_parallel(1), STACK_FILE)


def test_a_first_token_objective_on_tensorrt_llm_needs_triton_s_first_response_histogram():
    raw = trtllm()
    raw["services"][0]["llmObjectives"] = {"timeToFirstTokenMs": 500}
    line = refused(raw)
    assert "services[svc].versions[v1].serverArgs.metrics-config: a time-to-first-token objective on TensorRT-LLM" in line
    assert "allowed: metrics-config: [histogram_latencies=true]" in line
    raw = trtllm(HISTOGRAMS_ON)
    raw["services"][0]["llmObjectives"] = {"timeToFirstTokenMs": 500}
    parse_settings(raw, STACK_FILE)


def test_a_first_token_objective_on_tensorrt_llm_behind_the_openai_frontend_is_refused():
    raw = trtllm(openai={})
    # An image with the frontend's packages (the -trtllm- images lack them), built by the user.
    raw["services"][0]["versions"][0]["image"] = "registry.example.com/tritonserver-trtllm-openai:25.01"
    raw["services"][0]["auth"] = {"mode": "none"}
    raw["services"][0]["llmObjectives"] = {"timeToFirstTokenMs": 500}
    line = refused(raw)
    assert "services[svc].llmObjectives.timeToFirstTokenMs: version v1 runs TensorRT-LLM behind the OpenAI frontend" in line
