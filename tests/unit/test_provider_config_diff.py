"""The Kubernetes provider's config diff, case by case as pulumi-kubernetes provider.go DiffConfig
decides it (its testdata/diffconfig cases and provider_diffconfig_test.go)."""

from platformctl.replacement import kubernetes_diff_config

A, B = "digest-of-cluster-a", "digest-of-cluster-b"


def _diff(old, new, unknown=(), active=(None, None)):
    changed = {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
    return kubernetes_diff_config(old, new, changed, set(unknown), active)


def test_adding_or_removing_a_cluster_identifier_replaces_nothing():
    assert _diff({}, {"clusterIdentifier": "foo"}).replaces is None
    assert _diff({"clusterIdentifier": "foo"}, {}).replaces is None


def test_changing_the_cluster_identifier_replaces_everything():
    assert _diff({"clusterIdentifier": "foo"}, {"clusterIdentifier": "bar"}).replaces == "clusterIdentifier"


def test_an_unchanged_cluster_identifier_keeps_everything_even_on_another_cluster_or_an_unknown_kubeconfig():
    same = {"clusterIdentifier": "foo"}
    assert _diff(same | {"kubeconfig": "x"}, same | {"kubeconfig": "y"}, active=(A, B)).replaces is None
    assert _diff(same | {"kubeconfig": "x"}, same | {"kubeconfig": "x"}, unknown={"kubeconfig"}).replaces is None


def test_a_kubeconfig_unknown_until_its_cluster_exists_again_replaces_everything():
    assert _diff({"kubeconfig": "x"}, {"kubeconfig": "x"}, unknown={"kubeconfig"}).replaces == "kubeconfig"


def test_another_context_replaces_only_when_it_names_another_cluster():
    old, new = {"kubeconfig": "k", "context": "demo"}, {"kubeconfig": "k", "context": "demo-admin"}
    assert _diff(old, new, active=(A, A)).replaces is None
    assert _diff(old, new, active=(A, B)).replaces == "context"


def test_an_ambient_kubeconfig_replaces_nothing_and_says_when_it_would():
    result = _diff({"context": "demo"}, {"context": "demo-admin"})
    assert result.replaces is None
    assert "$KUBECONFIG" in result.note and "'demo' -> 'demo-admin'" in result.note


def test_a_kubeconfig_the_plan_cannot_read_replaces_nothing_and_says_what_it_depends_on():
    result = _diff({"kubeconfig": "[secret]", "context": "a"}, {"kubeconfig": "[secret]", "context": "b"})
    assert result.replaces is None and "cannot tell whether the active cluster changes" in result.note


def test_removing_the_identifier_while_the_cluster_changes_replaces_everything():
    old = {"clusterIdentifier": "foo", "kubeconfig": "x"}
    assert _diff(old, {"kubeconfig": "y"}, active=(A, B)).replaces == "kubeconfig"


def test_a_new_render_directory_replaces_everything():
    assert _diff({"renderYamlToDirectory": "a"}, {"renderYamlToDirectory": "b"}).replaces == "renderYamlToDirectory"
