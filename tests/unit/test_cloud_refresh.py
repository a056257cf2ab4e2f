"""The labels terraform-provider-openstack reads back for a Magnum cluster with merge_labels, as
Magnum reports them against the cluster's current template (platformctl/cloud_refresh.py)."""

from __future__ import annotations

from platformctl.cloud_refresh import labels_diff, provider_read_labels

OURS = {"auto_scaling_enabled": "true", "min_node_count": "3"}
TEMPLATE = {"kube_tag": "v1.34.1"}


def test_magnum_reports_labels_against_the_parent_as_overridden_added_and_skipped():
    overridden, added, skipped = labels_diff({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "9", "d": "4"})
    assert (overridden, added, skipped) == ({"b": "2"}, {"d": "4"}, {"c": "3"})


def test_right_after_creation_the_provider_reads_back_the_labels_we_declared():
    stored = {**TEMPLATE, **OURS}  # merged by Magnum at creation
    assert provider_read_labels(stored, TEMPLATE, OURS) == OURS


def test_a_template_that_moved_on_brings_the_clusters_old_label_into_what_the_provider_reads():
    stored = {**TEMPLATE, **OURS}
    assert provider_read_labels(stored, {"kube_tag": "v1.35.0"}, OURS) == {**OURS, "kube_tag": "v1.34.1"}


def test_a_label_the_new_template_adds_is_read_back_as_the_clusters():
    stored = {**TEMPLATE, **OURS}
    new_template = {**TEMPLATE, "cloud_provider_tag": "v1.35.0"}
    assert provider_read_labels(stored, new_template, OURS) == {**OURS, "cloud_provider_tag": "v1.35.0"}
