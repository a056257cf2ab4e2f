"""The platform's ClusterTrainingRuntimes: one per kind (`ip-<kind>`), and a variant per set of
Trainer initializers the jobs of a kind use (`ip-<kind>-dataset`, `-model`, `-dataset-model`).

Read in kubeflow/trainer v2.3.0:
- pkg/apis/trainer/v1alpha1/trainingruntime_types.go: `mlPolicy` holds `numNodes` and one
  source; `torch` has only `envInjection` (no numProcPerNode: a TrainJob sets
  `spec.trainer.numProcPerNode`, default `auto`).
- pkg/runtime/framework/plugins/torch/torch.go EnforceMLPolicy: in the container `node` of the
  replicated job labelled `trainer.kubeflow.org/trainjob-ancestor-step: trainer`, Trainer sets
  PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK (the Job completion index), PET_MASTER_ADDR
  (`<job>-node-0-0.<job>`) and PET_MASTER_PORT (29500), and opens that port. torchrun reads
  each PET_<FLAG> as its --<flag>, so a job's command is `torchrun <script>` with no launcher flags.
- pkg/webhooks/trainingruntime_webhook.go validateReplicatedJobs: a replicated job of a known
  ancestor has 1 replica and the container of its ancestor (`node`, `dataset-initializer`,
  `model-initializer`).
- pkg/runtime/framework/plugins/jobset/jobset.go Validate: a job with an initializer needs the
  runtime's replicated job and container of that name with a volumeMount `initializer`.
- pkg/initializers/utils/utils.py: the initializers write to /workspace/dataset and /workspace/model.
- pkg/runtime/core/trainingruntime.go newRuntimeInfo and plugins/jobset/jobset.go Build: the JobSet's
  spec is the runtime's `template.spec` as written (merged with the job's runtimePatches), so its
  `failurePolicy` and the Jobs' `backoffLimit` and `podFailurePolicy` reach the JobSet unchanged.

How a job comes back (docs/training.md: When a job is preempted), read in jobset v0.12.0
api/jobset/v1alpha2/jobset_types.go (FailurePolicy) and pkg/controllers/failure_policy.go
executeFailurePolicy: without a failurePolicy the first failed Job fails the JobSet, so the TrainJob
(plugins/jobset/jobset.go Status), for good. So a runtime restarts the whole JobSet on a failed Job:
a node pod the scheduler preempted for serving, or a drained node's, carries the DisruptionTarget
condition and fails its Job by the podFailurePolicy (reason PodFailurePolicy), a restart that does
not count; any other failure is one of `maxRestarts`. torchrun's ranks cannot take back one lost
pod (a static rendezvous), so one failed pod fails the node Job at once (backoffLimit 0) and every
pod starts again, its code resuming from the job's checkpoint directory.
"""

from __future__ import annotations

from typing import Any

from inference_platform.core import versions
from inference_platform.core.common import COMPONENT_KEY, restricted_security_context, standard_labels
from inference_platform.settings.training import STRATEGY_ENV, WORKSPACE, TrainingRuntimeSettings, runtime_name

ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
ROLE_LABEL = "inference-platform/training-role"
NODE = "node"
DATA_LOADER = "data-loader"
INITIALIZERS = {"dataset": ("dataset-initializer", versions.DATASET_INITIALIZER_IMAGE),
                "model": ("model-initializer", versions.MODEL_INITIALIZER_IMAGE)}
INITIALIZER_VOLUME = "initializer"
SHM_VOLUME = "dshm"
TMP_VOLUME = "tmp"
COMPONENT = "training"
# The pod condition the scheduler's preemption, an eviction and a node's taint-based deletion set
# (k8s.io/api core/v1 DisruptionTarget); the Job failure reason its podFailurePolicy rule gives.
DISRUPTION_TARGET = "DisruptionTarget"
POD_FAILURE_POLICY_REASON = "PodFailurePolicy"


def variant_name(kind: str, initializers: tuple[str, ...] = (), publish: bool = False) -> str:
    """The runtime a job of `kind` with these Trainer initializers ("dataset", "model") runs on,
    ending in `-publish` with the publish step (training/publish.py)."""
    return "-".join((runtime_name(kind), *sorted(initializers), *(["publish"] if publish else [])))


def pod_labels(kind: str, role: str) -> dict[str, str]:
    return standard_labels(runtime_name(kind), **{COMPONENT_KEY: COMPONENT, ROLE_LABEL: role})


def _workspace_mount() -> dict[str, str]:
    return {"name": INITIALIZER_VOLUME, "mountPath": WORKSPACE}


def node_job(r: TrainingRuntimeSettings, initializers: tuple[str, ...]) -> dict[str, Any]:
    """The `node` replicated job: torchrun's pods on the GPU group (placement and GPUs come from each TrainJob)."""
    mounts = [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}, {"name": TMP_VOLUME, "mountPath": "/tmp"}]
    if initializers:
        mounts.append(_workspace_mount())
    container = {
        "name": NODE,
        # Replaced by each TrainJob's spec.trainer.image; a runtime needs one.
        "image": versions.PAUSE_IMAGE,
        # HOME on the writable /tmp: the UID has no home in a stock image, where HOME is then / (root's),
        # and torch hub, triton's kernel cache and ~/.cache write below $HOME.
        "env": [{"name": STRATEGY_ENV, "value": r.kind}, {"name": "HOME", "value": "/tmp"}],
        "securityContext": {**restricted_security_context(runAsUser=r.run_as_user, runAsGroup=r.run_as_user),
                            "readOnlyRootFilesystem": False},
        "volumeMounts": mounts,
    }
    pod = {
        "metadata": {"labels": pod_labels(r.kind, NODE)},
        "spec": {
            # A podFailurePolicy needs restartPolicy Never (JobSet's webhook defaults OnFailure).
            "restartPolicy": "Never",
            "containers": [container],
            # /dev/shm as memory, sized: the container runtime's default is 64 MiB.
            "volumes": [{"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": r.shm_size}},
                        {"name": TMP_VOLUME, "emptyDir": {}}],
            "securityContext": {"runAsNonRoot": True, "fsGroup": r.run_as_user,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "automountServiceAccountToken": False,
        }}
    job: dict[str, Any] = {
        "name": NODE,
        "template": {
            "metadata": {"labels": {ANCESTOR_LABEL: "trainer"}},
            "spec": {
                # One failed rank ends the run (torchrun cannot take one pod back): the JobSet restarts
                # it whole. A disrupted pod fails the Job by this rule, with a reason the JobSet's
                # failurePolicy does not count.
                "backoffLimit": 0,
                "podFailurePolicy": {"rules": [{"action": "FailJob", "onPodConditions": [
                    {"type": DISRUPTION_TARGET, "status": "True"}]}]},
                "template": pod,
            },
        },
    }
    if initializers:
        job["dependsOn"] = [{"name": INITIALIZERS[i][0], "status": "Complete"} for i in sorted(initializers)]
    return job


def initializer_job(which: str, r: TrainingRuntimeSettings) -> dict[str, Any]:
    """A Trainer initializer job: downloads into the shared `initializer` volume (its STORAGE_URI and
    credentials come from the TrainJob's spec.initializer)."""
    name, image = INITIALIZERS[which]
    return {
        "name": name,
        "template": {
            "metadata": {"labels": {ANCESTOR_LABEL: name}},
            "spec": {"template": {
                "metadata": {"labels": pod_labels(r.kind, name)},
                "spec": {
                    "containers": [{"name": name, "image": image, "volumeMounts": [_workspace_mount()],
                                    "securityContext": restricted_security_context(runAsUser=r.run_as_user, runAsGroup=r.run_as_user)
                                    | {"readOnlyRootFilesystem": False}}],
                    "securityContext": {"runAsNonRoot": True, "fsGroup": r.run_as_user,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "automountServiceAccountToken": False,
                }}},
        },
    }


def data_loader_job(r: TrainingRuntimeSettings, system_node_selector: dict[str, str]) -> dict[str, Any]:
    """The CPU data-loader replicated job (no Trainer ancestor: Trainer leaves it as written)."""
    d = r.data_loader
    resources = {"cpu": d.cpu, "memory": d.memory}
    pod: dict[str, Any] = {
        "containers": [{"name": DATA_LOADER, "image": d.image, "command": list(d.command),
                        "resources": {"requests": resources, "limits": resources},
                        "securityContext": restricted_security_context(runAsUser=r.run_as_user, runAsGroup=r.run_as_user)
                        | {"readOnlyRootFilesystem": False}}],
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "automountServiceAccountToken": False,
    }
    if system_node_selector:
        pod["nodeSelector"] = dict(system_node_selector)
    return {"name": DATA_LOADER, "replicas": d.replicas,
            "template": {"spec": {"template": {"metadata": {"labels": pod_labels(r.kind, DATA_LOADER)}, "spec": pod}}}}


def failure_policy(r: TrainingRuntimeSettings, publish_step: str | None = None) -> dict[str, Any]:
    """The JobSet's failurePolicy (jobset v0.12.0: rules in order, the first that matches acts; none:
    RestartJobSet): a failed publish step fails the job (training again would not mend it); a node
    Job failed by its podFailurePolicy, i.e. a disrupted pod, restarts the JobSet without counting;
    any other failure restarts it within `maxRestarts`, then fails it. BlockingRecreate: every old
    pod is gone before the new ones start, so no new rank meets an old one's rendezvous."""
    rules = [{"name": "publishFailed", "action": "FailJobSet", "targetReplicatedJobs": [publish_step]}] if publish_step else []
    rules += [{"name": "nodeDisrupted", "action": "RestartJobSetAndIgnoreMaxRestarts",
               "onJobFailureReasons": [POD_FAILURE_POLICY_REASON], "targetReplicatedJobs": [NODE]},
              {"name": "failed", "action": "RestartJobSet"}]
    return {"maxRestarts": r.max_restarts, "restartStrategy": "BlockingRecreate", "rules": rules}


def runtime_spec(r: TrainingRuntimeSettings, initializers: tuple[str, ...] = (),
                 system_node_selector: dict[str, str] | None = None, initializer_size: str = "100Gi",
                 priority_class: str | None = None, publish_step: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ClusterTrainingRuntime's spec: Trainer's torch policy, the JobSet template; the GPU node
    pods at `priority_class` (the platform's `gpu-training`, below serving); last, a `publish_step`
    that starts a service's model pipeline once the nodes completed (training/publish.py)."""
    node = node_job(r, initializers)
    if priority_class is not None:
        node["template"]["spec"]["template"]["spec"]["priorityClassName"] = priority_class
    jobs = [initializer_job(i, r) for i in sorted(initializers)] + [node]
    if r.data_loader is not None:
        jobs.append(data_loader_job(r, system_node_selector or {}))
    if publish_step is not None:
        jobs.append(publish_step)
    template: dict[str, Any] = {"replicatedJobs": jobs, "failurePolicy": failure_policy(r, publish_step and publish_step["name"])}
    if r.data_loader is not None:
        # The data loaders serve until stopped, so under the default (every job completes) the JobSet
        # never would: it completes with the nodes, and JobSet then deletes the jobs still active
        # (jobset v0.12.0 jobset_controller.go executeSuccessPolicy, jobSetFinished). No publish step
        # joins them: Kueue would admit no such job (settings/training.py undeclared_podset_problems).
        template["successPolicy"] = {"operator": "All", "targetReplicatedJobs": [NODE]}
    if initializers:
        # jobset 0.12.0 volumeClaimPolicies: one claim per JobSet, shared by the initializers
        # (which write) and every node pod (on as many nodes: ReadWriteMany), deleted with it.
        template["volumeClaimPolicies"] = [{"templates": [{
            "metadata": {"name": INITIALIZER_VOLUME},
            "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": initializer_size}}}}]}]
    return {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": template}}
