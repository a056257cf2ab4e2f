"""Model configs the platform writes: a graph's Triton ensemble, checked with Triton's own
ModelConfig protobuf, and TritonService serving configs as a second model repository."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import pytest
from google.protobuf import text_format

from inference_platform.serving.model_config import ModelConfigError, ensemble_config, model_config_pb2, parse_model_config
from inference_platform.serving.triton import TritonService
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.graphs import Graph
from platformctl import engine
from platformctl.diff import diff_plans
from platformctl.plan import manifest
from tests.support import conformance

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
IMAGE = "nvcr.io/nvidia/tritonserver:25.01-py3"
GPU_GROUP = {"name": "gpu", "min_nodes": 1, "max_nodes": 2, "selector": {"pool": "gpu"}, "gpu": {"model": "L4-24GB"}}


def speech_to_image(size: int = 512) -> Graph:
    def step(name: str, model: str, inputs: dict, outputs: dict) -> dict:
        return {"name": name, "model": model, "image": IMAGE, "modelRepository": {"cache": "fileShare", "path": "s2i"},
                "gpu": {"group": "gpu"}, "inputs": inputs, "outputs": outputs}

    return Graph.model_validate({
        "name": "speech2img",
        "hosts": ["s2i.example.com"],
        "inputs": [{"name": "AUDIO", "dataType": "TYPE_FP32", "dims": [-1]}],
        "outputs": [{"name": "IMAGE", "dataType": "TYPE_UINT8", "dims": [size, size, 3]}],
        "steps": [step("whisper", "whisper_large", {"audio": "AUDIO"}, {"text": "TRANSCRIPT"}),
                  step("diffusion", "stable_diffusion", {"prompt": "TRANSCRIPT"}, {"image": "IMAGE"})],
    })


def test_a_two_step_graphs_ensemble_is_tritons_model_config():
    text = ensemble_config(speech_to_image())
    config = parse_model_config(text, "speech2img")
    assert isinstance(config, model_config_pb2.ModelConfig)
    assert (config.name, config.platform, config.max_batch_size) == ("speech2img", "ensemble", 0)
    assert [(t.name, model_config_pb2.DataType.Name(t.data_type), list(t.dims)) for t in config.input] == [
        ("AUDIO", "TYPE_FP32", [-1])]
    assert [(t.name, model_config_pb2.DataType.Name(t.data_type), list(t.dims)) for t in config.output] == [
        ("IMAGE", "TYPE_UINT8", [512, 512, 3])]
    steps = [(s.model_name, s.model_version, dict(s.input_map), dict(s.output_map))
             for s in config.ensemble_scheduling.step]
    # In order; the transcript passes between the steps without being declared.
    assert steps == [("whisper_large", -1, {"audio": "AUDIO"}, {"text": "TRANSCRIPT"}),
                     ("stable_diffusion", -1, {"prompt": "TRANSCRIPT"}, {"image": "IMAGE"})]
    # Canonical text: printing the parsed message gives the same text back.
    assert text_format.MessageToString(config) == text


def test_a_broken_config_is_refused_on_one_line_naming_where_and_the_position():
    with pytest.raises(ModelConfigError) as info:
        parse_model_config('name: "a"\nplatfrom: "ensemble"\n', "models/a/config.pbtxt")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("models/a/config.pbtxt: invalid Triton model config: 2:1 : ")
    assert 'has no field named "platfrom"' in message


def version(name: str, weight: int) -> dict:
    return {"name": name, "image": IMAGE, "weight": weight,
            "model_repository": {"cache": "fileShare", "path": f"s2i/{name}"}, "gpu": {"group": "gpu"}}


def service_args(model_configs: dict[str, str], **version_extra) -> dict:
    service = {"name": "s2i", "namespace": "graphs", "hosts": ["s2i.example.com"],
               "versions": [version("v1", 90) | version_extra, version("v2", 10)]}
    return {"service": service, "gpu_groups": [GPU_GROUP], "weights": {"claim_name": "model-weights"},
            "model_configs": model_configs}


def render(args: dict) -> engine.Plan:
    def program():
        provider = k8s.Provider("k8s")
        TritonService("s2i", args, pulumi.ResourceOptions(providers={"kubernetes": provider}))

    return engine._run("alone", {}, [], program)


def args_error(args: dict) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        render(args)
    assert info.value.stack_file == "TritonServiceArgs"
    return info.value


def test_the_service_refuses_a_config_triton_cannot_read_naming_the_model():
    err = args_error(service_args({"speech2img": 'name: "speech2img"\ninput { dims: [1 }\n'}))
    assert err.paths == ["model_configs.speech2img"]
    assert "\n" not in err.one_line() and ": 2:" in err.one_line()


def test_the_service_refuses_a_config_named_for_another_model():
    err = args_error(service_args({"speech2img": 'name: "other"\nplatform: "ensemble"\n'}))
    assert err.paths == ["model_configs"]
    assert "the config of model 'speech2img' names model 'other'" in err.one_line()


def test_server_args_cannot_add_a_model_repository():
    err = args_error(service_args({}, server_args={"model-repository": "/elsewhere"}))
    assert "Triton flag 'model-repository' is not allowed here" in err.one_line()


def test_model_configs_are_a_configmap_mounted_as_a_second_repository_in_every_version():
    text = ensemble_config(speech_to_image())
    plan = render(service_args({"speech2img": text, "upscale": 'backend: "python"\n'}))
    (config_map,) = plan.of_type(CONFIG_MAP)
    meta = config_map.inputs["metadata"]
    assert meta["name"].startswith("s2i-model-configs-") and meta["namespace"] == "graphs"
    (service,) = plan.of_type("kubernetes:core/v1:Service")
    assert meta["labels"] == service.inputs["metadata"]["labels"]
    assert config_map.inputs["data"]["speech2img.pbtxt"] == text
    docs = [manifest(config_map)]
    for name in ("s2i-v1", "s2i-v2"):
        deployment = plan.get(DEPLOYMENT, name)
        assert config_map.urn in deployment.depends_on
        pod = deployment.inputs["spec"]["template"]["spec"]
        (volume,) = [v for v in pod["volumes"] if v["name"] == "model-configs"]
        assert volume["configMap"] == {"name": meta["name"], "items": [
            {"key": "speech2img.pbtxt", "path": "speech2img/config.pbtxt"},
            {"key": "version-note", "path": "speech2img/1/README"},
            {"key": "upscale.pbtxt", "path": "upscale/config.pbtxt"},
            {"key": "version-note", "path": "upscale/1/README"}]}
        (triton,) = pod["containers"]
        # Each model directory by itself: the volume's root holds the kubelet's `..data`.
        assert [m for m in triton["volumeMounts"] if m["name"] == "model-configs"] == [
            {"name": "model-configs", "mountPath": f"/model-configs/{m}", "subPath": m, "readOnly": True}
            for m in ("speech2img", "upscale")]
        repositories = [a for a in triton["args"] if a.startswith("--model-repository=")]
        assert repositories == [f"--model-repository=/models/s2i/{name.removeprefix('s2i-')}",
                                "--model-repository=/model-configs"]
        docs.append(manifest(deployment))
    for doc in docs:
        conformance.validate_core(doc)


def test_without_model_configs_there_is_no_configmap_and_one_repository():
    plan = render(service_args({}))
    assert plan.of_type(CONFIG_MAP) == []
    triton = plan.get(DEPLOYMENT, "s2i-v1").inputs["spec"]["template"]["spec"]["containers"][0]
    assert [a for a in triton["args"] if a.startswith("--model-repository=")] == ["--model-repository=/models/s2i/v1"]
    assert all(m["name"] != "model-configs" for m in triton["volumeMounts"])


def test_a_config_change_rolls_the_versions_onto_a_new_configmap_and_replaces_no_deployment():
    before = render(service_args({"speech2img": ensemble_config(speech_to_image(512))})).to_json()
    after = render(service_args({"speech2img": ensemble_config(speech_to_image(768))})).to_json()
    d = diff_plans(before, after)
    assert d["added"] == d["removed"] == d["errors"] == []
    changes = {c.key.rsplit("::", 1)[1]: c for c in d["changes"]}
    assert sorted(changes) == ["s2i-model-configs", "s2i-v1", "s2i-v2"]
    # A ConfigMap's data replaces it; under a new name it is created before the old one goes.
    config_map = changes["s2i-model-configs"]
    assert config_map.action == "replace" and not config_map.delete_first
    for name in ("s2i-v1", "s2i-v2"):
        (deployment,) = [r for r in after["resources"] if r["type"] == DEPLOYMENT and r["name"] == name]
        volumes = deployment["inputs"]["spec"]["template"]["spec"]["volumes"]
        index = next(i for i, v in enumerate(volumes) if v["name"] == "model-configs")
        # Only the pod template's reference to the ConfigMap changes: a rollout, no replacement.
        assert changes[name].action == "update"
        assert changes[name].paths == [f"inputs.spec.template.spec.volumes[{index}].configMap.name"]
