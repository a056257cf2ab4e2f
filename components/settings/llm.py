"""`services[].versions[].llm`: a version that serves a large language model, declared with what
its GPU memory depends on, so the plan can check the model fits before anything runs
(serving/llm_memory.py; docs/serving.md: LLM memory fit).
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, model_validator

from inference_platform.settings.base import Model, Number, RelativePath
from inference_platform.settings.errors import KeyPath

# Bytes per weight or KV-cache element of each data type (int4 packs two weights in a byte).
DTYPE_BYTES: dict[str, float] = {"float32": 4, "bfloat16": 2, "float16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
# Bytes per weight as loaded: int4 checkpoints (AWQ, GPTQ) also hold a 16-bit scale and a 4-bit
# zero point per group of 128 weights.
WEIGHT_BYTES: dict[str, float] = {**DTYPE_BYTES, "int4": 0.5 + (2 + 0.5) / 128}
WeightDtype = Literal["float32", "bfloat16", "float16", "fp8", "int8", "int4"]
QUANTISED_DTYPES = ("fp8", "int8", "int4")
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
    attention_heads: Optional[int] = Field(default=None, ge=1, le=4096)
    """Query attention heads (`num_attention_heads`); required with tensorParallelSize above 1, which must divide it (both engines split the heads over the GPUs)."""
    vocab_size: Optional[int] = Field(default=None, ge=1, le=10_000_000)
    """Tokens of the vocabulary (`vocab_size`); required with a quantised dtype, whose checkpoint keeps the token embeddings and lm_head in 16 bits."""
    hidden_size: Optional[int] = Field(default=None, ge=1, le=1_000_000)
    """Width of the model (`hidden_size`); required with a quantised dtype, like vocabSize."""
    tie_word_embeddings: bool = False
    """The lm_head is the token embeddings (`tie_word_embeddings`), counted once."""

    @property
    def embedding_parameters(self) -> int:
        """Parameters of the token embeddings and lm_head (0 when their sizes are not given)."""
        if self.vocab_size is None or self.hidden_size is None:
            return 0
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)


class LlmAutoscaling(Model):
    """The engine signals an LLM version's HPA scales on (docs/serving.md: LLM autoscaling)."""

    requests_in_flight_target: Optional[int] = Field(default=None, ge=1, le=65_536)
    """Requests in the engine per replica the HPA aims at, at most maxConcurrentSequences (default: 80% of it): TensorRT-LLM's active requests, vLLM's requests in flight."""
    kv_cache_use_target: Number = Field(default=0.8, ge=0.1, le=1)
    """Share of the KV cache in use per replica the HPA aims at (TensorRT-LLM only: the vLLM backend exports no KV-cache gauge)."""


class LlmOpenAi(Model):
    """Serve the version through Triton's OpenAI-compatible frontend (docs/serving.md: OpenAI-compatible endpoints)."""

    tokenizer: Optional[RelativePath] = None
    """Folder of the model's Hugging Face tokenizer files (with the chat template in tokenizer_config.json), relative to the file share like modelRepository.path: the frontend's `--tokenizer`. Without it /v1/chat/completions has no chat template and fails; /v1/completions works."""


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
    """Data type of the KV cache; `auto` uses the weights' type (`float16` for quantised weights). vLLM takes `auto` and `fp8` only; for TensorRT-LLM, the KV cache the engine was built with."""
    tensor_parallel_size: int = Field(default=1, ge=1, le=16)
    """GPUs one replica spreads the model over, all on one node; equals the version's `gpu.count`."""
    memory_utilization: Number = Field(default=0.9, ge=0.1, le=0.98)
    """vLLM `gpu_memory_utilization`: the share of the whole GPU's memory the engine may use, weights included (at most 1/replicas on a GPU shared by time-slicing or MPS); TensorRT-LLM `kv_cache_free_gpu_mem_fraction`: the share of the memory free once the engine is loaded that its KV cache takes. Both default 0.9."""
    overhead_gib: Number = Field(default=2, ge=0, le=64)
    """GPU memory per GPU besides weights and KV cache, GiB: CUDA context, activations, CUDA graphs (an estimate; measure yours)."""
    autoscaling: LlmAutoscaling = LlmAutoscaling()
    """Targets of the engine signals the version's HPA scales on (with the service's or version's autoscaling enabled)."""
    openai: Optional[LlmOpenAi] = None
    """Run the version's Triton inside the OpenAI-compatible frontend (`/v1/chat/completions`, `/v1/completions`, `/v1/models`, streaming) beside the KServe HTTP and gRPC endpoints; left out, the version runs `tritonserver` as classic versions do."""

    @model_validator(mode="after")
    def _target_within_capacity(self) -> "Llm":
        target = self.autoscaling.requests_in_flight_target
        if target is not None and target > self.max_concurrent_sequences:
            raise ValueError(f"autoscaling.requestsInFlightTarget {target} exceeds maxConcurrentSequences "
                             f"{self.max_concurrent_sequences}, so it could never be reached; allowed: 1..{self.max_concurrent_sequences}")
        return self

    @property
    def in_flight_target(self) -> int:
        explicit = self.autoscaling.requests_in_flight_target
        return explicit if explicit is not None else max(1, int(self.max_concurrent_sequences * 0.8))

    @property
    def kv_element_bytes(self) -> float:
        if self.kv_cache_dtype != "auto":
            return DTYPE_BYTES[self.kv_cache_dtype]
        # Quantised weights keep a 16-bit KV cache unless told otherwise (vLLM kv_cache_dtype "auto"
        # takes the model's activation type, which is 16-bit for int4/int8/fp8 checkpoints).
        return max(DTYPE_BYTES[self.dtype], 2)


# The KV-cache types vLLM 0.6.3.post1 (Triton 25.01's vLLM backend) starts with: vllm/config.py
# CacheConfig._verify_cache_dtype takes "auto" and the fp8 forms, anything else is "Unknown kv
# cache dtype". The backend passes model.json to AsyncEngineArgs as it is, so no argument parser
# stands between; the fp8 forms take one byte alike.
VLLM_KV_CACHE_DTYPES = ("auto", "fp8")


def llm_setting_problems(llm: Llm) -> list[tuple[KeyPath, str]]:
    """What an LLM version asks of its engine that the engine cannot honour (paths relative to `llm`)."""
    problems: list[tuple[KeyPath, str]] = []
    if llm.engine == "vllm" and llm.kv_cache_dtype not in VLLM_KV_CACHE_DTYPES:
        problems.append((("kvCacheDtype",), f"is {llm.kv_cache_dtype}, which vLLM 0.6.3 (the vLLM backend of Triton "
                         "25.01) refuses at start (Unknown kv cache dtype); allowed with engine vllm: "
                         f"{', '.join(VLLM_KV_CACHE_DTYPES)} (auto is the weights' type)"))
    if llm.engine == "vllm" and "kv_cache_use_target" in llm.autoscaling.model_fields_set:
        problems.append((("autoscaling", "kvCacheUseTarget"), "the vLLM backend exports no KV-cache gauge at the pinned "
                         "release, so no HPA metric follows this target; allowed: kvCacheUseTarget with engine "
                         "tensorrtllm only (leave it out for vllm)"))
    a = llm.architecture
    if llm.dtype in QUANTISED_DTYPES and (a.vocab_size is None or a.hidden_size is None):
        key = "vocabSize" if a.vocab_size is None else "hiddenSize"
        problems.append((("architecture", key), f"required with dtype {llm.dtype}: a quantised checkpoint keeps its token "
                         "embeddings and lm_head in 16 bits (vocab_size x hidden_size parameters each), which the memory "
                         "fit counts; allowed: architecture.vocabSize and hiddenSize from the model's config.json"))
    kv_heads, tp = a.kv_heads, llm.tensor_parallel_size
    problems += attention_head_problems(a, tp)
    if kv_heads % tp and tp % kv_heads:
        divisors = [d for d in range(1, min(kv_heads, 16) + 1) if kv_heads % d == 0]
        problems.append((("tensorParallelSize",), f"is {tp}, which does not split the model's {kv_heads} KV heads "
                         "evenly over the GPUs, nor replicates them evenly (vLLM refuses it at start); allowed: a "
                         f"divisor of architecture.kvHeads ({', '.join(map(str, divisors))}) or a multiple of it"))
    return problems


def attention_head_problems(a: LlmArchitecture, tp: int) -> list[tuple[KeyPath, str]]:
    """Both engines give each GPU an equal share of the query heads and refuse a TP that does not
    divide them: vLLM 0.6.3.post1 vllm/config.py ModelConfig.verify_with_parallel_config ("Total
    number of attention heads ... must be divisible by tensor parallel size") at start, TensorRT-LLM
    tensorrt_llm/layers/attention.py Attention.__init__ (assert num_attention_heads % tp_size)
    when the engine is built. The count is required only above TP 1, where a share exists: kvHeads
    does not stand in for it, since with fewer KV heads than GPUs (replicated, which is allowed)
    the query heads can still fail to divide (e.g. 1 KV head, 12 query heads, TP 8)."""
    if tp == 1:
        return []
    if a.attention_heads is None:
        return [(("architecture", "attentionHeads"), f"required with tensorParallelSize {tp}: both engines split the "
                 "query heads evenly over the GPUs and refuse a TP that does not divide them; allowed: "
                 "architecture.attentionHeads, num_attention_heads of the model's config.json")]
    if a.attention_heads % tp:
        divisors = [d for d in range(1, 17) if a.attention_heads % d == 0]
        return [(("tensorParallelSize",), f"is {tp}, which does not divide the model's {a.attention_heads} attention "
                 "heads (vLLM refuses it at start, TensorRT-LLM cannot build it); allowed: a divisor of "
                 f"architecture.attentionHeads ({', '.join(map(str, divisors))})")]
    return []


class LlmRouting(Model):
    """How an LLM service's requests reach its versions: a Gateway API Gateway and HTTPRoute, an
    InferencePool and the llm-d router's endpoint picker per version (docs/serving.md: LLM routing)."""

    failure_mode: Literal["FailOpen", "FailClose"] = "FailOpen"
    """What the gateway does when a version's endpoint picker does not answer (InferencePool `endpointPickerRef.failureMode`): `FailOpen` routes the request to any ready pod of the pool, `FailClose` refuses it."""


# The latency histograms' bucket bounds, in milliseconds, which an objective must be one of (a
# classic histogram answers "how many within X" only at its bounds): Triton's vLLM backend,
# triton-inference-server/vllm_backend r25.01 src/utils/metrics.py (seconds there); Triton core's
# first-response histogram for TensorRT-LLM, tests/catalogues/triton-histograms.txt (default
# buckets; the TensorRT-LLM backend v0.17.0 has no latency histogram of its own).
TTFT_BOUNDS_MS: dict[str, tuple[float, ...]] = {
    "vllm": (1, 5, 10, 20, 40, 60, 80, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000),
    "tensorrtllm": (100, 500, 2000, 5000),
}
ITL_BOUNDS_MS: dict[str, tuple[float, ...]] = {
    "vllm": (10, 25, 50, 75, 100, 150, 200, 300, 400, 500, 750, 1000, 2500),
}


class LlmObjectives(Model):
    """Latency objectives of an LLM service, with burn-rate alerts (docs/serving.md: LLM objectives)."""

    time_to_first_token_ms: Optional[Number] = Field(default=None, gt=0, le=60_000)
    """Time to first token, ms: `target` of the requests get their first token within it. One of the engine histogram's bounds (docs/serving.md: LLM objectives)."""
    inter_token_latency_ms: Optional[Number] = Field(default=None, gt=0, le=60_000)
    """Time between two output tokens, ms (vLLM only: TensorRT-LLM exports no such metric at the pinned release); one of the histogram's bounds."""
    target: Number = Field(default=0.99, ge=0.5, le=0.9999)
    """Share of requests within each objective over 30 days; 1 - target is the error budget the alerts watch burn."""

    @model_validator(mode="after")
    def _some_objective(self) -> "LlmObjectives":
        if self.time_to_first_token_ms is None and self.inter_token_latency_ms is None:
            raise ValueError("names no objective; allowed: timeToFirstTokenMs, interTokenLatencyMs or both")
        return self
