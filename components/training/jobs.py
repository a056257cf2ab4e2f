"""A team's TrainJob: its runtime, trainer, placement on the node contract, caches and queue.

Read in kubeflow/trainer v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go:
- `spec.trainer` (image, command, env, numNodes, numProcPerNode, resourcesPerNode),
  `spec.initializer`, `spec.runtimeRef` and `spec.activeDeadlineSeconds` are immutable
  (`self == oldSelf`): an edit of any of them replaces the TrainJob (replace_on_changes), and as
  its name is fixed, the old one is deleted first: an edited job runs again from the start.
- `spec.runtimePatches` (a list keyed by `manager`, which must be a domain-prefixed path:
  plugins/jobset/jobset.go Validate) is how a job places the runtime's pods: nodeSelector,
  tolerations, volumes and the `node` container's volumeMounts; not env (refused for `node`).
  The same Validate refuses a patch change unless the job is suspended, so it replaces too.
- `spec.suspend` is Kueue's: its webhook suspends a queued job at creation and its reconciler lifts
  that on admission (kueue v0.19.2 pkg/controller/jobframework/reconciler.go), so the platform never
  sets it (settings/training.py refuses `suspend: true`).
- A job with `publishTo` runs on the `-publish` variant of its runtime, and its runtimePatches
  also fill the `publish` step (training/publish.py): adding or removing `publishTo`, or changing
  its service, replaces the job; its version and ONNX file live in a ConfigMap the step reads
  when it starts, so changing them replaces that ConfigMap alone (the job does not wait for it).
"""

from __future__ import annotations

from typing import Any, Optional

import pulumi

from inference_platform.core.common import COMPONENT_KEY, standard_labels
from inference_platform.gpu.profiles import gpu_scheduling
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.training import (
    CHECKPOINT_DIR_ENV,
    SHARD_DEGREE_ENV,
    TP_DEGREE_ENV,
    CachePath,
    GroupNetwork,
    TrainingTeam,
    TrainJobSettings,
    checkpoint_claim,
)
from inference_platform.training.publish import publish_patch
from inference_platform.training.runtimes import COMPONENT, NODE, WORKSPACE, variant_name
from inference_platform.weights.inputs import WeightsRef

API_VERSION = "trainer.kubeflow.org/v1alpha1"
# kueue.x-k8s.io/queue-name (Kueue's constants.QueueLabel): the LocalQueue, named after the team.
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# kueue.x-k8s.io/priority-class (Kueue's constants.WorkloadPriorityClassLabel): the job's WorkloadPriorityClass.
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
# The platform's entry in spec.runtimePatches (domain-prefixed path; Kueue writes its own).
PATCH_MANAGER = "inference-platform/node-contract"
# Immutable in Trainer's API (above): a change of any replaces the job.
IMMUTABLE_PATHS = ["spec.runtimeRef", "spec.trainer", "spec.initializer", "spec.activeDeadlineSeconds",
                   "spec.runtimePatches"]
CACHE_VOLUME = "weights"
# An edit that kills a running job (a replacement, or a runtime edit Kueue evicts it for):
# refused in a production stack unless the job's restartOnEdit accepts it.
RESTART_ANNOTATION = "inference-platform/restart-on-edit"
RESTART_REFUSED, RESTART_ACCEPTED = "refused", "accepted"
# The checkpoint directory in the file share the job resumes from (its claim is rooted there).
CHECKPOINT_ANNOTATION = "inference-platform/checkpoint-directory"


def _mounts(job: TrainJobSettings) -> list[dict[str, Any]]:
    """The file share in the node container: the code, datasets and models read-only from the
    namespace's claim, the checkpoint directory read-write from its own."""
    # One volume per mount, all of the same claim: a runtime patch's volumeMounts is a list-map keyed by
    # name (the Trainer CRD refuses two entries of one name, "duplicate entries for key").
    mounts = [{"name": f"{CACHE_VOLUME}-{what}", "mountPath": f"{WORKSPACE}/{what}", "subPath": place.path, "readOnly": True}
              for what in ("code", "dataset", "model") if (place := getattr(job, what)) is not None and place.cache == "fileShare"]
    if job.checkpoint is not None:
        # Its own claim, rooted at the directory (weights/caches.py): the namespace's claim of the
        # share is read-only, and no subPath lets the kubelet create the directory as root.
        mounts.append({"name": f"{CACHE_VOLUME}-checkpoint", "mountPath": f"{WORKSPACE}/checkpoint"})
    return mounts


def _claim_of(job: TrainJobSettings, volume: str, weights: WeightsRef) -> str:
    return checkpoint_claim(job) if volume == f"{CACHE_VOLUME}-checkpoint" else weights.claim_name


def _s3_env(weights: WeightsRef) -> list[dict[str, Any]]:
    """The S3 cache's endpoint and keys as Trainer's initializers read them (v2.3.0
    pkg/initializers/types/types.py S3*Initializer fields, upper-cased by utils.get_config_from_env),
    from the namespace's weights Secret (weights/caches.py: AWS_* keys)."""
    def key(name: str, secret_key: str) -> dict[str, Any]:
        return {"name": name, "valueFrom": {"secretKeyRef": {"name": weights.s3_secret_name, "key": secret_key}}}
    return [{"name": "ENDPOINT", "value": weights.s3_endpoint}, key("ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID"),
            key("SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY"), key("REGION", "AWS_DEFAULT_REGION")]


def secret_env_name(job: TrainJobSettings) -> str:
    """The Secret of the job's namespace holding its secretEnv values, keyed by variable name."""
    return f"{job.name}-env"


def trainer_env(job: TrainJobSettings, network: Optional[GroupNetwork]) -> list[dict[str, Any]]:
    """spec.trainer.env: the job's own, the group's NCCL settings, the mesh degrees, the checkpoint
    directory, and its secretEnv as references to its Secret (the value is in no TrainJob or pod spec)."""
    env = dict(job.env)
    env.update(network.env() if network else {})
    if job.hybrid_shard_degree is not None:
        env[SHARD_DEGREE_ENV] = str(job.hybrid_shard_degree)
    if job.tensor_parallel_degree is not None:
        env[TP_DEGREE_ENV] = str(job.tensor_parallel_degree)
    if job.checkpoint is not None:
        env[CHECKPOINT_DIR_ENV] = f"{WORKSPACE}/checkpoint"
    return [{"name": k, "value": v} for k, v in env.items()] + [
        {"name": k, "valueFrom": {"secretKeyRef": {"name": secret_env_name(job), "key": k}}} for k in job.secret_env]


def trainjob_labels(job: TrainJobSettings, team: TrainingTeam) -> dict[str, str]:
    return standard_labels(job.name, **{COMPONENT_KEY: COMPONENT, QUEUE_LABEL: team.name, PRIORITY_LABEL: job.priority})


def trainjob_annotations(job: TrainJobSettings, production: bool) -> dict[str, str]:
    """Whether an edit may kill the running job: read by `platformctl diff` from the plan, as the
    engine reads `protect` from the program (platformctl/running_jobs.py)."""
    out = {RESTART_ANNOTATION: RESTART_REFUSED if production and not job.restart_on_edit else RESTART_ACCEPTED}
    if job.checkpoint is not None:
        out[CHECKPOINT_ANNOTATION] = job.checkpoint.path.strip("/")
    return out


def runtime_of(job: TrainJobSettings) -> str:
    """The ClusterTrainingRuntime a job runs from: its kind's variant with the job's S3 initializers and publish step."""
    return variant_name(job.runtime, job.s3_initializers, job.publish_to is not None)


def trainjob_spec(job: TrainJobSettings, group: NodeGroup, network: Optional[GroupNetwork],
                  weights: WeightsRef) -> dict[str, Any]:
    """A TrainJob's spec: the runtime of its kind and initializers, the trainer, its placement."""
    gpu = gpu_scheduling(group, job.gpu.count, job.gpu.mig_profile)
    requests = {"cpu": job.cpu, "memory": job.memory, gpu.resource_name: str(gpu.quantity)}
    pod: dict[str, Any] = {"nodeSelector": gpu.node_selector, "tolerations": gpu.tolerations}
    mounts = _mounts(job)
    if mounts:
        pod["volumes"] = [{"name": m["name"], "persistentVolumeClaim": {"claimName": _claim_of(job, m["name"], weights)}}
                          for m in mounts]
        pod["containers"] = [{"name": NODE, "volumeMounts": mounts}]
    spec: dict[str, Any] = {
        "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime",
                       "name": runtime_of(job)},
        "trainer": {
            "image": job.image,
            "command": list(job.command),
            "env": trainer_env(job, network),
            "numNodes": job.nodes,
            "numProcPerNode": job.processes,
            "resourcesPerNode": {"requests": requests,
                                 "limits": {"memory": job.memory, gpu.resource_name: str(gpu.quantity)}},
        },
        "runtimePatches": [{"manager": PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
            {"name": NODE, "template": {"spec": {"template": {"spec": pod}}}}]}}}}],
    }
    if job.publish_to is not None:
        spec["runtimePatches"].append(publish_patch(job))
    initializers = {}
    for what in job.s3_initializers:
        place: CachePath = getattr(job, what)
        # The bucket may be another part's output: concatenated, not formatted.
        uri = pulumi.Output.concat("s3://", weights.s3_bucket, "/", place.path)
        initializers[what] = {"storageUri": uri, "env": _s3_env(weights)}
    if initializers:
        spec["initializer"] = initializers
    if job.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = job.active_deadline_seconds
    return spec
