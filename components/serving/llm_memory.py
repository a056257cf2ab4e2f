"""Does an LLM version fit the GPU share it asks for? Weights, KV cache and engine overhead per GPU
against the memory the engine reserves there, with the arithmetic for the plan output and, for a
version that does not fit, the largest context and concurrency that would.

Per GPU of a replica (tensor parallelism splits weights and KV heads over its GPUs; with fewer KV
heads than GPUs each GPU holds one, replicated):

    weights  = parameters x bytes per weight / TP
    KV cache = 2 (K and V) x layers x ceil(KV heads / TP) x head dim x bytes per element
               x context tokens x concurrent sequences
    vLLM:          weights + KV cache + overhead <= device memory x memoryUtilization
    TensorRT-LLM:  KV cache <= memoryUtilization x (memory - weights - overhead)

vLLM sizes its KV cache as `gpu_memory_utilization` of the device's total memory minus what its
own process holds (vllm 0.6.3.post1 vllm/worker/worker.py determine_num_available_blocks,
`total_gpu_memory * gpu_memory_utilization - peak_memory`); TensorRT-LLM takes
`kv_cache_free_gpu_mem_fraction` of the memory free once the engine is loaded
(tensorrtllm_backend v0.17.0 docs/model_config.md). Both default to 0.9. Per-GPU KV heads:
vLLM `max(1, kv_heads // tp)` (vllm/config.py get_num_kv_heads), TensorRT-LLM
`(kv_heads + tp - 1) // tp` (tensorrt_llm/runtime/model_runner.py), the same for the splits the
settings accept (settings/llm.py llm_setting_problems).

On a GPU shared by time-slicing or MPS every replica sees the whole device (an MPS client's memory
limit fails allocations beyond it; cudaMemGetInfo still reports the device's total), so each must
be held to its share by its fraction (vLLM's engine-argument docs from v0.6.4 on: two instances
on one GPU take 0.5 each):
vLLM's fraction of the whole device at most 1/replicas; TensorRT-LLM, which takes its fraction of
whatever is free when it loads (its docs: "the memory allocated to each instance will depend on
the order in which instances are loaded"), at most what keeps it within its share if it loads
first, and it counts only on its share's free memory if it loads last.

The KV-cache formula is that of NVIDIA's "Mastering LLM Techniques: Inference Optimization"
(developer.nvidia.com blog, 2023), with KV heads for grouped-query attention. GPU and MIG memory
come from their names in GB (10^9 bytes), which is at most what the device really has (an
H100-80GB has 81,559 MiB; a 1g.10gb slice 9,856 MiB). int4 weights count their group-128 16-bit
scales and 4-bit zero points (AWQ, GPTQ); a quantised checkpoint's token embeddings and lm_head
count at 16 bits (architecture.vocabSize x hiddenSize each): vLLM 0.6.3 quantises linear layers
only for AWQ (vllm/model_executor/layers/quantization/awq.py get_quant_method), and the lm_head
for GPTQ only when the checkpoint says `lm_head: true` (gptq.py), which the fit does not credit.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Optional

from inference_platform.gpu.profiles import mig_mix
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.llm import QUANTISED_DTYPES, WEIGHT_BYTES, Llm
from inference_platform.settings.serving import Service, Version
from inference_platform.settings.stack import Settings

GB = 10**9
GIB = 2**30


def _gb_in(name: str) -> int:
    """Memory in a GPU model or MIG profile name (`H100-80GB`, `1g.10gb`), in bytes."""
    match = re.search(r"(\d+)gb", name.lower())
    if match is None:
        raise ValueError(f"no memory size in {name!r}")
    return int(match.group(1)) * GB


@dataclass(frozen=True)
class Share:
    """The memory of one GPU share a replica gets, and of the device it is part of."""

    memory: int
    device: int
    what: str

    @property
    def ways(self) -> int:
        """Replicas sharing the device's memory (time-slicing or MPS), else 1."""
        return max(1, round(self.device / self.memory))


def share_memory(group: NodeGroup, mig_profile: Optional[str] = None) -> Share:
    """Memory of one GPU share a replica gets on `group` and how it was found."""
    gpu = group.gpu
    sharing = gpu.sharing
    if sharing.mode == "mig":
        if sharing.effective_mig_strategy == "single":
            mig_profile = next(iter(mig_mix(group)))
        slice_bytes = _gb_in(mig_profile)  # a slice is a device of its own to CUDA
        return Share(slice_bytes, slice_bytes, f"MIG slice {mig_profile}")
    whole = _gb_in(gpu.model)
    if sharing.mode in ("time-slicing", "mps"):
        # Replicas of one GPU share its memory; each may count only on its part.
        return Share(whole // sharing.replicas, whole, f"{gpu.model} shared {sharing.replicas} ways ({sharing.mode})")
    return Share(whole, whole, gpu.model)


@dataclass(frozen=True)
class Fit:
    """The memory arithmetic of one GPU of a replica, in bytes."""

    engine: str
    weights: float
    kv_per_token: float
    kv_cache: float
    overhead: float
    fraction: float
    base: float
    """What the engine's fraction applies to: the device (vLLM), or the share left after weights and overhead (TensorRT-LLM)."""
    share: str

    @property
    def usable(self) -> float:
        return self.base * self.fraction

    @property
    def kv_room(self) -> float:
        """KV-cache bytes the engine reserves beside the weights and overhead."""
        return self.usable - self.weights - self.overhead if self.engine == "vllm" else self.usable

    @property
    def need(self) -> float:
        return self.weights + self.kv_cache + self.overhead

    @property
    def fits(self) -> bool:
        return self.kv_cache <= self.kv_room


def kv_heads_per_gpu(llm: Llm) -> int:
    return math.ceil(llm.architecture.kv_heads / llm.tensor_parallel_size)


def weight_bytes(llm: Llm) -> float:
    """The weights of the whole model; a quantised checkpoint's embeddings and lm_head stay 16-bit."""
    a = llm.architecture
    kept = a.embedding_parameters if llm.dtype in QUANTISED_DTYPES else 0
    return (a.parameters_billion * 1e9 - kept) * WEIGHT_BYTES[llm.dtype] + kept * 2


def fit(llm: Llm, share_bytes: int, share: str = "", device_bytes: Optional[int] = None) -> Fit:
    """`device_bytes`: the whole device's memory when the share is a time-slicing or MPS part of it."""
    a, tp = llm.architecture, llm.tensor_parallel_size
    kv_per_token = 2 * a.layers * kv_heads_per_gpu(llm) * a.head_dim * llm.kv_element_bytes
    weights = weight_bytes(llm) / tp
    overhead = llm.overhead_gib * GIB
    if llm.engine == "vllm":
        base = float(device_bytes or share_bytes)
    else:
        base = share_bytes - weights - overhead  # free once loaded, even when loaded last
    return Fit(engine=llm.engine, weights=weights, kv_per_token=kv_per_token,
               kv_cache=kv_per_token * llm.max_context_tokens * llm.max_concurrent_sequences,
               overhead=overhead, fraction=llm.memory_utilization, base=base, share=share)


def token_budget(f: Fit) -> int:
    """KV-cache tokens (context x sequences) that fit beside the weights and overhead."""
    return max(int(f.kv_room // f.kv_per_token), 0)


def describe(f: Fit, llm: Llm) -> str:
    """The arithmetic on one line, in GiB."""
    def g(v: float) -> str:
        return f"{v / GIB:.1f}"

    tp = f" over TP {llm.tensor_parallel_size}" if llm.tensor_parallel_size > 1 else ""
    verdict = "fits" if f.fits else "does NOT fit"
    kv = (f"KV cache {g(f.kv_cache)} ({f.kv_per_token / 1024:.0f} KiB/token x {llm.max_context_tokens} tokens x "
          f"{llm.max_concurrent_sequences} sequences)")
    if f.engine == "vllm":
        return (f"weights {g(f.weights)} + {kv} + overhead {g(f.overhead)} = {g(f.need)} GiB per GPU{tp}; usable "
                f"{g(f.usable)} GiB ({llm.memory_utilization:g} of {f.share}): {verdict}")
    return (f"weights {g(f.weights)} + overhead {g(f.overhead)} leave {g(max(f.base, 0))} GiB of {f.share} per GPU{tp}; "
            f"{kv} within {llm.memory_utilization:g} of it, {g(max(f.usable, 0))} GiB: {verdict}")


def _version_fit(group: NodeGroup, version: Version) -> Fit:
    s = share_memory(group, version.gpu.mig_profile)
    # vLLM's fraction is of the whole device, which the shares' limit keeps within the share.
    what = f"the whole GPU of {s.what}" if version.llm.engine == "vllm" and s.ways > 1 else s.what
    return fit(version.llm, s.memory, what, s.device)


def shared_fraction_problem(group: NodeGroup, version: Version) -> Optional[str]:
    """On a GPU shared by time-slicing or MPS, the largest memoryUtilization that keeps a
    replica within its share, when the version's is above it."""
    s, llm = share_memory(group, version.gpu.mig_profile), version.llm
    if s.ways == 1:
        return None
    if llm.engine == "vllm":
        most, why = 1 / s.ways, "vLLM's gpu_memory_utilization is a fraction of the whole GPU"
    else:
        loaded = fit(llm, s.memory)
        room = s.device - loaded.weights - loaded.overhead
        most = (s.memory - loaded.weights - loaded.overhead) / room if room > 0 else 0
        why = ("TensorRT-LLM's kv_cache_free_gpu_mem_fraction is of the GPU's free memory when it loads, which for the "
               "first replica is the whole GPU but the others' shares")
    if llm.memory_utilization <= most:
        return None
    allowed = f"at most {math.floor(most * 1000) / 1000:g}" if most >= 0.1 else "a group of whole GPUs or MIG slices"
    return (f"is {llm.memory_utilization:g} on {s.what}: {why}, so a replica would take more than its 1/{s.ways}; "
            f"allowed: {allowed}")


def _llm_versions(settings: Settings):
    for i, svc in enumerate(settings.services):
        for j, v in enumerate(svc.versions):
            if v.llm is not None:
                yield ("services", i, "versions", j, "llm"), svc, v


def llm_memory_problems(settings: Settings) -> list[tuple[KeyPath, str]]:
    return [(("services", i, *path), why) for i, svc in enumerate(settings.services)
            for path, why in service_llm_memory_problems(svc, settings.cluster.node_groups)]


def service_llm_memory_problems(svc: Service, node_groups: list[NodeGroup]) -> list[tuple[KeyPath, str]]:
    """Refuse an LLM version whose placement cannot hold it: tensor parallelism over shares of one
    GPU or MIG slices, over more GPUs than a node has, and weights + KV cache + overhead above the
    usable memory (naming the largest context and concurrency that would fit). Paths relative to
    the service: the stack and TritonService used alone both run it."""
    problems: list[tuple[KeyPath, str]] = []
    groups = {g.name: g for g in node_groups}
    for path, v in ((("versions", j, "llm"), v) for j, v in enumerate(svc.versions) if v.llm is not None):
        llm, group = v.llm, groups.get(v.gpu.group)
        if group is None or group.gpu is None:
            continue  # the group checks name this
        tp = llm.tensor_parallel_size
        if tp != v.gpu.count:
            problems.append((path + ("tensorParallelSize",), f"is {tp} but gpu.count is {v.gpu.count}; allowed: "
                             "tensorParallelSize equal to gpu.count, the GPUs of one replica"))
            continue
        if tp > 1 and group.gpu.sharing.mode != "none":
            problems.append((path + ("tensorParallelSize",), f"is {tp} on group {group.name!r}, whose GPUs are shared "
                             f"({group.gpu.sharing.mode}); allowed: 1 there (a CUDA process uses one MIG slice, and "
                             "shares of one GPU are no more memory), or a group of whole GPUs"))
            continue
        if tp > group.gpu.per_node:
            problems.append((path + ("tensorParallelSize",), f"is {tp} but group {group.name!r} has {group.gpu.per_node} "
                             "GPUs per node; allowed: at most the GPUs of one node"))
            continue
        shared = shared_fraction_problem(group, v)
        if shared:
            problems.append((path + ("memoryUtilization",), shared))
            continue
        f = _version_fit(group, v)
        if f.fits:
            continue
        budget = token_budget(f)
        context = budget // llm.max_concurrent_sequences
        sequences = budget // llm.max_context_tokens
        if budget == 0:
            hint = "the weights and overhead alone exceed the usable memory: use more GPUs (tensorParallelSize), a larger share or a smaller dtype"
        else:
            options = [f"maxContextTokens {context} with {llm.max_concurrent_sequences} sequences"] if context >= 16 else []
            if sequences >= 1:
                options.append(f"maxConcurrentSequences {sequences} with {llm.max_context_tokens} tokens")
            hint = "at most " + " or ".join(options) if options else f"at most {budget} tokens of KV cache in all"
        problems.append((path, f"{svc.name} {v.name} does not fit its GPU share: {describe(f, llm)}; allowed: {hint}"))
    return problems


def llm_memory_report(settings: Settings) -> list[str]:
    """One line per LLM version for the plan output."""
    groups = {g.name: g for g in settings.cluster.node_groups}
    return [f"LLM memory {svc.name} {v.name}: {describe(_version_fit(groups[v.gpu.group], v), v.llm)}"
            for _, svc, v in _llm_versions(settings)]
