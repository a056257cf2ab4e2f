"""Model Analyzer runs: for a version with `tuning`, one Job per set of tuning inputs.

The Job's pod runs, in order (native sidecars, Kubernetes 1.29+):
0. `check-shapes` (model_tools/perf_shapes.py), after `model-config` on S3 (rclone copies the
   model's config.pbtxt out of the bucket): the model's config against `tuning.shapes`, by the
   plan's own rule, before the Triton image is pulled or started. A model Perf Analyzer could not
   profile fails the Job at once (exit 2, one line per input naming the stack key to set; the pod
   failure policy does not retry it) instead of after hours of failed measurements.
1. `triton`: the version's own Triton image, GPU share and model repository, started with
   explicit model control and nothing loaded. It is an init container with
   `restartPolicy: Always`, so the next step starts once its startup probe passes and the
   kubelet stops it when the pod's work is done (a plain second container would keep the
   Job's pod running for ever).
2. `analyze`: `model-analyzer profile` from the Triton SDK image of the same release, in
   remote launch mode against that server on localhost: it loads each config variant it tries
   through Triton's model-control API (with the variant's config as the load's config
   override), drives it with Perf Analyzer, and reads GPU memory and utilisation from
   Triton's metrics endpoint (`dcgm_disable`: its own container has no GPU).
3. `publish` (model_tools/publish.py): the best variants that met the constraints, parsed
   with Triton's ModelConfig protobuf and named after the model, written as
   `<model>/configs/tuned-<id>-<rank>.pbtxt` (what `--model-config-name=tuned-<id>-<rank>`
   loads) with the reports under `<model>/tuning/tuned-<id>/`. On the file share it writes
   into the claim; on S3 it writes a staging copy that `upload` (rclone) copies into the
   bucket with the weights Secret's credentials.

When it runs: the Job's name carries a hash of everything the run depends on (the tuning
settings, the version's image, repository, GPU request and resources, the group's GPUs,
the tools). A later `pulumi up` with the same inputs finds the Job as it is, finished or
not, and does nothing; a change makes a new Job (a replacement under a new name) and
removes the old one with its pods. A finished Job stays: a TTL would delete it, a refresh
would see it gone and the next `up` would run it again.

Whose GPUs: the run never takes a GPU share from serving.
- The device plugin hands out GPUs (whole, MIG slices or time-slicing replicas) exclusively,
  and a required pod anti-affinity keeps the run off every node where its own service's
  replicas run (and, anti-affinity being symmetric, keeps that service's new replicas off its
  node), so with time-slicing or MPS it never shares a physical GPU with its own service.
  Other services' replicas on the same group may share the node's GPUs (time-slicing, MPS) or
  its other MIG slices: their load can disturb the measurements there.
- Its service loses the run's whole node meanwhile: the capacity check counts the run as one
  node's worth of the version's request (gpu/profiles.py run_hold), not one share.
- Its priority class (`gpu-tuning`, below serving, `preemptionPolicy: Never`) lets it
  preempt nothing: with no spare GPU it stays Pending until the cluster autoscaler adds a
  node (the group's maxNodes must leave room: capacity checks count the run). A serving
  replica that needs its GPU preempts it; the pod failure policy does not count that
  disruption against the Job's retries.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Mapping, Optional

import pulumi
import pulumi_kubernetes as k8s
import yaml

from inference_platform.core import hardening, versions
from inference_platform.core.common import (
    COMPONENT_KEY,
    PART_OF,
    SKIP_AWAIT,
    resource_opts,
    restricted_security_context,
    shipped_dir,
    standard_labels,
)
from inference_platform.gpu.profiles import gpu_scheduling
from inference_platform.serving.model_config import CONFIG_FILE
from inference_platform.settings.base import NAMESPACE
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.serving import Service, Version
from inference_platform.settings.tuning import TRITON_IMAGE, TUNING_OBJECTIVES, Tuning, TuningGoals

WORK_DIR = "/work"
TOOLS_DIR = "/opt/inference-platform"
ANALYZER_CONFIG = "model-analyzer.yaml"
VARIANTS_DIR = f"{WORK_DIR}/output-models"
RESULTS_DIR = f"{WORK_DIR}/results"
STAGING_DIR = f"{WORK_DIR}/publish"
# Triton beside Model Analyzer, on the pod's loopback (its default ports).
HTTP_PORT, GRPC_PORT, METRICS_PORT = 8000, 8001, 8002
TUNING_LABEL = "inference-platform/tuning"
COMPONENT = "tuning"
# Model Analyzer and Perf Analyzer: the load generator needs CPU to saturate a GPU.
ANALYZER_RESOURCES = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}
TOOL_RESOURCES = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
# The SDK and rclone images run as root by default; the steps need no privilege.
TOOLS_UID = 1000
TOOLS_SOURCE = shipped_dir("model_tools")
RCLONE_REMOTE = "weights"


# --------------------------------------------------------------------------- images


def _release(image: str) -> tuple[str, str]:
    """(registry path, release) of a tritonserver image tagged `<release>-<flavour>`."""
    match = TRITON_IMAGE.match(image)
    if match is None:
        raise ValueError(f"image {image!r} is not a tritonserver image tagged <YY.MM>-<flavour> "
                         "(nvcr.io/nvidia/tritonserver:25.01-py3): its release names the SDK and TensorRT images")
    return match["registry"], match["release"]


def triton_release(image: str) -> str:
    """The Triton release (`25.01`) of a tritonserver image."""
    return _release(image)[1]


def sdk_image(image: str) -> str:
    """The Triton SDK image (Model Analyzer, Perf Analyzer) of the same release as `image`."""
    registry, release = _release(image)
    return f"{registry}/tritonserver:{release}-py3-sdk"


def tensorrt_image(image: str) -> str:
    """The TensorRT image (trtexec) of the same release as the Triton image `image`: a TensorRT
    engine runs only on the TensorRT version that built it, which that release's Triton has."""
    registry, release = _release(image)
    return f"{registry}/tensorrt:{release}-py3"


def analyzer_image(version: Version) -> str:
    return version.tuning.sdk_image or sdk_image(version.image)


# --------------------------------------------------------------------------- Model Analyzer


def perf_analyzer_flags(goals: TuningGoals) -> dict[str, Any]:
    """What Perf Analyzer sends a tuned version's model: Model Analyzer's `perf_analyzer_flags`
    (config_command_profile.py; `shape` and `input-data` are its additive keys, a list renders
    one `--shape=<name>:<d1>,<d2>` per item: perf_analyzer/perf_config.py)."""
    if not isinstance(goals, Tuning):
        return {}
    flags: dict[str, Any] = {}
    if goals.shapes:
        flags["shape"] = shape_flags(goals.shapes)
    if goals.input_data != "random":
        flags["input-data"] = goals.input_data
    return flags


def shape_flags(shapes: Mapping[str, list[int]]) -> list[str]:
    """Perf Analyzer's `--shape` values, `<name>:<d1>,<d2>`, by name: the config (and the run's
    name) must not depend on how the stack file orders them."""
    return [f"{name}:{','.join(str(d) for d in dims)}" for name, dims in sorted(shapes.items())]


def analyzer_config(goals: TuningGoals, model: str) -> dict[str, Any]:
    """Model Analyzer's `profile` config (YAML keys as config_command_profile.py defines them)."""
    c = goals.constraints
    constraints = {
        key: bound for key, bound in (
            ("perf_latency_p99", {"max": c.latency_p99_ms} if c.latency_p99_ms is not None else None),
            ("perf_throughput", {"min": c.min_throughput} if c.min_throughput is not None else None),
            ("gpu_used_memory", {"max": c.max_gpu_memory_mb} if c.max_gpu_memory_mb is not None else None),
        ) if bound is not None
    }
    config: dict[str, Any] = {
        "profile_models": [model],
        "triton_launch_mode": "remote",
        "client_protocol": "grpc",
        "triton_http_endpoint": f"localhost:{HTTP_PORT}",
        "triton_grpc_endpoint": f"localhost:{GRPC_PORT}",
        "triton_metrics_url": f"http://localhost:{METRICS_PORT}/metrics",
        # GPU metrics come from Triton's endpoint; Model Analyzer's container has no GPU for DCGM.
        "dcgm_disable": True,
        "output_model_repository_path": VARIANTS_DIR,
        "override_output_model_repository": True,
        "export_path": RESULTS_DIR,
        "checkpoint_directory": f"{WORK_DIR}/checkpoints",
        "objectives": {TUNING_OBJECTIVES[k]: w for k, w in goals.objectives.items()},
        "run_config_search_max_instance_count": goals.search.max_instance_count,
        "run_config_search_max_model_batch_size": goals.search.max_batch_size,
        "run_config_search_max_concurrency": goals.search.max_concurrency,
        "num_configs_per_model": goals.keep,
    }
    if constraints:
        config["constraints"] = constraints
    flags = perf_analyzer_flags(goals)
    if flags:
        config["perf_analyzer_flags"] = flags
    return config


# The model_tools files a Model Analyzer run or pipeline executes (a file it does not run must
# not rename, and so rerun, every run when it is added); a run also checks its model's shapes.
MODEL_ANALYZER_TOOLS = ("__init__.py", "publish.py")
RUN_TOOLS = (*MODEL_ANALYZER_TOOLS, "perf_shapes.py")


def tools_files(names: tuple[str, ...] = MODEL_ANALYZER_TOOLS) -> dict[str, str]:
    """model_tools files `names` as ConfigMap data: file name -> text."""
    return {name: (TOOLS_SOURCE / name).read_text(encoding="utf-8") for name in sorted(names)}


def tools_volume(config_map: pulumi.Input[str], files: Mapping[str, str], config: str = ANALYZER_CONFIG) -> dict:
    """The tools ConfigMap as `<TOOLS_DIR>/model_tools/<file>` and the run's `config` beside it."""
    items = [{"key": f, "path": f"model_tools/{f}"} for f in sorted(files) if f != config]
    if config in files:
        items.append({"key": config, "path": config})
    return {"name": "tools", "configMap": {"name": config_map, "items": items}}


def tool_security_context() -> dict:
    """Pod Security "restricted" for the SDK and rclone steps."""
    return restricted_security_context(runAsUser=TOOLS_UID, runAsGroup=TOOLS_UID)


# Where the SDK steps keep caches and temporary files (the root filesystem is read-only).
SDK_ENV = [{"name": "HOME", "value": WORK_DIR}, {"name": "MPLCONFIGDIR", "value": f"{WORK_DIR}/.matplotlib"},
           {"name": "NUMBA_CACHE_DIR", "value": f"{WORK_DIR}/.numba"}, {"name": "TMPDIR", "value": f"{WORK_DIR}/tmp"},
           {"name": "PYTHONPATH", "value": TOOLS_DIR}]
WORK_MOUNT = {"name": "work", "mountPath": WORK_DIR}
TOOLS_MOUNT = {"name": "tools", "mountPath": TOOLS_DIR, "readOnly": True}


def analyzer_container(image: str) -> dict:
    """`model-analyzer profile` with the platform's config, against the Triton beside it."""
    return {
        "name": "analyze",
        "image": image,
        "command": ["sh", "-c", f'mkdir -p "$TMPDIR" && exec model-analyzer profile -f {TOOLS_DIR}/{ANALYZER_CONFIG}'],
        "workingDir": WORK_DIR,
        "env": SDK_ENV,
        "resources": ANALYZER_RESOURCES,
        "securityContext": tool_security_context(),
        "volumeMounts": [WORK_MOUNT, TOOLS_MOUNT],
    }


def publish_args(model: str, tag: str, keep: int, dest: str) -> list[str]:
    """model_tools/publish.py's arguments for one run."""
    return ["python3", "-m", "model_tools.publish", f"--model={model}", f"--variants={VARIANTS_DIR}",
            f"--results={RESULTS_DIR}", f"--tag={tag}", f"--keep={keep}", f"--dest={dest}"]


def publish_container(image: str, args: list[str], mounts: list[dict]) -> dict:
    return sdk_tool_container("publish", image, args, mounts)


def sdk_tool_container(name: str, image: str, args: list[str], mounts: list[dict]) -> dict:
    """A model_tools program in the SDK image, with the work volume and the tools."""
    return {
        "name": name,
        "image": image,
        "command": args,
        "workingDir": WORK_DIR,
        "env": SDK_ENV,
        "resources": TOOL_RESOURCES,
        "securityContext": tool_security_context(),
        "volumeMounts": [WORK_MOUNT, TOOLS_MOUNT, *mounts],
    }


def rclone_env(endpoint: pulumi.Input[str], s3_secret: str) -> list[dict]:
    """rclone's S3 remote `weights` from the environment: the stack's endpoint, the region and
    keys from the weights Secret (env_auth reads AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)."""
    prefix = f"RCLONE_CONFIG_{RCLONE_REMOTE.upper()}_"
    values = {"TYPE": "s3", "PROVIDER": "Other", "ENV_AUTH": "true", "ENDPOINT": endpoint,
              # The bucket exists (the platform made or adopted it); a CreateBucket probe may be refused.
              "NO_CHECK_BUCKET": "true",
              # No x-amz-acl header: a bucket with Object Ownership BucketOwnerEnforced (AWS's default
              # since 2023) refuses every request that sets one, rclone's default `private` included.
              "ACL": ""}
    region = {"name": prefix + "REGION", "valueFrom": {"secretKeyRef": {"name": s3_secret, "key": "AWS_DEFAULT_REGION"}}}
    return [{"name": prefix + k, "value": v} for k, v in values.items()] + [region, {"name": "HOME", "value": WORK_DIR}]


def rclone_copy_container(name: str, source: pulumi.Input[str], target: pulumi.Input[str],
                          endpoint: pulumi.Input[str], s3_secret: str, flags: tuple[str, ...] = ()) -> dict:
    """A tool container that copies `source` to `target` with rclone (one of them in the bucket),
    with rclone's `flags`; copy never deletes what is there."""
    return {
        "name": name,
        "image": versions.RCLONE_IMAGE,
        "args": ["copy", "--checksum", *flags, source, target],
        "env": rclone_env(endpoint, s3_secret),
        "envFrom": [{"secretRef": {"name": s3_secret}}],
        "resources": TOOL_RESOURCES,
        "securityContext": tool_security_context(),
        "volumeMounts": [WORK_MOUNT],
    }


def bucket_path(bucket: pulumi.Input[str], path: str) -> pulumi.Output[str]:
    """rclone's name of `<bucket>/<path>` on the run's S3 remote."""
    return pulumi.Output.concat(f"{RCLONE_REMOTE}:", bucket, f"/{path.strip('/')}")


def upload_container(bucket: pulumi.Input[str], path: str, endpoint: pulumi.Input[str], s3_secret: str) -> dict:
    """Copy the staged files into `<bucket>/<path>`."""
    return rclone_copy_container("upload", STAGING_DIR, bucket_path(bucket, path), endpoint, s3_secret)


# --------------------------------------------------------------------------- the shape check


CHECK_CONTAINER = "check-shapes"
# Where an S3 run's `model-config` step puts the tuned model's config.pbtxt.
MODEL_CONFIG_DIR = f"{WORK_DIR}/model-config"
# perf_shapes.py's exits for a model Perf Analyzer cannot profile (2) and a config that does not
# parse (4): the same pod would fail the same way again.
CHECK_FAILURES = [2, 4]


def tuning_key(service: Service, version: Version) -> str:
    """The stack key of a version's `tuning`, as the stack file's errors write it."""
    return f"{NAMESPACE}:services[{service.name}].versions[{version.name}].tuning"


def shape_check_container(image: str, service: Service, version: Version, config_dir: str, mounts: list[dict]) -> dict:
    """model_tools/perf_shapes.py on the tuned model's config.pbtxt in `config_dir`, with the
    shapes Model Analyzer hands Perf Analyzer."""
    tuning, repo = version.tuning, version.model_repository
    args = ["python3", "-m", "model_tools.perf_shapes", f"--config={config_dir}/{CONFIG_FILE}",
            f"--where={repo.cache} {repo.path.strip('/')}/{tuning.model}/{CONFIG_FILE}", f"--model={tuning.model}",
            f"--key={tuning_key(service, version)}", *(f"--shape={s}" for s in perf_analyzer_flags(tuning).get("shape", []))]
    return sdk_tool_container(CHECK_CONTAINER, image, args, mounts)


def model_config_container(bucket: pulumi.Input[str], version: Version, endpoint: pulumi.Input[str], s3_secret: str) -> dict:
    """Copy the tuned model's config.pbtxt, and nothing else, out of the bucket: an include
    starting with `/` matches at the top of the source only (rclone docs/content/filtering.md).
    No config there (Triton completes one) copies nothing, and so does a prefix the bucket does
    not hold (an S3 listing of it is empty): the check then has nothing to read."""
    path = f"{version.model_repository.path.strip('/')}/{version.tuning.model}"
    return rclone_copy_container("model-config", bucket_path(bucket, path), MODEL_CONFIG_DIR, endpoint, s3_secret,
                                 flags=(f"--include=/{CONFIG_FILE}",))


# --------------------------------------------------------------------------- the Job


# Version settings a Model Analyzer run does not read (a key a run does not read must not rename,
# and so rerun, every run when it is added).
SERVING_ONLY = {"weight", "replicas", "autoscaling", "model_control", "model_config_name", "llm_backend", "llm",
                "provenance"}


# Tuning keys added after runs were named, left out of the hash at their defaults, so that an
# upgrade does not run every unchanged tuning again (their values reach the run through its
# config anyway).
LATER_TUNING_DEFAULTS = {"shapes": {}, "input_data": "random", "llm": None}


# What an LLM version's run reads besides: it measures the engine with the models loaded as served.
LLM_RUN_READS = {"model_control", "model_config_name", "llm_backend", "llm"}


def run_inputs(service: Service, version: Version, group: NodeGroup, files: Mapping[str, str]) -> dict:
    """Everything a run depends on; its hash names the Job."""
    settings = version.model_dump(mode="json", exclude=SERVING_ONLY - LLM_RUN_READS if version.llm_backend else SERVING_ONLY)
    if settings.get("tuning"):
        settings["tuning"] = {k: v for k, v in settings["tuning"].items() if LATER_TUNING_DEFAULTS.get(k, ...) != v}
    return {
        "service": service.name, "namespace": service.k8s_namespace,
        # All of the version but what only serving uses (traffic, replicas, the config it serves).
        "version": settings, "files": dict(files),
        # The GPU the run measures on: the model and, with MIG, the slices (not how many time-slicing
        # replicas or GPUs per node the group has).
        "gpuModel": group.gpu.model, "sharing": group.gpu.sharing.mode,
        "mig": group.gpu.sharing.model_dump(mode="json", include={"mig_strategy", "mig_profile"}),
    }


def run_id(inputs: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:10]


def job_name(service: Service, version: Version, run: str) -> str:
    """`tune-<service>-<version>-<run id>`, within a DNS label's 63 characters."""
    return f"tune-{service.name[:20].rstrip('-')}-{version.name}-{run}"


def config_tag(run: str) -> str:
    """The run's config names: `tuned-<run id>-<rank>`."""
    return f"tuned-{run}"


def pod_labels(service: Service, version: Version, tool: str = "model-analyzer") -> dict[str, str]:
    # Not `app`: the service's Service and mesh policies select `app`; a run serves no one.
    return {**standard_labels(tool), COMPONENT_KEY: COMPONENT, TUNING_LABEL: run_label(service, version),
            "sidecar.istio.io/inject": "false"}


def gpu_placement(service: Service, version: Version, group: NodeGroup,
                  priority_class: Optional[pulumi.Input[str]]) -> dict[str, Any]:
    """Pod fields that put a tuning workload (a run, a pipeline's GPU step) on the version's
    group, never on a node where the service's replicas run, at `priority_class`."""
    sched = gpu_scheduling(group, version.gpu.count, version.gpu.mig_profile)
    placement: dict[str, Any] = {
        "nodeSelector": sched.node_selector,
        "tolerations": sched.tolerations,
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": service.name}},
            "topologyKey": "kubernetes.io/hostname",
        }]}},
    }
    if priority_class is not None:
        placement["priorityClassName"] = priority_class
    return placement


def job_spec(service: Service, version: Version, group: NodeGroup, server: dict, volumes: list[dict],
             init: list[dict], main: dict, priority_class: Optional[pulumi.Input[str]],
             tool: str = "model-analyzer", checks: tuple[dict, ...] = ()) -> dict:
    """The run's Job spec: `checks` in order, then `server` (Triton) as a native sidecar, then
    `init` in order, then `main`, on the version's GPU group."""
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "securityContext": {"runAsNonRoot": True, "fsGroup": TOOLS_UID, "seccompProfile": {"type": "RuntimeDefault"}},
        "initContainers": [*checks, {**server, "restartPolicy": "Always"}, *init],
        "containers": [main],
        "volumes": volumes,
        **gpu_placement(service, version, group, priority_class),
    }
    return {
        "backoffLimit": 1,
        "activeDeadlineSeconds": round(version.tuning.deadline_hours * 3600),
        # A serving replica that preempts the run is not the run's failure; a failed shape check
        # fails the run without a retry.
        "podFailurePolicy": {"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            *([{"action": "FailJob", "onExitCodes": {"containerName": CHECK_CONTAINER, "operator": "In",
                                                     "values": CHECK_FAILURES}}]
              if any(c["name"] == CHECK_CONTAINER for c in checks) else []),
        ]},
        "template": {"metadata": {"labels": pod_labels(service, version, tool)}, "spec": pod},
    }


def run_label(service: Service, version: Version) -> str:
    return f"{service.name}.{version.name}"


def tuning_network_policy_spec(service: Service, tuned: list[Version]) -> dict:
    """Nothing may reach a run's pods (Model Analyzer talks to its Triton inside the pod); out
    only where a run publishes to S3 (an NFS share is mounted by the node, not the pod)."""
    s3 = any(v.model_repository.cache == "s3" for v in tuned)
    return {"podSelector": {"matchLabels": {"app.kubernetes.io/part-of": PART_OF, COMPONENT_KEY: COMPONENT},
                            "matchExpressions": [{"key": TUNING_LABEL, "operator": "In",
                                                  "values": sorted(run_label(service, v) for v in tuned)}]},
            "policyTypes": ["Ingress"] if s3 else ["Ingress", "Egress"]}


def run_dest(version: Version, model: str, cache_mount: Optional[dict], upload: Optional[dict]) -> str:
    """Where a run's publish step writes: the model's directory in the claim, or its staging copy
    that `upload` copies into the bucket."""
    return (f"{cache_mount['mountPath']}/{version.model_repository.path.strip('/')}/{model}" if upload is None
            else f"{STAGING_DIR}/{model}")


def publish_steps(first: dict, publish: dict, upload: Optional[dict]) -> tuple[list[dict], dict]:
    """(init containers, main container): `first`, then `publish`, then on S3 `upload`."""
    return ([first], publish) if upload is None else ([first, publish], upload)


def declare_run(parent: pulumi.Resource, name: str, service: Service, version: Version, group: NodeGroup,
                tool: str, config: str, files: Mapping[str, str], server: dict, server_volumes: list[dict],
                steps: Callable[[str, str], tuple[list[dict], dict]], priority_class: Optional[pulumi.Input[str]],
                checks: Callable[[str], tuple[dict, ...]] = lambda image: ()) -> None:
    """One version's run, children of `parent` (its TritonService): the ConfigMap of the tools and
    the run's `config`, and the Job. `steps(run id, SDK image)` gives its init and main containers,
    `checks(SDK image)` the containers that run before its server."""
    run = run_id(run_inputs(service, version, group, files))
    run_name = job_name(service, version, run)
    ns = service.k8s_namespace
    labels = standard_labels(tool, **{TUNING_LABEL: run_label(service, version)})
    config_map = k8s.core.v1.ConfigMap(
        f"{name}-{version.name}-tuning",
        metadata={"name": run_name, "namespace": ns, "labels": labels},
        data=dict(files),
        opts=resource_opts(parent),
    )
    init, main = steps(run, analyzer_image(version))
    volumes = [*server_volumes, {"name": "work", "emptyDir": {}}, tools_volume(config_map.metadata["name"], files, config)]
    k8s.batch.v1.Job(
        f"{name}-{version.name}-tune",
        metadata={
            "name": run_name, "namespace": ns, "labels": labels,
            "annotations": {
                # A run takes hours; `pulumi up` does not wait for it (docs/tuning.md).
                **SKIP_AWAIT,
                # A replaced run's pods go with it, not left holding a GPU.
                "pulumi.com/deletionPropagationPolicy": "background",
                **hardening.skip_annotations(*hardening.tuning_workloads(version)),
            },
        },
        spec=job_spec(service, version, group, server, volumes, init, main, priority_class, tool,
                      checks(analyzer_image(version))),
        # A Job's pod template is immutable: a change the name does not carry (a name handed in by
        # another stack) replaces the Job under the same name, so the old one must go first.
        opts=pulumi.ResourceOptions.merge(resource_opts(parent), pulumi.ResourceOptions(delete_before_replace=True)),
    )


def declare_tuning_run(parent: pulumi.Resource, name: str, service: Service, version: Version, group: NodeGroup,
                       server: dict, server_volumes: list[dict], cache_mount: Optional[dict], upload: Optional[dict],
                       model_config: Optional[dict], priority_class: Optional[pulumi.Input[str]]) -> None:
    """One version's Model Analyzer run. `cache_mount` is the weights claim's writable mount (file
    share), else `model_config` copies the model's config out of the bucket for the shape check
    and `upload` copies the staged results into it."""
    tuning = version.tuning
    files = {**tools_files(RUN_TOOLS), ANALYZER_CONFIG: yaml.safe_dump(analyzer_config(tuning, tuning.model), sort_keys=True)}

    def checks(image: str) -> tuple[dict, ...]:
        if cache_mount is not None:
            model_dir = f"{cache_mount['mountPath']}/{version.model_repository.path.strip('/')}/{tuning.model}"
            return (shape_check_container(image, service, version, model_dir, [{**cache_mount, "readOnly": True}]),)
        return model_config, shape_check_container(image, service, version, MODEL_CONFIG_DIR, [])

    def steps(run: str, image: str) -> tuple[list[dict], dict]:
        dest = run_dest(version, tuning.model, cache_mount, upload)
        publish = publish_container(image, publish_args(tuning.model, config_tag(run), tuning.keep, dest),
                                    [cache_mount] if upload is None else [])
        return publish_steps(analyzer_container(image), publish, upload)

    declare_run(parent, name, service, version, group, "model-analyzer", ANALYZER_CONFIG, files, server, server_volumes,
                steps, priority_class, checks)
