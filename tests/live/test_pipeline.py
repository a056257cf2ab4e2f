"""The model pipeline (`modelPipeline`, a service's `pipeline`): the Argo Workflows controller from
the pinned chart, and per service a ServiceAccount with only the executor's rights and a
WorkflowTemplate that validates against Argo's CRD, builds on the base version's Triton release
and GPU share, and whose copy steps, run by a real shell and rclone, refuse hostile arguments,
never overwrite a version and end in the canary patch."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from inference_platform.core import versions
from inference_platform.core.chart_hardening import hardened
from inference_platform.gpu.profiles import group_demands
from inference_platform.serving.model_config import parse_model_config
from inference_platform.settings.component_args import validated
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from inference_platform.tuning import pipeline
from inference_platform.tuning import runs as tuning
from inference_platform.tuning.inputs import ModelPipelineInputs
from model_tools import publish
from platformctl.patch import apply_patch, canary_patch, read_patch
from platformctl.plan import HELM_RELEASE, is_k8s_object, manifest
from policies.rules.security import restricted_problems
from tests.conftest import ROOT, base_config, render_raw, stack_plan
from tests.support import conformance

pytest_plugins = ["tests.support.s3server"]

RCLONE = Path(sys.executable).parent / "rclone"
S3_SECRETS = ("s3AccessKeyId", "s3SecretAccessKey")
PIPELINE = {"baseVersion": "v1", "model": "resnet50", "inputs": {"input": [3, 224, 224]}, "maxBatchSize": 16,
            "repositoryPrefix": "svc"}
EXECUTOR_RULES = [{"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"], "verbs": ["create", "patch"]}]


def objects(plan, kind: str) -> list[dict]:
    return [manifest(r) for r in plan.resources if is_k8s_object(r) and r.inputs.get("kind") == kind]


def template_of(plan) -> dict:
    (template,) = objects(plan, "WorkflowTemplate")
    return template


def steps_of(template: dict) -> dict[str, dict]:
    return {t["name"]: t for t in template["spec"]["templates"]}


def with_pipeline(raw: dict, **pipeline_settings) -> dict:
    raw["services"][0]["pipeline"] = copy.deepcopy(PIPELINE) | pipeline_settings
    raw["modelPipeline"] = {"enabled": True}
    return raw


def on_s3(raw: dict) -> dict:
    raw["weightCaches"]["s3"] = {"endpoint": "https://s3.example.com", "bucket": "weights"}
    raw |= {"s3AccessKeyId": "id", "s3SecretAccessKey": "key"}
    raw["services"][0]["versions"][0]["modelRepository"]["cache"] = "s3"
    return raw


@pytest.fixture(scope="module")
def demo():
    return stack_plan("demo-dev")


@pytest.fixture(scope="module")
def demo_template(demo) -> dict:
    return template_of(demo)


# --------------------------------------------------------------------------- schemas and the chart


def test_pipeline_objects_validate_against_their_schemas(demo, demo_template, reference):
    docs = [d for kind in ("ServiceAccount", "Role", "RoleBinding", "NetworkPolicy", "ConfigMap", "Namespace")
            for d in objects(demo, kind) if re.fullmatch(r"resnet-pipeline(-[0-9a-f]{10})?|argo(-workflows)?", d["metadata"]["name"])]
    assert sorted(d["kind"] for d in docs) == ["ConfigMap", "Namespace", "NetworkPolicy", "NetworkPolicy", "Role",
                                              "RoleBinding", "ServiceAccount"]
    docs.append(demo_template)
    for doc in docs:
        conformance.validate(doc)
    # The schema is Argo's full one, strict: a misspelled field of a step is refused.
    broken = copy.deepcopy(demo_template)
    broken["spec"]["templates"][3]["sidecar"] = broken["spec"]["templates"][3].pop("sidecars")
    with pytest.raises(jsonschema.ValidationError, match="sidecar"):
        conformance.validate(broken)


def test_argo_runs_its_controller_alone_from_the_pinned_chart(demo, reference):
    release = demo.get(HELM_RELEASE, "demo-dev-pipeline-release")
    chart = versions.ARGO_WORKFLOWS
    assert (release.inputs["chart"], release.inputs["version"], release.inputs["repositoryOpts"]["repo"]) == chart
    assert (release.inputs["name"], release.inputs["namespace"]) == ("argo-workflows", "argo")
    values = release.inputs["values"]
    # What the component asks for, over the chart hardening every release gets (core/chart_hardening.py).
    assert values == hardened(chart.name, pipeline.argo_values())
    defaults = conformance.vendored_chart_values("argo-workflows", chart.version)
    assert conformance.unknown_values_keys(values, defaults) == []
    assert defaults["crds"]["install"] is True and values["crds"]["full"] is False
    assert values["server"]["enabled"] is False
    assert values["controller"]["workflowRestrictions"] == {"templateReferencing": "Strict"}
    assert values["executor"]["image"]["tag"] == f"{versions.ARGO_WORKFLOWS_VERSION}-nonroot"
    assert (reference / "helm" / "argo-workflows" / chart.version / "Chart.yaml").read_text().count(
        f"appVersion: {versions.ARGO_WORKFLOWS_VERSION}") == 1
    (namespace,) = [d for d in objects(demo, "Namespace") if d["metadata"]["name"] == "argo"]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    (deny,) = [d for d in objects(demo, "NetworkPolicy") if d["metadata"]["namespace"] == "argo"]
    # Only Prometheus, on the controller's metrics port (tests/plan/test_pipeline_access.py).
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{
        "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
        "ports": [{"protocol": "TCP", "port": 9090}]}]}
    # The WorkflowTemplate waits for the release that installs its CRD.
    template = demo.get("kubernetes:argoproj.io/v1alpha1:WorkflowTemplate", "demo-dev-pipeline-resnet-workflowtemplate")
    assert release.urn in template.depends_on


def test_the_charts_workflow_namespaces_only_place_its_own_workflow_rbac(reference):
    """What argo_values relies on: controller.workflowNamespaces scopes no controller (only the
    chart's workflow ServiceAccount and RBAC, turned off), and the chart's workflow Role is the
    executor's minimum the platform grants."""
    templates = reference / "helm" / "argo-workflows" / versions.ARGO_WORKFLOWS.version / "templates"
    using = sorted(p.name for p in templates.rglob("*.yaml") if "workflowNamespaces" in p.read_text())
    assert using == sorted(f"{kind}-{suffix}.yaml" for kind in ("agent", "artifact-gc", "workflow")
                           for suffix in ("rb", "role")) + ["workflow-sa.yaml"]
    role = (templates / "controller" / "workflow-role.yaml").read_text()
    rules = yaml.safe_load(role.split("rules:\n", 1)[1].split("{{-", 1)[0])
    assert rules == EXECUTOR_RULES == pipeline.EXECUTOR_RULES


def test_rbac_is_exactly_what_the_executor_needs(demo, demo_template):
    (role,) = [r for r in objects(demo, "Role") if r["metadata"]["name"] == "resnet-pipeline"]
    (binding,) = [b for b in objects(demo, "RoleBinding") if b["roleRef"]["name"] == "resnet-pipeline"]
    (account,) = [a for a in objects(demo, "ServiceAccount") if a["metadata"]["name"] == "resnet-pipeline"]
    assert role["rules"] == EXECUTOR_RULES
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == account["metadata"]["namespace"] == "resnet"
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "resnet-pipeline", "namespace": "resnet"}]
    assert demo_template["spec"]["serviceAccountName"] == "resnet-pipeline"
    # Nothing cluster-wide is granted to it.
    assert "resnet-pipeline" not in json.dumps(objects(demo, "ClusterRoleBinding"))


# --------------------------------------------------------------------------- the steps


def test_steps_build_and_measure_on_the_base_versions_release_and_gpu(demo, demo_template):
    steps = steps_of(demo_template)
    entry = steps[demo_template["spec"]["entrypoint"]]
    assert [s[0]["template"] for s in entry["steps"]] == list(pipeline.STEPS)
    (serving,) = [d for d in objects(demo, "Deployment") if d["metadata"]["labels"].get("version") == "v2"
                  and d["metadata"]["labels"].get("app") == "resnet"]
    serving_pod = serving["spec"]["template"]["spec"]
    triton = serving_pod["containers"][0]
    build, analyze = steps["build"], steps["analyze"]
    # The engine is built by the TensorRT of v2's Triton release, on v2's GPU group and share.
    assert build["container"]["image"] == "nvcr.io/nvidia/tensorrt:25.01-py3"
    assert build["container"]["image"].rsplit(":", 1)[1].split("-")[0] == tuning.triton_release(triton["image"])
    (server,) = analyze["sidecars"]
    assert server["image"] == triton["image"]
    assert analyze["container"]["image"] == tuning.sdk_image(triton["image"])
    for step in (build, analyze):
        assert step["nodeSelector"] == serving_pod["nodeSelector"]
        assert step["tolerations"] == serving_pod["tolerations"]
        assert step["priorityClassName"] == "gpu-tuning"
        (term,) = step["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term["labelSelector"] == {"matchLabels": {"app": "resnet"}}
    assert build["container"]["resources"] == server["resources"] == triton["resources"]
    # Only the build and Triton beside Model Analyzer hold a GPU.
    holders = [c["name"] for s in steps.values() for c in [s.get("container") or {}, *s.get("sidecars", [])]
               if "nvidia.com" in json.dumps(c.get("resources", {}))]
    assert holders == ["build", "triton"]
    assert build["container"]["command"] == [
        "/usr/src/tensorrt/bin/trtexec", "--onnx=/work/model.onnx", "--saveEngine=/work/repository/resnet50/1/model.plan",
        "--minShapes='input':1x3x224x224", "--optShapes='input':32x3x224x224", "--maxShapes='input':32x3x224x224",
        "--skipInference", "--fp16"]
    # Triton serves the built repository, loading only what Model Analyzer asks for; Model
    # Analyzer starts once it answers.
    assert "--model-repository=/work/repository" in server["args"] and "--model-control-mode=explicit" in server["args"]
    assert {"name": "work", "mountPath": "/work", "readOnly": True} in server["volumeMounts"]
    script = analyze["container"]["command"][-1]
    assert script.index("/v2/health/ready") < script.index("exec model-analyzer profile")


def test_shapes_quote_each_input_and_fp32_builds_without_fp16():
    settings = parse_settings(with_pipeline(base_config(), precision="fp32", maxBatchSize=4,
                                            inputs={"input_ids": [128], "onnx::Mask:0": [128]}), "stacks/Pulumi.test.yaml")
    command = pipeline.trtexec_command(settings.services[0].pipeline)
    assert "--fp16" not in command
    assert "--maxShapes='input_ids':4x128,'onnx::Mask:0':4x128" in command
    assert "--minShapes='input_ids':1x128,'onnx::Mask:0':1x128" in command


def test_pods_are_restricted_outside_the_mesh_and_bounded(demo_template):
    spec = demo_template["spec"]
    # A classic sidecar would keep a finished step's pod running.
    assert spec["podMetadata"]["labels"]["sidecar.istio.io/inject"] == "false"
    assert spec["activeDeadlineSeconds"] == pipeline.DEADLINE_SECONDS
    assert spec["podGC"] == {"strategy": "OnPodSuccess"}
    (claim,) = spec["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "work" and claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    for step in spec["templates"][1:]:
        containers = [step["container"], *step.get("sidecars", [])]
        pod = {"securityContext": spec["securityContext"], "containers": containers, "volumes": spec["volumes"]}
        assert restricted_problems(pod) == [], step["name"]
        assert all(c["securityContext"]["readOnlyRootFilesystem"] for c in containers), step["name"]
        assert {"name": "work", "mountPath": "/work"} in step["container"]["volumeMounts"], step["name"]
        assert all(re.search(r":[0-9][\w.-]*$", c["image"]) for c in containers), step["name"]


def test_configs_in_the_tools_configmap(demo, demo_template):
    (config_map,) = [d for d in objects(demo, "ConfigMap") if d["metadata"]["name"].startswith("resnet-pipeline-")]
    engine = parse_model_config(config_map["data"][pipeline.ENGINE_CONFIG], "engine")
    assert (engine.name, engine.platform, engine.max_batch_size) == ("resnet50", "tensorrt_plan", 32)
    analyzer = yaml.safe_load(config_map["data"][tuning.ANALYZER_CONFIG])
    # The search tries no batch larger than the engine was built for (tuning's default is 128).
    assert analyzer["run_config_search_max_model_batch_size"] == 32
    assert analyzer["profile_models"] == ["resnet50"] and analyzer["run_config_search_max_instance_count"] == 3
    # Perf Analyzer sends the shapes the engine was built for: Triton completes a variable ONNX
    # dimension as -1 even where the build fixed it, and Perf Analyzer cannot invent one.
    assert analyzer["perf_analyzer_flags"] == {"shape": ["input:3,224,224"]}
    named = {v["configMap"]["name"] for v in demo_template["spec"]["volumes"] if "configMap" in v}
    assert named == {config_map["metadata"]["name"]}


def test_the_workflow_templates_are_an_output(demo):
    assert demo.outputs["workflowTemplates"] == {"resnet": "resnet/resnet-pipeline"}


# --------------------------------------------------------------------------- the steps, run


def run_step(container: dict, tmp: Path, arguments: dict[str, str], secret: dict[str, str] | None = None,
             replace: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """A rendered rclone step as its pod runs it, by a real shell and rclone: Argo's parameters
    substituted, the pod's paths moved under `tmp`, the weights Secret in the environment."""
    paths = {pipeline.ENGINE_CONFIG_DIR: tmp / "engine", tuning.WORK_DIR: tmp / "work", "/models": tmp / "cache"}
    pattern = re.compile("|".join(re.escape(p) for p in paths))

    def local(text: str) -> str:
        for name, value in arguments.items():
            text = text.replace(f"{{{{workflow.parameters.{name}}}}}", value)
        for old, new in (replace or {}).items():
            text = text.replace(old, new)
        return pattern.sub(lambda m: str(paths[m.group()]), text)

    secret = secret or {}
    env = {"PATH": f"{RCLONE.parent}{os.pathsep}{os.environ['PATH']}", **(secret if container.get("envFrom") else {})}
    for item in container["env"]:
        env[item["name"]] = secret[item["valueFrom"]["secretKeyRef"]["key"]] if "valueFrom" in item else local(item["value"])
    shell, flag, script = container["command"]
    tmp.mkdir(parents=True, exist_ok=True)
    return subprocess.run([shell, flag, local(script)], env=env, cwd=tmp, capture_output=True, text=True, timeout=120)


def engine_config_dir(tmp: Path, demo) -> None:
    (config_map,) = [d for d in objects(demo, "ConfigMap") if d["metadata"]["name"].startswith("resnet-pipeline-")]
    (tmp / "engine").mkdir()
    (tmp / "engine" / pipeline.ENGINE_CONFIG).write_text(config_map["data"][pipeline.ENGINE_CONFIG])


def test_export_fetches_the_onnx_and_lays_out_the_repository(demo, demo_template, tmp_path):
    engine_config_dir(tmp_path, demo)
    (tmp_path / "cache" / "resnet" / "training").mkdir(parents=True)
    (tmp_path / "cache" / "resnet" / "training" / "model.onnx").write_bytes(b"onnx weights")
    run = run_step(steps_of(demo_template)["export"]["container"], tmp_path,
                   {"version": "v3", "onnx": "resnet/training/model.onnx"})
    assert run.returncode == 0, run.stderr
    work = tmp_path / "work"
    assert (work / "model.onnx").read_bytes() == b"onnx weights"
    assert (work / "repository" / "resnet50" / "config.pbtxt").read_text() == (tmp_path / "engine" / "config.pbtxt").read_text()
    assert (work / "repository" / "resnet50" / "1").is_dir() and (work / "tmp").is_dir()


@pytest.mark.parametrize("version,onnx", [
    ("v3; touch PWNED", "resnet/training/model.onnx"),
    ("$(touch PWNED)", "resnet/training/model.onnx"),
    ("V3", "resnet/training/model.onnx"),
    ("-v3", "resnet/training/model.onnx"),
    ("", "resnet/training/model.onnx"),
    ("v" * 64, "resnet/training/model.onnx"),
    ("v3", "../resnet/training/model.onnx"),
    ("v3", "resnet/../../etc/model.onnx"),
    ("v3", "/resnet/training/model.onnx"),
    ("v3", "resnet//training/model.onnx"),
    ("v3", "resnet/training/model.onnx\nrm -rf /"),
    ("v3", "resnet/training/$(touch PWNED).onnx"),
    ("v3", "resnet/training/model.pt"),
], ids=lambda v: repr(v)[:30])
def test_export_refuses_hostile_arguments_before_touching_anything(demo, demo_template, tmp_path, version, onnx):
    engine_config_dir(tmp_path, demo)
    (tmp_path / "cache" / "resnet" / "training").mkdir(parents=True)
    (tmp_path / "cache" / "resnet" / "training" / "model.onnx").write_bytes(b"onnx weights")
    result = run_step(steps_of(demo_template)["export"]["container"], tmp_path, {"version": version, "onnx": onnx})
    assert result.returncode == 2, result.stderr
    assert "version" in result.stderr or "onnx" in result.stderr
    assert not (tmp_path / "work").exists()
    # The step runs in tmp_path: an injected command would leave PWNED there.
    assert not list(tmp_path.rglob("PWNED"))


def test_a_version_name_in_use_fails_before_any_work(demo, demo_template, tmp_path):
    engine_config_dir(tmp_path, demo)
    (tmp_path / "cache" / "resnet" / "v2" / "resnet50").mkdir(parents=True)
    (tmp_path / "cache" / "resnet" / "v2" / "resnet50" / "config.pbtxt").write_text('name: "resnet50"\n')
    (tmp_path / "cache" / "model.onnx").write_bytes(b"onnx weights")
    result = run_step(steps_of(demo_template)["export"]["container"], tmp_path, {"version": "v2", "onnx": "model.onnx"})
    assert result.returncode == 3 and "choose a version name not used before" in result.stderr
    assert not (tmp_path / "work" / "model.onnx").exists() and not (tmp_path / "work" / "repository").exists()


def analyzer_output(work: Path) -> None:
    """What a remote-mode Model Analyzer run leaves in the work volume (tuning.analyzer_config)."""
    for n in (0, 1):
        variant = work / "output-models" / f"resnet50_config_{n}"
        variant.mkdir(parents=True)
        (variant / "config.pbtxt").write_text(f'name: "resnet50_config_{n}"\nplatform: "tensorrt_plan"\nmax_batch_size: 32\n'
                                              f"instance_group [{{ count: {n + 1} kind: KIND_GPU }}]\n")
    (work / "results" / "results").mkdir(parents=True)
    (work / "results" / "results" / "metrics-model-inference.csv").write_text(
        "Model,Model Config Path,Satisfies Constraints\nresnet50,resnet50_config_1,Yes\nresnet50,resnet50_config_0,Yes\n")


def publish_and_upload(template: dict, tmp: Path, **run) -> tuple[int, subprocess.CompletedProcess]:
    """The publish step's own arguments through model_tools/publish.py, then the upload step."""
    steps = steps_of(template)
    work = tmp / "work"
    (work / "repository" / "resnet50" / "1").mkdir(parents=True)
    (work / "repository" / "resnet50" / "1" / "model.plan").write_bytes(b"engine")
    (work / "repository" / "resnet50" / "config.pbtxt").write_text('name: "resnet50"\nplatform: "tensorrt_plan"\n')
    analyzer_output(work)
    (work / "model.onnx").write_bytes(b"onnx weights")
    command = steps["publish"]["container"]["command"]
    assert command[:3] == ["python3", "-m", "model_tools.publish"]
    args = [a.replace(pipeline.VERSION_ARG, "v3").replace(pipeline.WORKFLOW_NAME_ARG, "resnet-pipeline-x7k2q")
            .replace(pipeline.ONNX_ARG, "resnet/training/model.onnx").replace(tuning.WORK_DIR, str(work)) for a in command[3:]]
    code = publish.main(args)
    return code, run_step(steps["upload"]["container"], tmp, {"version": "v3"}, **run)


def test_publish_and_upload_write_a_new_version_and_print_its_canary_patch(demo_template, tmp_path):
    (tmp_path / "cache" / "resnet" / "v2").mkdir(parents=True)
    code, upload = publish_and_upload(demo_template, tmp_path)
    assert code == 0 and upload.returncode == 0, upload.stderr
    # sha256 of b"onnx weights": the file the workflow copied, named with the workflow that built it.
    provenance = {"workflow": "resnet-pipeline-x7k2q", "onnx": "resnet/training/model.onnx",
                  "onnxSha256": hashlib.sha256(b"onnx weights").hexdigest()}
    patch = canary_patch("resnet", "v2", "v3", "fileShare", "resnet/v3", "tuned-v3-1", 10, provenance)
    assert json.loads(upload.stdout) == patch
    assert json.loads((tmp_path / "work" / "stack-patch.json").read_text()) == patch
    # Promotion: `platformctl patch` applies it to the stack file that declared the pipeline.
    stack = ROOT / "stacks" / "Pulumi.demo-dev.yaml"
    patched = yaml.safe_load(apply_patch(stack.read_bytes(), read_patch(tmp_path / "work" / "stack-patch.json", "patch"),
                                         "stacks/Pulumi.demo-dev.yaml"))
    versions_ = {v["name"]: v for v in patched["config"]["inference-platform:services"][0]["versions"]}
    assert (versions_["v2"]["weight"], versions_["v3"]["weight"]) == (0, 10)
    assert versions_["v3"]["modelRepository"] == {"cache": "fileShare", "path": "resnet/v3"}
    assert versions_["v3"]["modelConfigName"] == "tuned-v3-1" and versions_["v3"]["image"] == versions_["v2"]["image"]
    assert versions_["v3"]["provenance"] == provenance
    published = tmp_path / "cache" / "resnet" / "v3" / "resnet50"
    assert (published / "1" / "model.plan").read_bytes() == b"engine"
    best = parse_model_config((published / "configs" / "tuned-v3-1.pbtxt").read_text(), "best")
    assert (best.name, best.instance_group[0].count) == ("resnet50", 2)
    # The patch's output parameter is that file, exported to the workflow's outputs.
    (output,) = steps_of(demo_template)["upload"]["outputs"]["parameters"]
    assert output["valueFrom"]["path"] == pipeline.PATCH_FILE and output["globalName"] == "stack-patch"
    # A second run under the same name writes nothing over the published version.
    (published / "1" / "model.plan").write_bytes(b"serving engine")
    again = run_step(steps_of(demo_template)["upload"]["container"], tmp_path, {"version": "v3"})
    assert again.returncode == 3
    assert (published / "1" / "model.plan").read_bytes() == b"serving engine"


def test_the_steps_read_and_write_s3_with_the_weights_secret(s3_server, tmp_path):
    plan = render_raw(on_s3(with_pipeline(base_config())), secret_keys=S3_SECRETS)
    template = template_of(plan)
    steps = steps_of(template)
    for name in ("export", "upload"):
        assert steps[name]["container"]["envFrom"] == [{"secretRef": {"name": "model-weights-s3"}}]
    assert "models" not in {v["name"] for v in template["spec"]["volumes"]}
    bucket = s3_server.bucket_name("pipeline")
    client = s3_server.client()
    client.create_bucket(Bucket=bucket)
    client.put_object(Bucket=bucket, Key="svc/training/model.onnx", Body=b"onnx weights")
    client.put_object(Bucket=bucket, Key="svc/v1/resnet50/config.pbtxt", Body=b'name: "resnet50"\n')
    secret = {"AWS_ACCESS_KEY_ID": s3_server.access_key_id, "AWS_SECRET_ACCESS_KEY": s3_server.secret_access_key,
              "AWS_DEFAULT_REGION": s3_server.region}
    run = {"secret": secret, "replace": {"https://s3.example.com": s3_server.endpoint, "weights:weights": f"weights:{bucket}"}}
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / pipeline.ENGINE_CONFIG).write_text('name: "resnet50"\n')
    used = run_step(steps["export"]["container"], tmp_path, {"version": "v1", "onnx": "svc/training/model.onnx"}, **run)
    assert used.returncode == 3, used.stderr
    # A listing refused (here: a wrong key) is no proof that the version is free.
    refused = run_step(steps["export"]["container"], tmp_path, {"version": "v2", "onnx": "svc/training/model.onnx"},
                       **{**run, "secret": {**secret, "AWS_SECRET_ACCESS_KEY": "wrong"}})
    assert refused.returncode == 1 and "cannot tell whether" in refused.stderr, refused.stderr
    assert not (tmp_path / "work" / "model.onnx").exists()
    export = run_step(steps["export"]["container"], tmp_path, {"version": "v2", "onnx": "svc/training/model.onnx"}, **run)
    assert export.returncode == 0, export.stderr
    assert (tmp_path / "work" / "model.onnx").read_bytes() == b"onnx weights"
    code, upload = publish_and_upload(template, tmp_path / "later", **run)
    assert code == 0 and upload.returncode == 0, upload.stderr
    assert json.loads(upload.stdout)["addVersion"]["modelRepository"] == {"cache": "s3", "path": "svc/v3"}
    keys = {o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]}
    assert {"svc/v3/resnet50/1/model.plan", "svc/v3/resnet50/configs/tuned-v3-1.pbtxt"} <= keys


# --------------------------------------------------------------------------- stacks


def test_a_stack_without_pipelines_has_no_argo():
    plan = render_raw(base_config())
    assert not [r for r in plan.resources if "argoproj.io" in r.type or r.inputs.get("chart") == "argo-workflows"]
    assert not [d for d in objects(plan, "Namespace") if d["metadata"]["name"] == "argo"]
    assert "workflowTemplates" not in plan.outputs
    # Enabled without a pipeline: the controller, no template.
    raw = base_config() | {"modelPipeline": {"enabled": True}}
    plan = render_raw(raw)
    assert [r.inputs["chart"] for r in plan.of_type(HELM_RELEASE) if r.inputs["namespace"] == "argo"] == ["argo-workflows"]
    assert objects(plan, "WorkflowTemplate") == [] and plan.outputs["workflowTemplates"] == {}


def test_a_pipeline_without_argo_is_one_line(tmp_path):
    text = (ROOT / "stacks" / "Pulumi.demo-dev.yaml").read_text()
    stack_file = tmp_path / "Pulumi.demo-dev.yaml"
    stack_file.write_text(text.replace("  inference-platform:modelPipeline:\n    enabled: true\n",
                                       "  inference-platform:modelPipeline:\n    enabled: false\n"))
    result = subprocess.run([sys.executable, "-m", "platformctl", "plan", "demo-dev", "--stack-file", str(stack_file),
                             "--out", str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert ("inference-platform:services[resnet].pipeline: needs modelPipeline.enabled: true "
            "(Argo Workflows runs the pipeline)") in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("edit,words", [
    (lambda raw: raw["services"][0]["pipeline"].update(baseVersion="v9"), "no version named 'v9'; versions: v1"),
    (lambda raw: raw["services"][0]["versions"][0].update(image="registry.example.com/custom-triton:1.0"),
     "the TensorRT release its engine needs is unknown"),
])
def test_a_pipeline_builds_for_a_version_of_known_release(edit, words):
    raw = with_pipeline(base_config())
    edit(raw)
    with pytest.raises(ConfigError) as info:
        parse_settings(raw, "stacks/Pulumi.test.yaml")
    assert info.value.paths == ["inference-platform:services[svc].pipeline.baseVersion"]
    assert words in info.value.one_line()


def test_the_component_alone_names_what_it_lacks():
    settings = parse_settings(with_pipeline(base_config()), "stacks/Pulumi.test.yaml")
    service = settings.services[0].model_dump(by_alias=True, exclude_none=True)
    without = copy.deepcopy(service)
    del without["pipeline"]
    with pytest.raises(ConfigError) as info:
        validated(ModelPipelineInputs, {"services": [service, without]}, "ModelPipeline")
    assert info.value.paths == ["services[0].pipeline.base_version", "weights.svc", "services[1].pipeline"]
    args = {"services": [service], "gpu_groups": [g.model_dump(by_alias=True, exclude_none=True) for g in settings.gpu_groups],
            "weights": {"svc": {"claim_name": "model-weights"}}}
    assert validated(ModelPipelineInputs, args, "ModelPipeline").services[0].pipeline.model == "resnet50"


def test_capacity_counts_a_pipeline_run():
    def at_max(raw: dict) -> int:
        (demand,) = group_demands(parse_settings(raw, "stacks/Pulumi.test.yaml"))
        return demand.at_max

    assert at_max(with_pipeline(base_config())) == at_max(base_config()) + 1
