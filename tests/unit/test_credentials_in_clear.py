"""Credentials never cross the network in clear in a production stack: a `basic` or `jwt` service
or graph needs `mesh.tls` there (settings/checks.py credentials_in_clear_problems); other stacks
plan with a `warning:` line unless they opt in with `mesh.allowPlainHttpCredentials`."""

from __future__ import annotations

import pytest

from inference_platform.serving.inputs import TritonServiceInputs
from inference_platform.settings.checks import credentials_in_clear_warnings
from inference_platform.settings.component_args import validated
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from platformctl.gpu_report import plan_warnings
from tests.conftest import base_config
from tests.unit.test_component_args import triton_args

STACK_FILE = "stacks/Pulumi.t.yaml"
TLS = {"enabled": True, "secretName": "test-tls"}
JWT = {"mode": "jwt", "jwt": {"issuer": "https://id.example.com", "jwksUri": "https://id.example.com/jwks", "audiences": ["svc"]}}


def stack(auth: dict, production: bool, **mesh) -> dict:
    raw = base_config() | {"production": production, "mesh": mesh}
    raw["services"][0]["auth"] = auth
    return raw


def refused(raw: dict) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_settings(raw, STACK_FILE)
    assert "\n" not in info.value.one_line().strip()
    return info.value


@pytest.mark.parametrize("auth, sent", [({"mode": "basic"}, "its Basic credential (a reusable password)"), (JWT, "its bearer token")])
def test_a_production_stack_refuses_a_credentialed_service_without_tls(auth, sent):
    err = refused(stack(auth, production=True))
    assert err.paths == ["inference-platform:services[svc].auth.mode"], err.one_line()
    assert f"without mesh.tls every request would send {sent} over plain HTTP, not allowed in a production stack; " \
           "allowed: mesh.tls.enabled with mesh.tls.secretName" in err.one_line()
    # With TLS the gateway serves HTTPS (port 80 redirects), and it plans.
    parse_settings(stack(auth, production=True, tls=TLS), STACK_FILE)


def test_a_production_stack_cannot_opt_into_plain_http_credentials():
    err = refused(stack({"mode": "basic"}, production=True, tls=TLS, allowPlainHttpCredentials=True))
    assert err.paths == ["inference-platform:mesh.allowPlainHttpCredentials"], err.one_line()
    assert "not allowed in a production stack; allowed: false (set mesh.tls)" in err.one_line()


@pytest.mark.parametrize("auth", [{"mode": "basic"}, JWT])
def test_a_non_production_stack_plans_with_a_warning_unless_it_opts_in(auth):
    settings = parse_settings(stack(auth, production=False), STACK_FILE)
    (warning,) = [w for w in plan_warnings(settings) if "auth.mode" in w]
    assert warning.startswith(f"warning: services[svc].auth.mode: {auth['mode']} without mesh.tls: every request sends ")
    assert "set mesh.tls.enabled and mesh.tls.secretName, or mesh.allowPlainHttpCredentials: true" in warning
    opted = parse_settings(stack(auth, production=False, allowPlainHttpCredentials=True), STACK_FILE)
    assert credentials_in_clear_warnings(opted) == []
    assert credentials_in_clear_warnings(parse_settings(stack(auth, production=False, tls=TLS), STACK_FILE)) == []


def test_an_open_service_sends_no_credential_to_warn_about():
    assert credentials_in_clear_warnings(parse_settings(stack({"mode": "none"}, production=False), STACK_FILE)) == []


@pytest.mark.parametrize("auth, path, message", [
    ({"mode": "basic"}, "service.auth.mode", "basic: without mesh.tls every request would send its Basic credential "
     "(a reusable password) over plain HTTP, not allowed in a production stack; allowed: mesh.tls: true"),
    ({"mode": "none"}, "service.auth.mode", "auth mode 'none' is not allowed in a production stack; allowed: basic, jwt"),
])
def test_triton_service_alone_in_production_refuses_what_a_production_stack_refuses(auth, path, message):
    args = triton_args()
    args["service"]["auth"] = auth
    with pytest.raises(ConfigError) as info:
        validated(TritonServiceInputs, args | {"production": True}, "TritonService")
    assert info.value.paths == [path], info.value.one_line()
    assert message in info.value.one_line()
    # Outside production, or with the gateway serving HTTPS for basic, the same arguments pass.
    validated(TritonServiceInputs, args, "TritonService")
    if auth["mode"] == "basic":
        validated(TritonServiceInputs, args | {"production": True, "mesh": {"tls": True}}, "TritonService")
