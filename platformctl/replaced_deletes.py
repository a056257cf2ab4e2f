"""When `pulumi up` deletes the old object of a create-first replacement, and what may still use it.

The engine deletes replaced resources once every registration of the program has finished
(pulumi/pulumi pkg/resource/deploy/deployment_executor.go performPostSteps, step_generator.go
GenerateDeletes): after the updates of the resources that take the new object's name, each with
its wait. Where such a resource is awaited, the old object outlives the wait; where it is not (a
custom resource without `pulumi.com/waitFor`), the old object is gone at once, while what the
resource runs (a RayService's serving cluster, say) may still mount it.
"""

from __future__ import annotations

from typing import Any, Iterable

from .awaits import effective_wait


def replaced_delete_notes(changes: Iterable[Any], new: dict[str, dict[str, Any]]) -> list[str]:
    """A note per create-first replacement that an updated resource refers to by name."""
    changes = list(changes)
    create_first = {c.key for c in changes if c.action == "replace" and not c.delete_first}
    notes = []
    for c in changes:
        if c.action != "update":
            continue
        wait = effective_wait(new[c.key])
        for old in sorted({d for d in c.unknown.values() if d in create_first}):
            if wait is None:
                continue
            if wait.update is not None:
                notes.append(f"note: {old}: the old object is deleted at the end of `pulumi up`, after {c.key}, "
                             f"which takes the new one's name, has become ready (waits up to {wait.update:g}s: {wait.source})")
            else:
                notes.append(f"note: {old}: the old object is deleted at the end of `pulumi up`, and {c.key}, which "
                             "takes the new one's name, is not awaited: what it runs may still use the old one then")
    return notes
