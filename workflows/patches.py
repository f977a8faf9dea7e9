"""Patch markers: one per run for everything a release changed, instead of one per change.

Every `workflow.patched(ID)` a run calls costs two history events the first time (the marker, and the
TemporalChangeVersion search-attribute upsert the SDK adds), and a Project pass called four: a third of its
history. A run started on this code records one marker, RELEASE, and takes the new path of every patch
in IN_RELEASE without recording them. A run started before it has no RELEASE marker, so `patched(RELEASE)`
is False for it (memoized for the run) and each patch is asked for itself, as before.

Why this is exact: every patch in IN_RELEASE is asked through `patched()` below, which asks RELEASE
first, so RELEASE's value is fixed before any of them is evaluated. Evaluated live, RELEASE is True and
so would each of them have been; evaluated in replay, it is True exactly when the history recorded it.

A later release adds its patches to IN_RELEASE and renames RELEASE (an ID no run has recorded); runs
started on this release then replay with RELEASE False and ask for their patches one by one, which
their histories hold (tests/replay proves it with histories recorded before the rename).
"""

from __future__ import annotations

from temporalio import workflow

RELEASE = "osprov-release-2026-12"

IN_RELEASE: frozenset[str] = frozenset(
    {
        "keystone-ownership",
        "keystone-sweep",
        "kube-writes-local",
        "k8s-events",
        "tenancy-mapping",
        "identity-keypair-delete",
        "revoke-superseded-grant",
        "domain-disable-before-delete",
        "server-resize",
        "server-finalize-requeue",
        "server-image-check",
        "server-observe",
        "server-await-in-activity",
        "server-submit-after-arm",
        "server-settled-read",
        "server-baremetal-status",
        "server-rebuild-search-attribute",
        "server-phase-deleting",
        "loadbalancer-finalize-requeue",
        "loadbalancer-observe",
        "loadbalancer-await-in-activity",
        "loadbalancer-read-at-once",
        "loadbalancer-await-reads-tree",
        "volume-finalize-requeue",
        "volume-class-check",
        "volume-observe",
        "volume-await-in-activity",
        "volume-extend",
        "keystone-parent-answer-ends-wait",
    }
)


def patched(patch_id: str) -> bool:
    """`workflow.patched(patch_id)`, answered by the release marker for the patches it covers."""
    if patch_id in IN_RELEASE and workflow.patched(RELEASE):
        return True
    return workflow.patched(patch_id)
