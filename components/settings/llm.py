"""`services[].versions[].llm`: a version that serves a large language model, declared with what
its GPU memory depends on, so the plan can check the model fits before anything runs
(serving/llm_memory.py; docs/serving.md: LLM memory fit).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from inference_platform.settings.base import Model, Number

# Bytes per weight or KV-cache element of each data type (int4 packs two weights in a byte).
DTYPE_BYTES: dict[str, float] = {"float32": 4, "bfloat16": 2, "float16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
WeightDtype = Literal["float32", "bfloat16", "float16", "fp8", "int8", "int4"]
KvCacheDtype = Literal["auto", "float32", "bfloat16", "float16", "fp8"]


class LlmArchitecture(Model):
    """The numbers of the model's `config.json` that its memory depends on."""

    parameters_billion: Number = Field(gt=0, le=2000)
    """Parameters, in billions (e.g. 8.03 for Llama 3.1 8B)."""
    layers: int = Field(ge=1, le=1024)
    """Transformer layers (`num_hidden_layers`)."""
    kv_heads: int = Field(ge=1, le=1024)
    """Key/value attention heads (`num_key_value_heads`; equal to the attention heads without grouped-query attention)."""
    head_dim: int = Field(ge=1, le=1024)
    """Size of one attention head (`head_dim`, else `hidden_size / num_attention_heads`)."""


class Llm(Model):
    engine: Literal["vllm", "tensorrtllm"]
    """The Triton backend that runs the model: `vllm` or `tensorrtllm`; sets the version's `llmBackend`."""
    architecture: LlmArchitecture
    """What the model's memory depends on, from its `config.json`."""
    max_context_tokens: int = Field(ge=16, le=10_485_760)
    """Longest sequence (prompt and answer, in tokens) the engine accepts."""
    max_concurrent_sequences: int = Field(default=64, ge=1, le=65_536)
    """Sequences the engine serves at once, each with its KV cache for the whole context."""
    dtype: WeightDtype = "bfloat16"
    """Data type of the weights as loaded (`int4`/`int8`/`fp8` for quantised checkpoints)."""
    kv_cache_dtype: KvCacheDtype = "auto"
    """Data type of the KV cache; `auto` uses the weights' type (`float16` for quantised weights)."""
    tensor_parallel_size: int = Field(default=1, ge=1, le=16)
    """GPUs one replica spreads the model over, all on one node; equals the version's `gpu.count`."""
    memory_utilization: Number = Field(default=0.9, ge=0.1, le=0.98)
    """Share of each GPU's memory the engine may use (vLLM `gpu_memory_utilization`, TensorRT-LLM `kv_cache_free_gpu_mem_fraction`; both default 0.9)."""
    overhead_gib: Number = Field(default=2, ge=0, le=64)
    """GPU memory per GPU besides weights and KV cache, GiB: CUDA context, activations, CUDA graphs (an estimate; measure yours)."""

    @property
    def kv_element_bytes(self) -> float:
        if self.kv_cache_dtype != "auto":
            return DTYPE_BYTES[self.kv_cache_dtype]
        # Quantised weights keep a 16-bit KV cache unless told otherwise (vLLM kv_cache_dtype "auto"
        # takes the model's activation type, which is 16-bit for int4/int8/fp8 checkpoints).
        return max(DTYPE_BYTES[self.dtype], 2)
