"""Property tests: random and hostile configurations either validate or fail with one
clear ConfigError; random valid stacks render routes that match their weights."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from inference_platform.settings.stack import Settings
from tests.conftest import base_config, render_raw

STACK_FILE = "stacks/Pulumi.prop-dev.yaml"

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False), st.text(max_size=12)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=12,
)
# Paths into the base config where hostile values are planted.
PATHS = [
    ("customer",), ("production",), ("cluster",), ("cluster", "mode"), ("cluster", "nodeGroups"),
    ("cluster", "nodeGroups", 1, "gpu"), ("cluster", "nodeGroups", 1, "gpu", "sharing"),
    ("services",), ("services", 0, "versions"), ("services", 0, "versions", 0, "weight"),
    ("services", 0, "versions", 0, "gpu"), ("services", 0, "auth"), ("services", 0, "hosts"),
    ("weightCaches",), ("mesh",), ("observability",), ("coldStart",), ("gpuOperator",),
]


def _plant(raw: dict, path: tuple, value) -> dict:
    node = raw
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return raw


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(PATHS), value=json_values)
def test_hostile_values_never_escape_as_other_errors(path, value):
    raw = _plant(base_config(), path, value)
    try:
        result = parse_settings(raw, STACK_FILE)
    except ConfigError as err:
        line = err.one_line()
        assert "\n" not in line
        assert line.startswith(STACK_FILE + ": invalid configuration: ")
        assert err.problems and all(p.startswith("inference-platform:") for p in err.paths)
    else:
        assert isinstance(result, Settings)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.sampled_from([None, "generation", "previous"]), value=json_values)
def test_hostile_basic_auth_rotations_fail_with_one_clear_error(key, value):
    raw = base_config()
    raw["services"][0]["auth"] = {"mode": "basic", "basic": value if key is None else {"generation": 2, key: value}}
    try:
        result = parse_settings(raw, STACK_FILE)
    except ConfigError as err:
        assert "\n" not in err.one_line()
        assert err.paths and all(p.startswith("inference-platform:services[svc].auth") for p in err.paths)
    else:
        assert isinstance(result, Settings)


@st.composite
def weight_splits(draw) -> list[int]:
    """2-4 non-negative weights summing to 100."""
    n = draw(st.integers(2, 4))
    cuts = sorted(draw(st.lists(st.integers(0, 100), min_size=n - 1, max_size=n - 1)))
    bounds = [0, *cuts, 100]
    return [bounds[i + 1] - bounds[i] for i in range(n)]


@st.composite
def valid_stacks(draw) -> dict:
    raw = base_config()
    template = raw["services"][0]
    services = []
    for s in range(draw(st.integers(1, 3))):
        weights = draw(weight_splits())
        versions = [
            dict(copy.deepcopy(template["versions"][0]), name=f"v{i}", weight=w,
                 modelRepository={"cache": "fileShare", "path": f"s{s}/v{i}"})
            for i, w in enumerate(weights)
        ]
        services.append({"name": f"svc{s}", "hosts": [f"svc{s}.example.com"], "versions": versions,
                         "autoscaling": {"minReplicas": 1, "maxReplicas": 1}})
    raw["services"] = services
    # Room for every version's minimum replica on the GPU group.
    raw["cluster"]["nodeGroups"][1]["maxNodes"] = 20
    return raw


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=valid_stacks())
def test_random_valid_stacks_route_by_their_weights(raw):
    plan = render_raw(raw, stack=f"{raw['customer']}-{raw['environment']}-prop")
    for svc in raw["services"]:
        vs = next(r for r in plan.resources if r.type.endswith(":VirtualService") and r.name == f"{svc['name']}-virtualservice")
        expected = {v["name"]: v["weight"] for v in svc["versions"] if v["weight"] > 0}
        for rule in (r for r in vs.inputs["spec"]["http"] if "route" in r):
            got = {d["destination"]["subset"]: d["weight"] for d in rule["route"]}
            assert got == expected
            assert sum(got.values()) == 100
        deployments = [r for r in plan.resources if r.type == "kubernetes:apps/v1:Deployment" and r.name.startswith(f"{svc['name']}-v")]
        assert len(deployments) == len(svc["versions"])
