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


# --------------------------------------------------------------------------- classification

import copy  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import yaml  # noqa: E402

from platformctl.__main__ import main  # noqa: E402
from platformctl.diff import Change, exit_code  # noqa: E402
from platformctl.diff_view import format_diff  # noqa: E402
from platformctl.engine import render_stack  # noqa: E402
from platformctl.plan import write_plan  # noqa: E402
from tests.conftest import ROOT, stack_plan  # noqa: E402

PROVIDER = "urn:pulumi:s::inference-platform::pulumi:providers:kubernetes::k8s"


def _r(type_token, name, inputs, **options):
    return {
        "urn": f"urn:pulumi:s::inference-platform::{type_token}::{name}", "type": type_token, "name": name,
        "custom": options.pop("custom", True), "provider": options.pop("provider", None),
        "parent": None, "dependsOn": options.pop("dependsOn", []), "protect": options.pop("protect", False),
        "retainOnDelete": options.pop("retainOnDelete", False), "deleteBeforeReplace": False,
        "ignoreChanges": options.pop("ignoreChanges", []), "inputs": inputs, **options,
    }


def _k8s(kind_token, name, inputs, **options):
    return _r(f"kubernetes:{kind_token}", name, inputs, provider=PROVIDER, **options)


def _provider(**inputs):
    return _r("pulumi:providers:kubernetes", "k8s", {"kubeconfig": "[secret]", **inputs})


def _deployment(selector="web", image="img:1"):
    return _k8s("apps/v1:Deployment", "web", {"metadata": {"name": "web", "namespace": "ns"}, "spec": {
        "selector": {"matchLabels": {"app": selector}},
        "template": {"spec": {"containers": [{"name": "c", "image": image}]}},
    }})


def _classes(before, after, provider=None):
    extra = [provider or _provider()]
    d = diff_plans(_plan("s", extra + before), _plan("s", copy.deepcopy(extra) + after))
    return {c.key.rsplit("::", 1)[1]: c for c in d["changes"]}, d


def test_deployment_selector_change_replaces_and_names_the_input():
    changes, _ = _classes([_deployment()], [_deployment(selector="web2")])
    assert changes["web"].action == "replace"
    assert changes["web"].reason == "input spec.selector.matchLabels.app"
    # Kept name and namespace: the provider deletes the old object first.
    assert changes["web"].delete_first


def test_deployment_image_change_is_an_update():
    changes, d = _classes([_deployment()], [_deployment(image="img:2")])
    assert changes["web"] == Change(changes["web"].key, "update", "kubernetes:apps/v1:Deployment",
                                    ["inputs.spec.template.spec.containers[0].image"])
    assert exit_code(d) == 0


def _configmap(name, data="x", **options):
    return _k8s("core/v1:ConfigMap", "cm", {"metadata": {"name": name, "namespace": "ns"}, "data": {"k": data}}, **options)


def test_renamed_configmap_is_replaced_and_not_deleted_first():
    changes, _ = _classes([_configmap("a")], [_configmap("b")])
    assert changes["cm"].action == "replace" and changes["cm"].reason == "input metadata.name"
    assert not changes["cm"].delete_first


def test_a_configmap_replaced_under_its_own_name_leaves_what_mounts_it_alone_and_replaces_what_lives_under_it():
    """A same-name replacement (delete-first): the engine replaces only the dependents whose
    diff, with the inputs taken from it unknown, replaces them (step_generator.go
    calculateDependentReplacements); the others get the same name back and take a `same` step."""
    cm = dict(_configmap("settings"), outputs={"metadata": {"name": "settings", "namespace": "ns"}})
    mounting = _k8s("apps/v1:Deployment", "web", {"metadata": {"name": "web", "namespace": "ns"}, "spec": {
        "template": {"spec": {"volumes": [{"name": "s", "configMap": {"name": "settings"}}]}}}}, dependsOn=[cm["urn"]])
    named_after = _k8s("core/v1:Secret", "copy", {"metadata": {"name": "settings", "namespace": "ns"}},
                       dependsOn=[cm["urn"]])
    changed = copy.deepcopy(cm)
    changed["inputs"]["data"]["k"] = "y"
    changes, d = _classes([cm, mounting, named_after], [changed, mounting, named_after])
    assert changes["cm"].action == "replace" and changes["cm"].delete_first
    assert "web" not in changes
    assert any("inputs.spec.template.spec.volumes[0].configMap.name takes the name of" in n and "no change" in n
               for n in d["notes"])
    # metadata.name forces a replacement, so the engine deletes it before the ConfigMap goes.
    assert changes["copy"].action == "replace" and changes["copy"].reason.startswith("input metadata.name <- replaced")


def test_an_autonamed_configmap_replaced_updates_what_mounts_it():
    cm = _k8s("core/v1:ConfigMap", "cm", {"metadata": {"namespace": "ns"}, "data": {"k": "x"}},
              outputs={"metadata": {"name": "cm-1a2b3c4d", "namespace": "ns"}})
    mounting = _k8s("apps/v1:Deployment", "web", {"metadata": {"name": "web", "namespace": "ns"}, "spec": {
        "template": {"spec": {"volumes": [{"name": "s", "configMap": {"name": "cm-1a2b3c4d"}}]}}}}, dependsOn=[cm["urn"]])
    changed = copy.deepcopy(cm)
    changed["inputs"]["data"]["k"] = "y"
    changes, _ = _classes([cm, mounting], [changed, mounting])
    assert changes["cm"].action == "replace" and not changes["cm"].delete_first
    assert changes["web"].action == "update"
    assert changes["web"].unknown == {"inputs.spec.template.spec.volumes[0].configMap.name": changes["cm"].key}


def test_configmap_data_replaces_unless_the_provider_makes_configmaps_mutable():
    changes, _ = _classes([_configmap("a")], [_configmap("a", "y")])
    assert changes["cm"].action == "replace" and changes["cm"].reason == 'input data.k'
    changes, _ = _classes([_configmap("a")], [_configmap("a", "y")], _provider(enableConfigMapMutable=True))
    assert changes["cm"].action == "update"


def test_ignored_changes_do_not_count():
    group = {"clusterId": "c", "nodeCount": 2, "labels": {"a": "1"}}
    before = _r("openstack:containerinfra/nodeGroup:NodeGroup", "ng", group, ignoreChanges=["nodeCount", "labels"])
    after = copy.deepcopy(before)
    after["inputs"].update(nodeCount=5, labels={"a": "2"})
    d = diff_plans(_plan("s", [before]), _plan("s", [after]))
    # Pulumi diffs them with the old values put back: nothing to do, and a note for each.
    assert d["changes"] == []
    assert [n.split(": ", 2)[2] for n in d["notes"]] == [
        "inputs.labels.a changed but ignoreChanges keeps the old value",
        "inputs.nodeCount changed but ignoreChanges keeps the old value; the autoscaler sizes the group from here on; "
        "to resize it now: `openstack coe cluster resize <cluster> 5 --nodegroup ng-<suffix>`"]


def test_a_replaced_cluster_replaces_what_takes_its_id_and_the_provider_built_from_it():
    cluster = _r("openstack:containerinfra/cluster:Cluster", "magnum", {"keypair": "a"}, protect=True)
    group = _r("openstack:containerinfra/nodeGroup:NodeGroup", "ng", {"clusterId": "magnum-id"},
               dependsOn=[cluster["urn"]], retainOnDelete=True)
    provider = _provider()
    provider["dependsOn"] = [cluster["urn"]]
    ns = _k8s("core/v1:Namespace", "ns", {"metadata": {"name": "ns"}})
    changed = copy.deepcopy(cluster)
    changed["inputs"]["keypair"] = "b"
    changes, d = _classes([cluster, group, ns], [changed, group, ns], provider)
    assert changes["magnum"].reason == "input keypair"
    assert changes["ng"].reason == f"input clusterId <- replaced {cluster['urn'].split('::', 1)[1]}"
    assert changes["k8s"].action == "replace" and changes["ns"].reason.startswith("provider ")
    assert d["errors"] == [
        "error: replace of protected resource openstack:containerinfra/cluster:Cluster magnum (input keypair)",
        f"error: replace of retainOnDelete resource openstack:containerinfra/nodeGroup:NodeGroup ng ({changes['ng'].reason}): "
        "the old one stays in the cloud, no longer managed by Pulumi",
    ]
    assert exit_code(d) == 1


def test_deleting_a_protected_resource_is_an_error_and_creating_is_not():
    share = _r("openstack:sharedfilesystem/share:Share", "share", {"size": 1}, protect=True, retainOnDelete=True)
    changes, d = _classes([share], [_configmap("a")])
    assert changes["share"].action == "delete" and changes["cm"].action == "create"
    assert len(d["errors"]) == 2 and all("delete of" in e for e in d["errors"])
    out = format_diff(d)
    # Errors come first, then the summary, then the changes named by type and logical name.
    assert out.splitlines()[:3] == d["errors"] + ["1 to create, 0 to update, 0 to replace, 1 to delete; 2 errors"]
    assert "- delete openstack:sharedfilesystem/share:Share share" in out
    assert "+ create kubernetes:core/v1:ConfigMap cm" in out


def test_a_type_without_rules_is_an_error_not_a_guess():
    before = _r("aws:s3/bucket:Bucket", "b", {"bucket": "x"})
    after = copy.deepcopy(before)
    after["inputs"]["bucket"] = "y"
    _, d = _classes([before], [after])
    assert d["errors"] and "no replacement rules for aws:s3/bucket:Bucket" in d["errors"][0]


def test_components_only_update():
    before = _r("inference-platform:cluster:Cluster", "c", {"x": 1}, custom=False)
    after = copy.deepcopy(before)
    after["inputs"]["x"] = 2
    changes, _ = _classes([before], [after])
    assert changes["c"].action == "update"


def test_diff_time_is_linear_in_resources():
    def chain(n, image):
        rs = [_provider()]
        for i in range(n):
            dep = [rs[-1]["urn"]] if i else []
            rs.append(_k8s("apps/v1:Deployment", f"d{i}", {"metadata": {"name": f"d{i}"},
                      "spec": {"template": {"spec": {"containers": [{"image": image}]}}}}, dependsOn=dep))
        return _plan("s", rs)

    def steps(n):
        """Python lines the diff runs: a measure of its work that the machine's load cannot move."""
        a, b = chain(n, "a"), chain(n, "b")
        count = 0

        def trace(frame, event, arg):
            nonlocal count
            count += event == "line"
            return trace

        sys.settrace(trace)
        try:
            diff_plans(a, b)
        finally:
            sys.settrace(None)
        return count

    small, large = steps(100), steps(800)
    # Eight times the resources: about eight times the work; a pairwise scan would be 64.
    assert large < 16 * small, (small, large)


# --------------------------------------------------------------------------- the CLI on real stacks


def _edited_plan(tmp_path: Path, edit) -> Path:
    raw = yaml.safe_load((ROOT / "stacks" / "Pulumi.acme-prod.yaml").read_text())
    edit(raw["config"])
    stack_file = tmp_path / "Pulumi.acme-prod.yaml"
    stack_file.write_text(yaml.safe_dump(raw))
    return write_plan(render_stack("acme-prod", stack_file), tmp_path / "plan")


def _acme(tmp_path: Path) -> Path:
    return write_plan(stack_plan("acme-prod"), tmp_path / "acme")


def test_cli_acme_prod_against_itself_has_no_changes(tmp_path, capsys):
    assert main(["diff", str(_acme(tmp_path)), "acme-prod"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "0 to create, 0 to update, 0 to replace, 0 to delete; 0 errors"
    assert out[1] == "new acme-prod: stack rendered now from stacks/Pulumi.acme-prod.yaml"


def test_cli_changed_magnum_keypair_is_a_protected_replacement(tmp_path, capsys):
    edited = _edited_plan(tmp_path, lambda c: c["inference-platform:cluster"]["magnum"].update(keypair="acme-ops-2"))
    assert main(["diff", str(_acme(tmp_path)), str(edited)]) == 1
    out = capsys.readouterr().out.splitlines()
    cluster = "openstack:containerinfra/cluster:Cluster acme-prod-cluster-magnum"
    assert f"  +- replace {cluster} (input keypair)" in out
    assert out.index(f"error: replace of protected resource {cluster} (input keypair)") < out.index(f"  +- replace {cluster} (input keypair)")
    assert f"error: replace of protected resource {cluster} (input keypair)" in out


def test_cli_raised_max_nodes_of_an_extra_group_updates_it_in_place(tmp_path, capsys):
    def edit(config):
        config["inference-platform:cluster"]["nodeGroups"][2]["maxNodes"] = 3

    assert main(["diff", str(_acme(tmp_path)), str(_edited_plan(tmp_path, edit))]) == 0
    out = capsys.readouterr().out
    group = "openstack:containerinfra/nodeGroup:NodeGroup acme-prod-cluster-gpu-l4"
    assert f"~ update {group}\n      inputs.maxNodeCount: 4 -> 3\n" in out
    assert "replace" not in out.replace("0 to replace", "")


def test_cli_raised_max_nodes_of_the_default_group_is_a_note_not_a_new_cluster(tmp_path, capsys):
    # Magnum sizes its default group from cluster labels, which would force a new cluster;
    # the platform keeps them out of later diffs, and the diff says so.
    def edit(config):
        config["inference-platform:cluster"]["nodeGroups"][0]["maxNodes"] = 8

    assert main(["diff", str(_acme(tmp_path)), str(_edited_plan(tmp_path, edit))]) == 0
    out = capsys.readouterr().out
    assert "acme-prod-cluster-magnum: inputs.labels.max_node_count changed but ignoreChanges keeps the old value" in out
    assert "0 to replace" in out




# --------------------------------------------------------------------------- the readable diff


def _edited_stack(tmp_path: Path, stack: str, *replacements: tuple[str, str]) -> Path:
    """The plan of stacks/Pulumi.<stack>.yaml with text replaced, written beside its stack file."""
    text = (ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text()
    for old, new in replacements:
        text = text.replace(old, new)
    stack_file = tmp_path / f"Pulumi.{stack}.yaml"
    stack_file.write_text(text)
    return write_plan(render_stack(stack, stack_file), tmp_path / "edited", stack_file)


def _demo_canary(tmp_path: Path, weights: tuple[int, int]) -> Path:
    return _edited_stack(tmp_path, "demo-dev", ("weight: 90", f"weight: {weights[0]}"), ("weight: 10", f"weight: {weights[1]}"))


def test_a_canary_shift_from_90_to_50_shows_both_numbers_under_its_component(tmp_path, capsys):
    main_plan = write_plan(stack_plan("demo-dev"), tmp_path / "main")
    assert main(["diff", str(main_plan), str(_demo_canary(tmp_path, (50, 50)))]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2:] == [
        "0 to create, 1 to update, 0 to replace, 0 to delete; 0 errors",
        "inference-platform:index:TritonService resnet:",
        "  ~ update kubernetes:networking.istio.io/v1:VirtualService resnet-virtualservice",
        "      inputs.spec.http[0].route[0].weight: 90 -> 50",
        "      inputs.spec.http[0].route[1].weight: 10 -> 50",
        "      inputs.spec.http[2].route[0].weight: 90 -> 50",
        "      inputs.spec.http[2].route[1].weight: 10 -> 50",
    ]


def test_the_diff_names_full_urns_only_with_urns(tmp_path, capsys):
    main_plan = write_plan(stack_plan("demo-dev"), tmp_path / "main")
    edited = _demo_canary(tmp_path, (70, 30))
    assert main(["diff", str(main_plan), str(edited)]) == 0
    assert "urn:pulumi" not in capsys.readouterr().out
    assert main(["diff", "--urns", str(main_plan), str(edited)]) == 0
    assert ("  ~ update urn:pulumi:STACK::inference-platform::inference-platform:index:InferencePlatform$"
            "inference-platform:index:TritonService$kubernetes:networking.istio.io/v1:VirtualService::resnet-virtualservice"
            ) in capsys.readouterr().out.splitlines()


def test_diff_output_json_has_the_documented_shape(tmp_path, capsys):
    import json

    main_plan = write_plan(stack_plan("demo-dev"), tmp_path / "main")
    assert main(["diff", "--output", "json", str(main_plan), str(_demo_canary(tmp_path, (50, 50)))]) == 0
    d = json.loads(capsys.readouterr().out)
    assert sorted(d) == ["errors", "notes", "renamed", "resources", "sources", "summary", "version"]
    assert d["summary"] == {"create": 0, "update": 1, "replace": 0, "delete": 0, "renamed": 0, "errors": 0}
    [vs] = d["resources"]
    assert (vs["action"], vs["type"], vs["name"], vs["component"]) == (
        "update", "kubernetes:networking.istio.io/v1:VirtualService", "resnet-virtualservice",
        "inference-platform:index:TritonService resnet")
    assert vs["changes"][0] == {"path": "inputs.spec.http[0].route[0].weight", "old": 90, "new": 50}


def test_a_secret_value_stays_redacted_in_the_diff():
    old = _r("kubernetes:core/v1:Secret", "s3", {"stringData": {"key": "old-plain"}, "metadata": {"name": "s3"}})
    new = _r("kubernetes:core/v1:Secret", "s3", {"stringData": {"key": "new-plain"}, "metadata": {"name": "s3"}})
    out = format_diff(diff_plans({"stack": "s", "resources": [old]}, {"stack": "s", "resources": [new]}))
    assert "plain" not in out
    assert "inputs.stringData.key: \"[secret]\" -> \"[secret]\"" in out


def test_a_graph_step_image_edit_on_studio_dev_updates_the_rayservice(tmp_path, capsys):
    # A CRD has only identity rules in pulumi-kubernetes (diff.go), so KubeRay rolls it out.
    edited = _edited_stack(tmp_path, "studio-dev", ("triton-ray:25.01-whisper", "triton-ray:25.02-whisper"))
    assert main(["diff", str(write_plan(stack_plan("studio-dev"), tmp_path / "main")), str(edited)]) == 0
    out = capsys.readouterr().out
    assert "~ update kubernetes:ray.io/v1:RayService speech-to-image-rayservice" in out
    assert "0 to replace" in out and "0 errors" in out


# --------------------------------------------------------------------------- the Kubernetes provider's config


def test_a_context_edit_on_demo_dev_replaces_nothing_and_says_what_it_depends_on(tmp_path, capsys):
    edited = _edited_stack(tmp_path, "demo-dev", ("      context: demo\n", "      context: demo-admin\n"))
    assert main(["diff", str(write_plan(stack_plan("demo-dev"), tmp_path / "main")), str(edited)]) == 0
    out = capsys.readouterr().out
    assert "0 to create, 1 to update, 0 to replace, 0 to delete; 0 errors" in out
    assert "~ update pulumi:providers:kubernetes demo-dev-cluster-k8s" in out
    assert "context 'demo' -> 'demo-admin': the kubeconfig is ambient" in out


KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- {name: prod, cluster: {server: "https://10.0.0.10:6443", certificate-authority-data: Zm9v}}
- {name: lab, cluster: {server: "https://10.9.0.10:6443", certificate-authority-data: YmFy}}
contexts:
- {name: prod, context: {cluster: prod, user: ops}}
- {name: prod-admin, context: {cluster: prod, user: admin}}
- {name: lab, context: {cluster: lab, user: ops}}
current-context: prod
users: [{name: ops, user: {token: a}}, {name: admin, user: {token: b}}]
"""


def _with_context(context: str) -> dict:
    from tests.conftest import base_config, render_raw

    raw = base_config()
    raw["cluster"]["existing"] = {"context": context}
    raw["kubeconfig"] = KUBECONFIG
    return render_raw(raw, secret_keys=("kubeconfig",)).to_json()


def test_a_given_kubeconfig_replaces_everything_only_when_the_new_context_names_another_cluster():
    prod = _with_context("prod")
    [provider] = [r for r in prod["resources"] if r["type"] == "pulumi:providers:kubernetes"]
    # The plan keeps a keyed digest of the active cluster, never the kubeconfig.
    assert provider["inputs"]["kubeconfig"] == "[secret]" and provider["activeClusterDigest"]
    assert "10.0.0.10" not in str(prod)
    same_cluster = diff_plans(prod, _with_context("prod-admin"))
    assert [(c.action, c.type) for c in same_cluster["changes"]] == [("update", "pulumi:providers:kubernetes")]
    other_cluster = diff_plans(prod, _with_context("lab"))
    actions = {c.action for c in other_cluster["changes"] if c.type.startswith("kubernetes:")}
    assert actions == {"replace"}
    [k8s] = [c for c in other_cluster["changes"] if c.type == "pulumi:providers:kubernetes"]
    assert k8s.action == "replace" and k8s.reason == "input context"


# --------------------------------------------------------------------------- secret values


def test_a_slack_channel_edit_on_acme_prod_replaces_the_alertmanager_secret_delete_first(tmp_path, capsys):
    def edit(config):
        receiver = config["inference-platform:observability"]["alerting"]["receivers"][1]
        receiver["slack"]["channel"] = "#acme-alerts"

    assert main(["diff", str(_acme(tmp_path)), str(_edited_plan(tmp_path, edit))]) == 0
    out = capsys.readouterr().out
    secret = "kubernetes:core/v1:Secret acme-prod-observability-alertmanager-config"
    assert f"  +- replace {secret} (input stringData) [delete-first]" in out
    assert 'inputs.stringData: "[secret]" -> "[secret]"' in out
    assert "PULUMI_K8S_ENABLE_SECRET_MUTABLE unset" in out
    assert "0 to create, 0 to update, 1 to replace, 0 to delete; 0 errors" in out


def test_plans_hold_no_secret_value_only_its_keyed_digest(tmp_path):
    import json

    plan = json.loads((_acme(tmp_path) / "resources.json").read_text())
    [secret] = [r for r in plan["resources"] if r["name"] == "acme-prod-observability-alertmanager-config"]
    assert "#acme-inference-alerts" not in json.dumps(plan) and secret["secretDigests"]["stringData"]


def test_secret_values_are_not_compared_across_digest_keys(monkeypatch):
    from tests.conftest import base_config, render_raw

    monkeypatch.setenv("PLATFORMCTL_DIGEST_KEY", "one")
    a = render_raw(base_config()).to_json()
    monkeypatch.setenv("PLATFORMCTL_DIGEST_KEY", "two")
    b = render_raw(base_config()).to_json()
    assert a["secretDigestKey"] != b["secretDigestKey"]
    # The same value digests differently under another key: the plan alone cannot test a guess.
    digests = [{r["name"]: r.get("secretDigests") for r in p["resources"] if r.get("secretDigests")} for p in (a, b)]
    assert digests[0] and all(digests[0][n] != digests[1][n] for n in digests[0])
    d = diff_plans(a, b)
    assert d["changes"] == [] and any("different keys" in n for n in d["notes"])


def test_the_plan_assumes_the_providers_environment_switches_unset(monkeypatch):
    monkeypatch.setenv("PULUMI_K8S_ENABLE_SECRET_MUTABLE", "true")
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")
    from tests.conftest import base_config, render_raw

    [provider] = render_raw(base_config()).of_type("pulumi:providers:kubernetes")
    assert "enableSecretMutable" not in provider.inputs and "kubeconfig" not in provider.inputs


# --------------------------------------------------------------------------- the engine's own steps


def test_resources_replaced_by_a_provider_change_are_created_before_the_old_ones_go():
    ns = _k8s("core/v1:Namespace", "ns", {"metadata": {"name": "ns"}})
    provider = _provider(context="a")
    provider["inputs"]["clusterIdentifier"] = "one"
    moved = copy.deepcopy(provider)
    moved["inputs"]["clusterIdentifier"] = "two"
    d = diff_plans(_plan("s", [provider, ns]), _plan("s", [moved, copy.deepcopy(ns)]))
    changes = {c.key.rsplit("::", 1)[1]: c for c in d["changes"]}
    assert changes["k8s"].reason == "input clusterIdentifier"
    # The engine replaces for the provider without asking the resource's diff: no delete-first.
    assert changes["ns"].action == "replace" and not changes["ns"].delete_first


def test_a_bridged_resource_with_a_given_name_is_deleted_before_its_replacement():
    share = {"name": "weights", "shareProto": "NFS", "size": 10}
    before = _r("openstack:sharedfilesystem/share:Share", "share", share)
    after = copy.deepcopy(before)
    after["inputs"]["shareProto"] = "CEPHFS"
    changes, _ = _classes([before], [after])
    assert changes["share"].action == "replace" and changes["share"].delete_first
    unnamed = {k: v for k, v in share.items() if k != "name"}
    before, after = copy.deepcopy(before), copy.deepcopy(after)
    before["inputs"], after["inputs"] = dict(unnamed), dict(unnamed, shareProto="CEPHFS")
    changes, _ = _classes([before], [after])
    assert changes["share"].action == "replace" and not changes["share"].delete_first


def test_replacing_a_resource_the_program_unprotects_in_the_same_up_is_allowed():
    cluster = _r("openstack:containerinfra/cluster:Cluster", "magnum", {"keypair": "a"}, protect=True)
    unprotected = copy.deepcopy(cluster)
    unprotected.update(protect=False)
    unprotected["inputs"]["keypair"] = "b"
    changes, d = _classes([cluster], [unprotected])
    assert changes["magnum"].action == "replace" and d["errors"] == []
    still = copy.deepcopy(unprotected)
    still["protect"] = True
    _, d = _classes([cluster], [still])
    assert d["errors"] == ["error: replace of protected resource openstack:containerinfra/cluster:Cluster magnum (input keypair)"]


def test_an_option_only_change_is_no_update():
    share = _r("openstack:sharedfilesystem/share:Share", "share", {"size": 10})
    protected = copy.deepcopy(share)
    protected["protect"] = True
    changes, d = _classes([share], [protected])
    assert changes == {} and exit_code(d) == 0
    assert any("only options changed (protect)" in n for n in d["notes"])


def test_a_dynamic_resource_whose_pickled_provider_alone_changed_is_no_update():
    bucket = _r("pulumi-python:dynamic/s3:Bucket", "bucket", {"bucket": "b", "__provider": "old-pickle"})
    moved = copy.deepcopy(bucket)
    moved["inputs"]["__provider"] = "new-pickle"
    changes, _ = _classes([bucket], [moved])
    assert changes == {}


def test_a_priority_class_value_edit_is_refused_because_the_api_server_cannot_change_it():
    pc = _k8s("scheduling.k8s.io/v1:PriorityClass", "spare", {"metadata": {"name": "spare"}, "value": -10})
    edited = copy.deepcopy(pc)
    edited["inputs"]["value"] = -5
    changes, d = _classes([pc], [edited])
    assert changes["spare"].action == "update" and exit_code(d) == 1
    assert d["errors"] == ["error: update of kubernetes:scheduling.k8s.io/v1:PriorityClass spare changes value, which the "
                           "API server refuses to change: `pulumi up` would fail; give the object a new name to replace "
                           "it (kubernetes ValidatePriorityClassUpdate)"]


def _pv_and_claim(pv_name: str, path: str = "/weights"):
    pv = _k8s("core/v1:PersistentVolume", "pv", {"metadata": {}, "spec": {"nfs": {"path": path}}},
              outputs={"metadata": {"name": pv_name}})
    claim = _k8s("core/v1:PersistentVolumeClaim", "claim", {"metadata": {"name": "claim", "namespace": "ns"},
                                                             "spec": {"volumeName": pv_name}},
                 dependsOn=[pv["urn"]], protect=True)
    return [pv, claim]


def test_a_provider_made_name_is_kept_on_update_so_what_refers_to_it_does_not_change():
    # The same unnamed PV, its made-up name rendered differently (another stand-in): the provider
    # keeps the name in the state (pulumi-kubernetes AdoptOldAutonameIfUnnamed), so the claim is unchanged.
    changes, d = _classes(_pv_and_claim("pv-0a1b2c3"), _pv_and_claim("pv-0a1b2c3d"))
    assert changes == {} and d["errors"] == []


def test_a_replaced_object_with_a_made_up_name_still_replaces_what_names_it():
    changes, d = _classes(_pv_and_claim("pv-0a1b2c3"), _pv_and_claim("pv-0a1b2c3d", path="/other"))
    assert changes["pv"].action == "replace"
    assert changes["claim"].action == "replace" and "pv" in changes["claim"].reason
    assert any("protected" in e and "claim" in e for e in d["errors"])


def test_a_changed_annotation_whose_key_holds_dots_shows_its_old_and_new_values():
    from platformctl.diff_view import _get

    old = {"inputs": {"metadata": {"annotations": {"proxy.istio.io/config": "a", "proxy": {"istio": "other"}}}}}
    path = "inputs.metadata.annotations.proxy.istio.io/config"
    assert _get(old, path) == "a"
    assert _get(old, "inputs.metadata.annotations.proxy.istio") == "other"
    assert _get({"inputs": {"x": [{"y.z": 1}]}}, "inputs.x[0].y.z") == 1
