"""Per-resource-type event log (the apiserver's watch cache) and watchers fed in resourceVersion order.

Everything runs on one asyncio loop and events are dispatched synchronously at commit time, so each
watcher's queue is always in strictly increasing resourceVersion order and a watch that starts
"from RV N" never misses or duplicates an event.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from .encoding import encode_object
from .errors import gone
from .resources import ResourceType
from .selectors import Selector


@dataclass
class Event:
    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    obj: dict[str, Any]  # new state; for DELETED the last state (with the deletion's resourceVersion)
    old: dict[str, Any] | None  # previous state, to turn selector transitions into ADDED/DELETED
    namespace: str


@dataclass(eq=False)
class Watcher:
    namespace: str | None
    selector: Selector
    version: str
    queue: asyncio.Queue[tuple[str, dict[str, Any]] | None] = field(default_factory=asyncio.Queue)

    def offer(self, event: Event) -> None:
        if self.namespace is not None and event.namespace != self.namespace:
            return
        now = event.type != "DELETED" and self.selector.matches(event.obj)
        before = event.old is not None and self.selector.matches(event.old)
        if event.type == "DELETED":
            if self.selector.matches(event.obj):
                self.queue.put_nowait(("DELETED", event.obj))
        elif now and before:
            self.queue.put_nowait(("MODIFIED", event.obj))
        elif now:
            self.queue.put_nowait(("ADDED", event.obj))
        elif before:
            # The object left the selection: a real apiserver's watch cache reports that as DELETED.
            self.queue.put_nowait(("DELETED", event.obj))

    def cut(self) -> None:
        self.queue.put_nowait(None)


class TypeState:
    """Objects of one resource type plus its retained event window."""

    def __init__(self, rtype: ResourceType, window: int, start_rv: int = 0) -> None:
        self.rtype = rtype
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.events: deque[Event] = deque()
        self.window = window
        self.compacted_rv = start_rv  # events at or below this RV are no longer retained
        self.watchers: set[Watcher] = set()
        self.force_gone = 0

    def record(self, event: Event) -> None:
        self.events.append(event)
        while len(self.events) > self.window:
            self.compacted_rv = self.events.popleft().rv
        for watcher in list(self.watchers):
            watcher.offer(event)

    def start_watch(self, watcher: Watcher, since: int | None) -> None:
        """Register `watcher`, queueing what it must see first (synthetic ADDEDs or the replay)."""
        if self.force_gone > 0:
            self.force_gone -= 1
            raise gone(f"too old resource version: {since or 0} (forced by the emulator's fault injection)")
        if since is None:
            for obj in sorted(self.objects.values(), key=lambda o: int(o["metadata"]["resourceVersion"])):
                in_namespace = (
                    watcher.namespace is None or obj["metadata"].get("namespace", "") == watcher.namespace
                )
                if in_namespace and watcher.selector.matches(obj):
                    watcher.queue.put_nowait(("ADDED", obj))
        else:
            if since < self.compacted_rv:
                raise gone(f"too old resource version: {since} ({self.compacted_rv + 1})")
            for event in self.events:
                if event.rv > since:
                    watcher.offer(event)
        self.watchers.add(watcher)

    def stop_watch(self, watcher: Watcher) -> None:
        self.watchers.discard(watcher)

    def cut_all(self) -> None:
        for watcher in list(self.watchers):
            watcher.cut()


def encode_event(event_type: str, obj: dict[str, Any]) -> bytes:
    return b'{"type":"' + event_type.encode() + b'","object":' + encode_object(obj) + b"}\n"
