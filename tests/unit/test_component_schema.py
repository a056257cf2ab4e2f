"""The component plugin's schema, as the Pulumi SDK infers it for `pulumi package add`.

The SDK's own analyzer (the code `component_provider_host` runs) reads the hosted
components; the schema it derives is what other languages' SDKs are generated from.
"""

import json

import pulumi
import pytest
import yaml
from pulumi.provider.experimental.component import ComponentProvider

from inference_platform import PACKAGE, VERSION, component_classes
from platformctl import args_codegen, engine
from platformctl.engine import ROOT

COMPONENTS = component_classes()

# Keys whose value takes one of several shapes; the schema has no unions, so they are `Any`.
UNION_KEYS = {("GpuSharingArgs", "migProfile"), ("VersionArgs", "serverArgs")}


@pytest.fixture(scope="module")
def schema() -> dict:
    provider = ComponentProvider(COMPONENTS, PACKAGE, version=VERSION)
    return json.loads(provider.schema)


def _token(name: str) -> str:
    return f"{PACKAGE}:index:{name}"


def _properties(schema: dict):
    """(owner, property name, property spec) of every component input, output and type property."""
    for token, resource in schema["resources"].items():
        for kind in ("inputProperties", "properties"):
            for prop, spec in (resource.get(kind) or {}).items():
                yield token, prop, spec
    for token, typ in schema["types"].items():
        for prop, spec in (typ.get("properties") or {}).items():
            yield token, prop, spec


def test_every_component_is_in_the_schema_with_its_arguments(schema):
    assert set(schema["resources"]) == {_token(c.__name__) for c in COMPONENTS}
    for component, model in args_codegen.COMPONENT_MODELS.items():
        resource = schema["resources"][_token(component)]
        assert resource["isComponent"] is True
        assert resource["description"], component
        fields = {f.alias or n for n, f in model.model_fields.items()}
        assert set(resource["inputProperties"]) == fields, component
        required = {f.alias or n for n, f in model.model_fields.items() if f.is_required()}
        assert set(resource.get("requiredInputs") or []) == required, component


def test_every_input_output_and_type_is_documented(schema):
    missing = [f"{owner}.{prop}" for owner, prop, spec in _properties(schema) if not spec.get("description")]
    assert missing == []
    assert [t for t, spec in schema["types"].items() if not spec.get("description")] == []


def test_types_are_as_the_settings_declare_them(schema):
    types = schema["types"]
    version = types[_token("VersionArgs")]["properties"]
    assert version["weight"]["type"] == "integer"
    assert version["image"]["type"] == "string"
    assert version["gpu"]["$ref"] == f"#/types/{_token('GpuRequestArgs')}"
    service = types[_token("ServiceArgs")]["properties"]
    assert service["timeoutSeconds"]["type"] == "number"
    assert service["versions"]["type"] == "array"
    assert service["versions"]["items"]["$ref"] == f"#/types/{_token('VersionArgs')}"
    triton = schema["resources"][_token("TritonService")]["inputProperties"]
    assert triton["gpuGroups"]["items"]["$ref"] == f"#/types/{_token('NodeGroupArgs')}"
    assert triton["mesh"]["$ref"] == f"#/types/{_token('MeshRefArgs')}"
    mesh = types[_token("MeshRefArgs")]["properties"]
    assert mesh["tls"]["type"] == "boolean"
    # Names another stack or component hands over may be outputs there: not plain.
    assert "plain" not in mesh["gateway"]
    assert triton["service"].get("plain") is True
    # A Literal is a string whose description names the choices.
    assert "`basic`" in types[_token("AuthSettingsArgs")]["properties"]["mode"]["description"]


def test_choice_fields_are_literals_in_python_and_strings_in_the_schema(schema):
    cluster = schema["types"][_token("ClusterSettingsArgs")]["properties"]["mode"]
    assert cluster["type"] == "string" and "$ref" not in cluster
    assert "`existing`, `magnum`" in cluster["description"]
    args_text = args_codegen.ARGS_FILE.read_text()
    assert '    mode: NotRequired[Literal["existing", "magnum"]]\n' in args_text
    assert '    effect: NotRequired[Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]]\n' in args_text


def test_no_any_where_a_type_is_known(schema):
    anys = {(token.split(":")[-1], prop) for token, prop, spec in _properties(schema)
            if "pulumi.json#/Any" in json.dumps(spec)}
    assert anys == UNION_KEYS


def test_component_outputs_are_typed(schema):
    triton = schema["resources"][_token("TritonService")]["properties"]
    assert triton["urls"]["type"] == "array"
    platform = schema["resources"][_token("InferencePlatform")]["properties"]
    assert "kubeconfig" in platform


def test_generated_arguments_are_current():
    assert args_codegen.ARGS_FILE.read_text() == args_codegen.generate()


def test_plugin_manifest_names_the_host_entry_point():
    manifest = yaml.safe_load((ROOT / "PulumiPlugin.yaml").read_text())
    assert manifest["runtime"]["name"] == "python"
    entry = (ROOT / manifest["main"]).read_text()
    assert "component_provider_host(component_classes(), PACKAGE" in entry


def test_a_hosted_construct_maps_schema_inputs_onto_the_component():
    """What another language's program sends (camelCase inputs, as the engine passes them to
    the plugin's Construct) builds the same TritonService a Python program would."""
    provider = ComponentProvider(COMPONENTS, PACKAGE, version=VERSION)
    inputs = {
        "service": {"name": "chat", "hosts": ["chat.example.com"], "auth": {"mode": "none"},
                    "versions": [{"name": "v1", "image": "nvcr.io/nvidia/tritonserver:25.01-py3", "weight": 100,
                                  "modelRepository": {"cache": "s3", "path": "chat/v1"},
                                  "gpu": {"group": "gpu"}}]},
        "gpuGroups": [{"name": "gpu", "minNodes": 1, "maxNodes": 2, "gpu": {"model": "L4-24GB"}}],
        "weights": {"s3SecretName": "model-weights-s3", "s3Endpoint": "https://s3.example.com", "s3Bucket": "weights"},
    }

    def program():
        k8s_provider = __import__("pulumi_kubernetes").Provider("k8s")
        provider.construct("chat", _token("TritonService"), inputs,
                           pulumi.ResourceOptions(providers={"kubernetes": k8s_provider}))

    plan = engine._run("hosted", {}, [], program)
    (deployment,) = plan.of_type("kubernetes:apps/v1:Deployment")
    container = deployment.inputs["spec"]["template"]["spec"]["containers"][0]
    assert "--model-repository=s3://https://s3.example.com:443/weights/chat/v1" in container["args"]

