"""The Serve application: `import_path: graph_app.app:build` with the graph as `args`.

One deployment per step, `step-<name>`, whose replicas each hold one backend (by default
Triton's in-process server with the step's model), and the ingress `graph`, which speaks
Triton's KServe v2 HTTP protocol for the model named after the graph (`POST /v2/models/
<graph>/infer`, JSON or binary tensors: graph_app/kserve.py), as the graph's Triton ensemble
would, calls the steps in order through their handles and answers as Triton does.
serveConfigV2's `deployments` entries set each deployment's placement (ray_actor_options)
and scaling by these names.
"""

from __future__ import annotations

import asyncio
import importlib
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import ray
from ray import serve
from ray.serve.handle import DeploymentHandle
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from . import kserve
from .spec import GraphSpec, SpecError, Step, parse

INGRESS = "graph"
# The most requests a step replica may hold at once (the stack key's bound, settings/graphs.py):
# Serve's max_ongoing_requests limits a replica's concurrency, never its thread pool.
MAX_ONGOING_REQUESTS = 1024


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
        # Threads start on demand: as many as requests in flight, which Serve bounds.
        self._threads = ThreadPoolExecutor(max_workers=MAX_ONGOING_REQUESTS, thread_name_prefix="infer")

    async def infer(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        # A thread per request: concurrent requests reach the backend together (Triton
        # batches them) and the replica's event loop keeps answering its controller.
        return await asyncio.get_running_loop().run_in_executor(self._threads, self._backend.infer, inputs)

    def where(self) -> str:
        """The Ray node this replica runs on (for the tests of placement)."""
        return self._node_id


def _error(message: str, status: int = 400) -> JSONResponse:
    # Triton's HTTP frontend answers errors as {"error": <message>}.
    return JSONResponse({"error": message}, status_code=status)


# The ingress only forwards tensors: a small CPU share anywhere (a RayService head has
# num-cpus 0, so it lands on a worker) and room for many graph requests in flight.
@serve.deployment(name=INGRESS, ray_actor_options={"num_cpus": 0.1}, max_ongoing_requests=64)
class GraphIngress:
    """Triton's KServe v2 HTTP endpoints of the graph's model (graph_app/kserve.py): the same
    request and response as the graph's Triton ensemble under `placement: ensemble`."""

    def __init__(self, args: dict[str, Any], steps: dict[str, DeploymentHandle]):
        self._spec = parse(args)
        self._steps = steps
        model = re.escape(self._spec.name)
        self._infer = re.compile(rf"/v2/models/{model}(/versions/{kserve.MODEL_VERSION})?/infer")
        self._model = re.compile(rf"/v2/models/{model}(/versions/{kserve.MODEL_VERSION})?(?P<ready>/ready)?")

    async def __call__(self, request: Request) -> Response:
        path = request.url.path.rstrip("/")
        if request.method == "POST" and self._infer.fullmatch(path):
            return await self._infer_request(request)
        found = self._model.fullmatch(path)
        if request.method == "GET" and found:
            if found["ready"]:
                return Response(status_code=200)
            return JSONResponse(kserve.model_metadata(self._spec.name, self._spec.inputs, self._spec.outputs))
        return _error(f"no endpoint {request.method} {path}; this graph serves POST /v2/models/"
                      f"{self._spec.name}/infer and GET /v2/models/{self._spec.name}[/ready]", 404)

    async def _infer_request(self, request: Request) -> Response:
        spec = self._spec
        try:
            body = kserve.decompressed(await request.body(), request.headers.get("content-encoding"))
            infer = kserve.parse_request(body, request.headers.get(kserve.HEADER_LENGTH), spec.name,
                                         spec.inputs, spec.outputs)
            available = dict(infer.inputs)
            for step in spec.steps:
                available.update(await self._run(step, available))
            content, headers = kserve.encode_response(spec.name, infer, available, spec.outputs)
        except kserve.ProtocolError as e:
            return _error(str(e))
        return Response(content, headers=headers)

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
