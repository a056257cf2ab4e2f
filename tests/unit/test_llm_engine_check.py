"""model_tools/llm_engine_check.py, the check a vLLM pod runs before its engine: the cases the
page's example (tests/plan/test_llm_model_repository.py) does not reach."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from model_tools.llm_engine_check import repository_problems
from tests.unit.test_engine_image import STACK_FILE, stack

EXPECTED = {"max_model_len": 8192, "max_num_seqs": 32, "tensor_parallel_size": 1, "gpu_memory_utilization": 0.9,
            "dtype": "bfloat16", "kv_cache_dtype": "auto"}
CONFIG = 'backend: "vllm"\nparameters: { key: "REPORT_CUSTOM_METRICS" value: { string_value: "true" } }\n'


def repository(tmp_path: Path, engine: dict, checkpoint: dict | None = None, versions=("1",), config=CONFIG) -> str:
    model = tmp_path / "repo" / "llm"
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir(parents=True)
    (ckpt / "config.json").write_text(json.dumps(checkpoint or {"torch_dtype": "bfloat16"}))
    (model).mkdir(parents=True)
    (model / "config.pbtxt").write_text(config)
    for v in versions:
        (model / v).mkdir()
        (model / v / "model.json").write_text(json.dumps({"model": str(ckpt), **engine}))
    return str(tmp_path / "repo")


AGREEING = {k: v for k, v in EXPECTED.items() if k != "kv_cache_dtype"}


def test_a_repository_that_agrees_passes_with_vllms_defaults_for_keys_it_leaves_out(tmp_path):
    engine = {k: v for k, v in AGREEING.items() if k not in ("tensor_parallel_size", "gpu_memory_utilization")}
    assert repository_problems(repository(tmp_path, engine), EXPECTED) == []


def test_auto_dtype_takes_the_checkpoints_type(tmp_path):
    engine = {**AGREEING, "dtype": "auto"}
    assert repository_problems(repository(tmp_path, engine), EXPECTED) == []
    [problem] = repository_problems(repository(tmp_path / "b", engine, {"torch_dtype": "float16"}), EXPECTED)
    assert "torch_dtype is 'float16'" in problem and "allowed: dtype: bfloat16" in problem


def test_a_quantised_declaration_needs_a_quantised_checkpoint(tmp_path):
    quantised = {**EXPECTED, "dtype": "int4"}
    engine = {k: v for k, v in AGREEING.items() if k != "dtype"}
    [problem] = repository_problems(repository(tmp_path, engine), quantised)
    assert "llm.dtype is int4" in problem
    checkpoint = {"torch_dtype": "float16", "quantization_config": {"quant_method": "awq", "bits": 4}}
    assert repository_problems(repository(tmp_path / "b", engine, checkpoint), quantised) == []


def test_tensor_parallelism_and_memory_share_must_be_the_declared_ones(tmp_path):
    engine = {**AGREEING, "tensor_parallel_size": 2, "gpu_memory_utilization": 0.95}
    problems = repository_problems(repository(tmp_path, engine), EXPECTED)
    assert len(problems) == 2 and "llm.tensorParallelSize is 1" in problems[0] and "memoryUtilization" in problems[1]


def test_the_highest_numbered_version_is_the_one_checked(tmp_path):
    repo = repository(tmp_path, AGREEING, versions=("1", "3"))
    newest = Path(repo) / "llm" / "3" / "model.json"
    newest.write_text(json.dumps({**json.loads(newest.read_text()), "max_model_len": 4096}))
    [problem] = repository_problems(repo, EXPECTED)
    assert "/llm/3/model.json: max_model_len is 4096" in problem


def test_a_repository_without_a_vllm_model_or_model_json_is_stopped(tmp_path):
    [problem] = repository_problems(repository(tmp_path, AGREEING, config='backend: "python"\n'), EXPECTED)
    assert 'no model with backend "vllm"' in problem
    repo = repository(tmp_path / "b", AGREEING)
    (Path(repo) / "llm" / "1" / "model.json").unlink()
    [problem] = repository_problems(repo, EXPECTED)
    assert "model.json: cannot be read as JSON" in problem
    assert repository_problems(str(tmp_path / "nowhere"), EXPECTED)[0].endswith("allowed: the version's modelRepository.path")


# Llama 3.1 8B's config.json numbers, and the declaration that matches them.
LLAMA_CONFIG = {"torch_dtype": "bfloat16", "num_hidden_layers": 32, "num_attention_heads": 32,
                "num_key_value_heads": 8, "hidden_size": 4096}
DECLARED = {**EXPECTED, "architecture": {"num_hidden_layers": 32, "num_key_value_heads": 8, "head_dim": 128,
                                         "num_attention_heads": 32}}


def test_the_checkpoint_must_be_the_model_the_plan_sized(tmp_path):
    assert repository_problems(repository(tmp_path, AGREEING, LLAMA_CONFIG), DECLARED) == []
    other = {**LLAMA_CONFIG, "num_hidden_layers": 80, "num_attention_heads": 64, "hidden_size": 8192}
    problems = repository_problems(repository(tmp_path / "b", AGREEING, other), DECLARED)
    assert [p.split("config.json gives ")[1].split(",")[0] for p in problems] == [
        "num_hidden_layers 80", "num_attention_heads 64"]
    assert "llm.architecture.layers is 32; allowed: architecture.layers: 80" in problems[0]


def test_missing_kv_heads_and_head_size_are_derived_as_vllm_derives_them(tmp_path):
    # No num_key_value_heads: one per attention head; no head_dim: hidden_size / heads (4096 / 32).
    plain = {k: v for k, v in LLAMA_CONFIG.items() if k != "num_key_value_heads"}
    [problem] = repository_problems(repository(tmp_path, AGREEING, plain), DECLARED)
    assert "gives num_key_value_heads 32, but the stack's llm.architecture.kvHeads is 8" in problem
    wide = {**LLAMA_CONFIG, "head_dim": 256}
    [problem] = repository_problems(repository(tmp_path / "b", AGREEING, wide), DECLARED)
    assert "gives head_dim 256, but the stack's llm.architecture.headDim is 128" in problem


def test_a_multimodal_checkpoint_is_read_from_its_text_config(tmp_path):
    nested = {"torch_dtype": "bfloat16", "num_hidden_layers": 99,
              "text_config": {k: v for k, v in LLAMA_CONFIG.items() if k != "torch_dtype"}}
    assert repository_problems(repository(tmp_path, AGREEING, nested), DECLARED) == []


def test_undeclared_attention_heads_are_not_compared(tmp_path):
    undeclared = {**DECLARED, "architecture": {**DECLARED["architecture"], "num_attention_heads": None}}
    other_heads = {**LLAMA_CONFIG, "num_attention_heads": 16, "head_dim": 128}
    assert repository_problems(repository(tmp_path, AGREEING, other_heads), undeclared) == []


def test_a_vllm_version_on_the_s3_cache_is_refused_on_its_cache():
    raw = stack("nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3")
    raw["weightCaches"]["s3"] = {"endpoint": "https://s3.example.cloud", "bucket": "weights"}
    raw["services"][0]["versions"][0]["modelRepository"] = {"cache": "s3", "path": "svc/v1"}
    raw["s3AccessKeyId"] = raw["s3SecretAccessKey"] = "x"
    with pytest.raises(ConfigError) as info:
        parse_settings(raw, STACK_FILE, frozenset({"s3AccessKeyId", "s3SecretAccessKey"}))
    [line] = info.value.lines()
    assert "services[svc].versions[v1].modelRepository.cache: is s3" in line and "allowed with llm.engine vllm: fileShare" in line
