"""Consistent list snapshots, as etcd's MVCC gives kube-apiserver.

A list at resourceVersion R (a continue token pins the R of its first page; `resourceVersion=R` with
`resourceVersionMatch=Exact` asks for it) is rebuilt from the live objects by undoing the type's retained
events newer than R. When the window no longer reaches back to R, the list is gone: 410 Expired, and
for a continue token a fresh token that continues at the latest state (inconsistently), as upstream.
Continue tokens look like upstream's: base64url JSON {"v": "meta.k8s.io/v1", "rv": R, "start": key}.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from .errors import ApiError, bad_request
from .watch import TypeState

Key = tuple[str, str]

EXPIRED = "The resourceVersion for the provided list is too old."
INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
    "that were created, modified, or deleted between the time the first chunk was returned and now may show "
    "up in the list."
)


@dataclass
class Token:
    rv: int  # -1: continue at the latest state
    after: Key


def encode_token(rv: int, after: Key) -> str:
    start = f"{after[0]}/{after[1]}" if after[0] else after[1]
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start + "\x00"}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_token(value: str) -> Token:
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError) as exc:
        raise bad_request(f"invalid continue token: {exc}") from None
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise bad_request(f"invalid continue token: continue key is not valid: {exc}") from None
    if not isinstance(data, dict) or data.get("v") != "meta.k8s.io/v1":
        version = data.get("v") if isinstance(data, dict) else None
        raise bad_request(
            f'invalid continue token: continue key is not valid: server does not recognize this encoded version "{version}"'
        )
    rv, start = data.get("rv"), data.get("start")
    if not isinstance(rv, int) or isinstance(rv, bool) or rv == 0:
        raise bad_request(
            "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        )
    if not isinstance(start, str) or not start.rstrip("\x00"):
        raise bad_request(
            "invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
        )
    start = start.rstrip("\x00")
    namespace, _, name = start.rpartition("/")
    return Token(rv, (namespace, name))


def snapshot(state: TypeState, rv: int) -> dict[Key, dict[str, Any]] | None:
    """The type's objects as they were at `rv`, or None when the retained events no longer reach back."""
    if rv < state.compacted_rv:
        return None
    objects = dict(state.objects)
    for event in reversed(state.events):
        if event.rv <= rv:
            break
        meta = event.obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        if event.old is None:
            objects.pop(key, None)
        else:
            objects[key] = event.old
    return objects


def expired_continue(after: Key) -> ApiError:
    return ApiError(410, "Expired", INCONSISTENT_CONTINUE, list_continue=encode_token(-1, after))
