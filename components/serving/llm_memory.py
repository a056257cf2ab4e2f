"""Does an LLM version fit the GPU share it asks for? Weights, KV cache and engine overhead per GPU
against the memory the engine may use there, with the arithmetic for the plan output and, for a
version that does not fit, the largest context and concurrency that would.

Per GPU of a replica (tensor parallelism splits weights and KV cache evenly over its GPUs):

    weights  = parameters x bytes per weight / TP
    KV cache = 2 (K and V) x layers x KV heads x head dim x bytes per element
               x context tokens x concurrent sequences / TP
    need     = weights + KV cache + overhead
    usable   = share memory x memoryUtilization

Sources: the KV-cache formula of NVIDIA's "Mastering LLM Techniques: Inference Optimization"
(developer.nvidia.com blog, 2023), with KV heads for grouped-query attention; memoryUtilization is
vLLM's `gpu_memory_utilization` (default 0.9) and TensorRT-LLM's `kv_cache_free_gpu_mem_fraction`
(default 0.9). GPU and MIG memory come from their names in GB (10^9 bytes), which is at most what
the device really has (an H100-80GB has 81,559 MiB; a 1g.10gb slice 9,856 MiB), so the check errs
on the side of refusing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from inference_platform.gpu.profiles import mig_mix
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.llm import DTYPE_BYTES, Llm
from inference_platform.settings.serving import Version
from inference_platform.settings.stack import Settings

GB = 10**9
GIB = 2**30


def _gb_in(name: str) -> int:
    """Memory in a GPU model or MIG profile name (`H100-80GB`, `1g.10gb`), in bytes."""
    match = re.search(r"(\d+)gb", name.lower())
    if match is None:
        raise ValueError(f"no memory size in {name!r}")
    return int(match.group(1)) * GB


def share_memory(group: NodeGroup, mig_profile: Optional[str] = None) -> tuple[int, str]:
    """Memory of one GPU share a replica gets on `group` and how it was found."""
    gpu = group.gpu
    sharing = gpu.sharing
    if sharing.mode == "mig":
        if sharing.effective_mig_strategy == "single":
            mig_profile = next(iter(mig_mix(group)))
        return _gb_in(mig_profile), f"MIG slice {mig_profile}"
    whole = _gb_in(gpu.model)
    if sharing.mode in ("time-slicing", "mps"):
        # Replicas of one GPU share its memory; each may count only on its part.
        return whole // sharing.replicas, f"{gpu.model} shared {sharing.replicas} ways ({sharing.mode})"
    return whole, gpu.model


@dataclass(frozen=True)
class Fit:
    """The memory arithmetic of one GPU of a replica, in bytes."""

    weights: float
    kv_per_token: float
    kv_cache: float
    overhead: float
    usable: float
    share: str

    @property
    def need(self) -> float:
        return self.weights + self.kv_cache + self.overhead

    @property
    def fits(self) -> bool:
        return self.need <= self.usable


def fit(llm: Llm, share_bytes: int, share: str = "") -> Fit:
    a, tp = llm.architecture, llm.tensor_parallel_size
    kv_per_token = 2 * a.layers * a.kv_heads * a.head_dim * llm.kv_element_bytes / tp
    return Fit(
        weights=a.parameters_billion * 1e9 * DTYPE_BYTES[llm.dtype] / tp,
        kv_per_token=kv_per_token,
        kv_cache=kv_per_token * llm.max_context_tokens * llm.max_concurrent_sequences,
        overhead=llm.overhead_gib * GIB,
        usable=share_bytes * llm.memory_utilization,
        share=share,
    )


def token_budget(f: Fit) -> int:
    """KV-cache tokens (context x sequences) that fit beside the weights and overhead."""
    room = f.usable - f.weights - f.overhead
    return max(int(room // f.kv_per_token), 0)


def describe(f: Fit, llm: Llm) -> str:
    """The arithmetic on one line, in GiB."""
    def g(v: float) -> str:
        return f"{v / GIB:.1f}"

    tp = f" over TP {llm.tensor_parallel_size}" if llm.tensor_parallel_size > 1 else ""
    verdict = "fits" if f.fits else "does NOT fit"
    return (f"weights {g(f.weights)} + KV cache {g(f.kv_cache)} ({f.kv_per_token / 1024:.0f} KiB/token x "
            f"{llm.max_context_tokens} tokens x {llm.max_concurrent_sequences} sequences) + overhead "
            f"{g(f.overhead)} = {g(f.need)} GiB per GPU{tp}; usable {g(f.usable)} GiB "
            f"({llm.memory_utilization:g} of {f.share}): {verdict}")


def _version_fit(group: NodeGroup, version: Version) -> Fit:
    share_bytes, share = share_memory(group, version.gpu.mig_profile)
    return fit(version.llm, share_bytes, share)


def _llm_versions(settings: Settings):
    for i, svc in enumerate(settings.services):
        for j, v in enumerate(svc.versions):
            if v.llm is not None:
                yield ("services", i, "versions", j, "llm"), svc, v


def llm_memory_problems(settings: Settings) -> list[tuple[KeyPath, str]]:
    """Refuse an LLM version whose placement cannot hold it: tensor parallelism over shares of one
    GPU or MIG slices, over more GPUs than a node has, and weights + KV cache + overhead above the
    usable memory (naming the largest context and concurrency that would fit)."""
    problems: list[tuple[KeyPath, str]] = []
    groups = {g.name: g for g in settings.cluster.node_groups}
    for path, svc, v in _llm_versions(settings):
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
