"""Every vLLM version's pod checks, before its engine starts, that the model repository runs the
engine the plan checked (components/serving/llm_engine.py, model_tools/llm_engine_check.py): its
first init container, in the version's own image, with the version's file share read-only, no GPU,
and the values of the version's `llm` declaration that the memory fit and the HPA target used."""

from __future__ import annotations

import json

import pytest

from platformctl.engine import stack_settings
from tests.conftest import STACKS, stack_plan
from tests.plan.test_triton import DEPLOYMENT

CHECK = "check-engine-args"


def vllm_versions(stack: str):
    return [(s, v) for s in stack_settings(stack).services for v in s.versions
            if v.llm is not None and v.llm.engine == "vllm"]


def test_some_example_stack_serves_a_vllm_version():
    assert any(vllm_versions(stack) for stack in STACKS)


@pytest.mark.parametrize("stack", STACKS)
def test_every_vllm_pod_checks_its_engine_arguments_against_its_declaration_before_the_engine(stack):
    plan = stack_plan(stack)
    for service, version in vllm_versions(stack):
        spec = plan.get(DEPLOYMENT, f"{service.name}-{version.name}").inputs["spec"]["template"]["spec"]
        inits = spec.get("initContainers", [])
        where = f"{stack} {service.name} {version.name}"
        assert [c["name"] for c in inits][:1] == [CHECK], f"{where}: the engine check is not the pod's first init container"
        check, [engine] = inits[0], spec["containers"]
        assert check["image"] == engine["image"], where
        share = [m for m in engine["volumeMounts"] if m["name"] == "models"]
        assert check["volumeMounts"] == share and share[0]["readOnly"], where
        assert "nvidia.com/gpu" not in json.dumps(check["resources"]), f"{where}: the check holds a GPU"
        args = dict(a.removeprefix("--").partition("=")[::2] for a in check["args"] if a.startswith("--"))
        llm = version.llm
        assert json.loads(args["expect"]) == {
            "max_model_len": llm.max_context_tokens, "max_num_seqs": llm.max_concurrent_sequences,
            "tensor_parallel_size": llm.tensor_parallel_size, "gpu_memory_utilization": llm.memory_utilization,
            "dtype": llm.dtype, "kv_cache_dtype": llm.kv_cache_dtype,
            "architecture": {"num_hidden_layers": llm.architecture.layers,
                             "num_key_value_heads": llm.architecture.kv_heads, "head_dim": llm.architecture.head_dim,
                             "num_attention_heads": llm.architecture.attention_heads}}, where
        served = next(a for a in engine["args"] if a.startswith("--model-repository="))
        assert f"--repository={served.partition('=')[2]}" in check["args"], where
