"""Basic Auth at the gateway: the htpasswd the EnvoyFilter carries, checked as Envoy checks it."""

from __future__ import annotations

import base64
import hashlib

import pytest

from inference_platform.mesh.basic_auth import (
    BASIC_AUTH_PER_ROUTE_TYPE,
    envoy_filter_spec,
    htpasswd_line,
)
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from tests.conftest import base_config


def envoy_accepts(htpasswd: str, authorization: str) -> bool:
    """Envoy's basic_auth filter (source/extensions/filters/http/basic_auth: config.cc readHtpasswd,
    basic_auth_filter.cc decodeHeaders and validateUser): `{SHA}` lines, one per user, and the
    base64 SHA-1 of the presented password compared with the user's."""
    users: dict[str, str] = {}
    for line in htpasswd.split("\n"):
        if not line or line.startswith("#"):
            continue
        name, _, hashed = line.partition(":")
        assert name not in users, "Envoy refuses a duplicate user"
        assert hashed.startswith("{SHA}") and len(hashed) == 5 + 28, "Envoy accepts {SHA} hashes only"
        users[name] = hashed[5:]
    if not authorization.startswith("Basic "):
        return False
    username, _, password = base64.b64decode(authorization[6:]).decode().partition(":")
    return users.get(username) == base64.b64encode(hashlib.sha1(password.encode()).digest()).decode()


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def test_the_gateway_accepts_both_generations_during_a_rotation_and_nothing_else():
    htpasswd = htpasswd_line("svc", "old-password") + "\n" + htpasswd_line("svc-g2", "new-password") + "\n"
    spec = envoy_filter_spec("inference-platform.basic-auth.ns.svc", ["svc.example.com"], htpasswd)
    insert, enable = spec["configPatches"]
    listener_users = insert["patch"]["value"]["typed_config"]["users"]["inline_string"]
    per_host = enable["patch"]["value"]["typed_per_filter_config"]["inference-platform.basic-auth.ns.svc"]["config"]
    assert per_host["@type"] == BASIC_AUTH_PER_ROUTE_TYPE
    for users in (listener_users, per_host["users"]["inline_string"]):
        assert envoy_accepts(users, basic("svc", "old-password"))
        assert envoy_accepts(users, basic("svc-g2", "new-password"))
        assert not envoy_accepts(users, basic("svc-g2", "old-password"))
        assert not envoy_accepts(users, basic("svc", "new-password"))
        assert "old-password" not in users and "new-password" not in users


def test_the_filter_is_off_by_default_and_on_for_every_host_of_the_service():
    spec = envoy_filter_spec("f", ["a.example.com", "b.example.com"], htpasswd_line("svc", "pw"))
    insert, *enable = spec["configPatches"]
    assert insert["patch"]["value"]["disabled"] is True
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
