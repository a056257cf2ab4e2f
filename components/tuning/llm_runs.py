"""GenAI-Perf runs: for a version with an LLM engine and `tuning`, one Job that finds the most
requests in flight one replica serves within the service's latency objectives.

Model Analyzer's search (batch sizes, instance counts, config variants loaded one by one) does
not fit an LLM engine: the engine batches in flight by itself, answers in a stream, and what
matters is time to first token and inter-token latency at a load. So the run measures the
version's own server as it serves (its image, GPU share, repository and model control), with
GenAI-Perf from the SDK image of the same release (the 25.01 SDK image installs genai-perf 0.0.10,
built from triton-inference-server/perf_analyzer r25.01: server r25.01 Dockerfile.sdk), over the
stack's concurrency list, and keeps the highest concurrency whose TTFT and ITL meet the
objectives at the objectives' target percentile. The pod, in order:
1. `triton` (native sidecar): the version's server, models loaded as served; GenAI-Perf starts
   once its startup probe (strict readiness) passes.
2. on S3, `tokenizer`: rclone copies the tokenizer directory from the bucket (GenAI-Perf needs it
   to write prompts of a length in tokens; the pod cannot reach the HuggingFace Hub).
3. `sweep` (model_tools/llm_tuning.py): `genai-perf profile` once per concurrency, lowest first,
   stopping at the first that misses an objective; a summary of every measurement.
4. `publish`: the run's artifacts and summary to `<model>/tuning/tuned-<id>/` in the version's
   repository (then on S3 `upload`), or nothing and a failure when no concurrency met them.
Placement, priority, isolation, naming and reruns are the Model Analyzer run's (runs.py).
"""

from __future__ import annotations

import json
from typing import Any, Optional

import pulumi

from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.llm import LlmObjectives
from inference_platform.settings.serving import Service, Version
from inference_platform.settings.tuning import LlmTuning
from inference_platform.tuning.runs import (
    ANALYZER_RESOURCES,
    GRPC_PORT,
    RESULTS_DIR,
    SDK_ENV,
    TOOLS_DIR,
    TOOLS_MOUNT,
    WORK_DIR,
    WORK_MOUNT,
    bucket_path,
    config_tag,
    declare_run,
    publish_container,
    publish_steps,
    rclone_copy_container,
    run_dest,
    tool_security_context,
    tools_files,
)

TOOL = "genai-perf"
SWEEP_CONFIG = "genai-perf.json"
LLM_TOOLS = ("__init__.py", "llm_tuning.py")
# genai-perf writes `<artifact dir>/<profile export file's stem>_genai_perf.json`
# (genai_perf/export_data/json_exporter.py JsonExporter.export at r25.01).
PROFILE_EXPORT_FILE = "profile_export.json"
GENAI_PERF_EXPORT = "profile_export_genai_perf.json"
# The percentiles genai-perf reports per request metric (genai_perf/metrics/statistics.py
# _calculate_percentiles at r25.01), besides avg, min, max and std.
PERCENTILES = (25, 50, 75, 90, 95, 99)
# genai-perf's names of the objectives' metrics (genai_perf/metrics/llm_metrics.py), in ms.
OBJECTIVE_METRICS = {"time_to_first_token": "time_to_first_token_ms", "inter_token_latency": "inter_token_latency_ms"}
TOKENIZER_DIR = f"{WORK_DIR}/tokenizer"


def objective_statistic(target: float) -> str:
    """The statistic genai-perf reports that bounds `target` of the requests: the lowest
    reported percentile at or above it, or the maximum above p99 (a 0.999 objective is held
    to the slowest request measured)."""
    return next((f"p{p}" for p in PERCENTILES if p / 100 >= target), "max")


def genai_perf_command(model: str, engine: str, llm: LlmTuning, tokenizer: str, concurrency: int) -> list[str]:
    """`genai-perf profile` against the Triton beside it (gRPC, KServe v2 streaming), one
    concurrency. Every flag is genai-perf 0.0.10's (genai_perf/parser.py at perf_analyzer
    r25.01; tests/live/test_llm_tuning.py parses each with it)."""
    return [
        "genai-perf", "profile", "-m", model,
        # Triton's own protocol: `--backend` (tensorrtllm, vllm) shapes the request's inputs.
        "--service-kind", "triton", "--endpoint-type", "kserve", "--backend", engine,
        "--url", f"localhost:{GRPC_PORT}", "--streaming",
        "--synthetic-input-tokens-mean", str(llm.input_tokens_mean),
        "--synthetic-input-tokens-stddev", str(llm.input_tokens_stddev),
        "--output-tokens-mean", str(llm.output_tokens_mean),
        "--output-tokens-stddev", str(llm.output_tokens_stddev),
        # Asks the engine for at least the mean too (triton service kind only), so answers do not stop early.
        "--output-tokens-mean-deterministic",
        "--tokenizer", tokenizer,
        "--measurement-interval", str(llm.measurement_interval_ms),
        "--concurrency", str(concurrency),
        "--artifact-dir", artifact_dir(concurrency),
        "--profile-export-file", PROFILE_EXPORT_FILE,
    ]


def artifact_dir(concurrency: int) -> str:
    return f"{RESULTS_DIR}/concurrency-{concurrency}"


def tokenizer_path(version: Version, mount_path: Optional[str]) -> str:
    """The tokenizer directory as the sweep sees it: in the read-only claim, or copied from S3."""
    return TOKENIZER_DIR if mount_path is None else f"{mount_path}/{version.tuning.llm.tokenizer}"


def sweep_config(version: Version, objectives: LlmObjectives, tokenizer: str) -> dict[str, Any]:
    """What the sweep runs and how it judges each measurement (model_tools/llm_tuning.py)."""
    tuning = version.tuning
    wanted = {"time_to_first_token": objectives.time_to_first_token_ms,
              "inter_token_latency": objectives.inter_token_latency_ms}
    return {
        "statistic": objective_statistic(objectives.target),
        "objectivesMs": {metric: ms for metric, ms in wanted.items() if ms is not None},
        "runs": [{"concurrency": c,
                  "command": genai_perf_command(tuning.model, version.llm_backend, tuning.llm, tokenizer, c),
                  "export": f"{artifact_dir(c)}/{GENAI_PERF_EXPORT}"}
                 for c in tuning.llm.concurrency],
    }


def sdk_env() -> list[dict]:
    # The tokenizer is local: no HuggingFace Hub lookup (huggingface_hub and transformers honour both).
    return [*SDK_ENV, {"name": "HF_HUB_OFFLINE", "value": "1"}, {"name": "TRANSFORMERS_OFFLINE", "value": "1"}]


def sweep_container(image: str, cache_read: Optional[dict]) -> dict:
    return {
        "name": "sweep",
        "image": image,
        "command": ["sh", "-c", f'mkdir -p "$TMPDIR" && exec python3 -m model_tools.llm_tuning sweep '
                    f"--config={TOOLS_DIR}/{SWEEP_CONFIG} --results={RESULTS_DIR}"],
        "workingDir": WORK_DIR,
        "env": sdk_env(),
        "resources": ANALYZER_RESOURCES,
        "securityContext": tool_security_context(),
        "volumeMounts": [WORK_MOUNT, TOOLS_MOUNT, *([cache_read] if cache_read else [])],
    }


def tokenizer_container(bucket: pulumi.Input[str], version: Version, endpoint: pulumi.Input[str], s3_secret: str) -> dict:
    """Copy the tokenizer directory out of the bucket into the pod's work volume."""
    return rclone_copy_container("tokenizer", bucket_path(bucket, version.tuning.llm.tokenizer), TOKENIZER_DIR,
                                 endpoint, s3_secret)


def publish_args(tag: str, dest: str) -> list[str]:
    return ["python3", "-m", "model_tools.llm_tuning", "publish", f"--results={RESULTS_DIR}", f"--tag={tag}",
            f"--dest={dest}"]


def declare_llm_tuning_run(parent: pulumi.Resource, name: str, service: Service, version: Version, group: NodeGroup,
                           server: dict, server_volumes: list[dict], cache_mount: Optional[dict],
                           upload: Optional[dict], tokenizer: Optional[dict],
                           priority_class: Optional[pulumi.Input[str]]) -> None:
    """One LLM version's GenAI-Perf run. On the file share `cache_mount` is the weights claim's
    mount (read-only for the sweep, writable for publish); on S3 `tokenizer` copies the
    tokenizer in and `upload` copies the results out."""
    tuning = version.tuning
    read_only = {**cache_mount, "readOnly": True} if cache_mount else None
    config = sweep_config(version, service.llm_objectives,
                          tokenizer_path(version, cache_mount["mountPath"] if cache_mount else None))
    files = {**tools_files(LLM_TOOLS), SWEEP_CONFIG: json.dumps(config, indent=2, sort_keys=True) + "\n"}

    def steps(run: str, image: str) -> tuple[list[dict], dict]:
        publish = publish_container(image, publish_args(config_tag(run), run_dest(version, tuning.model, cache_mount, upload)),
                                    [cache_mount] if upload is None else [])
        init, main = publish_steps(sweep_container(image, read_only), publish, upload)
        return ([tokenizer, *init] if tokenizer else init), main

    declare_run(parent, name, service, version, group, TOOL, SWEEP_CONFIG, files, server, server_volumes, steps,
                priority_class)
