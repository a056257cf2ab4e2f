"""The default step backend: the step's model in Triton's in-process Python API.

`tritonserver` ships inside the Triton containers (the step images), not on PyPI, so it is
imported only when a step replica starts. The API calls follow triton-inference-server/core,
python/tritonserver/_api: `Server(model_repository=..., model_control_mode=EXPLICIT)` and
`start(wait_until_ready=True)` (_server.py, Options and Server.start), `Server.load(name)` which
waits until the model is ready and returns it (_server.py), `Model.metadata()` with each input's
KServe `datatype` and `Model.infer(inputs=..., output_memory_type="cpu")` yielding responses
whose `outputs` are Tensors (_model.py; the "cpu" form as in python/test/test_api.py), read
with `to_bytes_array()` for BYTES and `numpy.from_dlpack` otherwise (_tensor.py).

Triton's per-model metrics: the in-process server collects them (Options.metrics defaults to
True) but has no HTTP frontend, so nothing serves `/metrics` (tritonserver's metrics endpoint is
server src/http_server.cc HTTPMetricsServer, outside the in-process API). `Server.metrics()`
returns the same Prometheus text (_server.py, TRITONSERVER_ServerMetrics); the replica serves it
at `/metrics` on tritonserver's default metrics port, 8002 (server src/command_line_parser.h,
metrics_port_), in its worker pod (one step replica per pod: the step resource is 1).

This module is exercised here only by resolving its import path and serving metrics text
(tests/live/test_graph_app.py); the Ray tests run the same application with stand-in backends.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Optional

import numpy as np

METRICS_PORT = 8002

# KServe datatypes of the model's inputs that numpy can hold; others (BYTES, BF16) pass as sent.
_NUMPY_TYPES = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
    "FP16": np.float16, "FP32": np.float32, "FP64": np.float64,
}


class TritonBackend:
    """One Triton server per step replica, holding the step's model alone."""

    def __init__(self, model: str, model_repository: str):
        import tritonserver

        # A repository may be a path (the file-share cache mount) or an s3:// URL, which
        # Triton reads with the AWS_* variables the worker pod gets from the cache's Secret.
        self._server = tritonserver.Server(
            model_repository=model_repository,
            model_control_mode=tritonserver.ModelControlMode.EXPLICIT,
            log_warn=True,
        ).start(wait_until_ready=True)
        self._model = self._server.load(model)
        self._input_types = {
            i["name"]: _NUMPY_TYPES[i["datatype"]]
            for i in self._model.metadata()["inputs"] if i["datatype"] in _NUMPY_TYPES
        }
        self._bytes = tritonserver.DataType.BYTES
        self._metrics = serve_metrics(self._server.metrics)

    def infer(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        # JSON gives int64 and float64: cast to what the model declares.
        cast = {name: a.astype(self._input_types[name], copy=False) if name in self._input_types else a
                for name, a in inputs.items()}
        outputs: dict[str, np.ndarray] = {}
        # A step's model answers each request once (not decoupled).
        for response in self._model.infer(inputs=cast, output_memory_type="cpu"):
            for name, tensor in response.outputs.items():
                # Copies: the response owns the tensors' memory.
                outputs[name] = (tensor.to_bytes_array() if tensor.data_type == self._bytes
                                 else np.from_dlpack(tensor).copy())
        return outputs


def serve_metrics(read: Callable[[], str], host: str = "0.0.0.0", port: int = METRICS_PORT) -> Optional[ThreadingHTTPServer]:
    """`GET /metrics` answering `read()` (Prometheus text) from a daemon thread; None, logged,
    when the port is taken: metrics must never keep a replica from serving."""

    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.split("?", 1)[0] != "/metrics":
                self.send_error(404)
                return
            body = read().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:  # every scrape would be a log line
            pass

    try:
        server = ThreadingHTTPServer((host, port), Metrics)
    except OSError as e:
        logging.getLogger(__name__).warning("Triton metrics not served on port %s: %s", port, e)
        return None
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="triton-metrics", daemon=True).start()
    return server
