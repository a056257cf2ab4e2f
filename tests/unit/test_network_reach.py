"""The NetworkPolicy model of platformctl/network_reach.py follows networking.k8s.io/v1: peers,
ports and isolation as the API reference states them."""

from __future__ import annotations

import pytest

from platformctl.network_reach import Pod, admits

TARGET = Pod("svc", {"app": "svc"})


def policy(*ingress: dict, namespace: str = "svc", selector: dict | None = None, types=("Ingress",)) -> dict:
    return {"metadata": {"name": "p", "namespace": namespace},
            "spec": {"podSelector": {"matchLabels": selector if selector is not None else {"app": "svc"}},
                     "policyTypes": list(types), "ingress": list(ingress)}}


def test_an_unselected_pod_admits_everyone_and_a_selected_one_only_what_a_rule_admits():
    assert admits([], Pod("x", {}), TARGET, 80)
    assert admits([policy(selector={"app": "other"})], Pod("x", {}), TARGET, 80)
    assert admits([policy(namespace="elsewhere")], Pod("x", {}), TARGET, 80)
    assert admits([policy(types=("Egress",))], Pod("x", {}), TARGET, 80)
    assert not admits([policy()], Pod("x", {}), TARGET, 80)
    assert admits([policy({})], Pod("x", {}), TARGET, 80)  # a rule with no from and no ports


def test_a_pod_selector_alone_means_the_policys_namespace_and_both_selectors_mean_both():
    own = policy({"from": [{"podSelector": {"matchLabels": {"role": "gw"}}}]})
    assert admits([own], Pod("svc", {"role": "gw"}), TARGET, 80)
    assert not admits([own], Pod("istio-system", {"role": "gw"}), TARGET, 80)
    ns = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "istio-system"}}}
    both = policy({"from": [{**ns, "podSelector": {"matchLabels": {"role": "gw"}}}]})
    assert admits([both], Pod("istio-system", {"role": "gw", "x": "y"}), TARGET, 80)
    assert not admits([both], Pod("istio-system", {"role": "debug"}), TARGET, 80)
    assert admits([policy({"from": [ns]})], Pod("istio-system", {}), TARGET, 80)


def test_ports_protocols_and_ranges():
    rule = {"ports": [{"protocol": "TCP", "port": 8000, "endPort": 8001}, {"protocol": "UDP", "port": 9000}]}
    assert admits([policy(rule)], Pod("x", {}), TARGET, 8001)
    assert not admits([policy(rule)], Pod("x", {}), TARGET, 8002)
    assert not admits([policy(rule)], Pod("x", {}), TARGET, 9000)


@pytest.mark.parametrize("rule", [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}, {"ports": [{"port": "http"}]}])
def test_what_is_not_modelled_raises(rule):
    with pytest.raises(ValueError):
        admits([policy(rule)], Pod("x", {}), TARGET, 80)


def test_an_egress_isolated_source_reaches_only_what_its_egress_rules_admit():
    source = Pod("jobs", {"role": "publish"})
    egress = {"metadata": {"name": "e", "namespace": "jobs"},
              "spec": {"podSelector": {"matchLabels": {"role": "publish"}}, "policyTypes": ["Egress"],
                       "egress": [{"ports": [{"protocol": "TCP", "port": 443}]}]}}
    assert admits([], source, TARGET, 443, source_policies=[egress])
    assert not admits([], source, TARGET, 80, source_policies=[egress])
    assert admits([], source, TARGET, 80)  # no source policies given: egress is open
    assert admits([], Pod("jobs", {"role": "other"}), TARGET, 80, source_policies=[egress])
    to_svc = {**egress, "spec": {**egress["spec"], "egress": [{"to": [{"namespaceSelector": {
        "matchLabels": {"kubernetes.io/metadata.name": "svc"}}}]}]}}
    assert admits([], source, TARGET, 80, source_policies=[to_svc])
    assert not admits([], source, Pod("elsewhere", {"app": "svc"}), 80, source_policies=[to_svc])
    # Egress rules without policyTypes isolate for egress too (the API's default).
    implied = {**egress, "spec": {k: v for k, v in egress["spec"].items() if k != "policyTypes"}}
    assert not admits([], source, TARGET, 80, source_policies=[implied])
