"""Plan preview (`osprov plan`): the OpenStack calls a spec would make now, computed by the kind's own
decision functions against a fresh read, written nowhere. Pure pydantic: the workflows return it from the
Update `plan` (workflows/plan.py), the CLI prints it (osprov/plan.py).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from osprov.api.operations import PLAN  # noqa: F401 - re-exported: the annotation belongs to the plan

# The Update that computes a plan (argument: a spec as the API would hold it, or None for the current one).
UPDATE_PLAN = "plan"
# PLAN (the annotation): any value that differs from the last one handled makes the workflow compute the
# plan of its current spec and record it as an Event (`Planned`) — for a paused resource, or one whose step
# awaits approval.


class PlannedCall(BaseModel):
    """One call the workflow would make: its step label, the activity and its request (never a secret:
    the scope names a credential's Secret, never its value, and is left out)."""

    rule: str  # the decision table's label, e.g. "P6"
    activity: str  # e.g. octavia.replace_members
    what: str  # the step in words
    request: dict[str, Any] = Field(default_factory=dict)

    def line(self) -> str:
        return f"{self.rule}: {self.what} [{self.activity}]"


class Plan(BaseModel):
    kind: str
    namespace: str
    name: str
    reads: list[str] = Field(default_factory=list)  # what was read to decide (step texts)
    calls: list[PlannedCall] = Field(default_factory=list)  # the writes, in order
    then: str  # what happens after the calls (or why there are none)

    def render(self) -> str:
        head = f"{self.kind} {self.namespace}/{self.name}:"
        if not self.calls:
            return f"{head} no call — {self.then}"
        lines = [head]
        for c in self.calls:
            lines.append(f"  {c.line()}")
            lines.extend(f"      {k}: {v}" for k, v in c.request.items())
        lines.append(f"  then: {self.then}")
        return "\n".join(lines)


def request_of(action: BaseModel) -> dict[str, Any]:
    """A call's request as the plan shows it: its fields, without the scope/credential and without user
    data (cloud-init may carry material its author would not want echoed; its size is shown)."""
    shown = action.model_dump(
        mode="json", exclude={"scope", "project", "credential", "user_data"}, exclude_none=True
    )
    user_data = getattr(action, "user_data", None)
    if user_data:
        shown["user_data"] = f"({len(user_data)} characters, not shown)"
    return shown
