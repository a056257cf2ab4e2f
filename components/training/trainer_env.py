"""What Kubeflow Trainer v2.3.0 hands each training node: the node container's command, args and
environment, computed from a TrainJob and its (Cluster)TrainingRuntime as the plan renders them.

Read in kubeflow/trainer v2.3.0:
- pkg/runtime/core/trainingruntime.go `buildObjects`: the trainer pod set is the replicated Job
  labelled `trainer.kubeflow.org/trainjob-ancestor-step: trainer`; its count is the runtime's
  `mlPolicy.numNodes` (default 1).
- pkg/runtime/framework/plugins/jobset/builder.go `Trainer`: the job's `trainer.image`, `.command`
  and `.args` replace the runtime's in the container named `node`; the job's `trainer.env` is
  upserted into the runtime's env (same name replaced in place, a new name appended).
- pkg/runtime/framework/plugins/torch/torch.go `EnforceMLPolicy`: the job's `trainer.numNodes`
  replaces the count; then PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR and
  PET_MASTER_PORT are upserted (rules beside each below). `Validate` refuses a job whose
  `trainer.env` names one of them (constants.TorchRunReservedEnvNames).
- The node Jobs are Indexed (JobSet's defaulting webhook sets completionMode Indexed), so each pod's
  `batch.kubernetes.io/job-completion-index` annotation is its node rank, 0 .. count-1.
Pure functions over plain dicts; no Pulumi resources here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Mapping, Sequence

# pkg/constants/constants.go
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
ANCESTOR_TRAINER = "trainer"
NODE = "node"  # the trainer Job's and container's name
TRAINER_PORT = 29500  # ContainerTrainerPort
COMPLETION_INDEX_FIELD = "metadata.annotations['batch.kubernetes.io/job-completion-index']"  # JobCompletionIndexFieldPath
RESERVED_ENV = ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT")


class TrainerEnvError(ValueError):
    """A TrainJob or runtime Trainer would refuse, or an env this module cannot resolve, on one line."""


@dataclass(frozen=True)
class NodeLaunch:
    """What one node's `node` container runs: command and args expanded as the kubelet does, and its env."""

    argv: list[str]
    env: dict[str, str]


def _trainer_job(runtime: Mapping[str, Any]) -> Mapping[str, Any]:
    jobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    found = [j for j in jobs if (j.get("template", {}).get("metadata") or {}).get("labels", {}).get(ANCESTOR_LABEL) == ANCESTOR_TRAINER]
    if len(found) != 1:
        raise TrainerEnvError(f"runtime {runtime['metadata']['name']}: spec.template.spec.replicatedJobs: "
                              f"{len(found)} jobs labelled {ANCESTOR_LABEL}={ANCESTOR_TRAINER}; exactly one is allowed")
    return found[0]


def _node_container(runtime: Mapping[str, Any]) -> Mapping[str, Any]:
    job = _trainer_job(runtime)
    for container in job["template"]["spec"]["template"]["spec"]["containers"]:
        if container["name"] == NODE:
            return container
    raise TrainerEnvError(f"runtime {runtime['metadata']['name']}: job {job['name']} has no container named {NODE!r}; "
                          "Trainer sets the PET_* variables only in that container")


def _trainer(trainjob: Mapping[str, Any]) -> Mapping[str, Any]:
    return trainjob["spec"].get("trainer") or {}


def num_nodes(runtime: Mapping[str, Any], trainjob: Mapping[str, Any]) -> int:
    """PET_NNODES: the job's trainer.numNodes, else the runtime's mlPolicy.numNodes, else 1."""
    job_nodes = _trainer(trainjob).get("numNodes")
    if job_nodes is not None:
        return int(job_nodes)
    return int((runtime["spec"].get("mlPolicy") or {}).get("numNodes", 1))


_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
             "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1,
             "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)((?:[eE][+-]?[0-9]+)|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|)$")


def quantity_value(quantity: Any) -> int:
    """A Kubernetes quantity as resource.Quantity.Value() gives it: rounded up to an integer."""
    match = _QUANTITY.match(str(quantity).strip())
    try:
        if not match:
            raise InvalidOperation
        number, suffix = Decimal(match.group(1)), match.group(2)
        scale = Decimal("1" + suffix) if suffix[:1] in ("e", "E") else Decimal(_SUFFIXES[suffix])
    except InvalidOperation:
        raise TrainerEnvError(f"{quantity!r} is not a Kubernetes quantity (e.g. 2, 500m, 1Gi)") from None
    return math.ceil(number * scale)


def _resources_per_node(runtime: Mapping[str, Any], trainjob: Mapping[str, Any]) -> Mapping[str, Any]:
    # torch.go: the job's trainer.resourcesPerNode when set, else the node container's resources in the runtime.
    job_resources = _trainer(trainjob).get("resourcesPerNode")
    return job_resources if job_resources is not None else (_node_container(runtime).get("resources") or {})


def _gpus(resources: Mapping[str, Any]) -> int:
    # runtime.go GetNumGPUPerNode: the first resource whose name contains "gpu", requests before limits.
    def count(items: Mapping[str, Any]) -> int:
        return next((quantity_value(q) for name, q in items.items() if "gpu" in name.lower()), 0)
    return count(resources.get("requests") or {}) or count(resources.get("limits") or {})


def _cpus(resources: Mapping[str, Any]) -> int:
    # torch.go getNumCPUPerNode: the CPU request when non-zero, else the CPU limit, else 0.
    request = (resources.get("requests") or {}).get("cpu")
    if request is not None and quantity_value(request) != 0:
        return quantity_value(request)
    limit = (resources.get("limits") or {}).get("cpu")
    return quantity_value(limit) if limit is not None else 0


def nproc_per_node(runtime: Mapping[str, Any], trainjob: Mapping[str, Any]) -> str:
    """PET_NPROC_PER_NODE: the job's trainer.numProcPerNode; else `auto` (torchrun: one per GPU) on a
    node with GPUs, else the node's CPU count (at least 1)."""
    explicit = _trainer(trainjob).get("numProcPerNode")
    if explicit is not None:
        return str(int(explicit))
    resources = _resources_per_node(runtime, trainjob)
    if _gpus(resources) > 0:
        return "auto"
    return str(max(1, _cpus(resources)))


def _upsert(env: list[dict[str, Any]], items: Sequence[Mapping[str, Any]]) -> None:
    # pkg/apply/apply.go UpsertEnvVars: replace the entry of the same name in place, else append.
    for item in items:
        index = next((i for i, e in enumerate(env) if e["name"] == item["name"]), None)
        if index is None:
            env.append(dict(item))
        else:
            env[index] = dict(item)


def check_trainjob_env(trainjob: Mapping[str, Any]) -> None:
    """Refuse what torch.go `Validate` refuses: a PET_* name Trainer reserves in spec.trainer.env."""
    reserved = sorted({e["name"] for e in _trainer(trainjob).get("env") or [] if e["name"] in RESERVED_ENV})
    if reserved:
        raise TrainerEnvError(f"trainjob {trainjob['metadata']['name']}: spec.trainer.env: must not set {', '.join(reserved)}; "
                              f"Trainer injects {', '.join(RESERVED_ENV)} itself")


def node_env(runtime: Mapping[str, Any], trainjob: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The node container's env as Trainer writes it into the JobSet: the runtime's, the job's
    upserted, then the PET_* variables."""
    check_trainjob_env(trainjob)
    env = [dict(e) for e in _node_container(runtime).get("env") or []]
    _upsert(env, _trainer(trainjob).get("env") or [])
    name = trainjob["metadata"]["name"]
    _upsert(env, [
        {"name": "PET_NNODES", "value": str(num_nodes(runtime, trainjob))},
        {"name": "PET_NPROC_PER_NODE", "value": nproc_per_node(runtime, trainjob)},
        {"name": "PET_NODE_RANK", "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX_FIELD}}},
        # The first pod of the first replica of the `node` Job, behind the JobSet's headless Service
        # named after the TrainJob (jobset.go IdentifyPodNetwork names pods the same way).
        {"name": "PET_MASTER_ADDR", "value": f"{name}-{NODE}-0-0.{name}"},
        {"name": "PET_MASTER_PORT", "value": str(TRAINER_PORT)},
    ])
    return env


def expand(text: str, values: Mapping[str, str]) -> str:
    """Kubernetes' $(VAR) expansion of env values, command and args (kubelet's expansion package):
    $(NAME) of a defined variable is replaced, an undefined one kept as written, $$ is one $."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            if text[i + 1] == "$":
                out.append("$")
                i += 2
                continue
            if text[i + 1] == "(":
                end = text.find(")", i + 2)
                if end != -1:
                    name = text[i + 2:end]
                    out.append(values[name] if name in values else text[i:end + 1])
                    i = end + 1
                    continue
        out.append(text[i])
        i += 1
    return "".join(out)


def resolve_env(env: Sequence[Mapping[str, Any]], completion_index: int) -> dict[str, str]:
    """The env values one pod of the node Job sees: its completion index for the field reference
    Trainer sets, each value expanded against the variables before it."""
    resolved: dict[str, str] = {}
    for item in env:
        if "valueFrom" in item:
            if item["valueFrom"] != {"fieldRef": {"fieldPath": COMPLETION_INDEX_FIELD}}:
                raise TrainerEnvError(f"env {item['name']}: valueFrom {item['valueFrom']} cannot be resolved outside a cluster; "
                                      "only the job completion index can")
            resolved[item["name"]] = str(completion_index)
        else:
            resolved[item["name"]] = expand(str(item.get("value", "")), resolved)
    return resolved


def node_launch(runtime: Mapping[str, Any], trainjob: Mapping[str, Any], node_rank: int) -> NodeLaunch:
    """Command, args and env of the node with completion index `node_rank`."""
    nodes = num_nodes(runtime, trainjob)
    if not 0 <= node_rank < nodes:
        raise TrainerEnvError(f"node rank {node_rank}: the job has {nodes} nodes, ranks 0..{nodes - 1}")
    container, trainer = _node_container(runtime), _trainer(trainjob)
    command = trainer["command"] if trainer.get("command") is not None else container.get("command") or []
    args = trainer["args"] if trainer.get("args") is not None else container.get("args") or []
    env = resolve_env(node_env(runtime, trainjob), node_rank)
    return NodeLaunch(argv=[expand(a, env) for a in [*command, *args]], env=env)
