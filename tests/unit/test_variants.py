"""The test stack of acme-prod on Heat stays acme-prod with the Heat edits, and nothing else."""

from __future__ import annotations

import yaml

from tests.conftest import ROOT
from tests.support.variants import HEAT_STACK, to_heat


def test_heat_stack_is_acme_prod_with_the_heat_edits():
    acme = yaml.safe_load((ROOT / "stacks" / "Pulumi.acme-prod.yaml").read_text())["config"]
    heat = yaml.safe_load((ROOT / "tests" / "data" / f"Pulumi.{HEAT_STACK}.yaml").read_text())["config"]
    assert heat == to_heat(acme)
