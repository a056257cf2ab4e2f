"""Cluster template edits magnum-cluster-api does not carry to a running cluster: the diff refuses them."""

from __future__ import annotations

import copy

import pytest

from platformctl.diff import diff_plans, exit_code
from tests.conftest import render_raw
from tests.plan.test_cluster import magnum

TEMPLATE_ERROR = "moves a running cluster to a new template with its image and kube_tag only"


def edited(raw: dict, **template) -> dict:
    out = copy.deepcopy(raw)
    out["cluster"]["magnum"]["template"] = {**out["cluster"]["magnum"].get("template", {}), **template}
    return out


def template_diff(raw: dict, new: dict) -> dict:
    return diff_plans(render_raw(raw).to_json(), render_raw(new).to_json())


def test_a_template_edit_magnum_cluster_api_drops_is_refused_with_the_fix():
    raw = magnum()
    d = template_diff(raw, edited(raw, flavor="m1.2xlarge", labels={"boot_volume_size": "80"}))
    (error,) = [e for e in d["errors"] if TEMPLATE_ERROR in e]
    assert ("inference-platform:cluster.magnum.template.flavor, "
            "inference-platform:cluster.magnum.template.labels.boot_volume_size changes") in error
    assert "Restore the deployed value" in error and "cluster.nodeGroups[]" in error
    assert exit_code(d) == 1


def test_the_version_and_image_reach_the_cluster_and_pass():
    raw = magnum()
    new = edited(raw, image="ubuntu-24.04-v1.35.0")
    new["cluster"]["magnum"]["kubernetesVersion"] = "v1.35.0"
    d = template_diff(raw, new)
    assert not [e for e in d["errors"] if TEMPLATE_ERROR in e]


def test_what_the_driver_reads_later_is_a_note():
    raw = magnum()
    d = template_diff(raw, edited(raw, dnsNameserver="9.9.9.9"))
    assert not [e for e in d["errors"] if TEMPLATE_ERROR in e]
    (note,) = [n for n in d["notes"] if "whenever it next renders the cluster" in n]
    assert "inference-platform:cluster.magnum.template.dnsNameserver changes" in note


@pytest.mark.parametrize("driver", [{"clusterApiDriver": "magnum-capi-helm"}, {"driver": "heat"}])
def test_other_drivers_are_not_refused(driver):
    raw = magnum(**driver)
    d = template_diff(raw, edited(raw, flavor="m1.2xlarge"))
    assert not [e for e in d["errors"] if TEMPLATE_ERROR in e]


def test_a_plan_without_the_driver_is_not_refused():
    raw = magnum()
    old = render_raw(raw).to_json()
    old.pop("facts")
    new = render_raw(edited(raw, flavor="m1.2xlarge")).to_json()
    new.pop("facts")
    assert not [e for e in diff_plans(old, new)["errors"] if TEMPLATE_ERROR in e]


def test_rehearse_refuses_the_dropped_template_edit(tmp_path, capsys):
    from platformctl.__main__ import main
    from tests.conftest import ROOT

    stack_file = (ROOT / "stacks" / "Pulumi.acme-prod.yaml").read_text()
    assert "dockerVolumeSize: 200\n" in stack_file
    edited_file = tmp_path / "edited.yaml"
    edited_file.write_text(stack_file.replace("dockerVolumeSize: 200\n", "dockerVolumeSize: 300\n", 1))
    assert main(["rehearse", "acme-prod", "--edited-file", str(edited_file)]) == 1
    out = capsys.readouterr().out
    step = out[out.index("step 3 edit"):out.index("step 4 ")]
    assert "refused at preview" in step and "inference-platform:cluster.magnum.template.dockerVolumeSize changes" in step
