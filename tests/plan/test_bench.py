"""The plan bench's synthetic stack is an example stack grown to N services, so it cannot rot."""

from __future__ import annotations

import json

from inference_platform.settings.loader import parse_settings
from platformctl import bench
from platformctl.bench_floor import floor_plan
from platformctl.stackfile import read_stack_config


def test_the_bench_stack_is_the_example_stack_with_its_services_copied_under_their_own_names():
    template = read_stack_config(bench.TEMPLATE_STACK)
    raw = bench.synthetic_config(3)
    settings = parse_settings(raw, "stacks/Pulumi.bench-dev.yaml")
    names = [s.name for s in settings.services]
    assert len(names) == 3 and len(set(names)) == 3
    hosts = [h for s in settings.services for h in s.hosts]
    assert len(set(hosts)) == len(hosts)
    # Everything but the services and the GPU groups' node bounds is the example stack's own.
    untouched = {k.removeprefix(bench.PROJECT_PREFIX): v for k, v in template.items()}
    assert {k: v for k, v in raw.items() if k not in ("services", "cluster")} == {
        k: v for k, v in untouched.items() if k not in ("services", "cluster")}


def test_the_bench_plans_its_smallest_stack_with_every_check_and_reports_ratios():
    result = bench.run_one(2)  # exits naming the first problem when a plan check fails
    assert result["resources"] > 0
    line = bench.row(result, result)
    assert " 1.00x " in line  # CPU time per service against the smallest size: itself
    assert line.split()[0] == "2"


def test_the_bench_stack_is_a_valid_stack_file_at_a_thousand_services():
    settings = parse_settings(bench.synthetic_config(1000), "stacks/Pulumi.bench-dev.yaml")
    assert len(settings.services) == 1000


def test_the_sdk_floor_registers_the_plans_own_resources_bare_and_the_table_shows_our_ratio_to_it(tmp_path):
    ours = bench.run_one(2, str(tmp_path))
    saved = json.loads((tmp_path / "plan" / "resources.json").read_text())
    floor = floor_plan(saved["resources"], saved["stack"]).to_json()["resources"]
    # The same resources with the same options and inputs, only without the components' logic.
    same = ("urn", "type", "name", "parent", "custom", "provider", "dependsOn", "protect", "retainOnDelete",
            "deleteBeforeReplace", "ignoreChanges", "replaceOnChanges", "customTimeouts", "aliases", "inputs")
    assert [{k: r[k] for k in same} for r in floor] == [{k: r[k] for k in same} for r in saved["resources"]]
    figures = bench.run_floor(str(tmp_path / "plan"))
    assert figures["resources"] == ours["resources"]
    lines = bench.floor_row(figures, ours).splitlines()
    assert lines[0].split()[:3] == ["SDK", "floor", str(ours["resources"])]
    assert "ours / floor: render wall" in lines[1] and "peak RSS" in lines[1]
