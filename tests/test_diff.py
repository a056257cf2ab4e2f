"""platformctl diff: added, removed and changed resources with their key paths."""

from platformctl.diff import changed_paths, diff_plans


def _plan(stack, resources):
    return {"stack": stack, "resources": resources}


def _res(name, **inputs):
    return {"urn": f"urn:pulumi:STACKNAME::inference-platform::kubernetes:core/v1:Service::{name}", "inputs": inputs}


def test_changed_paths_reach_leaves():
    a = {"spec": {"http": [{"route": [{"weight": 90}, {"weight": 10}]}]}}
    b = {"spec": {"http": [{"route": [{"weight": 80}, {"weight": 20}]}]}}
    assert changed_paths(a, b) == ["spec.http[0].route[0].weight", "spec.http[0].route[1].weight"]


def test_diff_lists_added_removed_changed_across_stacks():
    a = _plan("a-dev", [_res("x", port=1), _res("gone")])
    b = _plan("b-dev", [_res("x", port=2), _res("new")])
    for p in (a, b):
        for r in p["resources"]:
            r["urn"] = r["urn"].replace("STACKNAME", p["stack"])
    d = diff_plans(a, b)
    assert d["added"] == ["inference-platform::kubernetes:core/v1:Service::new"]
    assert d["removed"] == ["inference-platform::kubernetes:core/v1:Service::gone"]
    assert d["changed"] == {"inference-platform::kubernetes:core/v1:Service::x": ["inputs.port"]}


def test_two_stacks_of_the_same_customer_compare_without_stack_noise():
    from platformctl.diff import _strip_stack

    a = "urn:pulumi:a-dev::inference-platform::pulumi:pulumi:Stack::inference-platform-a-dev"
    b = "urn:pulumi:b-dev::inference-platform::pulumi:pulumi:Stack::inference-platform-b-dev"
    assert _strip_stack(a, "a-dev") == _strip_stack(b, "b-dev")
