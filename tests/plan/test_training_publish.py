"""From a trained model to a canary: a TrainJob with `publishTo` runs on a runtime whose last step,
once every node pod has completed, creates a Workflow of the service's pipeline template with the
ONNX file the job wrote; its account may create Workflows in that namespace and nothing else, and
`pulumi up` itself never creates a Workflow."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from inference_platform.core import versions
from platformctl.plan import is_k8s_object, manifest
from tests.conftest import render_raw
from tests.support import conformance
from tests.support.training_stacks import diff_lines, training_config

RUNTIME = "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime"
TRAINJOB = "kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob"
PIPELINE = {"baseVersion": "v1", "model": "embed", "inputs": {"input_ids": [128]}, "repositoryPrefix": "svc"}
# Argo v4.0.6 workflow/util/merge.go allowedUserOverrideFields: what a Workflow referencing a
# template may set under templateReferencing Strict.
STRICT_ALLOWED = {"arguments", "entrypoint", "shutdown", "suspend", "activeDeadlineSeconds", "priority", "ttlStrategy",
                  "podGC", "volumeClaimGC", "archiveLogs", "workflowMetadata", "workflowTemplateRef", "metrics", "artifactGC"}


def publishing(**publish_to) -> dict:
    """The training test stack: service `svc` has a pipeline, the DDP job (team vision) publishes to it."""
    raw = training_config()
    raw["services"][0]["pipeline"] = copy.deepcopy(PIPELINE)
    raw["modelPipeline"] = {"enabled": True}
    raw["training"]["jobs"][0]["publishTo"] = {"service": "svc", "version": "v2", **publish_to}
    return raw


@pytest.fixture(scope="module")
def plan():
    return render_raw(publishing())


def objects(plan, kind: str) -> list[dict]:
    return [manifest(r) for r in plan.resources if is_k8s_object(r) and r.inputs.get("kind") == kind]


def named(plan, kind: str, name: str) -> dict:
    return next(o for o in objects(plan, kind) if o["metadata"]["name"] == name)


def replicated_jobs(runtime: dict) -> dict[str, dict]:
    return {j["name"]: j for j in runtime["spec"]["template"]["spec"]["replicatedJobs"]}


def submitted_workflow(plan) -> dict:
    config_map = named(plan, "ConfigMap", "ddp-publish")
    return json.loads(config_map["data"]["workflow.json"])


def test_a_publishing_job_runs_on_the_publish_variant_whose_last_step_waits_for_every_node_pod_to_complete(plan):
    job = named(plan, "TrainJob", "ddp")
    assert job["spec"]["runtimeRef"]["name"] == "ip-torch-ddp-publish"
    # The job that does not publish keeps its runtime.
    assert named(plan, "TrainJob", "llm")["spec"]["runtimeRef"]["name"] == "ip-torch-fsdp-tp"
    runtime = named(plan, "ClusterTrainingRuntime", "ip-torch-ddp-publish")
    names = [j["name"] for j in runtime["spec"]["template"]["spec"]["replicatedJobs"]]
    assert names == ["node", "publish"]
    publish = replicated_jobs(runtime)["publish"]
    # jobset v0.12.0: one dependsOn item, on a previous replicated job; Complete = all its Jobs succeeded.
    assert publish["dependsOn"] == [{"name": "node", "status": "Complete"}]
    # Without Trainer's ancestor label: Trainer leaves the step as written.
    assert "trainer.kubeflow.org/trainjob-ancestor-step" not in str(publish)
    # The runtimes without the step are those of before.
    assert [j["name"] for j in named(plan, "ClusterTrainingRuntime", "ip-torch-ddp")["spec"]["template"]["spec"]["replicatedJobs"]] == ["node"]


def test_the_step_creates_the_services_pipeline_workflow_with_the_onnx_file_the_job_wrote(plan):
    workflow = submitted_workflow(plan)
    template = named(plan, "WorkflowTemplate", "svc-pipeline")
    assert workflow["metadata"]["namespace"] == template["metadata"]["namespace"] == "svc"
    assert workflow["spec"]["workflowTemplateRef"] == {"name": "svc-pipeline"}
    given = {p["name"]: p["value"] for p in workflow["spec"]["arguments"]["parameters"]}
    # Exactly the template's arguments, and the ONNX file in the job's checkpoint directory.
    assert sorted(given) == sorted(p["name"] for p in template["spec"]["arguments"]["parameters"])
    assert given == {"version": "v2", "onnx": "ckpt/ddp/model.onnx"}
    node = named(plan, "TrainJob", "ddp")["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]
    mounts = node["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "weights-checkpoint", "mountPath": "/workspace/checkpoint"} in mounts
    (claim,) = [v["persistentVolumeClaim"]["claimName"] for v in node["replicatedJobs"][0]["template"]["spec"]["template"]
                ["spec"]["volumes"] if v["name"] == "weights-checkpoint"]
    (pv,) = [r for r in plan.of_type("kubernetes:core/v1:PersistentVolume") if r.inputs["spec"]["claimRef"]["name"] == claim]
    assert pv.inputs["spec"]["nfs"]["path"].endswith("/ckpt/ddp")
    # The pipeline's first step copies that path from the base version's cache: no re-export.
    export = next(t for t in template["spec"]["templates"] if t["name"] == "export")["container"]
    assert 'rclone copyto --checksum "$CACHE/$ONNX"' in export["command"][-1]
    assert {"name": "ONNX", "value": "{{workflow.parameters.onnx}}"} in export["env"]
    # Nothing Argo's Strict mode refuses (it would mark the workflow Error), and it is a valid Workflow.
    assert set(workflow["spec"]) <= STRICT_ALLOWED
    conformance.validate(workflow)


def test_the_step_is_kubectl_server_side_apply_of_the_workflow_its_job_mounts(plan):
    runtime = named(plan, "ClusterTrainingRuntime", "ip-torch-ddp-publish")
    pod = replicated_jobs(runtime)["publish"]["template"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == versions.KUBECTL_IMAGE == f"registry.k8s.io/kubectl:v{versions.KUBERNETES_VERSION}"
    # Server-side apply: a retry after the create went through applies the same Workflow and succeeds,
    # where a second create would fail with AlreadyExists and so fail the trained job.
    assert container["command"] == ["/usr/local/bin/kubectl", "apply", "--server-side",
                                    "--field-manager=inference-platform-publish", "-f",
                                    "/etc/inference-platform/publish/workflow.json"]
    assert "nvidia.com/gpu" not in str(pod) and "tolerations" not in pod
    patches = {p["manager"]: p for p in named(plan, "TrainJob", "ddp")["spec"]["runtimePatches"]}
    (step,) = patches["inference-platform/publish"]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    spec = step["template"]["spec"]["template"]["spec"]
    assert step["name"] == "publish" and spec["serviceAccountName"] == "publish-svc"
    assert spec["volumes"] == [{"name": "publish-workflow", "configMap": {"name": "ddp-publish"}}]
    assert spec["containers"] == [{"name": "publish", "volumeMounts": [
        {"name": "publish-workflow", "mountPath": "/etc/inference-platform/publish", "readOnly": True}]}]
    assert named(plan, "ConfigMap", "ddp-publish")["metadata"]["namespace"] == "vision-train"


def test_the_publish_account_may_only_create_workflows_and_patch_its_jobs_own_in_the_services_namespace(plan):
    account = named(plan, "ServiceAccount", "publish-svc")
    assert account["metadata"]["namespace"] == "vision-train"
    role = named(plan, "Role", "svc-pipeline-publish")
    assert role["metadata"]["namespace"] == "svc"
    # The apply's patch, by name: only the Workflow the job creates (ddp-v2).
    assert role["rules"] == [{"apiGroups": ["argoproj.io"], "resources": ["workflows"], "verbs": ["create"]},
                             {"apiGroups": ["argoproj.io"], "resources": ["workflows"], "verbs": ["patch"],
                              "resourceNames": ["ddp-v2"]}]
    binding = named(plan, "RoleBinding", "svc-pipeline-publish")
    assert binding["metadata"]["namespace"] == "svc" and binding["roleRef"]["name"] == "svc-pipeline-publish"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "publish-svc", "namespace": "vision-train"}]
    assert not [o for o in objects(plan, "ClusterRoleBinding") if "publish" in o["metadata"]["name"]]
    # The other training pods still get no API token.
    runtime = named(plan, "ClusterTrainingRuntime", "ip-torch-ddp-publish")
    assert replicated_jobs(runtime)["node"]["template"]["spec"]["template"]["spec"]["automountServiceAccountToken"] is False


def test_the_publish_pods_take_no_traffic_and_reach_only_the_api_servers_ports(plan):
    policy = named(plan, "NetworkPolicy", "training-publish")
    assert policy["metadata"]["namespace"] == "vision-train"
    assert policy["spec"]["podSelector"]["matchLabels"] == {"app.kubernetes.io/component": "training",
                                                            "inference-platform/training-role": "publish"}
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in policy["spec"]
    assert policy["spec"]["egress"] == [{"ports": [{"protocol": "TCP", "port": 443}, {"protocol": "TCP", "port": 6443}]}]
    runtime = named(plan, "ClusterTrainingRuntime", "ip-torch-ddp-publish")
    labels = replicated_jobs(runtime)["publish"]["template"]["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()


def test_pulumi_up_creates_no_workflow_and_the_job_waits_for_its_steps_account_only(plan):
    assert not objects(plan, "Workflow")
    job = next(r for r in plan.of_type(TRAINJOB) if r.inputs["metadata"]["name"] == "ddp")
    publish = {r.inputs["kind"]: r.urn for r in plan.resources if is_k8s_object(r)
               and r.inputs.get("kind") in ("ServiceAccount", "ConfigMap") and "publish" in r.inputs["metadata"]["name"]}
    # Not the ConfigMap: its replacement (a new version name) would replace the job with it.
    assert publish["ServiceAccount"] in job.depends_on and publish["ConfigMap"] not in job.depends_on


def test_every_publish_object_validates_and_the_runtimes_jobset_passes_jobsets_rules(plan, reference):
    docs = [o for kind in ("ClusterTrainingRuntime", "TrainJob", "ConfigMap", "ServiceAccount", "Role", "RoleBinding",
                           "NetworkPolicy") for o in objects(plan, kind)]
    for doc in docs:
        conformance.validate(doc)
    runtime = named(plan, "ClusterTrainingRuntime", "ip-torch-ddp-publish")
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "ddp", "namespace": "vision-train"},
              "spec": runtime["spec"]["template"]["spec"]}
    conformance.validate(jobset)
    # jobset v0.12.0 pkg/webhooks/jobset_webhook.go: the first replicated job may not depend on
    # anything, the others only on one before them.
    jobs = jobset["spec"]["replicatedJobs"]
    assert "dependsOn" not in jobs[0]
    for i, job in enumerate(jobs):
        earlier = {j["name"] for j in jobs[:i]}
        assert all(d["name"] in earlier for d in job.get("dependsOn", []))


def _diff(tmp_path, capsys, edit) -> list[str]:
    return [line.strip() for line in diff_lines(tmp_path, capsys, publishing(), edit)
            if line.strip()[:2] in ("+-", "~ ", "+ ", "- ") and ("TrainJob" in line or "publish" in line)]


def test_a_new_version_name_updates_only_the_workflow_the_step_will_create(tmp_path, capsys):
    lines = _diff(tmp_path, capsys, lambda job: job["publishTo"].update(version="v3"))
    # pulumi-kubernetes replaces a ConfigMap whose data changes, the Role names the new Workflow in
    # place; the TrainJob stays as it is.
    assert sorted(lines) == ['+- replace kubernetes:core/v1:ConfigMap test-dev-training-job-vision-ddp-publish '
                             '(input data["workflow.json"]) [delete-first]',
                             '~ update kubernetes:rbac.authorization.k8s.io/v1:Role test-dev-training-publish-svc-role']


def test_no_longer_publishing_replaces_the_job_as_its_runtime_changes(tmp_path, capsys):
    lines = _diff(tmp_path, capsys, lambda job: job.pop("publishTo"))
    replaced = [line for line in lines if "TrainJob" in line]
    assert replaced == ["+- replace kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob test-dev-training-job-vision-ddp "
                        "(replaceOnChanges spec.runtimeRef (input spec.runtimeRef.name)) [delete-first]"]


def test_the_example_stack_publishes_its_fine_tuned_embedding_model_to_embeds_pipeline(tmp_path):
    raw = yaml.safe_load(open("stacks/Pulumi.train-dev.yaml"))["config"]
    job = next(j for j in raw["inference-platform:training"]["jobs"] if "publishTo" in j)
    assert job["publishTo"]["service"] == "embed"
    assert raw["inference-platform:modelPipeline"] == {"enabled": True}
