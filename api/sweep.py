"""The Keystone sweep: drift detection for every converged Keystone object with one list call per kind.

A converged object's workflow does not re-read its object on a timer of its own. It reports what it saw
(`Swept`: the ID, a digest of the fields, for a grant the assignment, for a user whose password osprov
manages the Secret reference, and the operator's policy) to one of SHARDS shard workflows per Keystone
deployment and task queue, which only hold the reports. One lead sweep workflow per deployment and task
queue ticks: each resync period its `scan` activity reads the shards' reports, lists each reported kind
once (and logs in once per managed password) and names the objects whose Keystone state differs from the
report; only those objects' workflows are woken (`SIGNAL_RESYNC`) for a full step, and they answer their
claimants only when the answer changes. An idle Keystone resource costs nothing per tick of its own
(docs/architecture.md). Pure pydantic: workflows import it inside Temporal's sandbox.

Why shards: a workflow's state travels as one payload through continue-as-new and the scan's query, and
Temporal refuses a payload over 2 MB (the gRPC limit is 4 MB). One report is ~550 bytes, so one workflow
holding every report stopped at about 3,600 objects; each shard holds about 1/SHARDS of them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field

from osprov.api.activity import Activity
from osprov.api.keystone_io import Grant, Probe
from osprov.api.ownership import ObjectKey, Policy

WORKFLOW_TYPE = "KeystoneSweep"  # the lead: ticks and scans
SHARD_WORKFLOW_TYPE = "KeystoneSweepShard"  # holds the reports of the objects whose path hashes to it
# Frozen: a different count moves reports to other shards. At ~550 bytes a report, 64 shards keep each
# shard's payload under Temporal's 512 KB warning up to ~60,000 objects and under its 2 MB limit up to
# ~230,000 (docs/benchmarks.md).
SHARDS = 64
SIGNAL_WAKE = "sweep_wake"  # to the lead, from a shard: its shortest period changed (or it is empty)
SIGNAL_REPORT = "sweep_report"  # to the sweep: an object's latest Swept
SIGNAL_FORGET = "sweep_forget"  # to the sweep: the object is absent or its workflow ends
SIGNAL_RESYNC = "resync"  # to an object workflow: its object drifted, take a full step
SIGNAL_HOLD = "hold"  # to an object workflow: a claimant is paused (Hold), or resumed (its next claim)
QUERY_SWEPT = "swept"  # the sweep's SweepState (the scan activity reads the reports so, not via history)
DEFAULT_PERIOD_SECONDS = 600.0
# The workflow.patched ID of this behaviour, in the object workflows and in the Keystone resources' (whose
# converged runs then keep no resync timer): runs that began before keep their periodic claims.
PATCH = "keystone-sweep"
PATCH_SHARDS = "keystone-sweep-shards"  # the lead takes its shards' wakes (an older worker had no handler)


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def workflow_id(keystone: str, task_queue: str) -> str:
    """One sweep per Keystone deployment and task queue (as the object workflows are keyed)."""
    return f"{WORKFLOW_TYPE}/{quote(keystone, safe='')}/{quote(task_queue, safe='')}"


def shard_of(path: str) -> int:
    """The shard that holds an object's report: a stable hash of its path."""
    return int(hashlib.sha256(path.encode()).hexdigest()[:8], 16) % SHARDS


def shard_workflow_id(keystone: str, task_queue: str, shard: int) -> str:
    return f"{SHARD_WORKFLOW_TYPE}/{quote(keystone, safe='')}/{quote(task_queue, safe='')}/{shard}"


def shard_number(shard_workflow_id: str) -> int:
    return int(shard_workflow_id.rsplit("/", 1)[1])


def digest(fields: dict[str, Any]) -> str:
    """A short, stable digest of an object's observed fields (the same on both sides of the comparison:
    the object workflow digests what its read returned, the scan what the list returned)."""
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Swept(_Frozen):
    """What an object workflow saw of its object after a converged step."""

    key: ObjectKey
    workflow_id: str  # the object's workflow: woken with SIGNAL_RESYNC on drift
    id: str | None = None  # the Keystone ID (grant: none)
    digest: str = ""  # of the observed fields (grant: "")
    grant: Grant | None = None  # a grant: the assignment that must exist
    probe: Probe | None = None  # a user whose password osprov manages: log in with the Secret's value
    policy: Policy = Field(default_factory=Policy)  # the operator's policy the step ran under
    period_seconds: float = DEFAULT_PERIOD_SECONDS  # the shortest resync period its claimants ask for


class Hold(_Frozen):
    """A claimant paused by the operator's annotation: while the object's applied declaration is a held
    one, the sweep does not wake the object (no drift repair for a paused resource). Its next claim
    (the full pass after the pause) lifts the hold."""

    claimant: str  # the claimant's workflow ID


class Forget(_Frozen):
    keystone: str
    path: str


class Report(_Frozen):
    keystone: str
    swept: Swept


class SweepState(BaseModel):
    """A sweep's state, carried by continue-as-new: the latest report per object path (a shard's; the
    lead's holds only reports sent before the shards), and the lead's view of the shards."""

    keystone: str
    swept: dict[str, Swept] = Field(default_factory=dict)
    ticks: int = 0  # scans begun, over every run (tools and tests read it)
    shards: dict[int, float] = Field(
        default_factory=dict
    )  # lead: each shard with reports, its shortest period


class SweepInput(_Frozen):
    keystone: str
    carried: SweepState | None = None


class Wake(_Frozen):
    """A shard's summary for the lead: its shortest period, or None when it holds no report."""

    keystone: str
    shard: int
    period_seconds: float | None


class ShardInput(_Frozen):
    keystone: str
    shard: int
    carried: SweepState | None = None
    told: float | None = None  # the summary the lead was last sent (Wake.period_seconds)


class Scan(_Frozen):
    """Compare the reports (read with QUERY_SWEPT from the lead, `sweep_workflow_id`, and from `shards`,
    workflow IDs) with Keystone."""

    sweep_workflow_id: str
    shards: list[str] = Field(default_factory=list)


class Drift(_Frozen):
    path: str
    reason: str  # user-safe: "deleted", "fields changed", "grant missing", "password changed", …
    workflow_id: str = ""  # the object's workflow ("": a scan from before the shards; the lead's table says)
    table: str = ""  # the shard's workflow ID that holds the report ("": the lead's own table)


class ScanResult(_Frozen):
    checked: int
    drifted: list[Drift] = Field(default_factory=list)
    # The lead's own reports that a shard holds too: their objects report to the shard now (the lead drops them).
    stale: list[str] = Field(default_factory=list)
    periods: dict[int, float] = Field(default_factory=dict)  # each shard with reports: its shortest period


# Signal-with-start of the sweep (a workflow cannot start another by itself), and the scan.
REPORT: Activity[Report, None] = Activity("ownership.sweep_report", Report, type(None))
FORGET: Activity[Forget, None] = Activity("ownership.sweep_forget", Forget, type(None))
SCAN: Activity[Scan, ScanResult] = Activity("keystone.scan", Scan, ScanResult)
WAKE: Activity[Wake, None] = Activity("ownership.sweep_wake", Wake, type(None))
