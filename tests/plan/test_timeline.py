"""The first `up` per GPU group that `platformctl plan` prints: from the model the waits come from."""

from __future__ import annotations

from platformctl import awaits
from platformctl.__main__ import main
from platformctl.timeline import format_timelines, late_problems, timelines
from tests.plan.test_awaits import acme


def triton_rows(resources, settings) -> dict[str, awaits.Row]:
    rows, _ = awaits.check(resources, settings)
    return {awaits.label(row.expectation.resource): row for row in rows if row.expectation.readiness_matters}


def test_each_group_ends_where_its_deployments_create_budget_does_and_shows_the_wait_the_plan_gives():
    resources, settings = acme()
    rows = triton_rows(resources, settings)
    found = timelines(resources, settings)
    assert {t.estimate.group for t in found} == {g.name for g in settings.gpu_groups}
    shown = 0
    for t in found:
        assert t.rows[-1][1] == t.ready_seconds
        for a in t.awaits:
            row = rows[a.name]
            assert (t.ready_seconds, a.seconds) == (row.expectation.budget.create_seconds, row.wait.create)
            shown += 1
    assert shown == len(rows) and not late_problems(found)


def test_plan_prints_the_first_up_of_each_group_with_the_waits_it_must_fit(capsys, tmp_path):
    assert main(["plan", "acme-prod", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    resources, settings = acme()
    rows = triton_rows(resources, settings)
    v7 = rows["Deployment llm-chat/llm-chat-v7"]
    budget, wait = v7.expectation.budget.create_seconds, v7.wait.create
    assert (f"ready at {budget}s; Deployment llm-chat/llm-chat-v7 waits {wait:g}s on create (customTimeouts): "
            f"fits, {wait - budget:g}s to spare") in out
    # gpu-h100 starts at minNodes 1 on magnum-cluster-api, so it grows only once that node has its GPUs.
    h100 = out[out.index("  gpu-h100: "):out.index("  gpu-l4: ")]
    assert "Cluster API starts an autoscaled group at minNodes" in h100 and "only once a node of it advertises its GPUs" in h100


def test_a_group_whose_first_up_outlasts_a_wait_is_reported():
    resources, settings = acme()
    v7 = next(r for r in resources if r["name"] == "llm-chat-v7")
    v7["customTimeouts"] = dict(v7["customTimeouts"], create="20m")
    found = timelines(resources, settings)
    (h100,) = [t for t in found if t.estimate.group == "gpu-h100"]
    over = h100.ready_seconds - 1200
    assert over > 0
    assert late_problems(found) == [f"GPU group gpu-h100: its first `up` takes {h100.ready_seconds}s but "
                                    "Deployment llm-chat/llm-chat-v7 waits 1200s on create (customTimeouts)"]
    assert f"waits 1200s on create (customTimeouts): EXCEEDS it by {over}s" in format_timelines(found)
