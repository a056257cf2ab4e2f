"""The plan bench's synthetic stack is an example stack grown to N services, so it cannot rot."""

from __future__ import annotations

from inference_platform.settings.loader import parse_settings
from platformctl import bench
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
