"""How a bad stack file is reported: config namespaces, key paths by name, one line per problem,
secrets with their offline `secure:` form."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import pytest

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import settings_from_config
from inference_platform.settings.namespaces import KNOWN_NAMESPACES
from tests.conftest import base_config

STACK_FILE = "stacks/Pulumi.test-dev.yaml"


def engine_config(raw: dict, **extra) -> dict[str, str]:
    """Config as the engine passes it: `inference-platform:<key>` -> text or JSON text, plus `extra` keys as written."""
    config = {f"inference-platform:{k}": v if isinstance(v, str) else json.dumps(v) for k, v in raw.items()}
    return config | extra


def refused(config: dict[str, str], secret_keys=()) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        settings_from_config(config, secret_keys, STACK_FILE)
    return info.value


# --------------------------------------------------------------------------- namespaces


@pytest.mark.parametrize("written", ["inference-platfrom:production", "Inference-Platform:production",
                                     "inference-platform-:production", "inference:production", "inferenceplatform:production"])
def test_a_project_key_under_a_misspelt_namespace_is_refused_naming_the_right_key(written):
    err = refused(engine_config(base_config(), **{written: "true"}))
    assert err.paths == [written]
    (line,) = err.lines()
    assert "did you mean `inference-platform:production`?" in line
    assert "pulumi, kubernetes, openstack, random, aws" in line


def test_an_unknown_key_under_a_misspelt_namespace_names_the_closest_project_key():
    err = refused(engine_config(base_config(), **{"inference-platfrom:producton": "true"}))
    assert "did you mean `inference-platform:production`?" in err.lines()[0]


@pytest.mark.parametrize("written", ["pulumi:tags", "kubernetes:context", "openstack:authUrl", "random:x", "aws:region",
                                     "mycompany:owner", "mycompany:production", "acme:customer"])
def test_provider_and_unrelated_namespaces_are_left_to_their_owners(written):
    settings = settings_from_config(engine_config(base_config(), **{written: "x"}), (), STACK_FILE)
    assert settings.production is False


def test_every_provider_package_the_program_uses_has_its_namespace_known():
    # A provider reads its config under its plugin name (pulumi-plugin.json "name").
    requirements = metadata.requires("inference-platform") or []
    providers = [r.split("==")[0].split(">")[0].strip() for r in requirements if r.startswith("pulumi-")]
    assert providers, requirements
    for dist in providers:
        files = metadata.files(dist) or []
        (plugin,) = [f for f in files if f.name == "pulumi-plugin.json"]
        name = json.loads(Path(plugin.locate()).read_text())["name"]
        assert name in KNOWN_NAMESPACES, dist
    assert {"pulumi", "kubernetes", "openstack", "random", "aws"} <= set(KNOWN_NAMESPACES)


def test_a_missing_required_key_points_at_the_misspelt_key_in_the_file():
    raw = base_config()
    customer = raw.pop("customer")
    err = refused(engine_config(raw, **{"inference-platfrom:customer": customer}))
    assert err.paths == ["inference-platfrom:customer", "inference-platform:customer"]
    assert "required key is missing (the file has `inference-platfrom:customer`" in err.lines()[1]


# --------------------------------------------------------------------------- key paths and lines


def _two_services() -> dict:
    raw = base_config()
    svc = raw["services"][0]
    v1 = dict(svc["versions"][0], weight=90)
    resnet = dict(svc, name="resnet", namespace="resnet", hosts=["resnet.example.com"],
                  versions=[v1, dict(v1, name="v2", weight=10)])
    raw["services"] = [svc, resnet]
    return raw


def test_key_paths_name_services_and_versions():
    raw = _two_services()
    raw["services"][1]["versions"][1]["weight"] = "ten"
    err = refused(engine_config(raw))
    assert err.paths == ["inference-platform:services[resnet].versions[v2].weight"]


def test_key_paths_fall_back_to_the_position_where_an_item_has_no_name_of_its_own():
    raw = _two_services()
    raw["services"][1]["versions"][1]["name"] = "v1"  # two versions named v1: neither names itself alone
    raw["services"][1]["versions"][0]["weight"] = 101
    err = refused(engine_config(raw))
    assert "inference-platform:services[resnet].versions[0].weight" in err.paths


def test_several_problems_give_one_complete_line_each():
    raw = _two_services()
    raw["services"][1]["versions"][1]["weight"] = "ten"
    raw["services"][0]["timeoutSeconds"] = "slow"
    err = refused(engine_config(raw))
    lines = err.lines()
    assert len(lines) == 2
    for line in lines:
        assert line.startswith(f"{STACK_FILE}: invalid configuration: inference-platform:services[")
        assert "\n" not in line
    assert str(err).splitlines() == lines


# --------------------------------------------------------------------------- secrets


def test_a_plain_secret_shows_the_offline_secure_form_and_the_cli_command():
    err = refused(engine_config(base_config(), **{"inference-platform:kubeconfig": "apiVersion: v1"}))
    (line,) = err.lines()
    assert "`kubeconfig: {secure: <any text>}` under config: in the stack file" in line
    assert "`pulumi config set --secret kubeconfig ...`" in line


def test_the_offline_secure_form_the_secret_error_shows_is_accepted():
    from platformctl.engine import engine_config as from_stack_file

    config, secret_keys = from_stack_file(base_config() | {"kubeconfig": {"secure": "<any text>"}})
    settings = settings_from_config(config, secret_keys, STACK_FILE)
    assert settings.kubeconfig is not None


def test_a_null_value_names_its_key():
    raw = base_config()
    raw["services"][0]["versions"][0]["replicas"] = None
    line = refused(engine_config(raw)).one_line()
    assert "services[svc].versions[v1]: replicas: null is not a value; remove the key to use its default" in line


def test_every_unknown_key_is_named_beside_the_other_errors_of_its_mapping():
    # An unknown key used to hide every other problem of the mapping it sits in, and the next unknown key.
    raw = base_config()
    version = raw["services"][0]["versions"][0]
    version |= {"weight": 150, "maxReplica": 3, "modelRepositry": version.pop("modelRepository")}
    err = refused(engine_config(raw))
    at = "inference-platform:services[svc].versions[v1]"
    assert err.paths == [f"{at}.weight", f"{at}.modelRepository", f"{at}.maxReplica", f"{at}.modelRepositry"]
    lines = err.lines()
    assert "required key is missing" in lines[1]
    # The stack file's own spelling in the keys allowed.
    assert lines[2].endswith(": unknown key; allowed keys here: autoscaling, gpu, image, llm, llmBackend, modelConfigName, "
                             "modelControl, modelLoadSeconds, modelRepository, name, provenance, replicas, resources, "
                             "serverArgs, startupBudgetSeconds, tuning, weight"), lines[2]


def test_a_bare_key_beside_its_namespaced_form_is_refused_naming_both(tmp_path):
    from platformctl.engine import stack_config

    stack_file = tmp_path / "Pulumi.globex-staging.yaml"
    stack_file.write_text("config:\n  inference-platform:customer: globex\n  customer: initech\n")
    with pytest.raises(ConfigError) as err:
        stack_config(stack_file)
    assert err.value.lines() == [
        f"{stack_file}: invalid configuration: customer: the same key as 'inference-platform:customer' to the Pulumi "
        "engine, which would keep only the later value; allowed: one of the two"]
