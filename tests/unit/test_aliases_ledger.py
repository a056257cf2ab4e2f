"""The aliases ledger (core/aliases.py) covers what existing stacks' states still name."""

from __future__ import annotations

import subprocess
import sys

from inference_platform import COMPONENTS
from inference_platform.core.aliases import RELEASES, legacy_types
from tests.conftest import ROOT

# Components first published with an index token: no state names them otherwise.
ADDED_AFTER_INDEX_TOKENS = frozenset({"Training"})


def test_every_published_component_keeps_its_token_from_before_the_index_tokens():
    older = set(COMPONENTS) - ADDED_AFTER_INDEX_TOKENS
    assert all(len(legacy_types(name)) >= 1 for name in older)
    assert set(RELEASES["0.1.0"].type_tokens) == older
    assert all(legacy_types(name) == [] for name in ADDED_AFTER_INDEX_TOKENS)


def test_every_pickled_module_a_state_may_hold_still_imports_from_the_project_directory():
    # The provider process runs `python -m pulumi.dynamic` in the project directory: sys.path[0] is it.
    for release in RELEASES.values():
        for module, file in release.pickled_modules.items():
            assert (ROOT / file).is_file(), file
            probe = f"import {module} as m; print(m.BucketProvider.__module__, m.UploadProvider.__module__)"
            done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False)
            assert done.returncode == 0, done.stderr
            assert all(name.startswith("inference_platform.weights.s3.") for name in done.stdout.split())


def test_every_registered_component_imports_from_the_package_top():
    import inference_platform

    for name in COMPONENTS:
        assert getattr(inference_platform, name).__name__ == name
