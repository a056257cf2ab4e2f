"""The serving-first proof on random stacks: every stack the loader accepts fits (serving's peak plus
the guarantees within each group at maxNodes, computed here from the raw numbers alone), every stack
it refuses for the proof does not fit, and the queues it declares hand out exactly the group."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from inference_platform.training.capacity import group_proofs
from inference_platform.training.kueue import cohort_quota, serving_quota, team_quota
from tests.conftest import base_config


@st.composite
def training_stacks(draw):
    raw = base_config()
    group = raw["cluster"]["nodeGroups"][1]
    group["maxNodes"] = draw(st.integers(1, 6))
    group["gpu"]["perNode"] = draw(st.integers(1, 8))
    shares = draw(st.sampled_from([1, 2, 4]))
    if shares > 1:
        group["gpu"]["sharing"] = {"mode": "time-slicing", "replicas": shares}
    per_node = group["gpu"]["perNode"] * shares
    template = raw["services"][0]
    raw["services"] = []
    for i in range(draw(st.integers(1, 3))):
        svc = copy.deepcopy(template)
        svc.update(name=f"svc{i}", hosts=[f"svc{i}.example.com"])
        svc["autoscaling"] = {"minReplicas": 1, "maxReplicas": draw(st.integers(1, 8))}
        svc["versions"][0]["gpu"]["count"] = draw(st.integers(1, min(per_node, 3)))
        raw["services"].append(svc)
    spare = draw(st.integers(0, 3))
    if spare:
        raw["coldStart"] = {"spareSlots": {"gpu": spare}}
    raw["training"] = {"teams": [{"name": f"team{i}", "namespace": f"team{i}",
                                  "quotas": [{"group": "gpu", "gpus": draw(st.integers(0, 24))}]}
                                 for i in range(draw(st.integers(0, 3)))]}
    return raw


def oracle(raw: dict) -> tuple[int, int]:
    """(needed, capacity) of the GPU group from the stack's own numbers: every version at its most
    replicas, one surge replica each, the spare slots and the guarantees, against maxNodes x units per node."""
    group = raw["cluster"]["nodeGroups"][1]
    per_node = group["gpu"]["perNode"] * group["gpu"].get("sharing", {}).get("replicas", 1)
    counts = [(svc["autoscaling"]["maxReplicas"], svc["versions"][0]["gpu"]["count"]) for svc in raw["services"]]
    needed = (sum(most * count for most, count in counts) + sum(count for _, count in counts)
              + raw.get("coldStart", {}).get("spareSlots", {}).get("gpu", 0)
              + sum(q["gpus"] for team in raw["training"]["teams"] for q in team["quotas"]))
    return needed, per_node * group["maxNodes"]


def minimum_fits(raw: dict) -> bool:
    """What the serving checks ask before the proof: every version at its fewest replicas and the spare slots."""
    _, capacity = oracle(raw)
    spare = raw.get("coldStart", {}).get("spareSlots", {}).get("gpu", 0)
    return sum(svc["versions"][0]["gpu"]["count"] for svc in raw["services"]) + spare <= capacity


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(training_stacks())
def test_every_accepted_stack_fits_and_every_refused_one_does_not(raw):
    assume(minimum_fits(raw))
    needed, capacity = oracle(raw)
    try:
        s = parse_settings(raw, "Pulumi.random.yaml")
    except ConfigError as err:
        assert needed > capacity, str(err)
        assert "cannot keep serving first" in str(err) and f"of {capacity} " in str(err)
        return
    assert needed <= capacity
    (proof,) = group_proofs(s)
    assert proof.fits and proof.peak + proof.training == needed and proof.capacity == capacity
    # The queues hand out exactly the group: serving's reservation, the guarantees, the cohort's rest.
    teams = s.training.teams
    groups = {g.name: g for g in s.gpu_groups}
    handed = (serving_quota(proof)["nominalQuota"] + cohort_quota(proof)["nominalQuota"]
              + sum(team_quota(t, groups)(proof)["nominalQuota"] for t in teams))
    assert handed == capacity
    # No team may borrow past what training may use beyond its own guarantee.
    for t in teams:
        q = team_quota(t, groups)(proof)
        assert q["nominalQuota"] + q["borrowingLimit"] <= capacity - proof.peak
