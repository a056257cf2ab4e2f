"""`graphs`: inference graphs (Triton ensembles or KubeRay), their tensors and steps, with the
checks of one graph.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Annotated, Iterable, Literal, Mapping, Optional

from pydantic import Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from inference_platform.core import grammar
from inference_platform.settings.base import DnsLabel, Host, Image, Model, Number, ShortName, TritonModelName, _checked
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.serving import AuthSettings, GpuRequest, ModelRepository, Resources, Service, gpu_request_problems

# Triton's tensor data types (model_config.proto DataType, without TYPE_INVALID).
TRITON_DATA_TYPES = ("TYPE_BOOL", "TYPE_UINT8", "TYPE_UINT16", "TYPE_UINT32", "TYPE_UINT64", "TYPE_INT8",
                     "TYPE_INT16", "TYPE_INT32", "TYPE_INT64", "TYPE_FP16", "TYPE_FP32", "TYPE_FP64",
                     "TYPE_STRING", "TYPE_BF16")


# The bound of a step's maxOngoingRequests: graph_app/app.py sizes a replica's thread pool to it.
MAX_ONGOING_REQUESTS = 1024
# Graph tensor types the Ray placement's ingress cannot hold (no numpy type: graph_app/kserve.py).
RAY_UNSUPPORTED_DATA_TYPES = frozenset({"TYPE_BF16"})


# A tensor or model name as Triton's configs and Ray's resource names both take it.
TensorName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")]


class GraphTensor(Model):
    name: TensorName
    """Tensor name, as the graph's callers send or receive it."""
    data_type: Literal[TRITON_DATA_TYPES] = "TYPE_FP32"  # type: ignore[valid-type]
    """Triton data type (`TYPE_FP32`, `TYPE_STRING`, ...)."""
    dims: list[Annotated[int, Field(ge=-1, le=1 << 30)]] = Field(min_length=1, max_length=8)
    """Shape without the batch dimension; -1 for a variable size."""

    @field_validator("dims")
    @classmethod
    def _no_zero(cls, dims: list[int]) -> list[int]:
        if 0 in dims:
            raise ValueError("a dimension of 0 holds nothing; allowed: -1 (variable) or a size of 1 or more")
        return dims


# The most replicas a step may have: with `placement: ray`, also every worker group's fixed
# `maxReplicas`, so that any range the stack file can set fits the running cluster.
MAX_STEP_REPLICAS = 100

# Ray's smallest object store (ray/_private/ray_constants.py OBJECT_STORE_MINIMUM_MEMORY_BYTES at 2.60.0).
RAY_MIN_OBJECT_STORE_BYTES = 75 * 1024 * 1024
# A step worker's object store takes this share of its /dev/shm; the rest is left to Triton's own
# shared memory (its Python backend's regions) in the same container.
OBJECT_STORE_SHARE_OF_SHM = Decimal("0.8")


class ReplicaRange(Model):
    min: int = Field(default=1, ge=1, le=MAX_STEP_REPLICAS)
    """Fewest replicas (each holds the step's GPU share)."""
    max: int = Field(default=1, ge=1, le=MAX_STEP_REPLICAS)
    """Most replicas the step scales to."""

    @model_validator(mode="after")
    def _ordered(self) -> "ReplicaRange":
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) exceeds max ({self.max})")
        return self


class GraphStep(Model):
    name: Annotated[str, _checked(grammar.dns_label, 20)]
    """Step name (DNS label): names its Ray worker group and Serve deployment."""
    model: TritonModelName
    """The Triton model this step runs, as named in its model repository."""
    image: Image
    """Triton image holding the model's backend (with `placement: ray`, also Ray at the pinned version)."""
    model_repository: ModelRepository
    """Where the model repository holding `model` is in a weight cache."""
    gpu: GpuRequest
    """GPU group and share each replica uses."""
    replicas: ReplicaRange = ReplicaRange()
    """Replica range. With `placement: ray`, the step's Serve autoscaling range: a change reaches the running cluster in place (its worker group's bounds stay 0 to 100, each worker holding one replica)."""
    model_config_name: Optional[str] = Field(default=None, pattern=r"^[A-Za-z0-9][-A-Za-z0-9_.]{0,127}$")
    """Tuned config variant, Triton's `--model-config-name`: `configs/<name>.pbtxt` in each model's directory, else its `config.pbtxt` (the same for every step of an ensemble). `placement: ensemble` only: Triton's in-process Python API, which runs a step under Ray, has no such option."""
    max_ongoing_requests: int = Field(default=32, ge=1, le=MAX_ONGOING_REQUESTS)
    """With `placement: ray`: requests one replica of the step holds at once (Serve's `max_ongoing_requests`; Ray's own default, 5, leaves Triton's dynamic batcher little to batch). Serve still scales replicas at 2 requests in flight each; further requests wait in Serve's queue. Not allowed with `placement: ensemble`, where Triton's own queue takes every request."""
    resources: Resources = Resources()
    """CPU and memory of each replica. With `placement: ray`, Ray's object store takes 80% of `shmSize` (at least 75Mi, Ray's minimum), and `shmSize` must fit in the memory limit."""
    inputs: dict[TensorName, TensorName] = Field(min_length=1)
    """Model input tensor -> graph tensor it reads: a graph input or an earlier step's output."""
    outputs: dict[TensorName, TensorName] = Field(min_length=1)
    """Model output tensor -> graph tensor it becomes, for later steps and the graph's outputs."""


class Graph(Model):
    name: ShortName
    """Graph name (DNS label): names its Kubernetes objects, and the ensemble model with `placement: ensemble`."""
    namespace: Optional[DnsLabel] = None
    """Namespace (default: the graph's name)."""
    hosts: list[Host] = Field(min_length=1)
    """Hostnames the graph is served on."""
    auth: AuthSettings = AuthSettings()
    """Authentication at the mesh, as for services."""
    placement: Literal["ensemble", "ray"] = "ensemble"
    """`ensemble`: one Triton server runs every step on one GPU share; `ray`: one Ray worker group per step, across nodes."""
    timeout_seconds: Number = Field(default=60, ge=0.001, le=3600)
    """Route timeout of one request through the whole graph."""
    inputs: list[GraphTensor] = Field(min_length=1)
    """Tensors a caller sends."""
    outputs: list[GraphTensor] = Field(min_length=1)
    """Tensors the graph returns (each one a step's output)."""
    steps: list[GraphStep] = Field(min_length=1, max_length=16)
    """The steps in order; each reads graph inputs or earlier steps' outputs."""

    @property
    def k8s_namespace(self) -> str:
        return self.namespace or self.name


def graph_workload(graph: Graph) -> Service:
    """A graph as a service, for what every GPU workload gets (image pre-pull, spare slots,
    cold-start estimates). An ensemble is exactly this service, which its TritonService runs:
    one version running every step. On Ray, a version per step (weight on the first only)
    stands for the step's worker group."""
    steps = graph.steps[:1] if graph.placement == "ensemble" else graph.steps
    versions = [{"name": "v1" if graph.placement == "ensemble" else s.name, "image": s.image,
                 "weight": 100 if i == 0 else 0, "model_repository": s.model_repository.model_dump(),
                 "gpu": s.gpu.model_dump(exclude_none=True), "resources": s.resources.model_dump(exclude_none=True),
                 "replicas": s.replicas.min,
                 **({"model_config_name": s.model_config_name} if s.model_config_name else {})}
                for i, s in enumerate(steps)]
    first = graph.steps[0]
    service = {"name": graph.name, "namespace": graph.namespace, "hosts": graph.hosts,
               "auth": graph.auth.model_dump(exclude_none=True), "timeout_seconds": graph.timeout_seconds,
               "autoscaling": {"enabled": first.replicas.max > first.replicas.min,
                               "min_replicas": first.replicas.min, "max_replicas": first.replicas.max},
               "versions": versions}
    return Service.model_validate({k: v for k, v in service.items() if v is not None})


# What every step of an ensemble shares: one Triton server runs them all.
ENSEMBLE_SHARED = ("image", "model_repository", "gpu", "replicas", "resources", "model_config_name")


def graph_problems(g: Graph, groups: Mapping[str, NodeGroup]) -> list[tuple[KeyPath, str]]:
    """What one graph's own settings contradict (paths relative to the graph): step names,
    the flow of tensors from the graph's inputs through the steps to its outputs, GPU
    requests, and with `placement: ensemble` the settings every step must share."""
    problems: list[tuple[KeyPath, str]] = list(_step_name_problems(g))
    available: dict[str, str] = {}
    for ti, t in enumerate(g.inputs):
        if t.name in available:
            problems.append((("inputs", ti, "name"), f"duplicate graph input {t.name!r}"))
        available[t.name] = "a graph input"
    for si, step in enumerate(g.steps):
        base: KeyPath = ("steps", si)
        for model_input, tensor in step.inputs.items():
            if tensor not in available:
                problems.append((base + ("inputs", model_input), f"graph tensor {tensor!r} is neither a graph input nor an "
                                 f"earlier step's output; available here: {', '.join(sorted(available))}"))
        for model_output, tensor in step.outputs.items():
            if tensor in available:
                problems.append((base + ("outputs", model_output), f"graph tensor {tensor!r} is already {available[tensor]}; "
                                 "every graph tensor has one source"))
            available.setdefault(tensor, f"an output of step {step.name!r}")
        problems += [(base + path, problem) for path, problem in gpu_request_problems(step.gpu, groups)]
        if g.placement == "ray":
            problems += [(base + ("resources", "shmSize"), problem) for problem in _shm_problems(step.resources)]
    produced = {t for step in g.steps for t in step.outputs.values()}
    for oi, t in enumerate(g.outputs):
        if t.name not in produced:
            problems.append((("outputs", oi, "name"), f"no step outputs graph tensor {t.name!r}; step outputs: "
                             f"{', '.join(sorted(produced))}"))
    if g.placement == "ray":
        for si, step in enumerate(g.steps):
            if step.model_config_name:
                # triton-inference-server/core python/tritonserver/_api/_server.py Options and
                # _c/tritonserver_pybind.cc bind no TRITONSERVER_ServerOptionsSetModelConfigName.
                problems.append((("steps", si, "modelConfigName"), "placement 'ray' runs the step in Triton's "
                                 "in-process Python API, which cannot select a config variant; allowed: leave it out "
                                 "(put the tuned config in config.pbtxt), or placement 'ensemble'"))
        for side in ("inputs", "outputs"):
            for ti, t in enumerate(getattr(g, side)):
                if t.data_type in RAY_UNSUPPORTED_DATA_TYPES:
                    problems.append(((side, ti, "dataType"), f"placement 'ray' cannot carry {t.data_type} tensors "
                                     "(numpy has no bfloat16); allowed: another data type, or placement 'ensemble'"))
    if g.placement == "ensemble":
        first = g.steps[0]
        for si, step in enumerate(g.steps[1:], start=1):
            for key in ENSEMBLE_SHARED:
                if getattr(step, key) != getattr(first, key):
                    problems.append((("steps", si, to_camel(key)), f"placement 'ensemble' runs every step in one Triton "
                                     f"server: {to_camel(key)} must equal steps[0]'s; allowed: the same value, or placement 'ray'"))
        for si, step in enumerate(g.steps):
            if "max_ongoing_requests" in step.model_fields_set:
                problems.append((("steps", si, "maxOngoingRequests"), "applies to placement 'ray' only (Triton "
                                 "queues an ensemble's requests itself); allowed: leave it out, or placement 'ray'"))
        if g.name in {step.model for step in g.steps}:
            problems.append((("name",), f"the ensemble model is named after the graph, and a step's model is named "
                             f"{g.name!r} too; rename the graph"))
    return problems


def object_store_bytes(r: Resources) -> int:
    """The object store of a step's Ray worker, set explicitly (`object-store-memory`): left to
    Ray 2.60, it takes 30% of the pod's memory and, where /dev/shm is smaller, falls back to /tmp
    (ray/_private/utils.py resolve_object_store_memory, services.py determine_plasma_store_config)."""
    return int(grammar.quantity(r.shm_size) * OBJECT_STORE_SHARE_OF_SHM)


def _shm_problems(r: Resources) -> list[str]:
    """A Ray worker's /dev/shm must hold an object store Ray accepts, and, being memory-backed,
    fit in the container's memory limit (its pages count against it)."""
    problems = []
    if object_store_bytes(r) < RAY_MIN_OBJECT_STORE_BYTES:
        smallest_mib = math.ceil(RAY_MIN_OBJECT_STORE_BYTES / (OBJECT_STORE_SHARE_OF_SHM * 2**20))
        problems.append(f"{r.shm_size} holds an object store of {object_store_bytes(r)} bytes (80% of shmSize), below "
                        f"Ray's minimum of {RAY_MIN_OBJECT_STORE_BYTES}; allowed: at least {smallest_mib}Mi")
    limit = r.memory_limit or r.memory
    if grammar.quantity(r.shm_size) > grammar.quantity(limit):
        problems.append(f"{r.shm_size} exceeds the memory limit {limit} that its memory-backed pages count against; "
                        f"allowed: at most {limit}, or raise memory (memoryLimit)")
    return problems


def _step_name_problems(g: Graph) -> Iterable[tuple[KeyPath, str]]:
    seen: set[str] = set()
    for si, step in enumerate(g.steps):
        if step.name in seen:
            yield ("steps", si, "name"), f"duplicate step name {step.name!r} in graph {g.name!r}"
        seen.add(step.name)


def ensemble_repository_overlaps(graphs: list[Graph]) -> list[tuple[KeyPath, str]]:
    """An ensemble's Triton loads every directory of its model repository as a model (it runs
    in model-control mode `none`; triton-inference-server/core src/model_repository_manager/
    model_repository_manager.cc, Poll: each subdirectory of a repository is a model), so a
    step repository of another graph inside it is one more model, which Triton cannot load
    and which stops the server at startup (`--exit-on-error` is on by default)."""
    ensembles = [(gi, g.steps[0].model_repository) for gi, g in enumerate(graphs) if g.placement == "ensemble"]
    problems: list[tuple[KeyPath, str]] = []
    for gi, g in enumerate(graphs):
        for si, step in enumerate(g.steps):
            repo = step.model_repository
            for ei, outer in ensembles:
                inside = repo.cache == outer.cache and repo.path.startswith(outer.path.rstrip("/") + "/")
                if ei != gi and inside:
                    problems.append((("graphs", gi, "steps", si, "modelRepository", "path"),
                                     f"{repo.path!r} is inside {outer.path!r}, the model repository of graph "
                                     f"{graphs[ei].name!r}, whose Triton would load it as a model; allowed: a "
                                     f"directory outside it, or {outer.path!r} itself (a Ray step loads only its model)"))
    return problems
