"""List + watch one resource type in one namespace, with resume and relist (the informer pattern).

A snapshot (list) is followed by a watch from the list's resourceVersion. A watch that ends or
drops is resumed from the last seen resourceVersion; 410 Gone (the server no longer has that
history) forces a relist. Each snapshot is delivered whole, so the consumer can notice objects
that vanished while nobody was watching. Runs in a thread: the official client is synchronous.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from osprov.runtime import logs

log = logs.log("osprov.bridge.watch")

Obj = dict[str, Any]


@dataclass(frozen=True)
class Target:
    """A resource type in a namespace; group "" with plural "secrets" is core/v1 Secrets."""

    group: str
    version: str
    plural: str
    namespace: str

    def __str__(self) -> str:
        return f"{self.plural}.{self.group or 'core'} in {self.namespace}"


class Gone(Exception):
    """The watch's resourceVersion is older than the server's retained history: relist."""


class Watcher:
    def __init__(
        self,
        api: client.ApiClient,
        target: Target,
        on_snapshot: Callable[[Target, list[Obj]], None],
        on_event: Callable[[Target, str, Obj], None],
        stop: threading.Event,
        watch_timeout_s: int = 300,
        on_relist: Callable[[Target], None] | None = None,
    ) -> None:
        self.api, self.target, self.stop = api, target, stop
        self.on_snapshot, self.on_event, self.on_relist = on_snapshot, on_event, on_relist
        self.watch_timeout_s = watch_timeout_s
        self.resource_version: str | None = None

    def _list_fn(self) -> Callable[..., Any]:
        t = self.target
        if t.group == "" and t.plural == "secrets":
            core = client.CoreV1Api(self.api)
            return lambda **kw: core.list_namespaced_secret(t.namespace, **kw)
        custom = client.CustomObjectsApi(self.api)
        return lambda **kw: custom.list_namespaced_custom_object(
            t.group, t.version, t.namespace, t.plural, **kw
        )

    def relist(self) -> None:
        resp = self._list_fn()(_preload_content=False)
        body = json.loads(resp.data)
        self.resource_version = body["metadata"]["resourceVersion"]
        self.on_snapshot(self.target, body.get("items") or [])

    def watch_once(self) -> None:
        """Watch from the current resourceVersion until the server ends the request."""
        fn = self._list_fn()
        w = watch.Watch()  # type: ignore[no-untyped-call] # the kubernetes client ships no types

        def list_call(**kw: Any) -> Any:
            return fn(**kw)

        list_call.__doc__ = "watch :return: object"  # the client derives the event type from this
        for event in w.stream(  # type: ignore[no-untyped-call]
            list_call,
            resource_version=self.resource_version,
            timeout_seconds=self.watch_timeout_s,
            allow_watch_bookmarks=True,
        ):
            if self.stop.is_set():
                w.stop()  # type: ignore[no-untyped-call]
                return
            kind = event["type"]
            obj = event["raw_object"]
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self.resource_version = rv
            if kind != "BOOKMARK":
                self.on_event(self.target, kind, obj)

    def run(self) -> None:
        backoff = 0.5
        needs_list = True
        while not self.stop.is_set():
            try:
                if needs_list:
                    self.relist()
                    needs_list = False
                self.watch_once()
                backoff = 0.5
            except ApiException as err:
                if err.status == 410:
                    log.info("watch expired (410 Gone): relisting", target=str(self.target))
                    if self.on_relist:
                        self.on_relist(self.target)
                    needs_list = True
                    continue
                log.warning("watch failed", target=str(self.target), status=err.status, reason=err.reason)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 30.0)
            except (HTTPError, OSError, ValueError) as err:
                # Dropped connection or a torn response: resume from the last resourceVersion.
                log.warning(
                    "watch connection lost: resuming", target=str(self.target), error=type(err).__name__
                )
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 30.0)
