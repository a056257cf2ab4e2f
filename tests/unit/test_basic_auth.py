"""Basic Auth at the gateway: the htpasswd the EnvoyFilter carries, checked as Envoy checks it,
and the gateway's DENY policy that refuses whatever the filter did not accept (fail closed)."""

from __future__ import annotations

import base64

import pytest

from inference_platform.mesh.basic_auth import (
    BASIC_AUTH_PER_ROUTE_TYPE,
    PLACEHOLDER_HTPASSWD,
    envoy_filter_spec,
    gateway_policy_spec,
    htpasswd_line,
)
from inference_platform.serving.triton import virtual_service_spec
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from platformctl import mesh_eval
from tests.conftest import base_config

HOST = "svc.example.com"
INFER = "/v2/models/m/infer"
# A rotation: generation 1 (`svc`) still accepted beside generation 2 (`svc-g2`).
HTPASSWD = htpasswd_line("svc", "old-password") + "\n" + htpasswd_line("svc-g2", "new-password") + "\n"
FILTER = envoy_filter_spec("inference-platform.basic-auth.ns.svc", [HOST], HTPASSWD)
POLICY = gateway_policy_spec([HOST], "svc")


def envoy_accepts(htpasswd: str, authorization: str) -> bool:
    return mesh_eval.basic_auth_filter(htpasswd, "", {"authorization": authorization}) is not None


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def test_the_gateway_accepts_both_generations_during_a_rotation_and_nothing_else():
    htpasswd = htpasswd_line("svc", "old-password") + "\n" + htpasswd_line("svc-g2", "new-password") + "\n"
    spec = envoy_filter_spec("inference-platform.basic-auth.ns.svc", ["svc.example.com"], htpasswd)
    insert, enable = spec["configPatches"]
    listener_users = insert["patch"]["value"]["typed_config"]["users"]["inline_string"]
    per_host = enable["patch"]["value"]["typed_per_filter_config"]["inference-platform.basic-auth.ns.svc"]["config"]
    assert per_host["@type"] == BASIC_AUTH_PER_ROUTE_TYPE
    assert listener_users == PLACEHOLDER_HTPASSWD
    users = per_host["users"]["inline_string"]
    assert envoy_accepts(users, basic("svc", "old-password"))
    assert envoy_accepts(users, basic("svc-g2", "new-password"))
    assert not envoy_accepts(users, basic("svc-g2", "old-password"))
    assert not envoy_accepts(users, basic("svc", "new-password"))
    assert "old-password" not in users and "new-password" not in users


def test_the_filter_is_off_by_default_and_on_for_every_host_of_the_service():
    spec = envoy_filter_spec("f", ["a.example.com", "b.example.com"], htpasswd_line("svc", "pw"))
    insert, *enable = spec["configPatches"]
    assert insert["patch"]["value"]["disabled"] is True
    # First of the gateway's HTTP filters, so it has rewritten the header before Istio's RBAC runs.
    assert insert["patch"]["operation"] == "INSERT_FIRST"
    assert insert["patch"]["value"]["typed_config"]["forward_username_header"] == "authorization"
    assert [p["match"]["routeConfiguration"]["vhost"] for p in enable] == [{"domainName": "a.example.com"},
                                                                         {"domainName": "b.example.com"}]
    assert all(p["match"]["context"] == "GATEWAY" for p in spec["configPatches"])


@pytest.mark.parametrize("rotation, message", [
    ({"generation": 2, "previous": 2}, "basic.previous 2 must be lower than basic.generation 2"),
    ({"generation": 1, "previous": 3}, "basic.previous 3 must be lower than basic.generation 1"),
    ({"generation": 0}, "generation"),
])
def test_a_rotation_whose_previous_generation_is_not_earlier_is_refused(rotation, message):
    raw = base_config()
    raw["services"][0]["auth"] = {"mode": "basic", "basic": rotation}
    with pytest.raises(ConfigError) as err:
        parse_settings(raw, "stacks/Pulumi.t.yaml")
    assert message in str(err.value) and "auth" in str(err.value)
    assert "\n" not in str(err.value).strip()


def test_rotation_settings_belong_to_basic_auth_only():
    raw = base_config()
    raw["services"][0]["auth"] = {"mode": "none", "basic": {"generation": 2}}
    with pytest.raises(ConfigError, match="basic applies to mode 'basic' only"):
        parse_settings(raw, "stacks/Pulumi.t.yaml")


def routes() -> dict:
    return virtual_service_spec(parse_settings(base_config(), "stacks/Pulumi.t.yaml").services[0], "istio-system/gw")


ATTEMPTS = {
    "no credential": {},
    "generation 1": {"Authorization": basic("svc", "old-password")},
    "generation 2": {"Authorization": basic("svc-g2", "new-password")},
    "wrong password": {"Authorization": basic("svc", "new-password")},
    "any Basic value": {"Authorization": "Basic eDp4"},
    "a bare accepted username": {"Authorization": "svc-g2"},
    "a credential and a username": {"Authorization": [basic("svc", "x"), "svc"]},
    "two credentials": {"Authorization": [basic("svc", "x"), basic("svc-g2", "new-password")]},
    "a bearer token": {"Authorization": "Bearer abc"},
}


# Envoy 1.38 matches a route on a repeated header's joined values, 1.39 on each value: the
# gateway must fail closed under both, whatever proxy the next Istio ships.
HEADER_VALUES = pytest.mark.parametrize("header_values", mesh_eval.HEADER_VALUES)


@HEADER_VALUES
@pytest.mark.parametrize("patches", ["none applied", "no virtual host matched"])
@pytest.mark.parametrize("host", [HOST, HOST + ":443", "SVC.example.com"])
def test_a_request_the_filter_did_not_check_never_reaches_triton(patches, host, header_values):
    """istiod skipped the EnvoyFilter, or its VIRTUAL_HOST patch matched no domain: the gateway's
    DENY policy refuses every request, whatever Authorization it sends."""
    envoy_filter = None if patches == "none applied" else envoy_filter_spec("f", ["other.example.com"], HTPASSWD)
    for attempt, headers in ATTEMPTS.items():
        answer = mesh_eval.gateway(routes(), [POLICY], envoy_filter, host, INFER, {"content-type": "application/json", **headers},
                                   header_values)
        assert answer[0] == "status" and answer[1] in (401, 403), (attempt, answer)


def test_a_basic_credential_beside_a_bare_username_is_denied_by_the_policy_alone():
    """Without the filter, on a proxy that matches routes on each value (Envoy >=1.39), `Basic x`
    beside an accepted username takes the forwarding route; the policy's `Basic *` rule refuses it
    whatever other values are sent (RBAC matches each value on its own)."""
    assert mesh_eval.route(routes(), INFER, {"authorization": [basic("svc", "x"), "svc"]},
                           mesh_eval.INDIVIDUAL) == ("forward", 8000)
    for values in ([basic("svc", "x"), "svc"], ["svc", basic("svc", "x")], ["svc-g2", "Basic eDp4", "svc"]):
        assert not mesh_eval.allowed([POLICY], "", 0, INFER, host=HOST, headers={"authorization": values}), values
    assert mesh_eval.allowed([POLICY], "", 0, INFER, host=HOST, headers={"authorization": "svc-g2"})


@HEADER_VALUES
def test_with_the_filter_each_accepted_generation_reaches_triton_and_nothing_else(header_values):
    reached = {attempt for attempt, headers in ATTEMPTS.items()
               if mesh_eval.gateway(routes(), [POLICY], FILTER, HOST, INFER, {"content-type": "application/json", **headers},
                                    header_values)
               == ("forward", 8000)}
    assert reached == {"generation 1", "generation 2"}
    # After a rotation ends, the old generation is refused by the filter, whose users no longer hold it.
    after = envoy_filter_spec("f", [HOST], htpasswd_line("svc-g2", "new-password") + "\n")
    old = {"content-type": "application/json", "Authorization": basic("svc", "old-password")}
    assert mesh_eval.gateway(routes(), [POLICY], after, HOST, INFER, old) == ("status", 401)


def test_a_rotation_changes_only_the_virtual_hosts_users_not_the_listener_nor_the_policy():
    """The filter's listener-level users and the gateway's DENY stay the same from one generation
    to the next: only the virtual hosts' users (the route configuration) change, so a rotation
    does not drain the gateway's connections."""
    before = envoy_filter_spec("f", [HOST], htpasswd_line("svc", "old-password") + "\n")
    during = envoy_filter_spec("f", [HOST], HTPASSWD)
    assert before["configPatches"][0] == during["configPatches"][0]
    assert before["configPatches"][1:] != during["configPatches"][1:]
    listener_users = before["configPatches"][0]["patch"]["value"]["typed_config"]["users"]["inline_string"]
    assert not any(envoy_accepts(listener_users, basic(user, password)) for user in ("svc", "svc-g2", "inference-platform-no-user")
                   for password in ("", "old-password", "new-password"))
    # The DENY names every generation of the service and no other username.
    for user in ("svc", "svc-g2", "svc-g17"):
        assert mesh_eval.allowed([POLICY], "", 0, INFER, host=HOST, headers={"authorization": user}), user
    for user in ("svc-embed", "other", "svcx", "Basic c3ZjOng="):
        assert not mesh_eval.allowed([POLICY], "", 0, INFER, host=HOST, headers={"authorization": user}), user


def test_the_gateway_policy_leaves_every_other_host_alone():
    for host, headers in (("grafana.example.com", {}), ("jwt.example.com", {"authorization": "Bearer abc"}),
                          ("svc.example.com.evil", {"authorization": "Basic eDp4"})):
        assert mesh_eval.allowed([POLICY], "", 0, "/", host=host, headers=headers), host
