"""A version's Triton behind the OpenAI-compatible frontend: its command, flags, ports, probes.

The frontend is triton-inference-server/server `python/openai`. The images carry it in
/opt/tritonserver/python/openai (build.py r25.01 copies it there and installs its requirements and
the tritonserver/tritonfrontend wheels); the -trtllm-python-py3 images lack them, which
settings/serving.openai_frontend_problems refuses. Its main.py starts Triton in-process through
the Python bindings, serves the OpenAI API with FastAPI/uvicorn and, with
`--enable-kserve-frontends`, the KServe HTTP and gRPC endpoints of the same server on the ports
classic versions use, so the service's Triton routes, health checks and clients keep working.

What main.py (r25.01) does not do, and how the platform copes:
- it opens no metrics port: the same Prometheus text (Server.metrics) is at `/metrics` on the
  OpenAI port, which the service's PodMonitor scrapes there;
- neither it nor its KServe frontends take a restricted-API option (tritonfrontend r25.01
  _kservehttp.py: "DLIS-7215: Add restricted protocol support", commented out): the closed
  categories are shut by the mesh's allow-list alone (mesh routes and AuthorizationPolicy);
- it takes no other server flag: the settings refuse the serverArgs, model control and config
  name it would ignore.
"""

from __future__ import annotations

from typing import Optional

import pulumi

from inference_platform.observability.metrics import TRITON_METRICS_PORT
from inference_platform.serving.triton_server import GRPC_PORT, HTTP_PORT, for_repository, probes
from inference_platform.settings.serving import Service, Version

# main.py --openai-port's default; the routing (InferencePool targetPort) uses this name.
OPENAI_FRONTEND_PORT = 9000
OPENAI_PORT_NAME = "http-openai"
FRONTEND_MAIN = "/opt/tritonserver/python/openai/openai_frontend/main.py"
FRONTEND_COMMAND = ["python3", FRONTEND_MAIN]
# frontend/fastapi/routers/observability.py (r25.01): 200 when the in-process server is ready,
# 400 otherwise; `/metrics` beside it answers the server's Prometheus metrics.
HEALTH_PATH = "/health/ready"
METRICS_PATH = "/metrics"


def frontend_args(version: Version, repository: str, tokenizer: Optional[str]) -> list[str]:
    """main.py's flags (its argparse, python/openai/openai_frontend/main.py r25.01; a test checks
    each against tests/catalogues/openai-frontend-r25.01-flags.txt). `--backend` names the
    request format rather than letting the frontend guess it from the loaded models."""
    args = [
        f"--model-repository={repository}",
        f"--backend={version.llm.engine}",
        f"--openai-port={OPENAI_FRONTEND_PORT}",
        "--enable-kserve-frontends",
        f"--kserve-http-port={HTTP_PORT}",
        f"--kserve-grpc-port={GRPC_PORT}",
    ]
    if tokenizer is not None:
        args.append(f"--tokenizer={tokenizer}")
    verbose = version.server_args.get("log-verbose")
    if isinstance(verbose, str):
        args.append(f"--tritonserver-log-verbose-level={verbose}")
    return args


def tokenizer_path(version: Version, mount_path: str) -> Optional[str]:
    """Where the pod sees the version's tokenizer: on the file share, mounted read-only."""
    folder = version.llm.openai.tokenizer
    return f"{mount_path}/{folder.strip('/')}" if folder is not None else None


def frontend_container(version: Version, repository: pulumi.Input[str], mount_path: str) -> dict:
    """The fields of the version's container that differ from a classic Triton's: the frontend's
    command and flags, its ports (the KServe ones, the OpenAI one, no metrics port) and its
    probes. Ready on the frontend's own health path: main.py starts uvicorn only once Triton
    has loaded every model. Liveness stays on the KServe HTTP frontend."""
    container = {
        "command": list(FRONTEND_COMMAND),
        "args": for_repository(repository, lambda r: frontend_args(version, r, tokenizer_path(version, mount_path))),
        "ports": [
            {"name": "http", "containerPort": HTTP_PORT, "protocol": "TCP"},
            {"name": "grpc", "containerPort": GRPC_PORT, "protocol": "TCP"},
            {"name": OPENAI_PORT_NAME, "containerPort": OPENAI_FRONTEND_PORT, "protocol": "TCP"},
        ],
        **probes(version, HEALTH_PATH, OPENAI_PORT_NAME),
    }
    if version.llm.engine == "tensorrtllm":
        # TensorRT-LLM runs in orchestrator mode behind the frontend (python/openai/README.md
        # r25.01, Model Parallelism Support: TRTLLM_ORCHESTRATOR=1; leader mode unsupported).
        container["env"] = [{"name": "TRTLLM_ORCHESTRATOR", "value": "1"}]
    return container


# fastapi_frontend.py (r25.01) runs uvicorn with timeout_keep_alive=5, not configurable: it
# closes a connection idle for 5 s. The sidecar keeps its inbound connections to the container
# for up to an hour by default; one it reuses just as uvicorn closes it fails the request (503
# UC, "upstream connection termination"). Closing them first, after 4 s, leaves no such race.
SIDECAR_INBOUND_IDLE_TIMEOUT = "4s"


def sidecar_spec(service: Service) -> dict:
    """The service's pods' Sidecar: inbound connections to the frontend close before uvicorn's."""
    return {"workloadSelector": {"labels": {"app": service.name}},
            "inboundConnectionPool": {"http": {"idleTimeout": SIDECAR_INBOUND_IDLE_TIMEOUT}}}


def serves_openai(service: Service) -> bool:
    return any(v.serves_openai for v in service.versions)


def metrics_ports(service: Service) -> tuple[int, ...]:
    """The ports Prometheus scrapes the service's pods on without a mesh identity: Triton's
    metrics port, and the OpenAI port where a version runs the frontend (the service's
    AuthorizationPolicy lets such callers GET only /metrics there)."""
    return (TRITON_METRICS_PORT, OPENAI_FRONTEND_PORT) if serves_openai(service) else (TRITON_METRICS_PORT,)


def metrics_port_names(service: Service) -> tuple[str, ...]:
    """The container ports the service's PodMonitor scrapes; a pod without one is not scraped on it."""
    return ("http-metrics", OPENAI_PORT_NAME) if serves_openai(service) else ("http-metrics",)
