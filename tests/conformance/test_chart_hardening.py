"""Hardening of what the Helm charts install: checkov over the objects every example stack's
releases make (rendered by a real `helm template` of the vendored charts, beside the stack's own
NetworkPolicies, which checkov matches to pods) finds nothing that components/core/
chart_hardening.py does not record with its reason, and every recorded entry still matches a
finding, so the ledger cannot outlive what it excuses."""

from __future__ import annotations

import functools

import pytest
import yaml

from inference_platform.core.chart_hardening import CHART_EXEMPTIONS, chart_exemption
from platformctl.plan import manifest
from tests.conformance.test_hardening import CHECKOV, NETWORK_POLICY, checkov
from tests.conftest import STACKS, stack_plan
from tests.support.chart_scan import chart_of, write_release_objects
from tests.support.helm_render import HELM

pytestmark = pytest.mark.skipif(not (CHECKOV.exists() and HELM.exists()),
                                reason="checkov or helm is not installed: run `make checkov helm`")


def _object(resource: str) -> str:
    """checkov's `Kind.namespace.name[.labels]` as `Kind/name`."""
    kind, _, name = resource.split(".", 3)[:3]
    return f"{kind}/{name}"


@functools.cache
def findings(stack: str, root) -> list[tuple[str, str, str]]:
    """(chart, check, Kind/name) of every check the stack's charts fail."""
    out = write_release_objects(stack, root / stack)
    policies = [manifest(r) for r in stack_plan(stack).of_type(NETWORK_POLICY)]
    (out / "platform--network-policies.yaml").write_text(yaml.safe_dump_all(policies))
    report = checkov(out)
    assert report["summary"]["parsing_errors"] == 0 and report["summary"]["passed"] > 0
    return [(chart_of(r["file_path"]), r["check_id"], _object(r["resource"])) for r in report["results"]["failed_checks"]]


@pytest.fixture(scope="module")
def scan_root(tmp_path_factory):
    return tmp_path_factory.mktemp("charts")


@pytest.mark.parametrize("stack", STACKS)
def test_every_finding_on_the_charts_objects_is_recorded_with_its_reason(stack, scan_root):
    unrecorded = [f for f in findings(stack, scan_root) if chart_exemption(*f) is None]
    assert unrecorded == []


def test_every_recorded_exception_still_excuses_a_finding(scan_root):
    used = {(chart, id(chart_exemption(chart, check, obj))) for stack in STACKS
            for chart, check, obj in findings(stack, scan_root)}
    stale = [(chart, e.checks) for chart, entries in CHART_EXEMPTIONS.items() for e in entries if (chart, id(e)) not in used]
    assert stale == []


def test_the_internet_facing_uis_have_network_policies_checkov_matches(scan_root):
    """Grafana and Kiali pods are covered by the platform's NetworkPolicies (CKV2_K8S_6 passes)."""
    unguarded = {obj for chart, check, obj in findings("acme-prod", scan_root) if check == "CKV2_K8S_6"}
    assert "Pod/kube-prometheus-stack-grafana" not in unguarded and "Pod/kiali" not in unguarded
    # The scan does see pods without one (they are recorded): the check really runs.
    assert "Pod/loki" in unguarded
