"""A small stack whose one version serves an LLM with vLLM and tunes with GenAI-Perf."""

from __future__ import annotations

import copy

from tests.conftest import base_config

# Llama 3.1 8B (its config.json), small enough for an A100-80GB at 8k context and 16 sequences.
LLM = {"engine": "vllm", "architecture": {"parametersBillion": 8.03, "layers": 32, "kvHeads": 8, "headDim": 128},
       "maxContextTokens": 8192, "maxConcurrentSequences": 16}
# Bounds of vLLM's TTFT and ITL histograms (settings/llm.py TTFT_BOUNDS_MS, ITL_BOUNDS_MS).
OBJECTIVES = {"timeToFirstTokenMs": 500, "interTokenLatencyMs": 50, "target": 0.95}
LLM_TUNING = {"model": "llama", "llm": {"tokenizer": "llama/tokenizer", "concurrency": [1, 4, 16],
                                        "inputTokensMean": 1024, "outputTokensMean": 128}}


def llm_tuned_config(cache: str = "fileShare", **tuning) -> dict:
    """base_config's version turned into a vLLM version with `tuning` (LLM_TUNING updated by `tuning`)."""
    raw = base_config()
    svc = raw["services"][0]
    svc["llmObjectives"] = copy.deepcopy(OBJECTIVES)
    svc["versions"][0] |= {"image": "nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3", "llm": copy.deepcopy(LLM),
                           "tuning": copy.deepcopy(LLM_TUNING) | tuning}
    if cache == "s3":
        raw["weightCaches"]["s3"] = {"endpoint": "https://s3.example.com", "bucket": "test-weights"}
        raw |= S3_KEYS
        svc["versions"][0]["modelRepository"]["cache"] = "s3"
        # vLLM needs the file share (its model.json names the checkpoint by a folder in the pod):
        # on s3 the version runs TensorRT-LLM, which exports no inter-token latency.
        svc["versions"][0] |= {"image": "nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3",
                               "serverArgs": {"metrics-config": ["histogram_latencies=true"]}}
        svc["versions"][0]["llm"]["engine"] = "tensorrtllm"
        del svc["llmObjectives"]["interTokenLatencyMs"]
    return raw


S3_KEYS = {"s3AccessKeyId": "key", "s3SecretAccessKey": "secret"}
