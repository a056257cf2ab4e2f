"""Who may reach what (platformctl/exposure.py), for every stack and every example program: a
host that requires a credential is reached neither without it nor with a wrong one, its valid
credential is served on some path and refused on none (a path no route serves is a 404), and a
production stack serves nothing over plain HTTP."""

from __future__ import annotations

import pytest
import yaml

from platformctl import exposure
from platformctl.engine import stack_settings
from tests.conftest import STACKS, stack_plan
from tests.plan.test_examples import EXAMPLES, PLANNED, example_plan

ENVOY_FILTER = "kubernetes:networking.istio.io/v1alpha3:EnvoyFilter"
POLICY = "kubernetes:security.istio.io/v1:AuthorizationPolicy"
# The ingress gateway each example's program names (its __main__.py `mesh`, or the platform's).
EXAMPLE_INGRESS = {"triton-on-existing-mesh": exposure.Ingress(
    "istio-ingress", exposure.PLATFORM_INGRESS.labels, "cluster.local/ns/istio-ingress/sa/istio-ingressgateway")}


def _reached(answer: str) -> bool:
    return answer.startswith((exposure.SERVED, exposure.FORWARDED))


def violations(rows: list[exposure.Row], auth: dict[str, exposure.Auth], production: bool) -> list[str]:
    found = []
    for row in rows:
        needs = auth.get(row.host, exposure.Auth("none")).mode != "none"
        if needs and row.credential in ("none", "wrong") and _reached(row.answer):
            found.append(f"{row.host}{row.path}: {row.answer} with credential {row.credential}")
        if needs and row.credential == "valid" and row.answer in ("401", "403"):
            found.append(f"{row.host}{row.path}: {row.answer} with the valid credential")
        if production and row.credential == "valid over plain HTTP" and _reached(row.answer):
            found.append(f"{row.host}{row.path}: {row.answer} over plain HTTP in production")
    for host, host_auth in auth.items():
        if host_auth.mode != "none" and not any(_reached(r.answer) for r in rows
                                                if r.host == host and r.credential == "valid"):
            found.append(f"{host}: the valid credential is served on no path")
    return found


def _stack(stack: str, drop=lambda r: False):
    settings = stack_settings(stack)
    auth = exposure.settings_auth(settings)
    rows = exposure.exposure([r for r in stack_plan(stack).resources if not drop(r)], auth)
    return rows, auth, settings.production


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_lets_in_only_what_its_auth_says(stack):
    rows, auth, production = _stack(stack)
    assert violations(rows, auth, production) == []
    assert {r.host for r in rows} >= set(auth), "every service and graph host has rows"


def _example_auth(name: str) -> dict[str, exposure.Auth]:
    config = yaml.safe_load((EXAMPLES / name / "Pulumi.example.yaml").read_text())["config"]
    service = config.get(f"{name}:service")
    if service is None:
        return {}
    mode = (service.get("auth") or {}).get("mode", "basic")
    return {host: exposure.Auth(mode, user=service["name"] if mode == "basic" else "") for host in service["hosts"]}


@pytest.mark.parametrize("name", sorted(PLANNED))
def test_every_example_lets_in_only_what_its_auth_says(name):
    auth = _example_auth(name)
    rows = exposure.exposure(example_plan(name).resources, auth, EXAMPLE_INGRESS.get(name, exposure.PLATFORM_INGRESS))
    assert violations(rows, auth, production=False) == []
    assert {r.host for r in rows} == set(auth)


def test_without_the_basic_auth_filter_the_gateway_fails_closed_and_the_valid_credential_is_refused():
    rows, auth, production = _stack("acme-prod", drop=lambda r: r.type == ENVOY_FILTER)
    found = violations(rows, auth, production)
    assert "embed.acme.example.com: the valid credential is served on no path" in found
    assert "embed.acme.example.com/v2/health/ready: 403 with the valid credential" in found
    assert not [v for v in found if v.endswith(("credential none", "credential wrong"))]


def test_without_the_basic_auth_filter_and_its_deny_policy_a_wrong_password_is_served():
    rows, auth, production = _stack("acme-prod", drop=lambda r: r.type == ENVOY_FILTER or (
        r.type == POLICY and r.inputs["metadata"]["namespace"] == "istio-system"))
    assert any(v.startswith("embed.acme.example.com/v2/health/ready: served") and v.endswith("credential wrong")
               for v in violations(rows, auth, production))


def test_without_the_jwt_policies_a_request_without_a_token_is_served():
    rows, auth, production = _stack("acme-prod", drop=lambda r: r.type == POLICY and r.inputs["metadata"]["namespace"] == "llm-chat")
    assert any("chat.acme.example.com" in v and "credential none" in v for v in violations(rows, auth, production))


def test_a_production_stack_that_served_plain_http_breaks_the_rules():
    rows, auth, _ = _stack("demo-dev")
    assert any("over plain HTTP in production" in v for v in violations(rows, auth, production=True))


def test_the_serving_page_shows_the_documented_stacks_table(capsys):
    from platformctl.__main__ import main
    from tests.conftest import ROOT

    page = (ROOT / "docs" / "serving.md").read_text()
    shown = page.split("<!-- exposure:begin -->\n", 1)[1].split("<!-- exposure:end -->", 1)[0]
    rows, _, _ = _stack(exposure.DOCUMENTED_STACK)
    assert shown == exposure.table(rows)
    assert main(["exposure", exposure.DOCUMENTED_STACK]) == 0
    assert capsys.readouterr().out == shown


def test_a_root_namespace_policy_without_a_selector_applies_to_every_gateway_and_pod():
    import copy
    import dataclasses

    plan = stack_plan("acme-prod")
    (template,) = [r for r in plan.resources if r.type == POLICY and r.inputs["metadata"]["namespace"] == "istio-system"]
    inputs = copy.deepcopy(template.inputs)
    inputs["metadata"]["name"] = "deny-all"
    inputs["spec"] = {"action": "DENY", "rules": [{}]}
    deny_all = dataclasses.replace(template, urn=template.urn + "-deny-all", name="deny-all", inputs=inputs)
    settings = stack_settings("acme-prod")
    rows = exposure.exposure([*plan.resources, deny_all], exposure.settings_auth(settings))
    served = {r.host for r in rows if _reached(r.answer)}
    assert served == set(), served
