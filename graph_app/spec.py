"""The graph a Serve application's `args` declare, checked before any replica starts.

Plain standard library: the platform's tests and any Ray node can read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_BACKEND = "graph_app.triton:TritonBackend"
STEP_KEYS = {"name", "model", "model_repository", "inputs", "outputs"}
ARGS_KEYS = {"name", "inputs", "outputs", "steps", "backend"}
TENSOR_KEYS = {"name", "datatype", "dims"}
# KServe datatypes a graph on Ray carries (graph_app/kserve.py holds them in numpy). BF16 has
# no numpy type: settings/graphs.py refuses it for placement ray.
DATATYPES = ("BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64",
             "FP16", "FP32", "FP64", "BYTES")


class SpecError(ValueError):
    """Bad `args`: the message names the key path."""


@dataclass(frozen=True)
class Step:
    name: str
    model: str
    model_repository: str
    # model tensor name -> graph tensor name
    inputs: dict[str, str]
    outputs: dict[str, str]

    @property
    def deployment(self) -> str:
        """The Serve deployment name: what serveConfigV2's `deployments` entries match."""
        return f"step-{self.name}"


@dataclass(frozen=True)
class TensorSpec:
    """A graph tensor as its ensemble declares it: KServe datatype and dims (no batch dimension)."""

    name: str
    datatype: str
    dims: tuple[int, ...]


@dataclass(frozen=True)
class GraphSpec:
    # The model name clients call, as they call the graph's Triton ensemble.
    name: str
    # What a caller sends and gets back, as the ensemble declares them.
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    steps: tuple[Step, ...]
    backend: str


def _caller_tensors(steps: tuple[Step, ...]) -> tuple[str, ...]:
    """Graph tensors a step reads that no earlier step makes, in the order first read."""
    made: set[str] = set()
    needed: list[str] = []
    for step in steps:
        needed += [t for t in step.inputs.values() if t not in made and t not in needed]
        made.update(step.outputs.values())
    return tuple(needed)


def _text(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise SpecError(f"{path}: expected a non-empty string, got {value!r}")
    return value


def _tensor_map(value: Any, path: str) -> dict[str, str]:
    if not isinstance(value, dict) or not value:
        raise SpecError(f"{path}: expected a non-empty mapping of model tensor to graph tensor, got {value!r}")
    return {_text(k, f"{path} key"): _text(v, f"{path}.{k}") for k, v in value.items()}


def _tensor(raw: Any, path: str) -> TensorSpec:
    if not isinstance(raw, dict) or set(raw) != TENSOR_KEYS:
        raise SpecError(f"{path}: expected a mapping with keys {sorted(TENSOR_KEYS)}, got {raw!r}")
    datatype = _text(raw["datatype"], f"{path}.datatype")
    if datatype not in DATATYPES:
        raise SpecError(f"{path}.datatype: {datatype!r} is not supported; allowed: {', '.join(DATATYPES)}")
    dims = raw["dims"]
    if (not isinstance(dims, list) or not dims
            or not all(isinstance(d, int) and not isinstance(d, bool) and (d == -1 or d > 0) for d in dims)):
        raise SpecError(f"{path}.dims: expected a non-empty list of sizes (-1: any), got {dims!r}")
    return TensorSpec(name=_text(raw["name"], f"{path}.name"), datatype=datatype, dims=tuple(dims))


def _tensors(raw: Any, path: str) -> tuple[TensorSpec, ...]:
    if not isinstance(raw, list) or not raw:
        raise SpecError(f"{path}: expected a non-empty list of tensors")
    tensors = tuple(_tensor(t, f"{path}[{i}]") for i, t in enumerate(raw))
    names = [t.name for t in tensors]
    if len(set(names)) != len(names):
        raise SpecError(f"{path}: tensor names must be unique, got {names}")
    return tensors


def _step(raw: Any, path: str) -> Step:
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: expected a mapping, got {raw!r}")
    unknown = sorted(set(raw) - STEP_KEYS)
    missing = sorted(STEP_KEYS - set(raw))
    if unknown or missing:
        raise SpecError(f"{path}: unknown keys {unknown}, missing keys {missing}; allowed: {sorted(STEP_KEYS)}")
    return Step(
        name=_text(raw["name"], f"{path}.name"),
        model=_text(raw["model"], f"{path}.model"),
        model_repository=_text(raw["model_repository"], f"{path}.model_repository"),
        inputs=_tensor_map(raw["inputs"], f"{path}.inputs"),
        outputs=_tensor_map(raw["outputs"], f"{path}.outputs"),
    )


def parse(args: Any) -> GraphSpec:
    """The application's `args` as a GraphSpec; SpecError names the first problem."""
    if not isinstance(args, dict):
        raise SpecError(f"args: expected a mapping, got {args!r}")
    unknown = sorted(set(args) - ARGS_KEYS)
    if unknown:
        raise SpecError(f"args: unknown keys {unknown}; allowed: {', '.join(sorted(ARGS_KEYS))}")
    name = _text(args.get("name"), "args.name")
    inputs = _tensors(args.get("inputs"), "args.inputs")
    raw_steps = args.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise SpecError("args.steps: expected a non-empty list of steps")
    steps = tuple(_step(s, f"args.steps[{i}]") for i, s in enumerate(raw_steps))
    names = [s.name for s in steps]
    if len(set(names)) != len(names):
        raise SpecError(f"args.steps: step names must be unique, got {names}")
    made: set[str] = set()
    for i, step in enumerate(steps):
        twice = sorted(made & set(step.outputs.values()))
        if twice:
            raise SpecError(f"args.steps[{i}].outputs: {twice} already made by an earlier step")
        made.update(step.outputs.values())
    outputs = _tensors(args.get("outputs"), "args.outputs")
    unmade = [t.name for t in outputs if t.name not in made]
    if unmade:
        raise SpecError(f"args.outputs: {unmade} made by no step")
    early = [t for t in _caller_tensors(steps) if t in made]
    if early:
        raise SpecError(f"args.steps: {early} read before the step that makes them")
    undeclared = [t for t in _caller_tensors(steps) if t not in {i.name for i in inputs}]
    if undeclared:
        raise SpecError(f"args.inputs: {undeclared} read by a step but not declared")
    backend = _text(args.get("backend", DEFAULT_BACKEND), "args.backend")
    if backend.count(":") != 1:
        raise SpecError(f"args.backend: expected an import path 'module:callable', got {backend!r}")
    return GraphSpec(name=name, inputs=inputs, outputs=outputs, steps=steps, backend=backend)
