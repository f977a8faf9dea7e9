"""How the benchmarks see each side finish: the plain script polls its cloud; osprov's resources are watched.

`watch_until` follows the resources as `kubectl wait` does (a list, then a watch from its resourceVersion),
so osprov's figure ends at the status write that finished it, not at the next tick of an observer's poll
(a 0.1 s poll added 50 ms on average to every osprov figure, which the plain side never paid).
`ReadyWatch` does the same for resources of several kinds at once (the identity examples, the scale run).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from osprov.api.registry import kind_info
from tests.support.osprov import Osprov

DEADLINE_S = 300.0
Objects = dict[str, dict[str, Any]]  # the namespace's resources of one kind, by name


def poll_until(
    check: Callable[[], bool], what: str, interval_s: float, deadline_s: float = DEADLINE_S
) -> float:
    """Check, then sleep `interval_s`, until `check()`; the seconds it took."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > deadline_s:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(interval_s)
    return time.monotonic() - start


def watch_until(
    o: Osprov, kind: str, done: Callable[[Objects], bool], what: str, deadline_s: float = DEADLINE_S
) -> None:
    """Return once `done` holds for the namespace's resources of `kind`, re-checked at every change."""
    info = kind_info(kind)
    args = (info.group, info.version, o.namespace, info.plural)
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        listed: Any = o.custom.list_namespaced_custom_object(*args)
        objects: Objects = {item["metadata"]["name"]: item for item in listed["items"]}
        if done(objects):
            return
        watch = kubernetes.watch.Watch()
        try:
            for event in watch.stream(
                o.custom.list_namespaced_custom_object,
                *args,
                resource_version=listed["metadata"]["resourceVersion"],
                timeout_seconds=max(1, int(deadline - time.monotonic())),
            ):
                item = event["object"]
                if event["type"] == "DELETED":
                    objects.pop(item["metadata"]["name"], None)
                else:
                    objects[item["metadata"]["name"]] = item
                if done(objects):
                    watch.stop()
                    return
        except ApiException as err:
            if err.status != 410:
                raise  # 410: the resourceVersion expired; list again
    raise TimeoutError(f"timed out waiting for {what}")


def ready_at_any_generation(item: dict[str, Any]) -> bool:
    """Ready is True (for whatever generation it was written)."""
    conds = (item.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def ready_for_its_generation(item: dict[str, Any]) -> bool:
    """Ready is True for the resource's current generation (what `all_ready` checks)."""
    status = item.get("status") or {}
    current = status.get("observedGeneration") == (item.get("metadata") or {}).get("generation")
    return current and ready_at_any_generation(item)


Key = tuple[str, str]  # (kind, name)


class ReadyWatch:
    """Which of a namespace's resources are Ready, kept from one watch per kind (a list, then its events),
    and when each turned Ready: the moment this process received the status write's event.

    The identity figures used to poll every resource every 0.2 s: one GET per resource per tick on the
    Kubernetes API osprov shares the cores with, and up to a tick (plus the GETs) added to osprov's time,
    which the CLI's and the plain loop's clocks never paid. An expired resourceVersion (410) lists again."""

    def __init__(self, osprov: Osprov, kinds: Iterable[str], ready: Callable[[dict[str, Any]], bool]) -> None:
        self.osprov, self.is_ready = osprov, ready
        self.ready: dict[Key, bool] = {}
        self.ready_count = 0  # of self.ready's values, kept so a wait at 10,000 need not recount each event
        self.turned_ready_at: dict[Key, float] = {}  # time.monotonic() when last seen turning Ready
        self.changed = threading.Condition()
        self.stopped = threading.Event()
        self.listed = threading.Semaphore(0)  # one release per kind's first list (or its failure)
        self.error: BaseException | None = None  # a watch thread's, raised by the waits
        self.threads = [
            threading.Thread(target=self._follow, args=(k,), daemon=True) for k in sorted(set(kinds))
        ]

    def __enter__(self) -> ReadyWatch:
        """Start following; returns once every kind was listed, so the timed window starts after that."""
        for thread in self.threads:
            thread.start()
        listed = all(self.listed.acquire(timeout=DEADLINE_S) for _ in self.threads)
        if self.error is not None or not listed:
            self.__exit__()  # stop the other kinds' threads: no `with` body runs, so no exit either
            raise self.error or TimeoutError("the first list of the watched kinds")
        return self

    def __exit__(self, *_: object) -> None:
        self.stopped.set()
        for thread in self.threads:
            thread.join(timeout=15)

    def count(self) -> int:
        with self.changed:
            return self.ready_count

    def wait_ready(self, resources: Iterable[Key], what: str, deadline_s: float = DEADLINE_S) -> float:
        """Block until every resource is Ready; the time.monotonic() at which the last of them turned Ready."""
        wanted = list(resources)
        with self.changed:

            def done() -> bool:
                if self.error is not None:
                    return True
                return self.ready_count >= len(wanted) and all(self.ready.get(r) for r in wanted)

            if not self.changed.wait_for(done, deadline_s):
                raise TimeoutError(f"timed out waiting for {what}")
            if self.error is not None:
                raise self.error
            return max(self.turned_ready_at[r] for r in wanted)

    def _see(self, key: Key, item: dict[str, Any] | None) -> None:
        now = time.monotonic()
        with self.changed:
            ready = item is not None and self.is_ready(item)
            was = self.ready.pop(key, False)
            if ready and not was:
                self.turned_ready_at[key] = now
            if item is not None:
                self.ready[key] = ready
            self.ready_count += int(ready) - int(was)
            self.changed.notify_all()

    def _follow(self, kind: str) -> None:
        try:
            self._follow_kind(kind)
        except BaseException as err:  # handed to the waits, which would otherwise wait for nothing
            with self.changed:
                self.error = err
                self.changed.notify_all()
            self.listed.release()

    def _follow_kind(self, kind: str) -> None:
        info, custom = kind_info(kind), self.osprov.custom
        args = (info.group, info.version, self.osprov.namespace, info.plural)
        version, first_listed = None, False
        while not self.stopped.is_set():
            try:
                if version is None:
                    listed: dict[str, Any] = custom.list_namespaced_custom_object(*args)  # type: ignore[assignment]
                    for item in listed["items"]:
                        self._see((kind, item["metadata"]["name"]), item)
                    if not first_listed:
                        self.listed.release()
                        first_listed = True
                    version = listed["metadata"]["resourceVersion"]
                watch = kubernetes.watch.Watch()
                for event in watch.stream(
                    custom.list_namespaced_custom_object, *args, resource_version=version, timeout_seconds=5
                ):
                    item = event["object"]
                    version = item["metadata"]["resourceVersion"]
                    gone = event["type"] == "DELETED"
                    self._see((kind, item["metadata"]["name"]), None if gone else item)
                    if self.stopped.is_set():
                        watch.stop()
            except ApiException as err:
                if err.status != 410:
                    raise
                version = None  # the watch's resourceVersion expired: list again
