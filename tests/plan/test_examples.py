"""The programs in examples/ that use one component alone: each is planned offline with its
Pulumi.example.yaml, its objects validate, and they refer to what the program names."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from inference_platform.settings.errors import ConfigError
from platformctl.engine import SECRET, Plan, render_program, render_program_stack, stack_config
from platformctl.plan import is_k8s_object, manifest
from tests.conftest import ROOT, stack_plan
from tests.support import conformance

EXAMPLES = ROOT / "examples"
PLATFORM_REF = "organization/inference-platform/demo-dev"
# The example each test below plans, and the platform stacks a StackReference of it reads.
PLANNED = {
    "triton-on-existing-mesh": {},
    "gpu-operator-existing-cluster": {},
    "weight-caches": {},
    "team-service-stackref": {PLATFORM_REF: "demo-dev"},
}
# Folders of examples/ that are no Pulumi program, and the test that runs each.
NOT_PROGRAMS = {"training": "tests/live/test_torchrun_distributed.py"}


def example_programs() -> list[str]:
    return sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name not in NOT_PROGRAMS)


@functools.cache
def example_plan(name: str) -> Plan:
    directory = EXAMPLES / name
    outputs = {ref: stack_plan(stack).outputs for ref, stack in PLANNED[name].items()}
    return render_program_stack(directory, directory / "Pulumi.example.yaml", outputs)


def objects(plan: Plan, kind: str) -> list[dict]:
    return [manifest(r) for r in plan.resources if is_k8s_object(r) and r.inputs["kind"] == kind]


def one(plan: Plan, kind: str, name: str) -> dict:
    found = [doc for doc in objects(plan, kind) if doc["metadata"]["name"] == name]
    assert len(found) == 1, f"{len(found)} {kind} named {name}"
    return found[0]


def admitted_namespaces(policy: dict) -> list[str]:
    return [peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
            for rule in policy["spec"]["ingress"] for peer in rule["from"]]


def test_every_example_is_planned_by_the_suite():
    assert example_programs() == sorted(PLANNED)
    assert all((ROOT / test).is_file() and not (EXAMPLES / name / "Pulumi.yaml").exists() for name, test in NOT_PROGRAMS.items())


@pytest.mark.parametrize("name", sorted(PLANNED))
def test_example_is_a_pip_project_on_this_repository(name):
    directory = EXAMPLES / name
    project = yaml.safe_load((directory / "Pulumi.yaml").read_text())
    assert project["name"] == name and project["description"]
    assert project["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": "venv"}}
    assert (directory / "requirements.txt").read_text().split() == ["-e", "../.."]
    # Secure values stay placeholders, never a secret in clear.
    _, secret_keys = stack_config(directory / "Pulumi.example.yaml", name)
    plan_text = json.dumps(example_plan(name).to_json())
    assert all(key.startswith(f"{name}:") for key in secret_keys)
    assert "[secure-placeholder]" not in plan_text


@pytest.mark.parametrize("doc", [p for name in sorted(PLANNED) for p in conformance.object_params(name, example_plan(name))])
def test_example_object_validates(doc, reference):
    conformance.validate(doc)


@pytest.mark.parametrize("name", sorted(PLANNED))
def test_kubernetes_objects_use_the_programs_provider(name):
    plan = example_plan(name)
    providers = {r.urn for r in plan.of_type("pulumi:providers:kubernetes")}
    assert len(providers) == 1
    for r in plan.resources:
        if r.custom and r.type.startswith("kubernetes:"):
            assert r.provider in providers, r.urn


# --------------------------------------------------------------------------- triton-on-existing-mesh


def test_triton_on_existing_mesh_refers_to_the_clusters_mesh_and_prometheus():
    plan = example_plan("triton-on-existing-mesh")
    namespace = one(plan, "Namespace", "vision")
    assert namespace["metadata"]["labels"]["istio-injection"] == "enabled"
    assert one(plan, "VirtualService", "detector")["spec"]["gateways"] == ["istio-system/my-gateway"]
    assert admitted_namespaces(one(plan, "NetworkPolicy", "detector")) == ["istio-ingress", "prometheus"]
    rules = one(plan, "AuthorizationPolicy", "detector")["spec"]["rules"]
    assert rules[0]["from"][0]["source"]["principals"] == ["cluster.local/ns/istio-ingress/sa/istio-ingressgateway"]


def test_triton_on_existing_mesh_reads_the_given_bucket_with_the_existing_secret():
    plan = example_plan("triton-on-existing-mesh")
    deployments = {d["metadata"]["name"]: d for d in objects(plan, "Deployment")}
    assert sorted(deployments) == ["detector-v1", "detector-v2"]
    # The credentials Secret is the cluster's own: the program names it, never writes it.
    assert "vision-models-s3" not in {s["metadata"]["name"] for s in objects(plan, "Secret")}
    for version, doc in deployments.items():
        assert doc["metadata"]["namespace"] == "vision"
        container = doc["spec"]["template"]["spec"]["containers"][0]
        assert container["envFrom"] == [{"secretRef": {"name": "vision-models-s3"}}]
        path = version.removeprefix("detector-")
        assert f"--model-repository=s3://https://s3.eu.example.cloud:443/vision-models/detector/{path}" in container["args"]
        assert doc["spec"]["template"]["spec"]["nodeSelector"] == {"node.example.com/pool": "gpu-l4"}


def test_triton_on_existing_mesh_waits_for_the_namespace_it_creates():
    plan = example_plan("triton-on-existing-mesh")
    namespace = plan.get("kubernetes:core/v1:Namespace", "namespace")
    for r in plan.resources:
        if r.custom and r.type.startswith("kubernetes:") and r is not namespace:
            assert namespace.urn in r.depends_on, r.urn


def llm_variant_of_triton_on_existing_mesh(tmp_path: Path, auth: dict, ingress_namespace: str = "istio-ingress") -> Path:
    """The example's stack file with its service turned into an LLM service behind the OpenAI
    frontend (its own Gateway, in the service's namespace), written beside the test, not the example."""
    directory = EXAMPLES / "triton-on-existing-mesh"
    raw = yaml.safe_load((directory / "Pulumi.example.yaml").read_text())
    config = raw["config"]
    service = config["triton-on-existing-mesh:service"]
    service["auth"] = auth
    # A vLLM version reads its model.json from the file share (settings/serving.py vllm_repository_problems).
    config["triton-on-existing-mesh:weights"]["claim_name"] = "models"
    service["versions"] = [{**service["versions"][0], "weight": 100,
                            "model_repository": {"cache": "fileShare", "path": "chat/v1"},
                            "image": "nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3",
                            "llm": {"engine": "vllm", "max_context_tokens": 4096, "max_concurrent_sequences": 4,
                                    "architecture": {"parameters_billion": 1.24, "layers": 16, "kv_heads": 8, "head_dim": 64},
                                    "openai": {}}}]
    stack_file = tmp_path / "Pulumi.llm.yaml"
    stack_file.write_text(yaml.safe_dump(raw))
    program = (directory / "__main__.py").read_text().replace('"istio-ingress"', json.dumps(ingress_namespace))
    (tmp_path / "__main__.py").write_text(program)
    (tmp_path / "Pulumi.yaml").write_text((directory / "Pulumi.yaml").read_text())
    return stack_file


def test_triton_service_alone_refuses_basic_auth_on_an_llm_service_its_ingress_namespace_cannot_guard(tmp_path):
    """Outside Istio's root namespace the Basic Auth filter and DENY policy never reach an LLM
    service's own Gateway, which would then pass any `Basic <anything>`: the component's own input
    check refuses it, as the stack's check does without the platform's mesh."""
    stack_file = llm_variant_of_triton_on_existing_mesh(tmp_path, {"mode": "basic"})
    with pytest.raises(ConfigError) as info:
        render_program_stack(tmp_path, stack_file)
    line = info.value.one_line()
    assert "service.auth.mode: basic on a service whose versions serve the OpenAI API needs " \
           "mesh.ingress_namespace 'istio-system', Istio's root namespace (not 'istio-ingress')" in line, line
    # The same service with a JWT, or with its ingress in the root namespace, plans.
    render_program_stack(tmp_path, llm_variant_of_triton_on_existing_mesh(
        tmp_path, {"mode": "jwt", "jwt": {"issuer": "https://id.example.com", "jwksUri": "https://id.example.com/jwks"}}))
    render_program_stack(tmp_path, llm_variant_of_triton_on_existing_mesh(tmp_path, {"mode": "basic"}, "istio-system"))


# --------------------------------------------------------------------------- gpu-operator-existing-cluster


def test_gpu_operator_configures_the_mig_group_and_the_time_slicing_group():
    plan = example_plan("gpu-operator-existing-cluster")
    mig = yaml.safe_load(one(plan, "ConfigMap", "mig-parted-config")["data"]["config.yaml"])
    assert mig["mig-configs"]["custom-gpu-a100"] == [
        {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 4, "3g.40gb": 1}}]
    plugin = one(plan, "ConfigMap", "device-plugin-config")["data"]
    assert list(plugin) == ["time-slicing-4"]
    sharing = yaml.safe_load(plugin["time-slicing-4"])["sharing"]["timeSlicing"]
    assert sharing["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    values = plan.get("kubernetes:helm.sh/v3:Release", "gpu-release").inputs["values"]
    assert values["migManager"]["config"]["name"] == "mig-parted-config"
    assert values["devicePlugin"]["config"]["name"] == "device-plugin-config"
    assert values["mig"]["strategy"] == "mixed"


def test_gpu_operator_finds_each_group_by_its_selector():
    plan = example_plan("gpu-operator-existing-cluster")
    # A marker DaemonSet per group runs on the nodes the group's selector picks; NFD then gives
    # those nodes the group's labels, its sharing config among them, and taints.
    markers = {d["metadata"]["labels"]["app.kubernetes.io/name"]: d["spec"]["template"]["spec"]["nodeSelector"]
               for d in objects(plan, "DaemonSet")}
    assert markers == {f"node-marker-{pool}": {"pool.lab.example.com/name": pool} for pool in ("cpu", "gpu-a100", "gpu-l4")}
    labels = {rule["labels"]["inference-platform/node-group"]: rule["labels"]
              for doc in objects(plan, "NodeFeatureRule") for rule in doc["spec"]["rules"]}
    assert labels["gpu-a100"]["nvidia.com/mig.config"] == "custom-gpu-a100"
    assert labels["gpu-l4"]["nvidia.com/device-plugin.config"] == "time-slicing-4"
    values = plan.get("kubernetes:helm.sh/v3:Release", "gpu-release").inputs["values"]
    assert "lab.example.com/team" in {t["key"] for t in values["daemonsets"]["tolerations"]}


# --------------------------------------------------------------------------- weight-caches


def test_weight_caches_give_each_namespace_its_claim_on_the_existing_share():
    plan = example_plan("weight-caches")
    assert sorted(n["metadata"]["name"] for n in objects(plan, "Namespace")) == ["speech", "vision"]
    volumes = objects(plan, "PersistentVolume")
    assert sorted(v["spec"]["claimRef"]["namespace"] for v in volumes) == ["speech", "vision"]
    for volume in volumes:
        assert volume["spec"]["nfs"] == {"server": "nfs.lab.example.com", "path": "/exports/models"}
        claim = [c for c in objects(plan, "PersistentVolumeClaim")
                 if c["metadata"]["namespace"] == volume["spec"]["claimRef"]["namespace"]]
        assert len(claim) == 1
        assert claim[0]["metadata"]["name"] == volume["spec"]["claimRef"]["name"] == "model-weights"
        assert claim[0]["spec"]["volumeName"] == volume["metadata"]["name"]


def test_weight_caches_give_s3_readers_the_credentials_secret_and_create_the_bucket():
    plan = example_plan("weight-caches")
    secrets = objects(plan, "Secret")
    assert [(s["metadata"]["namespace"], s["metadata"]["name"]) for s in secrets] == [("speech", "model-weights-s3")]
    assert secrets[0]["stringData"] == SECRET
    buckets = [r for r in plan.resources if r.inputs.get("bucket") == "lab-model-weights" and r.custom]
    assert len(buckets) == 1
    assert buckets[0].inputs["endpoint"] == "https://s3.lab.example.cloud"
    namespaces = {r.urn for r in plan.of_type("kubernetes:core/v1:Namespace")}
    for r in plan.resources:
        if r.type in ("kubernetes:core/v1:Secret", "kubernetes:core/v1:PersistentVolumeClaim"):
            assert namespaces & set(r.depends_on), r.urn


# --------------------------------------------------------------------------- team-service-stackref


def test_team_service_uses_the_platforms_gateway_and_weights():
    platform = stack_plan("demo-dev").outputs["serving"]
    plan = example_plan("team-service-stackref")
    reference = plan.get("pulumi:pulumi:StackReference", "platform")
    assert reference.inputs["name"] == PLATFORM_REF
    assert one(plan, "VirtualService", "resnet-int8")["spec"]["gateways"] == [platform["gateway"]]
    assert admitted_namespaces(one(plan, "NetworkPolicy", "resnet-int8")) == [
        platform["ingressNamespace"], platform["monitoringNamespace"]]
    rules = one(plan, "AuthorizationPolicy", "resnet-int8")["spec"]["rules"]
    assert rules[0]["from"][0]["source"]["principals"] == [platform["ingressPrincipal"]]
    weights = platform["weights"]["resnet"]
    deployment = one(plan, "Deployment", "resnet-int8-v1")
    assert deployment["metadata"]["namespace"] == "resnet"
    pod = deployment["spec"]["template"]["spec"]
    assert {"name": "models", "persistentVolumeClaim": {"claimName": weights["claimName"], "readOnly": True}} in pod["volumes"]
    assert f"--model-repository={weights['mountPath']}/resnet-int8/v1" in pod["containers"][0]["args"]


def test_team_service_reaches_the_cluster_with_the_platforms_secret_kubeconfig():
    outputs = stack_plan("demo-dev").outputs | {"kubeconfig": SECRET}
    directory = EXAMPLES / "team-service-stackref"
    config, secret_keys = stack_config(directory / "Pulumi.example.yaml", "team-service-stackref")
    plan = render_program(directory, "example", config, secret_keys, {PLATFORM_REF: outputs})
    provider = plan.get("pulumi:providers:kubernetes", "platform")
    assert provider.inputs["kubeconfig"] == SECRET
    assert reference_urn(plan) in provider.depends_on
    # demo-dev reaches its existing cluster through the ambient kubeconfig and exports none.
    assert "kubeconfig" not in example_plan("team-service-stackref").get("pulumi:providers:kubernetes", "platform").inputs


def reference_urn(plan: Plan) -> str:
    return plan.get("pulumi:pulumi:StackReference", "platform").urn


# --------------------------------------------------------------------------- the engine and the CLI


def _program(directory: Path, body: str) -> None:
    """A Python Pulumi project `reader` whose program is `body` (pulumi imported)."""
    (directory / "Pulumi.yaml").write_text("name: reader\nruntime: python\n")
    (directory / "__main__.py").write_text("import pulumi\n" + body)


def test_a_stack_reference_keeps_secret_outputs_secret(tmp_path: Path):
    _program(tmp_path,
             "ref = pulumi.StackReference('platform', pulumi.Config().require('platform'))\n"
             "for key in ('token', 'nested', 'plain'):\n"
             "    pulumi.export(key, ref.require_output(key).apply(lambda v: f'{v}+derived'))\n")
    outputs = {"token": SECRET, "nested": {"inner": SECRET}, "plain": "visible"}
    plan = render_program(tmp_path, "dev", {"platform": "org/p/dev"}, stack_outputs={"org/p/dev": outputs})
    # A secret output, or one holding a secret, stays secret through what is derived from it.
    assert plan.outputs == {"token": SECRET, "nested": SECRET, "plain": "visible+derived"}
    assert plan.get("pulumi:pulumi:StackReference", "platform").inputs["name"] == "org/p/dev"


def test_a_program_sees_its_own_project_and_config_namespace(tmp_path: Path):
    _program(tmp_path,
             "pulumi.export('project', pulumi.get_project())\n"
             "pulumi.export('setting', pulumi.Config().require('setting'))\n"
             "pulumi.export('context', pulumi.Config('kubernetes').require('context'))\n")
    plan = render_program(tmp_path, "dev", {"setting": {"a": 1}, "kubernetes:context": "lab"})
    assert plan.outputs == {"project": "reader", "setting": '{"a": 1}', "context": "lab"}


def test_cli_plans_an_example_and_names_a_missing_reference(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "platformctl", "plan-example", *args, "--out", str(tmp_path / "plan")],
                              cwd=ROOT, capture_output=True, text=True)

    result = run("examples/gpu-operator-existing-cluster")
    assert result.returncode == 0, result.stderr
    assert "resources in stack example" in result.stdout
    result = run("examples/team-service-stackref")
    assert result.returncode == 2
    assert f"the program references stack '{PLATFORM_REF}', whose outputs were not given" in result.stderr
    result = run("examples/team-service-stackref", "--reference", f"{PLATFORM_REF}=demo-dev")
    assert result.returncode == 0, result.stderr


def test_plan_example_writes_manifests_and_shows_the_awaits_and_the_policy_run_like_plan(tmp_path):
    out = tmp_path / "plan"
    result = subprocess.run([sys.executable, "-m", "platformctl", "plan-example", "examples/triton-on-existing-mesh",
                             "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert (out / ".platformctl-plan").is_file()
    assert json.loads((out / "resources.json").read_text())["resources"]
    deployment = yaml.safe_load((out / "manifests" / "deployment-vision-detector-v1.yaml").read_text())
    assert deployment["kind"] == "Deployment"
    assert "Deployment vision/detector-v1  1620s / 4320s    (customTimeouts)" in result.stdout
    assert "policy pack over program triton-on-existing-mesh" in result.stdout and "23 policies:" in result.stdout


def test_plan_example_refuses_an_out_directory_it_did_not_write(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    result = subprocess.run([sys.executable, "-m", "platformctl", "plan-example", "examples/weight-caches",
                             "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2
    assert "is not a plan written by platformctl" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
