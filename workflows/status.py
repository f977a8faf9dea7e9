"""Status write-back, written once: merge conditions, build the kind's api status model, patch if changed.

The body sent is the status model's JSON (camelCase, unset fields omitted). It is compared with the body
last written and sent only when it differs; a field that was written before and is now unset is sent as
null, because a JSON merge patch keeps every key it does not mention.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api.common import Condition, StatusModel
    from osprov.api.messages import ConditionState


def merge_conditions(
    old: list[ConditionState], new: list[ConditionState], now: datetime
) -> list[ConditionState]:
    """`new` replaces conditions of the same type; lastTransitionTime moves only when a status changes."""
    before = {c.type: c for c in old}
    merged: list[ConditionState] = []
    for c in new:
        prev = before.pop(c.type, None)
        kept = prev.last_transition_time if prev is not None and prev.status == c.status else None
        merged.append(c.model_copy(update={"last_transition_time": kept or now}))
    merged.extend(before.values())
    return merged


def api_conditions(conditions: list[ConditionState], generation: int, now: datetime) -> list[Condition]:
    return [
        Condition(
            type=c.type,
            status=c.status,
            reason=c.reason,
            message=c.message,
            last_transition_time=c.last_transition_time or now,
            observed_generation=generation,
        )
        for c in conditions
    ]


def _set(body: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (body or {}).items() if v is not None}


def status_patch(
    status: StatusModel, written: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(body, merge patch) when `status` differs from the body last written; None when nothing changed."""
    body = status.to_k8s()
    if body == _set(written):
        return None
    cleared = {k: None for k, v in (written or {}).items() if v is not None and k not in body}
    return body, body | cleared
