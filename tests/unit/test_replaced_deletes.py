"""When the old object of a create-first replacement goes, against what still refers to it."""

from platformctl.diff import Change
from platformctl.replaced_deletes import replaced_delete_notes

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def _custom_resource(annotations: dict) -> dict:
    return {"type": "kubernetes:ray.io/v1:RayService",
            "inputs": {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"annotations": annotations}}}


def _notes(user: dict) -> list[str]:
    changes = [Change("app", "replace", CONFIG_MAP, reason="input data"),
               Change("svc", "update", user["type"], unknown={"inputs.spec.volumes[0].configMap.name": "app"})]
    return replaced_delete_notes(changes, {"app": {"type": CONFIG_MAP}, "svc": user})


def test_an_unawaited_user_of_a_replaced_config_map_is_told_the_old_one_goes_at_once():
    (note,) = _notes(_custom_resource({}))
    assert note.startswith("note: app: the old object is deleted at the end of `pulumi up`, and svc") and "not awaited" in note


def test_an_awaited_user_keeps_the_old_config_map_until_it_is_ready():
    (note,) = _notes({**_custom_resource({"pulumi.com/waitFor": "jsonpath={.status.phase}=Ready"}), "customTimeouts": {"update": "19m"}})
    assert "after svc, which takes the new one's name, has become ready (waits up to 1140s: customTimeouts" in note


def test_a_delete_first_replacement_or_a_created_user_gets_no_note():
    changes = [Change("app", "replace", CONFIG_MAP, delete_first=True),
               Change("svc", "update", "kubernetes:ray.io/v1:RayService", unknown={"inputs.x": "app"})]
    assert replaced_delete_notes(changes, {"svc": _custom_resource({})}) == []
