"""An LLM version fits its GPU share before anything runs: the arithmetic against published
figures, its properties over model sizes, contexts and shares, and the stack errors it gives."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference_platform.serving.llm_memory import GB, GIB, fit, llm_memory_report, token_budget
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.llm import Llm
from inference_platform.settings.loader import parse_settings
from tests.conftest import base_config

STACK_FILE = "stacks/Pulumi.test-dev.yaml"
# config.json of each model: layers, KV heads, head dim.
LLAMA2_7B = {"parametersBillion": 6.74, "layers": 32, "kvHeads": 32, "headDim": 128, "attentionHeads": 32}
LLAMA31_8B = {"parametersBillion": 8.03, "layers": 32, "kvHeads": 8, "headDim": 128, "attentionHeads": 32}
LLAMA3_70B = {"parametersBillion": 70.6, "layers": 80, "kvHeads": 8, "headDim": 128, "attentionHeads": 64}


def llm(arch=LLAMA31_8B, context=8192, sequences=1, **more) -> Llm:
    return Llm.model_validate({"engine": "vllm", "architecture": arch, "maxContextTokens": context,
                               "maxConcurrentSequences": sequences, **more})


# (what, computed, published figure, source)
PUBLISHED = [
    ("Llama 2 7B fp16 KV cache, batch 1, 4096 tokens", fit(llm(LLAMA2_7B, 4096, 1, dtype="float16"), 80 * GB).kv_cache, 2 * GIB,
     "NVIDIA, Mastering LLM Techniques: Inference Optimization (1 x 4096 x 2 x 32 x 4096 x 2 bytes, ~2 GB)"),
    ("Llama 2 7B fp16 KV cache per token", fit(llm(LLAMA2_7B, dtype="float16"), 80 * GB).kv_per_token, 524_288,
     "systemoverflow.com, KV cache in LLM inference (524,288 bytes per token)"),
    ("Llama 2 7B fp16 weights", fit(llm(LLAMA2_7B, dtype="float16"), 80 * GB).weights, 14e9,
     "NVIDIA, Mastering LLM Techniques (7B x 2 bytes ~ 14 GB)"),
    ("Llama 2 7B int8 weights", fit(llm(LLAMA2_7B, dtype="int8"), 80 * GB).weights, 7e9,
     "cloudfabrik-net.pages.dev, LLM inference optimization (INT8 7 GB)"),
    ("Llama 3 70B fp16 weights", fit(llm(LLAMA3_70B, dtype="float16"), 80 * GB).weights, 140e9,
     "gadaalabs.com, LLM inference optimization (140 GB in float16)"),
    ("Llama 3 70B bf16 KV cache, 32K tokens", fit(llm(LLAMA3_70B, 32768, 1), 80 * GB).kv_cache, 10.2e9,
     "gadaalabs.com (80 layers, 8 KV heads, head_dim 128: 10.2 GB for 32K tokens)"),
]


@pytest.mark.parametrize("what,computed,published,source", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_the_arithmetic_agrees_with_published_figures(what, computed, published, source):
    # Published figures are rounded (GB vs GiB, 7B for 6.74B): within 6%.
    assert computed == pytest.approx(published, rel=0.06), source


def test_tensor_parallelism_splits_weights_and_kv_cache_but_not_the_overhead():
    one, four = fit(llm(LLAMA3_70B, 8192, 8), 80 * GB), fit(llm(LLAMA3_70B, 8192, 8, tensorParallelSize=4), 80 * GB)
    assert four.weights == pytest.approx(one.weights / 4) and four.kv_cache == pytest.approx(one.kv_cache / 4)
    assert four.overhead == one.overhead
    assert not one.fits and four.fits


def test_a_quantised_kv_cache_halves_it_and_auto_keeps_16_bits_for_quantised_weights():
    auto = fit(llm(dtype="int4"), 80 * GB)
    fp8 = fit(llm(dtype="int4", kvCacheDtype="fp8"), 80 * GB)
    assert auto.kv_per_token == 2 * 32 * 8 * 128 * 2
    assert fp8.kv_per_token == auto.kv_per_token / 2


models = st.builds(dict, parametersBillion=st.floats(0.1, 200), layers=st.integers(1, 128),
                   kvHeads=st.integers(1, 64), headDim=st.sampled_from([64, 80, 96, 128, 256]))
shares = st.sampled_from([10 * GB, 20 * GB, 24 * GB, 40 * GB, 48 * GB, 80 * GB, 141 * GB])


@settings(max_examples=200, deadline=None)
@given(arch=models, context=st.integers(16, 262_144), sequences=st.integers(1, 512), share=shares,
       tp=st.sampled_from([1, 2, 4, 8]), engine=st.sampled_from(["vllm", "tensorrtllm"]))
def test_the_token_budget_is_the_exact_boundary_of_what_fits(arch, context, sequences, share, tp, engine):
    f = fit(llm(arch, context, sequences, tensorParallelSize=tp, engine=engine), share)
    budget = token_budget(f)
    at = fit(llm(arch, 16, 1, tensorParallelSize=tp, engine=engine), share)
    # A configuration fits exactly when its tokens (context x sequences) are within the budget.
    assert f.fits == (context * sequences <= budget)
    if budget:
        assert budget * at.kv_per_token <= at.kv_room
    assert (budget + 1) * at.kv_per_token > at.kv_room


@settings(max_examples=100, deadline=None)
@given(arch=models, context=st.integers(16, 65_536), sequences=st.integers(1, 256), share=shares)
def test_more_context_more_sequences_or_a_smaller_share_never_makes_a_misfit_fit(arch, context, sequences, share):
    f = fit(llm(arch, context, sequences), share)
    if not f.fits:
        assert not fit(llm(arch, context * 2, sequences), share).fits
        assert not fit(llm(arch, context, sequences + 1), share).fits
        assert not fit(llm(arch, context, sequences), share // 2).fits


# --------------------------------------------------------------------------- the stack


def stack(gpu_group: dict | None = None, gpu: dict | None = None, **llm_keys) -> dict:
    raw = base_config()
    if gpu_group:
        raw["cluster"]["nodeGroups"][1]["gpu"] = gpu_group
    version = raw["services"][0]["versions"][0]
    version["gpu"] = {"group": "gpu", **(gpu or {})}
    version["llm"] = {"engine": "vllm", "architecture": LLAMA31_8B, "maxContextTokens": 8192, **llm_keys}
    version["image"] = "nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3"  # the image with the vLLM backend
    # No credential to manage: these tests are about the engine's memory, not the route.
    raw["services"][0]["auth"] = {"mode": "none"}
    return raw


def refused(raw: dict) -> str:
    with pytest.raises(ConfigError) as info:
        parse_settings(raw, STACK_FILE)
    line = info.value.one_line()
    assert "\n" not in line
    return line


def test_a_version_that_fits_is_accepted_and_takes_its_engine_as_llm_backend():
    settings_ = parse_settings(stack(maxConcurrentSequences=32), STACK_FILE)
    assert settings_.services[0].versions[0].llm_backend == "vllm"


def test_a_version_too_big_for_its_gpu_names_the_key_and_the_largest_context_and_concurrency_that_fit():
    line = refused(stack(maxConcurrentSequences=64))
    assert "services[svc].versions[v1].llm: svc v1 does not fit its GPU share: weights 15.0 + KV cache 64.0" in line
    # (80 GB x 0.9 - 16.06 GB weights - 2 GiB) / 128 KiB a token = 410,404 tokens: / 64 and / 8192.
    assert "allowed: at most maxContextTokens 6412 with 64 sequences or maxConcurrentSequences 50 with 8192 tokens" in line


def test_a_mig_slice_counts_the_slice_memory_and_weights_alone_can_exceed_it():
    mig = {"model": "A100-80GB", "sharing": {"mode": "mig", "migProfile": "all-1g.10gb"}}
    line = refused(stack(mig))
    assert "usable 8.4 GiB (0.9 of MIG slice 1g.10gb)" in line
    assert "the weights and overhead alone exceed the usable memory" in line


@pytest.mark.parametrize("group,gpu,tp,expected", [
    ({"model": "H100-80GB", "perNode": 4}, {"count": 2}, 4, "is 4 but gpu.count is 2"),
    ({"model": "H100-80GB", "perNode": 2}, {"count": 4}, 4, "has 2 GPUs per node"),
    ({"model": "H100-80GB", "sharing": {"mode": "time-slicing", "replicas": 4}}, {"count": 2}, 2, "whose GPUs are shared"),
])
def test_tensor_parallelism_must_be_the_replica_s_gpus_on_one_node_of_whole_gpus(group, gpu, tp, expected):
    line = refused(stack(group, gpu, tensorParallelSize=tp))
    assert "services[svc].versions[v1].llm.tensorParallelSize: " in line and expected in line


def test_llm_backend_and_llm_engine_must_agree():
    raw = stack()
    raw["services"][0]["versions"][0]["llmBackend"] = "tensorrtllm"
    assert "llmBackend tensorrtllm differs from llm.engine vllm" in refused(raw)


# --------------------------------------------------------------------------- what each engine reserves


def test_with_fewer_kv_heads_than_gpus_each_gpu_holds_a_whole_replicated_head():
    two_heads = {**LLAMA3_70B, "kvHeads": 2}
    f = fit(llm(two_heads, tensorParallelSize=8), 80 * GB)
    # vLLM max(1, 2 // 8) and TensorRT-LLM ceil(2 / 8) heads per GPU: one, not a quarter.
    assert f.kv_per_token == 2 * 80 * 1 * 128 * 2
    assert fit(llm(LLAMA3_70B, tensorParallelSize=4), 80 * GB).kv_per_token == 2 * 80 * 2 * 128 * 2


def test_tensorrt_llm_takes_its_fraction_of_the_memory_left_after_the_weights():
    # Llama 3 70B in fp8 on one H100: 70.6 GB of weights leave 7.3 GB, 0.9 of it for the KV cache.
    f = fit(llm(LLAMA3_70B, 4096, 4, dtype="fp8", engine="tensorrtllm"), 80 * GB)
    assert f.kv_room == pytest.approx(0.9 * (80e9 - 70.6e9 - 2 * GIB))
    assert f.fits  # 5.4 GB of KV cache
    # vLLM's 0.9 is of the whole GPU, weights included: the same model does not fit there.
    assert not fit(llm(LLAMA3_70B, 4096, 4, dtype="fp8"), 80 * GB).fits


def test_int4_weights_count_their_group_scales_and_zero_points():
    f = fit(llm(dtype="int4"), 80 * GB)
    assert f.weights == pytest.approx(8.03e9 * (0.5 + 2.5 / 128))


TIME_SLICED_H100 = {"model": "H100-80GB", "sharing": {"mode": "time-slicing", "replicas": 2}}


def test_vllm_on_a_shared_gpu_takes_at_most_its_part_of_the_whole_device():
    line = refused(stack(TIME_SLICED_H100, maxConcurrentSequences=8))
    assert "services[svc].versions[v1].llm.memoryUtilization: is 0.9 on H100-80GB shared 2 ways (time-slicing): " in line
    assert "vLLM's gpu_memory_utilization is a fraction of the whole GPU" in line and "allowed: at most 0.5" in line
    settings_ = parse_settings(stack(TIME_SLICED_H100, maxConcurrentSequences=8, memoryUtilization=0.45), STACK_FILE)
    (report,) = llm_memory_report(settings_)
    assert "usable 33.5 GiB (0.45 of the whole GPU of H100-80GB shared 2 ways (time-slicing)): fits" in report


def test_tensorrt_llm_on_a_shared_gpu_is_held_to_its_share_whichever_replica_loads_first():
    raw = stack(TIME_SLICED_H100, engine="tensorrtllm", maxConcurrentSequences=8)
    raw["services"][0]["versions"][0]["image"] = "nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3"
    # Loaded first it sees 80 GB free: 16.1 GB weights + 2 GiB + f x (80 - 18.2) GB <= 40 GB.
    most = (40e9 - 8.03e9 * 2 - 2 * GIB) / (80e9 - 8.03e9 * 2 - 2 * GIB)
    line = refused(raw)
    assert "llm.memoryUtilization: is 0.9 on H100-80GB shared 2 ways (time-slicing): TensorRT-LLM's " in line
    assert f"allowed: at most {int(most * 1000) / 1000:g}" in line
    raw["services"][0]["versions"][0]["llm"] |= {"memoryUtilization": 0.35, "maxConcurrentSequences": 4}
    (report,) = llm_memory_report(parse_settings(raw, STACK_FILE))
    # Loaded last it finds its share's 40 GB, less its weights and overhead, free: 20.3 GiB.
    assert "leave 20.3 GiB of H100-80GB shared 2 ways (time-slicing) per GPU" in report and report.endswith(": fits")


LLAMA31_8B_VOCAB = {**LLAMA31_8B, "vocabSize": 128_256, "hiddenSize": 4096}


def test_a_quantised_checkpoint_keeps_its_embeddings_and_lm_head_in_16_bits():
    embeddings = 2 * 128_256 * 4096  # token embeddings and an untied lm_head
    f = fit(llm(LLAMA31_8B_VOCAB, dtype="int4"), 80 * GB)
    assert f.weights == pytest.approx((8.03e9 - embeddings) * (0.5 + 2.5 / 128) + embeddings * 2)
    tied = fit(llm({**LLAMA31_8B_VOCAB, "tieWordEmbeddings": True}, dtype="int4"), 80 * GB)
    assert f.weights - tied.weights == pytest.approx(embeddings / 2 * (2 - 0.5 - 2.5 / 128))
    # Unquantised weights hold them at their own type, already in parametersBillion.
    assert fit(llm(LLAMA31_8B_VOCAB), 80 * GB).weights == pytest.approx(8.03e9 * 2)


@pytest.mark.parametrize("dtype", ["int4", "int8", "fp8"])
def test_a_quantised_dtype_needs_the_sizes_of_its_16_bit_embeddings(dtype):
    line = refused(stack(maxConcurrentSequences=8, dtype=dtype))
    assert f"services[svc].versions[v1].llm.architecture.vocabSize: required with dtype {dtype}: " in line
    assert "allowed: architecture.vocabSize and hiddenSize from the model's config.json" in line
    parse_settings(stack(maxConcurrentSequences=8, dtype=dtype, architecture=LLAMA31_8B_VOCAB), STACK_FILE)
