"""The Triton server of a version: its flags, ports, probes, volumes and container pieces.

A TritonService's Deployments and the server a tuning run measures (tuning/runs.py,
tuning/pipeline.py) are built from these, so both run the version's server the same way.
"""

import math
from typing import Callable, Optional

import pulumi

from inference_platform.core.common import restricted_security_context
from inference_platform.gpu.profiles import container_resources
from inference_platform.observability.metrics import TRITON_METRICS_PORT
from inference_platform.serving.triton_api import restriction_flags
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.serving import Version
from inference_platform.settings.triton_flags import EXIT_TIMEOUT_FLAG
from inference_platform.weights.caches import triton_s3_url
from inference_platform.weights.inputs import WeightsRef

HTTP_PORT, GRPC_PORT = 8000, 8001
# The tritonserver images run as the triton-server user (uid 1000).
TRITON_UID = 1000
PROBE_PERIOD_SECONDS = 10
# The root filesystem is read-only; tritonserver and its backends write only here.
# /tmp: where Triton copies an S3 model repository before loading it (triton core
# filesystem kDefaultMountDirectory) and where Python-backend and TensorRT-LLM models
# keep temporary files. The home's .cache: the Hugging Face tokenizer cache of the
# TensorRT-LLM pre- and post-processing models (the image's home is not writable).
SCRATCH_DIRS = {"tmp": "/tmp", "home-cache": "/home/triton-server/.cache"}
# The platform-written model configs: a model repository of their own beside the version's.
# Triton takes --model-repository more than once (command_line_parser.cc keeps a set) and
# finds each model in whichever repository holds it; serverArgs cannot add the flag
# (settings/schema.py TRITON_SERVER_FLAGS leaves it out).
MODEL_CONFIGS_PATH = "/model-configs"


def model_repository_url(weights: WeightsRef, cache: str, path: str) -> pulumi.Input[str]:
    """The `--model-repository` value for a version's repository in `cache`."""
    if cache == "fileShare":
        if weights.claim_name is None:
            raise ValueError("weight cache 'fileShare' is not configured")
        return f"{weights.mount_path}/{path.strip('/')}"
    if cache == "s3":
        if weights.s3_endpoint is None or weights.s3_bucket is None:
            raise ValueError("weight cache 's3' is not configured")
        if isinstance(weights.s3_endpoint, str) and isinstance(weights.s3_bucket, str):
            return triton_s3_url(weights.s3_endpoint, weights.s3_bucket, path)
        # Names handed over as outputs (another stack's bucket): the URL follows them.
        return pulumi.Output.all(weights.s3_endpoint, weights.s3_bucket).apply(lambda eb: triton_s3_url(eb[0], eb[1], path))
    raise ValueError(f"unknown weight cache {cache!r}; allowed: fileShare, s3")


def _listening_flags() -> list[str]:
    """The ports a Triton server of the platform listens on, and its metrics."""
    return [f"--http-port={HTTP_PORT}", f"--grpc-port={GRPC_PORT}", f"--metrics-port={TRITON_METRICS_PORT}",
            "--allow-metrics=true", "--allow-gpu-metrics=true"]


def _server_arg_flags(version: Version) -> list[str]:
    """The version's serverArgs but the exit timeout (the caller sets that); a repeatable flag's
    list gives one flag per item, in order."""
    return [f"--{flag}={item}" for flag, value in sorted(version.server_args.items()) if flag != EXIT_TIMEOUT_FLAG
            for item in (value if isinstance(value, list) else [value])]


def for_repository(repository: pulumi.Input[str], args: Callable[[str], list[str]]) -> pulumi.Input[list[str]]:
    """`args` of the repository URL, waiting for it when it is an output (a bucket another stack names)."""
    return args(repository) if isinstance(repository, str) else pulumi.Output.from_input(repository).apply(args)


def triton_args(version: Version, repository: str, exit_timeout: int, model_configs: bool = False) -> list[str]:
    """tritonserver command-line flags of a serving version. With `model_configs`, the
    platform's configs are a second model repository. Every API category clients do not need
    is closed to requests without the service's admin key (triton_api.restriction_flags; the
    container needs triton_api.admin_key_env)."""
    args = [
        f"--model-repository={repository}",
        *([f"--model-repository={MODEL_CONFIGS_PATH}"] if model_configs else []),
        f"--model-control-mode={version.model_control.mode}",
        *_listening_flags(),
        *restriction_flags(),
    ]
    args += _model_loading_flags(version)
    args.append(f"--{EXIT_TIMEOUT_FLAG}={exit_timeout}")
    return args + _server_arg_flags(version)


def _model_loading_flags(version: Version) -> list[str]:
    """What the version's model control loads, and which config (after `--model-control-mode`)."""
    args = []
    if version.model_control.mode == "poll":
        args.append(f"--repository-poll-secs={version.model_control.poll_seconds}")
    args += [f"--load-model={m}" for m in version.model_control.load]
    if version.model_config_name:
        args.append(f"--model-config-name={version.model_config_name}")
    return args


def probes(version: Version, ready_path: str = "/v2/health/ready", ready_port: str = "http") -> dict[str, dict]:
    """Startup probe covering the whole startup budget; readiness and liveness after it.
    Readiness on `ready_path` of the port named `ready_port`; liveness on Triton's HTTP port."""
    failures = math.ceil(version.startup_budget_seconds / PROBE_PERIOD_SECONDS)
    return {
        "startupProbe": {
            "httpGet": {"path": ready_path, "port": ready_port},
            "periodSeconds": PROBE_PERIOD_SECONDS,
            "failureThreshold": failures,
            "timeoutSeconds": 5,
        },
        "readinessProbe": {
            "httpGet": {"path": ready_path, "port": ready_port},
            "periodSeconds": 5,
            "failureThreshold": 3,
            "timeoutSeconds": 5,
        },
        "livenessProbe": {
            "httpGet": {"path": "/v2/health/live", "port": "http"},
            "periodSeconds": PROBE_PERIOD_SECONDS,
            "failureThreshold": 6,
            "timeoutSeconds": 5,
        },
    }


def container_security_context() -> dict:
    """Pod Security "restricted": non-root, no privilege escalation, no capabilities; a
    read-only root filesystem with writable scratch volumes (SCRATCH_DIRS, /dev/shm)."""
    return restricted_security_context(runAsUser=TRITON_UID)


def scratch_volumes() -> tuple[list[dict], list[dict]]:
    """Writable emptyDirs (on the node's disk: an S3 repository copy can be large) and their mounts."""
    volumes = [{"name": name, "emptyDir": {}} for name in SCRATCH_DIRS]
    mounts = [{"name": name, "mountPath": path} for name, path in SCRATCH_DIRS.items()]
    return volumes, mounts


def server_volumes(version: Version, claim: Optional[pulumi.Input[str]], mount_path: str) -> tuple[list[dict], list[dict]]:
    """A Triton server's volumes and mounts: /dev/shm, the scratch directories and, on the file
    share, the weights claim read-only."""
    volumes = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": version.resources.shm_size}}]
    mounts = [{"name": "dshm", "mountPath": "/dev/shm"}]
    scratch, scratch_mounts = scratch_volumes()
    volumes += scratch
    mounts += scratch_mounts
    if claim:
        volumes.append({"name": "models", "persistentVolumeClaim": {"claimName": claim, "readOnly": True}})
        mounts.append({"name": "models", "mountPath": mount_path, "readOnly": True})
    return volumes, mounts


def analysis_server(version: Version, group: NodeGroup, repository: pulumi.Input[str], s3_secret: Optional[str],
                    claim: Optional[pulumi.Input[str]], mount_path: str, as_served: bool = False) -> tuple[dict, list[dict]]:
    """The Triton server a tuning run measures, and its volumes: the version's image, GPU share,
    resources, repository and server flags, with explicit model control and nothing loaded
    (Model Analyzer loads each variant it tries); `as_served` (an LLM version's GenAI-Perf run)
    loads the models as the version's own model control does, and the startup probe (Triton's
    strict readiness) holds GenAI-Perf back until they are ready.

    Its API stays unrestricted: Model Analyzer, beside it in the same pod, loads and unloads each
    variant through the model-repository API (with the variant's config as the load's override)
    and sends no admin key. Nothing outside the pod reaches it: the runs' and the
    pipelines' NetworkPolicies admit no ingress (runs.tuning_network_policy_spec,
    pipeline.pipeline_network_policy_spec), and no route leads to it."""
    volumes, mounts = server_volumes(version, claim, mount_path)

    def args(repo: str) -> list[str]:
        if as_served:
            return [f"--model-repository={repo}", f"--model-control-mode={version.model_control.mode}",
                    *_listening_flags(), *_model_loading_flags(version), *_server_arg_flags(version)]
        return [f"--model-repository={repo}", "--model-control-mode=explicit", *_listening_flags(),
                *_server_arg_flags(version)]

    container = {
        "name": "triton",
        "image": version.image,
        "command": ["tritonserver"],
        "args": for_repository(repository, args),
        "ports": [{"name": "http", "containerPort": HTTP_PORT, "protocol": "TCP"}],
        "resources": container_resources(version.resources, version.gpu, group),
        "volumeMounts": mounts,
        "securityContext": container_security_context(),
        # Ready as soon as the server is up: nothing is loaded until Model Analyzer asks. A
        # native sidecar's readiness gates nothing; liveness restarts a hung server.
        **probes(version),
    }
    if s3_secret:
        container["envFrom"] = [{"secretRef": {"name": s3_secret}}]
    return container, volumes
