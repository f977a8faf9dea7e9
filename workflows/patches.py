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

Generations: a run whose input says it was started by code that knew the first `g` releases (its
`generation`, stamped by whoever starts it: the bridge, the claim activity, continue-as-new) takes every
patch of those releases without asking, so it records no marker at all, where it used to record one or
two (four history events of a Keystone resource's 39 and two search-attribute writes). The input is in the
history, so a replay decides the same. A run without the field (started before generations) has 0 and
asks as before. A worker whose code knows fewer releases than a run's generation refuses the run's
workflow tasks (they are retried until a newer worker takes them), since it would take the old path of a
patch the run's starter took the new path of. Hence: roll the workers before the bridge.
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

# The next release (frozen once it lands, like the others).
RELEASE_6 = "osprov-release-2026-12f"
IN_RELEASE_6: frozenset[str] = frozenset(
    {
        "keystone-answer-local",
    }
)

# The next release (frozen once it lands, like the others).
RELEASE_7 = "osprov-release-2026-12g"
IN_RELEASE_7: frozenset[str] = frozenset(
    {
        "keystone-watchers-told-local",
        "keystone-user-told-before-password",
    }
)

# The next release (frozen once it lands, like the others).
RELEASE_8 = "osprov-release-2026-12h"
IN_RELEASE_8: frozenset[str] = frozenset(
    {
        "keystone-step-reads-together",
    }
)

# The next release (frozen once it lands, like the others).
RELEASE_9 = "osprov-release-2026-12i"
IN_RELEASE_9: frozenset[str] = frozenset(
    {
        "loadbalancer-reads-local",
    }
)

# The next release (frozen once it lands, like the others).
RELEASE_10 = "osprov-release-2026-12j"
IN_RELEASE_10: frozenset[str] = frozenset(
    {
        "keystone-answered-again",
    }
)

# The next release (frozen once it lands, like the others).
RELEASE_11 = "osprov-release-2026-12k"
IN_RELEASE_11: frozenset[str] = frozenset(
    {
        "keystone-absent-awaits-claim",
    }
)

# The next release (frozen once it lands, like the others).
RELEASE_12 = "osprov-release-2026-12l"
IN_RELEASE_12: frozenset[str] = frozenset(
    {
        "loadbalancer-members-step-reads-members",
    }
)

# The next release (frozen once it lands, like the others).
RELEASE_13 = "osprov-release-2026-12m"
IN_RELEASE_13: frozenset[str] = frozenset(
    {
        "loadbalancer-members-on-last-read",
    }
)

# (marker, the patches it covers), oldest first; a later release appends a row and edits none.
RELEASES: tuple[tuple[str, frozenset[str]], ...] = (
    (RELEASE, IN_RELEASE),
    (RELEASE_2, IN_RELEASE_2),
    (RELEASE_3, IN_RELEASE_3),
    (RELEASE_4, IN_RELEASE_4),
    (RELEASE_5, IN_RELEASE_5),
    (RELEASE_6, IN_RELEASE_6),
    (RELEASE_7, IN_RELEASE_7),
    (RELEASE_8, IN_RELEASE_8),
    (RELEASE_9, IN_RELEASE_9),
    (RELEASE_10, IN_RELEASE_10),
    (RELEASE_11, IN_RELEASE_11),
    (RELEASE_12, IN_RELEASE_12),
    (RELEASE_13, IN_RELEASE_13),
)


_RUN_GENERATION = "osprov_generation"  # the attribute begin_run sets on the workflow instance


def known() -> int:
    """The releases this code knows: the generation a run it continues as new is stamped with."""
    return len(RELEASES)


def begin_run(generation: int) -> None:
    """Set the running workflow's generation from its input (first thing in its run method).

    Raises (failing the workflow task, which Temporal retries, not the workflow) when the run was started
    by newer code than this worker's."""
    if generation > known():
        raise RuntimeError(
            f"this run was started by osprov code that knows {generation} releases and this worker knows "
            f"{known()}: it waits for an upgraded worker (roll the workers before the bridge)"
        )
    setattr(workflow.instance(), _RUN_GENERATION, generation)


def run_generation() -> int:
    """The running workflow's generation: 0 before begin_run, and for runs started before generations."""
    return int(getattr(workflow.instance(), _RUN_GENERATION, 0))


def release_index(patch_id: str) -> int | None:
    """1 for a patch of RELEASE, 2 for RELEASE_2, ...; None for a patch no release covers."""
    for index, (_, covered) in enumerate(RELEASES, start=1):
        if patch_id in covered:
            return index
    return None


def patched(patch_id: str) -> bool:
    """`workflow.patched(patch_id)`, answered by the run's generation, or else by the marker of the
    release that covers it."""
    index = release_index(patch_id)
    if index is None:
        return workflow.patched(patch_id)
    marker = RELEASES[index - 1][0]
    if index <= run_generation():
        if workflow.unsafe.is_replaying():
            # A worker from before generations ignores an EntityInput's generation, so it may have run
            # this run and recorded the marker; Temporal fails a replay that leaves a marker unasked.
            # Asked in replay, `patched` records nothing (True only where the history holds the marker);
            # asked live, it would record one, so live it is not asked.
            workflow.patched(marker)
        return True
    return workflow.patched(marker) or workflow.patched(patch_id)
