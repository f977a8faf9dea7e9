"""The ownership contract: one workflow per Keystone object, its single writer and its ownership record.

Resources never write Keystone objects themselves: they *claim* an object (by its identity: type and
names) from that object's workflow, which decides — by whether osprov created the object, the operator's
allow- and deny-lists and the other claims — what may be written, and answers each claimant. Pure
pydantic: workflows import it inside Temporal's sandbox. No secret value ever appears here: a password
travels as a Secret reference and version.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import quote, unquote

from pydantic import BaseModel, ConfigDict, Field

from osprov.api.activity import HEARTBEAT_SECONDS, Activity
from osprov.api.keystone_io import SecretRef

SIGNAL_CLAIM = "claim"
SIGNAL_RELEASE = "release"
SIGNAL_WATCH = "watch"
SIGNAL_OBJECT_RESULT = "object_result"
SIGNAL_PARENT_READY = "parent_ready"
QUERY_OBJECT = "object"
# The object's ID in its workflow's memo (absent when it does not exist): a dependent's watch reads it by
# describing the run, which the server answers from its own record (no worker task, no query buffer).
MEMO_ID = "osprov_id"
WORKFLOW_TYPE = "KeystoneObject"

ObjectKind = Literal["domain", "project", "role", "group", "user", "service", "endpoint", "grant"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ObjectKey(_Frozen):
    """A Keystone object's identity, by the names a resource knows.

    domain: (name); project, group, user: (domain, name); role: (name[, domain]); service: (name, type);
    endpoint: (service name, service type, region, interface); grant: the role, the subject and the scope,
    each as a key of its own.
    """

    kind: ObjectKind
    name: str = ""
    domain: str | None = None  # the owning domain's name (project, group, user; role when domain-specific)
    type: str | None = None  # service type (service; endpoint: the service's type)
    region: str | None = None  # endpoint
    interface: str | None = None  # endpoint: admin | internal | public
    role: ObjectKey | None = None  # grant
    subject: ObjectKey | None = None  # grant: a user or a group
    scope: ObjectKey | None = None  # grant: a project or a domain; None = the system

    @property
    def parts(self) -> list[str]:
        if self.kind == "grant":
            assert self.role is not None and self.subject is not None
            scope = self.scope.path if self.scope else "system"
            return [self.role.path, self.subject.path, scope]
        return [p for p in (self.domain, self.name, self.type, self.region, self.interface) if p is not None]

    @property
    def path(self) -> str:
        """`kind/part/…`, each part escaped: what the operator's allow- and deny-lists name."""
        return "/".join([self.kind, *(quote(p, safe="") for p in self.parts)])

    def workflow_id(self, keystone: str, task_queue: str) -> str:
        """The object's workflow, per controller: the Keystone deployment it serves (config.keystone_name)
        and its task queue (two installations sharing a Temporal namespace keep separate records)."""
        return f"{WORKFLOW_TYPE}/{quote(keystone, safe='')}/{quote(task_queue, safe='')}/{self.path}"

    def __str__(self) -> str:
        if self.kind == "grant":
            assert self.role is not None and self.subject is not None
            scope = f"{self.scope}" if self.scope else "the system"
            return f"role {self.role.name} for {self.subject} on {scope}"
        where = {
            "project": f" in domain {self.domain}",
            "group": f" in domain {self.domain}",
            "user": f" in domain {self.domain}",
            "role": f" in domain {self.domain}" if self.domain else "",
            "service": f" of type {self.type}",
            "endpoint": f" of {self.type} service {self.name} in {self.region}",
        }.get(self.kind, "")
        label = f"{self.interface} endpoint" if self.kind == "endpoint" else f"{self.kind} {self.name}"
        return label + where


def workflow_path(workflow_id: str) -> list[str]:
    """The unescaped parts of an object workflow ID (for tools; the key itself is in the workflow's state)."""
    return [unquote(p) for p in workflow_id.split("/")[3:]]


class Desired(_Frozen):
    """What a claimant declares for the object: the managed fields it sets (unset = not managed by it),
    references to other objects the fields name, and for a user its password Secret."""

    fields: dict[str, Any] = Field(default_factory=dict)
    refs: dict[str, ObjectKey] = Field(default_factory=dict)  # field -> the object whose ID it takes
    password: SecretRef | None = None
    password_version: str | None = None  # the Secret's resourceVersion: a new one means "probe again"


class Claimant(_Frozen):
    workflow_id: str  # where results are signalled
    resource: str  # "Kind namespace/name": how a conflict names it to the other side


class Binding(_Frozen):
    """How a claimant binds the object (its spec's managementPolicy and import).

    managed (the default): the object is created when missing; fields are written as the ownership table
    allows. imported: bound explicitly — never created, pinned to `id` when one is given, and written only
    when osprov created it or the operator allow-lists it (else the claimant is told `refused`). observe
    (managementPolicy unmanaged): never created, never written, never deleted; the claimant is told what
    exists (`observed`)."""

    imported: bool = False
    id: str | None = None
    observe: bool = False

    @property
    def creates(self) -> bool:
        return not (self.imported or self.observe)


class Claim(_Frozen):
    keystone: str  # the Keystone deployment (the controller's keystone_name)
    claimant: Claimant
    key: ObjectKey
    desired: Desired
    deletion_policy: Literal["retain", "delete"] = "retain"
    seq: int  # echoed in the result: the claimant waits for the answer to its latest claim
    full: bool = False  # a full pass (desired state changed or the periodic resync): check drift, probe
    binding: Binding = Field(default_factory=Binding)
    # The claimant's activity heartbeat timeout (EntityConfig.heartbeat_seconds), which the object's own
    # Keystone calls use too: a dead worker's call moves on in seconds. None: no heartbeat timeout (the
    # time-skipping tests, where skipped server time outruns real heartbeats).
    heartbeat_seconds: float | None = HEARTBEAT_SECONDS
    # The claimant's resync period: the Keystone sweep (api/sweep.py) checks the object at least this often.
    resync_seconds: float | None = None


class Release(_Frozen):
    keystone: str
    claimant: Claimant
    key: ObjectKey
    deletion_policy: Literal["retain", "delete"]
    seq: int


class Watch(_Frozen):
    """A dependent asks to be told the object's ID (now if known, else when it appears)."""

    keystone: str
    watcher: str  # workflow ID of the dependent object's workflow
    key: ObjectKey
    # The ID the watcher already read from the object's memo (MEMO_ID): the object registers the watcher
    # and answers only if that is no longer what it holds (no step, no signal back per watcher).
    known_id: str | None = None


class ParentReady(_Frozen):
    """An object's answer to a watch, and its news later: whether it exists now, and its ID."""

    key: ObjectKey
    present: bool
    id: str | None = None


class WatchAnswer(ParentReady):
    """A watch's own answer (the WATCH activity's result; the parent's later news stays a ParentReady).

    `registered` False: the dependent read the parent's ID, but its watch was not sent, because the
    parent's run is too long to take more signals now (`defers_watch`). The dependent uses the ID and
    registers again later (ObjectState.unregistered)."""

    registered: bool = True


Outcome = Literal["ready", "adopted", "observed", "refused", "conflict", "waiting", "error", "released"]


class ObjectResult(_Frozen):
    """An object workflow's answer to one claimant (also sent unasked when the answer changes)."""

    key: ObjectKey
    seq: int
    outcome: Outcome
    message: str  # user-safe: goes to the resource's Ready condition
    id: str | None = None
    origin: Literal["created", "found"] | None = None
    action: Literal["created", "updated"] | None = None  # what this step wrote for the claimant (Events)


class Answer(_Frozen):
    """An object's result for one claimant's workflow, delivered by the answer activity."""

    workflow_id: str
    result: ObjectResult


class Tell(_Frozen):
    """An object's news for its dependents' workflows, delivered by the tell activity (one parent_ready
    signal to each)."""

    ready: ParentReady
    watchers: list[str]


class Told(_Frozen):
    """Whom the tell activity reached (recorded in the object's history, so the Web UI shows who heard
    what), and the watchers whose workflows are not running (the object forgets them)."""

    told: list[str]
    gone: list[str]


class Policy(_Frozen):
    """What the operator's configuration (never a resource) says about one object."""

    protected: bool = (
        False  # never written, never deleted (the controller's own identity, admin, identity service…)
    )
    allowed: bool = False  # osprov may converge it although it did not create it
    reason: str = ""  # why it is protected (user-safe)


class ObjectState(BaseModel):
    """The ownership record and single-writer state of one Keystone object (its workflow's state)."""

    keystone: str
    key: ObjectKey
    id: str | None = None  # the Keystone ID (grant: none; `present` says whether it exists)
    present: bool = False
    origin: Literal["created", "found"] | None = None  # decided once, at the first observation
    created_for: str | None = None  # the resource that osprov created it for
    claims: list[Claim] = Field(default_factory=list)  # latest claim per claimant, in arrival order
    watchers: list[str] = Field(default_factory=list)  # dependents' workflow IDs, told of every change
    parent_ids: dict[str, str] = Field(default_factory=dict)  # field -> ID of the object it references
    password_version: str | None = None  # Secret version whose password Keystone holds (verified or set)
    heartbeat_seconds: float | None = HEARTBEAT_SECONDS  # from the latest claim (Claim.heartbeat_seconds)
    policy: Policy | None = None
    swept: str | None = None  # digest of the last report to the Keystone sweep (None: none standing)
    held: list[str] = Field(default_factory=list)  # paused claimants (api/sweep.py Hold) until they claim
    results: dict[str, ObjectResult] = Field(default_factory=dict)  # last answer per claimant
    passes: int = 0
    # Parents whose ID this object uses but whose watch was deferred (WatchAnswer.registered False): it
    # registers with them again on a backoff, so their news reaches it.
    unregistered: list[ObjectKey] = Field(default_factory=list)


# An object's run continues as new once its history is this long, with or without a step (Temporal
# refuses signals past 10,000 per execution; workflows/keystone/objects.py).
MAX_HISTORY_PER_RUN = 5000
# A dependent that read its parent's ID defers its watch (registers later) while the parent's run is this
# many events past MAX_HISTORY_PER_RUN. A parent continues as new as soon as one of its tasks sees its run
# past MAX_HISTORY_PER_RUN, so a run this long means its tasks are behind: each watch would only add a
# signal that its next task must replay and handle. At 10,000 dependents, a domain whose task fell behind
# on a saturated worker collected 5,500 of them, its task then no longer fitted WORKFLOW_TASK_TIMEOUT,
# and the run hit Temporal's 10,000 signals (docs/benchmarks.md, "The 10,000 run"). The margin keeps a
# run that is keeping up from deferring anyone: every watch it takes below it reaches a task that rolls.
WATCH_DEFER_MARGIN = 100


def defers_watch(history_length: int) -> bool:
    """Whether a watch carrying the parent's ID waits, the parent's run being `history_length` long."""
    return history_length >= MAX_HISTORY_PER_RUN + WATCH_DEFER_MARGIN


class ObjectInput(_Frozen):
    """An object workflow's input: its key, and the state carried by continue-as-new."""

    keystone: str
    key: ObjectKey
    carried: ObjectState | None = None
    # The releases its starter's code knew (osprov.api.releases); 0 for runs started before generations.
    generation: int = 0


# --- the messaging activities (a workflow cannot signal-with-start another one by itself) -------------
CLAIM: Activity[Claim, None] = Activity("ownership.claim", Claim, type(None))
# A watch answers at once when the object's memo already holds its ID (None: the answer comes as a
# parent-ready signal); recorded runs from before that carry None.
WATCH: Activity[Watch, WatchAnswer | None] = Activity(
    "ownership.watch",
    Watch,
    WatchAnswer | None,  # type: ignore[arg-type]
)
RELEASE: Activity[Release, bool] = Activity("ownership.release", Release, bool)
UNWATCH: Activity[Watch, bool] = Activity("ownership.unwatch", Watch, bool)
POLICY: Activity[ObjectKey, Policy] = Activity("ownership.policy", ObjectKey, Policy)
# An object's answer as a local activity beside its sweep report: a workflow's own signal to another costs
# it two events and a workflow task of its own (the "signaled" event wakes it); False: the claimant's
# workflow is not running.
ANSWER: Activity[Answer, bool] = Activity("ownership.answer", Answer, bool)
# An object's news to its dependents as one local activity that signals them all at once: signalled one by
# one, each cost two events and a workflow task of its own, ~0.1 s apiece on the dependency chain. Returns
# whom it reached and the watchers whose workflows are not running.
TELL: Activity[Tell, Told] = Activity("ownership.tell_watchers", Tell, Told)
