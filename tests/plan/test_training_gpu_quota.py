"""A pod in a team namespace gets GPUs only at the training pods' PriorityClass: a ResourceQuota
of zero GPUs for every other class (and none), so a raw GPU pod cannot run unqueued level with
serving, while the TrainJobs' node pods, of that class, are outside its scope."""

from __future__ import annotations

from inference_platform.gpu.profiles import slots_per_node
from platformctl.engine import stack_settings
from tests.conftest import stack_plan
from tests.support import conformance

QUOTA = "kubernetes:core/v1:ResourceQuota"
RUNTIME = "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime"


def test_every_team_namespace_allows_gpus_only_to_the_training_pods_class(reference):
    plan, settings = stack_plan("train-dev"), stack_settings("train-dev")
    quotas = {r.inputs["metadata"]["namespace"]: r.inputs for r in plan.of_type(QUOTA)}
    assert set(quotas) == {t.namespace for t in settings.training.teams}
    # The GPU pods of every runtime: its `node` job's.
    classes = {job["template"]["spec"]["template"]["spec"].get("priorityClassName")
               for runtime in plan.of_type(RUNTIME) for job in runtime.inputs["spec"]["template"]["spec"]["replicatedJobs"]
               if job["name"] == "node"}
    (training_class,) = classes
    offered = {r for g in settings.gpu_groups for r in slots_per_node(g)} | {"nvidia.com/gpu"}
    for namespace, quota in quotas.items():
        assert quota["spec"]["scopeSelector"] == {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "NotIn", "values": [training_class]}]}, namespace
        assert quota["spec"]["hard"] == {f"requests.{r}": "0" for r in offered}, namespace
        conformance.validate(quota)
    serving = {w.k8s_namespace for w in settings.workloads}
    assert not serving & set(quotas)
