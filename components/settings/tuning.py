"""Tuning: a version's Model Analyzer run, batching presets and the model pipeline settings."""

from __future__ import annotations

import re
from typing import Annotated, Literal, Mapping, Optional

from pydantic import Field, field_validator, model_validator

from inference_platform.settings.base import DnsLabel, Image, Model, Number, RelativePath, TritonModelName
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.weights import S3Cache

# Model Analyzer objectives by stack-file name: Model Analyzer's metric tags
# (model_analyzer/record/types/*.py `tag`).
TUNING_OBJECTIVES = {
    "throughput": "perf_throughput",
    "latencyP99": "perf_latency_p99",
    "latencyP95": "perf_latency_p95",
    "latencyAvg": "perf_latency_avg",
    "gpuMemory": "gpu_used_memory",
    "gpuUtilization": "gpu_utilization",
}


TuningObjective = Literal[tuple(TUNING_OBJECTIVES)]  # type: ignore[valid-type]


class TuningConstraints(Model):
    latency_p99_ms: Optional[Number] = Field(default=None, ge=0.01, le=600000)
    """Latency budget: configurations whose p99 latency exceeds it (milliseconds) are not kept."""
    min_throughput: Optional[Number] = Field(default=None, ge=0.01, le=10_000_000)
    """Configurations below this throughput (inferences per second) are not kept."""
    max_gpu_memory_mb: Optional[int] = Field(default=None, ge=1, le=1_000_000)
    """Configurations using more GPU memory (MB) are not kept. Not on a MIG group: Triton reports no GPU metrics there."""


class TuningSearch(Model):
    max_instance_count: int = Field(default=5, ge=1, le=16)
    """Most model instances per GPU a configuration may have."""
    max_batch_size: int = Field(default=128, ge=1, le=4096)
    """Largest max_batch_size tried (powers of two from 1)."""
    max_concurrency: int = Field(default=1024, ge=1, le=16384)
    """Highest client concurrency Perf Analyzer drives."""


class TuningGoals(Model):
    objectives: dict[TuningObjective, Annotated[int, Field(ge=1, le=100)]] = Field(  # type: ignore[valid-type]
        default={"throughput": 10}, min_length=1)
    """What to optimise, with relative weights 1-100: throughput, latencyP99, latencyP95, latencyAvg, gpuMemory, gpuUtilization (the last two not on a MIG group: Triton reports no GPU metrics there)."""
    constraints: TuningConstraints = TuningConstraints()
    """Limits a kept configuration must meet."""
    search: TuningSearch = TuningSearch()
    """Bounds of Model Analyzer's search."""
    keep: int = Field(default=3, ge=1, le=10)
    """How many of the best configurations are written to the weight cache (`<model>/configs/tuned-<id>-<rank>.pbtxt`)."""


# An input name as Triton's config and Perf Analyzer's `--shape=<name>:<dims>` take it (Perf
# Analyzer splits at the last ':', perf_analyzer src/command_line_parser.cc).
InputName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.:/-]{0,63}$")]
# Perf Analyzer refuses a dimension <= 0 (command_line_parser.cc, `--shape`).
InputDims = Annotated[list[Annotated[int, Field(ge=1, le=1 << 20)]], Field(min_length=1, max_length=8)]


# How many requests in flight GenAI-Perf measures at once; an LLM engine's own cap
# (llm.maxConcurrentSequences) is the real bound where the version declares it.
Concurrency = Annotated[int, Field(ge=1, le=65_536)]


class LlmTuning(Model):
    """GenAI-Perf's concurrency sweep of a version with an LLM engine (docs/tuning.md: Tuning an LLM)."""

    tokenizer: RelativePath
    """Folder of the model's Hugging Face tokenizer files (tokenizer.json, tokenizer_config.json) in the version's weight cache, relative to it like modelRepository.path (and llm.openai.tokenizer), e.g. `llama/tokenizer`: GenAI-Perf writes prompts of the given lengths and counts output tokens with it (its `--tokenizer`). The run cannot reach the Hugging Face Hub."""
    concurrency: list[Concurrency] = Field(default=[1, 2, 4, 8, 16, 32], min_length=1, max_length=16)
    """Requests in flight GenAI-Perf holds against the version's server, one measurement each, in increasing order (its `--concurrency`); each at most the version's `llm.maxConcurrentSequences`. The sweep stops at the first one that misses an objective."""
    input_tokens_mean: int = Field(default=512, ge=1, le=1_048_576)
    """Mean prompt length in tokens of the synthetic prompts (`--synthetic-input-tokens-mean`)."""
    input_tokens_stddev: int = Field(default=0, ge=0, le=1_048_576)
    """Standard deviation of the prompt length (`--synthetic-input-tokens-stddev`)."""
    output_tokens_mean: int = Field(default=256, ge=1, le=1_048_576)
    """Mean answer length in tokens GenAI-Perf asks for (`--output-tokens-mean`, with `--output-tokens-mean-deterministic`)."""
    output_tokens_stddev: int = Field(default=0, ge=0, le=1_048_576)
    """Standard deviation of the answer length (`--output-tokens-stddev`)."""
    measurement_interval_ms: int = Field(default=10_000, ge=1_000, le=600_000)
    """Length of each measurement window, ms (`--measurement-interval`)."""

    @field_validator("concurrency")
    @classmethod
    def _increasing(cls, concurrency: list[int]) -> list[int]:
        if concurrency != sorted(set(concurrency)):
            raise ValueError(f"{concurrency} is not strictly increasing; allowed: distinct values, lowest first "
                             "(the sweep stops at the first that misses an objective)")
        return concurrency


class Tuning(TuningGoals):
    model: TritonModelName
    """Triton model to tune, by its name in the version's model repository."""
    llm: Optional[LlmTuning] = None
    """For a version with an LLM engine (`llm` or `llmBackend`), and required there: GenAI-Perf's sweep of requests in flight against the service's `llmObjectives`, instead of Model Analyzer's search (docs/tuning.md: Tuning an LLM)."""
    shapes: dict[InputName, InputDims] = Field(default={}, max_length=32)
    """The shape Perf Analyzer sends for each input with variable dims (-1) besides the batch dimension, e.g. `{input_ids: [128], attention_mask: [128]}`: the input's dims as its config lists them (without the batch dimension when max_batch_size > 0), Perf Analyzer's `--shape`. Required for every such input: Perf Analyzer cannot invent them."""
    input_data: Literal["random", "zero"] = "random"
    """What Perf Analyzer puts in the inputs (its `--input-data`): random bytes or zeros. Token ids need `zero`: random bytes are ids outside any vocabulary."""
    deadline_hours: Number = Field(default=6, ge=0.1, le=72)
    """Longest a run may take; then its pod is stopped and the GPU released."""
    run: int = Field(default=1, ge=1, le=1_000_000)
    """Run number: raise it to run again with unchanged settings (a run happens only when the tuning inputs change)."""
    sdk_image: Optional[Image] = None
    """Model Analyzer's (or, for an LLM version, GenAI-Perf's) image (default: the Triton SDK image of the version's Triton release, `<release>-py3-sdk`, which ships both)."""


# Triton reports no GPU metrics on MIG devices (triton-inference-server/server#5324, open: one
# process enumerates one MIG device and embedded DCGM cannot attribute them), and Model Analyzer
# in remote mode reads GPU metrics only from Triton's /metrics (monitor/remote_monitor.py); a
# metric it never receives passes every constraint (result/constraint_manager.py
# satisfies_constraints checks only the metrics measured). So on a MIG share these goals measure
# nothing.
GPU_METRIC_GOALS = {"gpuMemory", "gpuUtilization"}


def mig_goal_problems(goals: TuningGoals) -> list[tuple[KeyPath, str]]:
    """Goals a run on a MIG share could not measure (paths relative to the goals)."""
    problems: list[tuple[KeyPath, str]] = []
    if goals.constraints.max_gpu_memory_mb is not None:
        problems.append((("constraints", "maxGpuMemoryMb"), "Triton reports no GPU memory on MIG slices, so Model Analyzer "
                         "would pass every configuration (triton-inference-server/server#5324); allowed: no GPU-memory "
                         "constraint on a MIG group (the slice's own memory is the limit)"))
    for objective in sorted(GPU_METRIC_GOALS & set(goals.objectives)):
        problems.append((("objectives", objective), "Triton reports no GPU metrics on MIG slices, so this objective would "
                         "weigh nothing (triton-inference-server/server#5324); allowed: throughput and latency objectives"))
    return problems


# Model Analyzer's keys of `tuning` (field name -> stack-file name): an LLM version's run is GenAI-Perf's.
MODEL_ANALYZER_KEYS = {"objectives": "objectives", "constraints": "constraints", "search": "search", "keep": "keep",
                       "shapes": "shapes", "input_data": "inputData"}


def llm_tuning_problems(tuning: Tuning, engine: Optional[str], max_sequences: Optional[int],
                        max_context: Optional[int], objectives: bool) -> list[tuple[KeyPath, str]]:
    """A version's `tuning` against its LLM engine (`engine`, None for a classic model), the
    engine's declared caps, and whether its service has `llmObjectives` (paths relative to the
    tuning): an LLM version tunes with GenAI-Perf alone, a classic one with Model Analyzer alone."""
    if engine is None:
        return [(("llm",), "GenAI-Perf's sweep applies to versions with an LLM engine (llm or llmBackend); allowed: "
                 "leave tuning.llm out here (Model Analyzer tunes this version)")] if tuning.llm is not None else []
    problems: list[tuple[KeyPath, str]] = []
    for field in sorted(MODEL_ANALYZER_KEYS.keys() & tuning.model_fields_set):
        problems.append(((MODEL_ANALYZER_KEYS[field],), f"a Model Analyzer key, and a version with an LLM engine "
                         f"({engine}) tunes with GenAI-Perf (Model Analyzer's search over batch sizes and instance counts "
                         "does not fit a decoupled, in-flight-batching engine); allowed: model, llm, deadlineHours, run, sdkImage"))
    if tuning.llm is None:
        problems.append(((), f"a version with an LLM engine ({engine}) tunes with GenAI-Perf; required: llm "
                         "(at least llm.tokenizer)"))
        return problems
    if not objectives:
        problems.append((("llm",), "the sweep chooses the highest concurrency that meets the service's time-to-first-token "
                         "and inter-token-latency objectives, and the service declares none; required: the service's "
                         "llmObjectives"))
    for i, c in enumerate(tuning.llm.concurrency):
        if max_sequences is not None and c > max_sequences:
            problems.append((("llm", "concurrency", i), f"{c} exceeds llm.maxConcurrentSequences ({max_sequences}): "
                             f"the engine serves at most that many at once; allowed: 1..{max_sequences}"))
    tokens = tuning.llm.input_tokens_mean + tuning.llm.output_tokens_mean
    if max_context is not None and tokens > max_context:
        problems.append((("llm", "outputTokensMean"), f"prompt and answer ({tokens} tokens on average) exceed "
                         f"llm.maxContextTokens ({max_context}), so the engine refuses the requests; allowed: "
                         f"inputTokensMean + outputTokensMean up to {max_context}"))
    return problems


class BatchingPreset(Model):
    max_batch_size: Optional[int] = Field(default=None, ge=1, le=4096)
    """The model's max_batch_size in the variant (default: the model's own; dynamic batching of a model whose own is 0 needs one here)."""
    dynamic_batching: bool = True
    """Let Triton combine requests into batches."""
    max_queue_delay_microseconds: int = Field(default=0, ge=0, le=10_000_000)
    """How long a request may wait for others to fill a batch."""
    preferred_batch_sizes: list[Annotated[int, Field(ge=1, le=4096)]] = Field(default=[], max_length=16)
    """Batch sizes the batcher aims for (empty: the largest possible)."""
    instance_count: int = Field(default=1, ge=1, le=16)
    """Model instances (execution copies) per GPU."""
    instance_kind: Literal["gpu", "cpu"] = "gpu"
    """Where the instances run."""

    @model_validator(mode="after")
    def _preferred_within_max(self) -> "BatchingPreset":
        if self.max_batch_size is not None and any(b > self.max_batch_size for b in self.preferred_batch_sizes):
            raise ValueError(f"preferredBatchSizes {self.preferred_batch_sizes} exceed maxBatchSize {self.max_batch_size}; "
                             "allowed: sizes up to maxBatchSize")
        return self


# nvcr.io/nvidia/tritonserver:<YY.MM>-<flavour>: the release names the Triton SDK and TensorRT
# images of the same release (tuning.py).
TRITON_IMAGE = re.compile(r"^(?P<registry>[^@]+)/tritonserver:(?P<release>[0-9]{2}\.[0-9]{2})-[A-Za-z0-9._-]+$")


# Built-in presets; the stack file's tuningPresets add to them or replace one by name.
# latency: batch only what is already queued and run two instances, so a request never
# waits for others; throughput: wait up to 2 ms to fill larger batches.
BUILTIN_PRESETS = {
    "latency": BatchingPreset(max_queue_delay_microseconds=0, instance_count=2),
    "throughput": BatchingPreset(max_queue_delay_microseconds=2000, instance_count=1),
}


PresetName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,39}$")]


class ServicePipeline(Model):
    base_version: DnsLabel
    """The version a new one is built for and copies: its Triton release (image), GPU group and share, weight cache."""
    model: TritonModelName
    """Triton model name of the built engine in the new version's repository."""
    inputs: dict[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.:/-]{0,63}$")],
                 Annotated[list[Annotated[int, Field(ge=1, le=1 << 20)]], Field(min_length=1, max_length=8)]] = Field(min_length=1)
    """The ONNX model's inputs and their dims without the batch dimension, e.g. `{input: [3, 224, 224]}` (the engine's optimisation profile)."""
    max_batch_size: int = Field(default=8, ge=1, le=4096)
    """Largest batch the engine is built for."""
    precision: Literal["fp16", "fp32"] = "fp16"
    """TensorRT precision: fp16 (trtexec --fp16) or fp32."""
    repository_prefix: RelativePath
    """Where new versions are published in the base version's weight cache: `<prefix>/<version>/<model>/...`."""
    canary_weight: int = Field(default=10, ge=1, le=50)
    """Traffic percent the produced stack-file patch gives the new version (taken from the base version)."""
    tuning: TuningGoals = TuningGoals()
    """Model Analyzer objectives, constraints and search of the pipeline's analyse step."""


class PipelineSubmitter(Model):
    """Who may run a service's pipeline: a RoleBinding subject (rbac.authorization.k8s.io/v1 Subject)."""

    kind: Literal["User", "Group", "ServiceAccount"]
    """Subject kind, as the cluster's authenticator names people and groups (OIDC claims, certificates) or a ServiceAccount of CI."""
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9@._:/-]{0,252}$")]
    """User, group or ServiceAccount name."""
    namespace: Optional[DnsLabel] = None
    """The ServiceAccount's namespace (kind ServiceAccount only, required there)."""

    @model_validator(mode="after")
    def _namespace_for_service_accounts(self) -> "PipelineSubmitter":
        if (self.kind == "ServiceAccount") != (self.namespace is not None):
            raise ValueError("namespace is required for kind ServiceAccount and allowed for no other kind")
        return self


class ModelPipelineSettings(Model):
    enabled: bool = False
    """Install Argo Workflows (controller only) and a WorkflowTemplate per service with `pipeline` (docs/tuning.md)."""
    submitters: list[PipelineSubmitter] = Field(default=[], max_length=32)
    """People, groups or CI service accounts bound, in each namespace with a pipeline, to the Role `<service>-pipeline-submit`: get that service's WorkflowTemplate and create, get, list and watch Workflows (`argo submit --from workflowtemplate/... --wait`, `argo get`); nothing else."""


def unknown_preset_problems(s3: S3Cache, tuning_presets: Mapping[str, BatchingPreset]) -> list[tuple[KeyPath, str]]:
    """Upload presets that are neither built in nor in `tuning_presets` (paths below weightCaches)."""
    presets = sorted({*BUILTIN_PRESETS, *tuning_presets})
    return [(("s3", "uploads", ui, "presets", pi), f"no tuning preset named {preset!r}; presets: {', '.join(presets)}")
            for ui, upload in enumerate(s3.uploads) for pi, preset in enumerate(upload.presets) if preset not in presets]
