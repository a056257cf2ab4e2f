"""The stack's identity: its name against `customer` and `environment`, and a production-named
environment against `production` (settings/identity.py)."""

from __future__ import annotations

import contextlib
import io

import pytest
import yaml

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.identity import production_named
from inference_platform.settings.loader import parse_settings
from platformctl.__main__ import main
from tests.conftest import ROOT, base_config


def _parsed(stack, **keys):
    raw = base_config() | keys
    if raw.get("production"):  # a production stack serves its Basic credentials over HTTPS only
        raw["mesh"] = {**raw.get("mesh", {}), "tls": {"enabled": True, "secretName": "test-tls"}}
    return parse_settings(raw, f"stacks/Pulumi.{stack}.yaml", stack=stack)


def _refused(stack, **keys) -> str:
    with pytest.raises(ConfigError) as info:
        _parsed(stack, **keys)
    (line,) = info.value.lines()
    return line


def test_another_customer_inside_a_stack_file_is_refused_naming_the_key_and_the_fix():
    line = _refused("globex-staging", customer="initech", environment="staging")
    assert line.startswith("stacks/Pulumi.globex-staging.yaml: invalid configuration: inference-platform:customer: "
                           "'initech': the stack name 'globex-staging' is not `<customer>-<environment>`"), line
    assert "allowed: customer 'globex', or the stack 'initech-staging'" in line


def test_another_environment_is_refused_on_the_environment_key():
    line = _refused("globex-staging", customer="globex", environment="prod", production=True)
    assert "inference-platform:environment: 'prod': the stack name 'globex-staging'" in line
    assert "allowed: environment 'staging', or the stack 'globex-prod'" in line


def test_both_wrong_names_the_split_of_the_stack_name():
    line = _refused("globex-staging", customer="initech", environment="dev")
    assert "inference-platform:customer: 'initech' (environment 'dev')" in line
    assert "allowed: customer 'globex' and environment 'staging', or the stack 'initech-dev'" in line


@pytest.mark.parametrize("stack,customer,environment", [
    ("globex-staging", "globex", "staging"),
    ("acme-prod-eu", "acme", "prod"),  # a variant: `<customer>-<environment>-<suffix>`
    ("big-corp-dev", "big-corp", "dev"),  # a customer with a '-'
    ("race", "initech", "dev"),  # no '-': the name says nothing of either
    ("dev", "initech", "staging"),
])
def test_stack_names_that_agree_or_claim_nothing_plan(stack, customer, environment):
    s = _parsed(stack, customer=customer, environment=environment, production=environment == "prod")
    assert (s.customer, s.environment) == (customer, environment)


def test_a_component_used_alone_has_no_stack_name_to_check():
    assert parse_settings(base_config() | {"customer": "initech"}, "InferencePlatformArgs").customer == "initech"


def test_the_plan_refuses_a_stack_file_of_another_customer_in_one_line(tmp_path):
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.demo-dev.yaml").read_text())
    doc["config"]["inference-platform:customer"] = "initech"
    stack_file = tmp_path / "Pulumi.globex-dev.yaml"
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["plan", "globex-dev", "--stack-file", str(stack_file), "--out", str(tmp_path / "out")])
    lines = err.getvalue().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert "inference-platform:customer: 'initech': the stack name 'globex-dev'" in lines[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("environment", ["prod", "production", "prd", "prod-eu", "production-2"])
def test_a_production_named_environment_with_production_false_is_refused(environment):
    line = _refused(f"test-{environment}", environment=environment, production=False)
    assert f"inference-platform:production: false in environment {environment!r}, whose name says production" in line
    assert "allowed: true, or keep false and say why in nonProductionReason" in line


def test_production_is_refused_also_when_the_key_is_absent():
    raw = base_config() | {"environment": "prod"}
    raw.pop("production", None)
    with pytest.raises(ConfigError, match="inference-platform:production: false in environment 'prod'"):
        parse_settings(raw, "stacks/Pulumi.test-prod.yaml", stack="test-prod")


def test_a_reason_keeps_a_production_named_environment_unprotected():
    s = _parsed("test-prod", environment="prod", production="false", nonProductionReason="load-test copy, no customer data")
    assert s.production is False and s.non_production_reason == "load-test copy, no customer data"


def test_a_reason_beside_production_true_is_refused():
    line = _refused("test-prod", environment="prod", production=True, nonProductionReason="why not")
    assert "inference-platform:nonProductionReason: contradicts production: true" in line


@pytest.mark.parametrize("reason", ["", "   ", "two\nlines"])
def test_an_empty_or_multiline_reason_is_refused(reason):
    line = _refused("test-prod", environment="prod", nonProductionReason=reason)
    assert "inference-platform:nonProductionReason:" in line and "1-200 characters on one line" in line


@pytest.mark.parametrize("environment", ["preprod", "prod2", "nonprod", "dev", "staging", "products"])
def test_other_environments_are_not_production_named(environment):
    assert not production_named(environment)
    assert _parsed(f"test-{environment}", environment=environment).production is False
