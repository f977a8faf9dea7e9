"""Patch markers: one per run for everything a release changed, instead of one per change.

Every `workflow.patched(ID)` a run calls costs two history events the first time (the marker, and the
TemporalChangeVersion search-attribute upsert the SDK adds), and a Project pass called four: a third of its
history. A run started on this code records its release's marker once and takes the new path of every
patch that release covers without recording them. A run started before the release has no such marker,
so `patched(marker)` is False for it (memoized for the run) and each patch is asked for itself, as before.

Why this is exact: every covered patch is asked through `patched()` below, which asks its release's
marker first, so the marker's value is fixed before any patch it covers is evaluated. Evaluated live, the
marker is True and so would each of its patches have been; evaluated in replay, it is True exactly when
the history recorded it.

A release's set is frozen once it ships, and its marker is never renamed or dropped: a run started on it
holds that marker and none of the patches it covers, so only that marker can answer them in replay. The
next release appends its own (marker, patches) row to RELEASES; its runs record both markers the first
time they need each (tests/workflows/test_patches.py replays a history across such an append, and shows
that renaming the marker instead breaks it).
"""

from __future__ import annotations

from temporalio import workflow

RELEASE = "osprov-release-2026-12"

# What RELEASE covers. Frozen: it has shipped.
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


# The release after it, frozen like the first once it lands: a run started on it records RELEASE_2 and
# would replay a patch added here later down its new path. The next patches get a RELEASE_3 row.
RELEASE_2 = "osprov-release-2026-12b"
IN_RELEASE_2: frozenset[str] = frozenset(
    {
        "server-create-looks-itself",
        "volume-create-looks-itself",
    }
)

# The release after that (frozen once it lands, like the others).
RELEASE_3 = "osprov-release-2026-12c"
IN_RELEASE_3: frozenset[str] = frozenset(
    {
        "keystone-id-in-memo",
        "keystone-late-answer-awaited",
    }
)

# The next release (frozen once it lands, like the others).
RELEASE_4 = "osprov-release-2026-12d"
IN_RELEASE_4: frozenset[str] = frozenset(
    {
        "keystone-late-answer-wakes",
        "keystone-sweep-shards",
        "keystone-object-rolls-without-step",
        "keystone-object-step-retried",
        "keystone-early-answers-kept",
    }
)

# The next release (frozen once it lands, like the others).
RELEASE_5 = "osprov-release-2026-12e"
IN_RELEASE_5: frozenset[str] = frozenset(
    {
        "keystone-object-reasks-unanswered",
    }
)

# (marker, the patches it covers), oldest first; a later release appends a row and edits none.
RELEASES: tuple[tuple[str, frozenset[str]], ...] = (
    (RELEASE, IN_RELEASE),
    (RELEASE_2, IN_RELEASE_2),
    (RELEASE_3, IN_RELEASE_3),
    (RELEASE_4, IN_RELEASE_4),
    (RELEASE_5, IN_RELEASE_5),
)


def release_marker(patch_id: str) -> str | None:
    """The marker of the release that covers `patch_id`, if one does."""
    for marker, covered in RELEASES:
        if patch_id in covered:
            return marker
    return None


def patched(patch_id: str) -> bool:
    """`workflow.patched(patch_id)`, answered by the marker of the release that covers it."""
    marker = release_marker(patch_id)
    if marker is not None and workflow.patched(marker):
        return True
    return workflow.patched(patch_id)
