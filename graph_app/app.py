"""The Serve application: `import_path: graph_app.app:build` with the graph as `args`.

One deployment per step, `step-<name>`, whose replicas each hold one backend (by default
Triton's in-process server with the step's model), and the ingress `graph`, which takes
`POST {"inputs": {tensor: nested list}}`, calls the steps in order through their handles and
answers `{"outputs": {tensor: nested list}}`. serveConfigV2's `deployments` entries set each
deployment's placement (ray_actor_options) and scaling by these names.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import numpy as np
import ray
from ray import serve
from ray.serve.handle import DeploymentHandle
from starlette.requests import Request
from starlette.responses import JSONResponse

from . import tensors
from .spec import GraphSpec, SpecError, Step, parse

INGRESS = "graph"
BODY_SHAPE = 'the body must be JSON: {"inputs": {tensor: nested list}}'


def load_backend(path: str) -> type:
    """The backend class an import path `module:callable` names."""
    module_name, _, attr = path.partition(":")
    try:
        backend = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise SpecError(f"args.backend: cannot import {path!r}: {e}") from None
    if not callable(backend):
        raise SpecError(f"args.backend: {path!r} is not callable")
    return backend


@serve.deployment
class StepReplica:
    """One step's model. Its placement comes entirely from the deployment's options."""

    def __init__(self, backend: str, model: str, model_repository: str):
        self._node_id = ray.get_runtime_context().get_node_id()
        self._backend = load_backend(backend)(model=model, model_repository=model_repository)

    async def infer(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        # A thread per request: concurrent requests reach the backend together (Triton
        # batches them) and the replica's event loop keeps answering its controller.
        return await asyncio.to_thread(self._backend.infer, inputs)

    def where(self) -> str:
        """The Ray node this replica runs on (for the tests of placement)."""
        return self._node_id


def _bad_request(message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=400)


# The ingress only forwards tensors: a small CPU share anywhere (a RayService head has
# num-cpus 0, so it lands on a worker) and room for many graph requests in flight.
@serve.deployment(name=INGRESS, ray_actor_options={"num_cpus": 0.1}, max_ongoing_requests=64)
class GraphIngress:
    def __init__(self, args: dict[str, Any], steps: dict[str, DeploymentHandle]):
        self._spec = parse(args)
        self._steps = steps

    async def __call__(self, request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except ValueError:
            return _bad_request(BODY_SHAPE)
        raw = body.get("inputs") if isinstance(body, dict) else None
        if not isinstance(raw, dict):
            return _bad_request(BODY_SHAPE)
        missing = [t for t in self._spec.inputs if t not in raw]
        unknown = sorted(set(raw) - set(self._spec.inputs))
        problems = [f"{what} input tensors {names}" for what, names in (("missing", missing), ("unknown", unknown)) if names]
        if problems:
            return _bad_request(f"{', '.join(problems)}; the graph takes {list(self._spec.inputs)}")
        try:
            available = {name: tensors.from_json(name, value) for name, value in raw.items()}
        except tensors.TensorError as e:
            return _bad_request(str(e))
        for step in self._spec.steps:
            available.update(await self._run(step, available))
        return JSONResponse({"outputs": {t: tensors.to_json(available[t]) for t in self._spec.outputs}})

    async def _run(self, step: Step, available: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The step's model on the tensors it reads; its outputs under their graph names."""
        feed = {model_tensor: available[graph_tensor] for model_tensor, graph_tensor in step.inputs.items()}
        produced = await self._steps[step.name].infer.remote(feed)
        lacking = sorted(set(step.outputs) - set(produced))
        if lacking:
            raise RuntimeError(f"step {step.name!r}: model {step.model!r} returned no {lacking}")
        return {graph_tensor: produced[model_tensor] for model_tensor, graph_tensor in step.outputs.items()}


def build(args: dict[str, Any]) -> serve.Application:
    """The application for the graph `args` declare (see graph_app/README.md)."""
    spec: GraphSpec = parse(args)
    load_backend(spec.backend)  # a wrong import path fails the deploy, not each replica
    steps = {
        s.name: StepReplica.options(name=s.deployment).bind(spec.backend, s.model, s.model_repository)
        for s in spec.steps
    }
    return GraphIngress.bind(args, steps)
