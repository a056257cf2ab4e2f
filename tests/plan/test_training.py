"""The Training component in a stack: Kubeflow Trainer from its pinned chart, a ClusterTrainingRuntime
per strategy, and each team's TrainJobs placed by the node contract, queued on the team's LocalQueue."""

from __future__ import annotations

import pytest

from inference_platform.core import versions
from inference_platform.gpu.profiles import gpu_scheduling
from inference_platform.settings.cluster import NodeGroup
from platformctl import ordering
from platformctl.invariants import plan_resources
from platformctl.plan import manifest
from tests.conftest import as_magnum, base_config, render_raw
from tests.support import conformance
from tests.support.training_stacks import diff_lines, training_config

RELEASE = "kubernetes:helm.sh/v3:Release"
RUNTIME = "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime"
TRAINJOB = "kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob"


@pytest.fixture(scope="module")
def plan():
    return render_raw(training_config())


def _job(plan, name):
    return next(r for r in plan.of_type(TRAINJOB) if r.inputs["metadata"]["name"] == name)


def _runtime(plan, name):
    return next(r for r in plan.of_type(RUNTIME) if r.inputs["metadata"]["name"] == name)


def _node_container(runtime) -> dict:
    (job,) = [j for j in runtime.inputs["spec"]["template"]["spec"]["replicatedJobs"] if j["name"] == "node"]
    (container,) = job["template"]["spec"]["template"]["spec"]["containers"]
    return container


def test_a_stack_without_training_installs_no_trainer_and_no_training_objects():
    plan = render_raw(base_config())
    assert not [r for r in plan.resources if "trainer.kubeflow.org" in r.type or "Training" in r.type]
    assert not [r for r in plan.of_type(RELEASE) if "kubeflow-trainer" in r.inputs["chart"]]


def test_trainer_comes_from_its_pinned_oci_chart_with_its_crds_and_without_the_charts_own_runtimes(plan):
    (release,) = [r for r in plan.of_type(RELEASE) if r.inputs["chart"].endswith("/kubeflow-trainer")]
    chart = versions.KUBEFLOW_TRAINER
    assert (release.inputs["chart"], release.inputs["version"]) == (f"{chart.repository}/{chart.name}", chart.version)
    assert "repositoryOpts" not in release.inputs and release.inputs["namespace"] == "kubeflow-system"
    values = release.inputs["values"]
    assert values["crds"] == {"enabled": True} and values["jobset"]["install"] is True
    assert values["runtimes"] == {"defaultEnabled": False}
    # Every runtime and job waits for the release that installs their CRDs and webhooks.
    for r in [*plan.of_type(RUNTIME), *plan.of_type(TRAINJOB)]:
        assert release.urn in r.depends_on


def test_each_strategy_has_a_runtime_named_ip_kind_whose_node_container_says_the_strategy(plan):
    names = sorted(r.inputs["metadata"]["name"] for r in plan.of_type(RUNTIME))
    assert names == ["ip-lightning", "ip-torch-ddp", "ip-torch-fsdp", "ip-torch-fsdp-tp"]
    for kind in ("torch-ddp", "torch-fsdp", "torch-fsdp-tp", "lightning"):
        runtime = _runtime(plan, f"ip-{kind}")
        assert runtime.inputs["spec"]["mlPolicy"] == {"numNodes": 1, "torch": {}}
        container = _node_container(runtime)
        assert {"name": "PLATFORM_TRAIN_STRATEGY", "value": kind} in container["env"]
        # The launcher is configured only through what Trainer injects: no PET_* here, no command.
        assert not [e for e in container["env"] if e["name"].startswith("PET_")] and "command" not in container
        assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]


def test_the_node_containers_home_is_a_writable_volume_for_a_uid_without_a_home(plan):
    # A stock image has no home for the runtime's UID: HOME would be / (root's), where torch hub,
    # triton's kernel cache and ~/.cache cannot write.
    for runtime in plan.of_type(RUNTIME):
        container = _node_container(runtime)
        (job,) = [j for j in runtime.inputs["spec"]["template"]["spec"]["replicatedJobs"] if j["name"] == "node"]
        pod = job["template"]["spec"]["template"]["spec"]
        home = {e["name"]: e["value"] for e in container["env"] if "value" in e}["HOME"]
        (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == home]
        (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
        assert volume == {"name": mount["name"], "emptyDir": {}} and not mount.get("readOnly")
        assert container["securityContext"]["runAsUser"] != 0


def test_shared_memory_is_a_memory_volume_of_the_runtimes_size():
    raw = training_config(runtimes=[{"kind": "torch-ddp", "shmSize": "32Gi"}], jobs=[])
    (runtime,) = render_raw(raw).of_type(RUNTIME)
    (node,) = runtime.inputs["spec"]["template"]["spec"]["replicatedJobs"]
    volumes = node["template"]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}} in volumes


def test_a_job_runs_exactly_where_the_node_contract_places_its_gpu_group(plan):
    spec = _job(plan, "ddp").inputs["spec"]
    (patch,) = spec["runtimePatches"]
    (node,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = node["template"]["spec"]["template"]["spec"]
    group = NodeGroup.model_validate(training_config()["cluster"]["nodeGroups"][1])
    contract = gpu_scheduling(group, 4)
    assert (pod["nodeSelector"], pod["tolerations"]) == (contract.node_selector, contract.tolerations)
    assert spec["trainer"]["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == "4"
    assert (spec["trainer"]["numNodes"], spec["trainer"]["numProcPerNode"]) == (2, 4)
    assert spec["runtimeRef"] == {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime", "name": "ip-torch-ddp"}


def test_a_job_is_queued_on_its_teams_local_queue_in_the_teams_namespace(plan):
    meta = _job(plan, "ddp").inputs["metadata"]
    assert meta["namespace"] == "vision-train" and meta["labels"]["kueue.x-k8s.io/queue-name"] == "vision"
    (ns,) = [r for r in plan.of_type("kubernetes:core/v1:Namespace") if r.inputs["metadata"]["name"] == "vision-train"]
    labels = ns.inputs["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted" and "istio-injection" not in labels


def test_the_mesh_degrees_and_the_groups_network_reach_the_trainer_env(plan):
    env = {e["name"]: e["value"] for e in _job(plan, "llm").inputs["spec"]["trainer"]["env"]}
    assert env == {"NCCL_SOCKET_IFNAME": "^lo,docker", "NCCL_IB_DISABLE": "1",
                   "PLATFORM_SHARD_DEGREE": "4", "PLATFORM_TP_DEGREE": "2"}
    ddp = {e["name"]: e["value"] for e in _job(plan, "ddp").inputs["spec"]["trainer"]["env"]}
    assert "PLATFORM_SHARD_DEGREE" not in ddp and ddp["PLATFORM_CHECKPOINT_DIR"] == "/workspace/checkpoint"


def test_a_team_reads_the_share_read_only_and_writes_only_its_jobs_checkpoint_directories(plan):
    spec = _job(plan, "ddp").inputs["spec"]
    pod = spec["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    # A volume per mount: the Trainer CRD keys a patch's volumeMounts by name.
    (checkpoint_claim,) = [v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if v["name"] == "weights-checkpoint"]
    assert pod["volumes"] == [{"name": "weights-dataset", "persistentVolumeClaim": {"claimName": "model-weights"}},
                              {"name": "weights-checkpoint", "persistentVolumeClaim": {"claimName": checkpoint_claim}}]
    # No subPath for the checkpoint: the kubelet would create a missing directory as root.
    assert pod["containers"] == [{"name": "node", "volumeMounts": [
        {"name": "weights-dataset", "mountPath": "/workspace/dataset", "subPath": "data/imagenet", "readOnly": True},
        {"name": "weights-checkpoint", "mountPath": "/workspace/checkpoint"}]}]
    claims = {r.inputs["metadata"]["name"]: r for r in plan.of_type("kubernetes:core/v1:PersistentVolumeClaim")
              if r.inputs["metadata"]["namespace"] == "vision-train"}
    assert set(claims) == {"model-weights", checkpoint_claim}
    assert all(c.urn in _job(plan, "ddp").depends_on for c in claims.values())
    volumes = {r.inputs["spec"]["claimRef"]["namespace"] + "/" + r.inputs["spec"]["claimRef"]["name"]: r.inputs["spec"]
               for r in plan.of_type("kubernetes:core/v1:PersistentVolume")}
    share = volumes["svc/model-weights"]["nfs"]
    # The team's claim of the whole share is mounted read-only whatever a pod asks; serving's is not.
    assert volumes["vision-train/model-weights"]["nfs"] == {**share, "readOnly": True} and "readOnly" not in share
    assert volumes[f"vision-train/{checkpoint_claim}"]["nfs"] == {"server": share["server"], "path": share["path"] + "/ckpt/ddp"}


def test_a_jobs_code_on_the_file_share_is_mounted_read_only_at_workspace_code():
    # The only use of the file share by the team: its claim exists for the code alone.
    raw = training_config()
    ddp = raw["training"]["jobs"][0]
    del ddp["dataset"], ddp["checkpoint"]
    ddp.update(code={"cache": "fileShare", "path": "code/ddp"}, command=["torchrun", "/workspace/code/train.py"])
    plan = render_raw(raw)
    spec = _job(plan, "ddp").inputs["spec"]
    pod = spec["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["volumes"] == [{"name": "weights-code", "persistentVolumeClaim": {"claimName": "model-weights"}}]
    assert pod["containers"] == [{"name": "node", "volumeMounts": [
        {"name": "weights-code", "mountPath": "/workspace/code", "subPath": "code/ddp", "readOnly": True}]}]
    assert spec["trainer"]["command"] == ["torchrun", "/workspace/code/train.py"]
    claims = [r for r in plan.of_type("kubernetes:core/v1:PersistentVolumeClaim") if r.inputs["metadata"]["namespace"] == "vision-train"]
    assert len(claims) == 1 and claims[0].urn in _job(plan, "ddp").depends_on


def test_every_train_dev_job_runs_code_its_pods_mount():
    from tests.conftest import stack_plan

    jobs = stack_plan("train-dev").of_type(TRAINJOB)
    assert len(jobs) == 3
    for job in jobs:
        spec = job.inputs["spec"]
        (node,) = spec["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
        (container,) = node["template"]["spec"]["template"]["spec"]["containers"]
        mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
        script = spec["trainer"]["command"][1]
        assert script.startswith("/workspace/code/") and mounts["/workspace/code"]["readOnly"] is True
        assert mounts["/workspace/code"]["subPath"] == f"code/{job.inputs['metadata']['name']}"


def _s3_config() -> dict:
    raw = training_config()
    raw["weightCaches"]["s3"] = {"endpoint": "https://s3.example.com", "bucket": "weights", "region": "eu-1"}
    raw["training"]["jobs"][1]["model"] = {"cache": "s3", "path": "llm/base"}
    return raw


def test_a_model_in_the_s3_cache_comes_through_trainers_model_initializer_with_the_namespaces_keys():
    raw = _s3_config()
    raw["s3AccessKeyId"], raw["s3SecretAccessKey"] = "AKIA", "secret"
    plan = render_raw(raw, secret_keys=("s3AccessKeyId", "s3SecretAccessKey"))
    spec = _job(plan, "llm").inputs["spec"]
    assert spec["runtimeRef"]["name"] == "ip-torch-fsdp-tp-model"
    model = spec["initializer"]["model"]
    assert model["storageUri"] == "s3://weights/llm/base"
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in model["env"]}
    assert env["ENDPOINT"] == "https://s3.example.com"
    assert env["ACCESS_KEY_ID"] == {"secretKeyRef": {"name": "model-weights-s3", "key": "AWS_ACCESS_KEY_ID"}}
    runtime = _runtime(plan, "ip-torch-fsdp-tp-model")
    jobs = {j["name"]: j for j in runtime.inputs["spec"]["template"]["spec"]["replicatedJobs"]}
    assert sorted(jobs) == ["model-initializer", "node"]
    assert jobs["node"]["dependsOn"] == [{"name": "model-initializer", "status": "Complete"}]
    (policy,) = runtime.inputs["spec"]["template"]["spec"]["volumeClaimPolicies"]
    assert policy["templates"][0]["spec"]["accessModes"] == ["ReadWriteMany"]


def test_a_runtime_with_a_data_loader_runs_it_as_a_cpu_job_off_the_gpu_nodes():
    loader = {"image": "example.com/loader:1.0", "command": ["python", "load.py"], "replicas": 3}
    raw = as_magnum(training_config(runtimes=[{"kind": "torch-ddp", "dataLoader": loader}], jobs=[]))
    raw["cluster"]["nodeGroups"][1]["flavor"] = "g1"
    raw["weightCaches"] = {"fileShare": {"mode": "manila", "sizeGb": 100}}
    plan = render_raw(raw)
    (runtime,) = plan.of_type(RUNTIME)
    jobs = {j["name"]: j for j in runtime.inputs["spec"]["template"]["spec"]["replicatedJobs"]}
    assert sorted(jobs) == ["data-loader", "node"] and jobs["data-loader"]["replicas"] == 3
    pod = jobs["data-loader"]["template"]["spec"]["template"]["spec"]
    # No GPU, no toleration of the GPU taint; on Magnum the system group by its driver's label.
    assert "nvidia.com/gpu" not in str(pod) and "tolerations" not in pod
    assert pod["nodeSelector"] == {"node.cluster.x-k8s.io/nodegroup": "default-worker"}
    # Loaders serve until stopped: the JobSet completes with its nodes (JobSet then stops the loaders),
    # not with every job, which it never would.
    assert runtime.inputs["spec"]["template"]["spec"]["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["node"]}


def test_every_trainer_object_validates_against_the_vendored_crds(reference):
    raw = _s3_config()
    raw["s3AccessKeyId"], raw["s3SecretAccessKey"] = "AKIA", "secret"
    raw["training"]["runtimes"] = [{"kind": k, **({"dataLoader": {"image": "example.com/l:1", "command": ["x"]}} if k == "lightning" else {})}
                                   for k in ("torch-ddp", "torch-fsdp", "torch-fsdp-tp", "lightning")]
    raw["training"]["jobs"][0].update(code={"cache": "fileShare", "path": "code/ddp"}, command=["torchrun", "/workspace/code/train.py"])
    plan = render_raw(raw, secret_keys=("s3AccessKeyId", "s3SecretAccessKey"))
    docs = [manifest(r) for r in [*plan.of_type(RUNTIME), *plan.of_type(TRAINJOB)]]
    assert len(docs) == 7
    for doc in docs:
        conformance.validate(doc)


def _diff(tmp_path, capsys, edit) -> list[str]:
    """The change lines about TrainJobs (platformctl/running_jobs.py adds a note per job killed)."""
    return [line for line in diff_lines(tmp_path, capsys, training_config(), edit)
            if "TrainJob" in line and not line.startswith(("note:", "error:"))]


def test_an_edit_trainer_refuses_on_a_created_job_replaces_it_deleting_the_old_one_first(tmp_path, capsys):
    lines = _diff(tmp_path, capsys, lambda job: job.update(nodes=1))
    assert lines == ["  +- replace kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob test-dev-training-job-vision-ddp "
                     "(replaceOnChanges spec.trainer (input spec.trainer.numNodes)) [delete-first]"]


def test_the_platform_leaves_a_jobs_suspend_to_kueue(plan):
    # Kueue's webhook suspends a queued job and its reconciler lifts that on admission.
    assert all("suspend" not in r["inputs"]["spec"] for r in plan_resources(plan) if r["type"] == TRAINJOB)


def test_the_ordering_invariant_holds_and_fails_a_trainjob_created_before_the_trainer_release_or_its_runtime(plan):
    resources = plan_resources(plan)
    assert ordering.violations(resources) == []
    job = next(r for r in resources if r["type"] == TRAINJOB)
    # The component's own dependencies reach the job through its parent: cut those too.
    job["dependsOn"], job["parent"] = [], None
    found = ordering.violations(resources)
    runtime = job["inputs"]["spec"]["runtimeRef"]["name"]
    assert {line.split("(", 1)[1].split(":", 1)[0] for line in found} == {"trainer-crds", "trainjob-after-its-runtime"}
    assert any(f"ClusterTrainingRuntime {runtime}" in line for line in found if "trainjob-after-its-runtime" in line)


def test_kueue_comes_after_trainer_so_its_trainjob_integration_starts(plan):
    resources = plan_resources(plan)
    kueue = next(r for r in resources if r["type"] == RELEASE and r["inputs"]["chart"].endswith("/kueue"))
    kueue["dependsOn"], kueue["parent"] = [], None
    assert any("kueue-after-trainer" in line for line in ordering.violations(resources))
