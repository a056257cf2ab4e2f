"""A production stack names the audiences of each JWT service: without them the gateway would accept
any token its issuer signs, whatever service it was meant for."""

from __future__ import annotations

import pytest

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from tests.conftest import base_config

JWT = {"issuer": "https://idp.example.com/", "jwksUri": "https://idp.example.com/jwks"}


def _stack(production: bool, **jwt) -> dict:
    raw = base_config()
    raw["production"] = production
    raw["mesh"] = {"tls": {"enabled": True, "secretName": "wildcard"}}
    raw["services"][0]["auth"] = {"mode": "jwt", "jwt": {**JWT, **jwt}}
    return raw


def test_a_production_jwt_service_without_audiences_is_refused_in_one_line():
    with pytest.raises(ConfigError) as info:
        parse_settings(_stack(True), "stacks/Pulumi.test-dev.yaml")
    assert info.value.paths == ["inference-platform:services[svc].auth.jwt.audiences"]
    line = info.value.one_line()
    assert "\n" not in line.strip() and "required in a production stack" in line and "allowed:" in line


def test_audiences_in_production_or_none_outside_it_plan():
    assert parse_settings(_stack(True, audiences=["svc"]), "stacks/Pulumi.test-dev.yaml").production
    assert not parse_settings(_stack(False), "stacks/Pulumi.test-dev.yaml").production
