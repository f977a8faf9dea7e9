"""How the benchmarks see each side finish: the plain script polls its cloud; osprov's resources are watched.

`watch_until` follows the resources as `kubectl wait` does (a list, then a watch from its resourceVersion),
so osprov's figure ends at the status write that finished it, not at the next tick of an observer's poll
(a 0.1 s poll added 50 ms on average to every osprov figure, which the plain side never paid).
"""

from __future__ import annotations

import time
from collections.abc import Callable
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
