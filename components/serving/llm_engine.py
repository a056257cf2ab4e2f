"""The engine a vLLM version runs is the one the plan checked.

The vLLM engine's arguments live in the model repository's `model.json`, which the user puts on
the file share; the plan's memory fit (llm_memory.py) and the HPA's in-flight target are about the
`llm` declaration. So every vLLM version's pod first runs model_tools/llm_engine_check.py, in an
init container of the version's own image (its python3; no GPU, the same read-only share): it
compares model.json and config.pbtxt with the declaration and stops the pod, saying why, before
the engine takes the GPU. docs/llm-model-repository.md: What the pod checks first.
"""

from __future__ import annotations

import json

import pulumi

from inference_platform.core.common import shipped_dir
from inference_platform.serving.triton_server import container_security_context, for_repository
from inference_platform.settings.base import NAMESPACE
from inference_platform.settings.llm import Llm
from inference_platform.settings.serving import Service, Version

ENGINE_CHECK_CONTAINER = "check-engine-args"
ENGINE_CHECK_SOURCE = shipped_dir("model_tools") / "llm_engine_check.py"
ENGINE_CHECK_RESOURCES = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "128Mi"}}


def checks_engine(version: Version) -> bool:
    """vLLM versions read their engine's arguments from model.json (TensorRT-LLM's are compiled
    into its engine and its config.pbtxt, which this check does not read)."""
    return version.llm is not None and version.llm.engine == "vllm"


def engine_expectations(llm: Llm) -> dict:
    """The model.json values the plan's checks assumed (docs/llm-model-repository.md's table)."""
    return {
        "max_model_len": llm.max_context_tokens,
        "max_num_seqs": llm.max_concurrent_sequences,
        "tensor_parallel_size": llm.tensor_parallel_size,
        "gpu_memory_utilization": llm.memory_utilization,
        "dtype": llm.dtype,
        "kv_cache_dtype": llm.kv_cache_dtype,
        # config.json's numbers the fit and the TP checks used (attention heads only when declared).
        "architecture": {"num_hidden_layers": llm.architecture.layers, "num_key_value_heads": llm.architecture.kv_heads,
                         "head_dim": llm.architecture.head_dim,
                         "num_attention_heads": llm.architecture.attention_heads},
    }


def version_key(service: Service, version: Version) -> str:
    return f"{NAMESPACE}:services[{service.name}].versions[{version.name}].llm"


def engine_check_args(service: Service, version: Version, repository: str) -> list[str]:
    expect = json.dumps(engine_expectations(version.llm), sort_keys=True, separators=(",", ":"))
    return ["-c", ENGINE_CHECK_SOURCE.read_text(), f"--repository={repository}", f"--expect={expect}",
            f"--version={version_key(service, version)}"]


def engine_check_container(service: Service, version: Version, repository: pulumi.Input[str],
                           share_mount: dict) -> dict:
    """The init container: the version's image, its share mount, a few MiB and no GPU. A check
    that fails never succeeds on a retry of the same files, so the pod stays in Init with the
    reason as its termination message until the files or the stack change."""
    return {
        "name": ENGINE_CHECK_CONTAINER,
        "image": version.image,
        "command": ["python3"],
        "args": for_repository(repository, lambda r: engine_check_args(service, version, r)),
        "resources": ENGINE_CHECK_RESOURCES,
        "volumeMounts": [share_mount],
        "securityContext": container_security_context(),
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
