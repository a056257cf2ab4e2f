"""The check a vLLM version's pod runs before its engine starts: the model repository's
`model.json` and `config.pbtxt` must run the engine the plan checked (the memory fit, the HPA's
in-flight target, the metrics the HPA and the alerts read). Standard library only: it runs as an
init container of the version's own Triton image, with `python3 -c`, before the GPU is used.

What Triton's vLLM backend reads (triton-inference-server/vllm_backend r25.01, src/model.py):
model.json in the model's version folder (`pb_utils.get_model_dir()`), passed as
`AsyncEngineArgs(**config)`; its `vllm:` metrics only with the config parameter
REPORT_CUSTOM_METRICS "true" (`_get_bool_config_param`) and `disable_log_stats` false. A key left
out of model.json takes vLLM 0.6.3.post1's default (vllm/engine/arg_utils.py EngineArgs), which
is not the platform's.

Exit 0 when every vLLM model of the repository agrees; else one line per disagreement on stderr
and in the container's termination message, and exit 1 (the pod stays in Init and says why).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

# vLLM 0.6.3.post1 EngineArgs defaults of the keys the plan depends on.
VLLM_DEFAULTS = {"tensor_parallel_size": 1, "gpu_memory_utilization": 0.9, "max_num_seqs": 256,
                 "kv_cache_dtype": "auto", "dtype": "auto", "disable_log_stats": False}
# vLLM's `dtype` spellings (arg_utils choices: auto, half, float16, bfloat16, float, float32).
DTYPE_ALIASES = {"half": "float16", "float": "float32"}
QUANTISED = {"int4", "int8", "fp8"}
TERMINATION_LOG = "/dev/termination-log"


def config_backend(text: str) -> str | None:
    found = re.search(r'^\s*backend\s*:\s*"([^"]*)"', text, re.M)
    return found.group(1) if found else None


def reports_custom_metrics(text: str) -> bool:
    """The model config's parameter REPORT_CUSTOM_METRICS with string_value "true" (any case)."""
    for block in re.finditer(r'key\s*:\s*"REPORT_CUSTOM_METRICS"\s*value\s*:?\s*\{([^}]*)\}', text):
        value = re.search(r'string_value\s*:\s*"([^"]*)"', block.group(1))
        if value and value.group(1).lower() == "true":
            return True
    return False


def loaded_version(model_dir: str) -> str | None:
    """The version folder Triton loads by default (version_policy latest 1): the highest number."""
    numbers = [int(n) for n in os.listdir(model_dir) if n.isdigit() and os.path.isdir(os.path.join(model_dir, n))]
    return os.path.join(model_dir, str(max(numbers))) if numbers else None


def checkpoint_config(engine: dict) -> dict:
    """The checkpoint's Hugging Face config.json, or {} when it cannot be read."""
    try:
        with open(os.path.join(str(engine.get("model", "")), "config.json")) as f:
            found = json.load(f)
        return found if isinstance(found, dict) else {}
    except (OSError, ValueError):
        return {}


def engine_problems(engine: dict, expected: dict, where: str) -> list[str]:
    """What model.json (`engine`) runs that the plan (`expected`) did not check."""
    problems = []
    model = engine.get("model")
    if not isinstance(model, str) or not os.path.isdir(model):
        problems.append(f"{where}: model {model!r} is not a folder in the pod, so vLLM would look it up "
                        "on the Hugging Face Hub at start; allowed: the checkpoint's folder on the file share")
    for key, declared in (("max_model_len", "maxContextTokens"), ("max_num_seqs", "maxConcurrentSequences"),
                          ("tensor_parallel_size", "tensorParallelSize")):
        value = engine.get(key, VLLM_DEFAULTS.get(key))
        if value != expected[key]:
            shown = value if key in engine else "not set, so vLLM takes " + (
                str(value) if value is not None else "the checkpoint's context")
            problems.append(f"{where}: {key} is {shown}, but the stack's llm.{declared} is {expected[key]}; "
                            f"allowed: {key}: {expected[key]}")
    utilisation = engine.get("gpu_memory_utilization", VLLM_DEFAULTS["gpu_memory_utilization"])
    if not isinstance(utilisation, (int, float)) or abs(utilisation - expected["gpu_memory_utilization"]) > 1e-6:
        problems.append(f"{where}: gpu_memory_utilization is {utilisation}, but the stack's llm.memoryUtilization is "
                        f"{expected['gpu_memory_utilization']}; allowed: gpu_memory_utilization: "
                        f"{expected['gpu_memory_utilization']}")
    problems += dtype_problems(engine, expected, where)
    problems += architecture_problems(checkpoint_config(engine), expected.get("architecture", {}), where)
    if engine.get("disable_log_stats", False) is not False:
        problems.append(f"{where}: disable_log_stats is {engine['disable_log_stats']}, so the backend exports no vllm: "
                        "metrics and the HPA and the objectives read nothing; allowed: false (or leave it out)")
    return problems


# The declared architecture (llm.architecture) against the checkpoint's config.json, as vLLM
# 0.6.3.post1 reads it (vllm/config.py ModelConfig): a multimodal model's text_config holds the
# language model's numbers (get_hf_text_config); the KV heads are the first of these keys found,
# else the attention heads (get_total_num_kv_heads); head_dim, else hidden_size // heads (get_head_size).
KV_HEAD_KEYS = ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num")
ARCHITECTURE_KEYS = {"num_hidden_layers": "layers", "num_key_value_heads": "kvHeads", "head_dim": "headDim",
                     "num_attention_heads": "attentionHeads"}


def checkpoint_architecture(checkpoint: dict) -> dict:
    """The numbers the memory fit and the TP checks used, as vLLM derives them; a number the
    file does not give is left out (vLLM then fails to load the model and says why itself)."""
    text = checkpoint.get("text_config") if isinstance(checkpoint.get("text_config"), dict) else checkpoint
    found = {"num_hidden_layers": text.get("num_hidden_layers"), "num_attention_heads": text.get("num_attention_heads")}
    heads = found["num_attention_heads"]
    found["num_key_value_heads"] = next((text[k] for k in KV_HEAD_KEYS if text.get(k) is not None), heads)
    head_dim = text.get("head_dim")
    if head_dim is None and isinstance(text.get("hidden_size"), int) and isinstance(heads, int) and heads:
        head_dim = text["hidden_size"] // heads
    found["head_dim"] = head_dim
    return {key: value for key, value in found.items() if value is not None}


def architecture_problems(checkpoint: dict, declared: dict, where: str) -> list[str]:
    """The checkpoint is the model the plan sized: its layers, KV heads and head size (the KV
    cache per token) and its attention heads (what tensorParallelSize must divide)."""
    found, problems = checkpoint_architecture(checkpoint), []
    for key, stack_key in ARCHITECTURE_KEYS.items():
        if declared.get(key) is not None and key in found and found[key] != declared[key]:
            problems.append(f"{where}: the checkpoint's config.json gives {key} {found[key]}, but the stack's "
                            f"llm.architecture.{stack_key} is {declared[key]}; allowed: architecture.{stack_key}: "
                            f"{found[key]}, or the checkpoint the stack describes")
    return problems


def dtype_problems(engine: dict, expected: dict, where: str) -> list[str]:
    declared, problems = expected["dtype"], []
    dtype = DTYPE_ALIASES.get(str(engine.get("dtype", "auto")).lower(), str(engine.get("dtype", "auto")).lower())
    checkpoint = checkpoint_config(engine)
    quantised = "quantization" in engine or "quantization_config" in checkpoint
    if declared in QUANTISED:
        if not quantised:
            problems.append(f"{where}: the checkpoint declares no quantization_config and model.json no quantization, "
                            f"so vLLM loads 16-bit weights, but the stack's llm.dtype is {declared}; allowed: a "
                            f"{declared} checkpoint, or the checkpoint's own llm.dtype")
    elif dtype == "auto":
        # vLLM's `auto` takes the checkpoint's torch_dtype.
        found = checkpoint.get("torch_dtype")
        if found != declared:
            problems.append(f"{where}: dtype is auto and the checkpoint's torch_dtype is {found!r}, but the stack's "
                            f"llm.dtype is {declared}; allowed: dtype: {declared}")
    elif dtype != declared:
        problems.append(f"{where}: dtype is {dtype}, but the stack's llm.dtype is {declared}; allowed: dtype: {declared}")
    kv = str(engine.get("kv_cache_dtype", "auto"))
    if kv != expected["kv_cache_dtype"] and not (kv.startswith("fp8") and expected["kv_cache_dtype"].startswith("fp8")):
        problems.append(f"{where}: kv_cache_dtype is {kv}, but the stack's llm.kvCacheDtype is "
                        f"{expected['kv_cache_dtype']}; allowed: kv_cache_dtype: {expected['kv_cache_dtype']}")
    return problems


def repository_problems(repository: str, expected: dict) -> list[str]:
    """Every vLLM model of the repository against the plan's expectations."""
    if not os.path.isdir(repository):
        return [f"{repository}: no such folder on the file share; allowed: the version's modelRepository.path"]
    problems, models = [], 0
    for name in sorted(os.listdir(repository)):
        config = os.path.join(repository, name, "config.pbtxt")
        if not os.path.isfile(config):
            continue
        with open(config) as f:
            text = f.read()
        if config_backend(text) != "vllm":
            continue
        models += 1
        if not reports_custom_metrics(text):
            problems.append(f"{config}: no parameter REPORT_CUSTOM_METRICS \"true\", so the backend exports no vllm: "
                            "metrics and the HPA and the objectives read nothing; allowed: parameters: { key: "
                            "\"REPORT_CUSTOM_METRICS\" value: { string_value: \"true\" } }")
        version = loaded_version(os.path.join(repository, name))
        engine_file = os.path.join(version, "model.json") if version else os.path.join(repository, name, "<n>/model.json")
        try:
            with open(engine_file) as f:
                engine = json.load(f)
        except (OSError, ValueError) as e:
            problems.append(f"{engine_file}: cannot be read as JSON ({e}); allowed: the vLLM engine's arguments")
            continue
        if not isinstance(engine, dict):
            problems.append(f"{engine_file}: is not a JSON object; allowed: the vLLM engine's arguments")
            continue
        problems += engine_problems(engine, expected, engine_file)
    if not models:
        problems.append(f"{repository}: holds no model with backend \"vllm\"; allowed: a model folder whose "
                        "config.pbtxt says backend: \"vllm\"")
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repository", required=True, help="the version's model repository as the pod sees it")
    parser.add_argument("--expect", required=True, help="JSON: the engine arguments the plan checked")
    parser.add_argument("--version", required=True, help="the stack key of the version, for the messages")
    args = parser.parse_args(argv)
    problems = repository_problems(args.repository, json.loads(args.expect))
    if not problems:
        print(f"{args.version}: the model repository runs the engine the plan checked")
        return 0
    lines = [f"{args.version}: {p}" for p in problems]
    print("\n".join(lines), file=sys.stderr)
    try:
        with open(TERMINATION_LOG, "w") as f:
            f.write("\n".join(lines)[:4096])
    except OSError:
        pass
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
