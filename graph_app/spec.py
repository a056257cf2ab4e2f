"""The graph a Serve application's `args` declare, checked before any replica starts.

Plain standard library: the platform's tests and any Ray node can read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_BACKEND = "graph_app.triton:TritonBackend"
STEP_KEYS = {"name", "model", "model_repository", "inputs", "outputs"}


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
class GraphSpec:
    steps: tuple[Step, ...]
    outputs: tuple[str, ...]
    backend: str

    @property
    def inputs(self) -> tuple[str, ...]:
        """Graph tensors a caller sends."""
        return _caller_tensors(self.steps)


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
    unknown = sorted(set(args) - {"steps", "outputs", "backend"})
    if unknown:
        raise SpecError(f"args: unknown keys {unknown}; allowed: backend, outputs, steps")
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
    raw_outputs = args.get("outputs")
    if not isinstance(raw_outputs, list) or not raw_outputs:
        raise SpecError("args.outputs: expected a non-empty list of graph tensors")
    outputs = tuple(_text(t, f"args.outputs[{i}]") for i, t in enumerate(raw_outputs))
    unmade = [t for t in outputs if t not in made]
    if unmade:
        raise SpecError(f"args.outputs: {unmade} made by no step")
    early = [t for t in _caller_tensors(steps) if t in made]
    if early:
        raise SpecError(f"args.steps: {early} read before the step that makes them")
    backend = _text(args.get("backend", DEFAULT_BACKEND), "args.backend")
    if backend.count(":") != 1:
        raise SpecError(f"args.backend: expected an import path 'module:callable', got {backend!r}")
    return GraphSpec(steps=steps, outputs=outputs, backend=backend)
