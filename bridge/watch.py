"""List + watch one resource type in one namespace, with resume and relist (the informer pattern).

A snapshot (list) is followed by a watch from the list's resourceVersion. A watch that ends or
drops is resumed from the last seen resourceVersion; 410 Gone (the server no longer has that
history) forces a relist. Each snapshot is delivered whole, so the consumer can notice objects
that vanished while nobody was watching. Runs in a thread: the official client is synchronous.

Progress (a list, any event including bookmarks, a watch the server ended) is reported for the
bridge's liveness. An unexpected exception ends the thread, but never silently: it is logged with its
traceback and reported as the watch's death, which fails liveness.

Secrets are listed and watched as metadata only (PartialObjectMetadata, no full-object fallback in
the Accept header): the bridge needs their resourceVersions, never their data. A server that answers
with anything else is refused.
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


# Metadata-only list and watch (what client-go's metadata client asks for, minus its fallbacks).
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
METADATA_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


class NotMetadata(Exception):
    """The server answered a metadata-only request with full objects."""


def _ignore(*_: Any) -> None:
    return None


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
        on_progress: Callable[[Target, bool], None] = _ignore,
        on_death: Callable[[Target, str], None] = _ignore,
    ) -> None:
        self.api, self.target, self.stop = api, target, stop
        self.on_snapshot, self.on_event, self.on_relist = on_snapshot, on_event, on_relist
        self.on_progress, self.on_death = on_progress, on_death
        self.watch_timeout_s = watch_timeout_s
        self.resource_version: str | None = None
        self.metadata_only = target.group == "" and target.plural == "secrets"
        self._watch: watch.Watch | None = None

    def _list_fn(self, accept: str) -> Callable[..., Any]:
        t = self.target
        if self.metadata_only:
            core = client.CoreV1Api(self.api)
            return lambda **kw: core.list_namespaced_secret(t.namespace, _headers={"Accept": accept}, **kw)
        custom = client.CustomObjectsApi(self.api)
        return lambda **kw: custom.list_namespaced_custom_object(
            t.group, t.version, t.namespace, t.plural, **kw
        )

    def _check_metadata(self, obj: Obj, kind: str) -> None:
        if self.metadata_only and obj.get("kind") != kind:
            raise NotMetadata(f"asked for {kind} of {self.target}, the server sent {obj.get('kind')!r}")

    def relist(self) -> None:
        # (a read timeout too: a list that never answers must not hold the thread forever)
        resp = self._list_fn(METADATA_LIST)(_preload_content=False, _request_timeout=(10, 120))
        body = json.loads(resp.data)
        self._check_metadata(body, "PartialObjectMetadataList")
        self.resource_version = body["metadata"]["resourceVersion"]
        self.on_snapshot(self.target, body.get("items") or [])
        self.on_progress(self.target, True)

    def watch_once(self) -> None:
        """Watch from the current resourceVersion until the server ends the request."""
        fn = self._list_fn(METADATA_WATCH)
        w = self._watch = watch.Watch()  # type: ignore[no-untyped-call] # untyped in the client

        def list_call(**kw: Any) -> Any:
            return fn(**kw)

        list_call.__doc__ = "watch :return: object"  # the client derives the event type from this
        for event in w.stream(  # type: ignore[no-untyped-call]
            list_call,
            resource_version=self.resource_version,
            timeout_seconds=self.watch_timeout_s,
            allow_watch_bookmarks=True,
            # The server ends the request after timeout_seconds; a connection silent for longer is dead.
            _request_timeout=(10, self.watch_timeout_s + 30),
        ):
            if self.stop.is_set():
                w.stop()  # type: ignore[no-untyped-call]
                return
            kind = event["type"]
            obj = event["raw_object"]
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self._check_metadata(obj, "PartialObjectMetadata")
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self.resource_version = rv
            if kind != "BOOKMARK":
                self.on_event(self.target, kind, obj)
            self.on_progress(self.target, False)
        self.on_progress(self.target, False)  # the server ended the request: the connection was alive

    def close(self) -> None:
        """Stop now (fencing): set stop and unblock a read in progress (the client shuts the socket down)."""
        self.stop.set()
        if self._watch is not None:
            self._watch.stop()  # type: ignore[no-untyped-call]

    def run(self) -> None:
        try:
            self._run()
        except Exception as err:
            # Not a connection problem the loop below handles: a bug or a server we do not understand.
            log.exception("watch thread died", target=str(self.target), error=type(err).__name__)
            self.on_death(self.target, f"{type(err).__name__}: {err}")

    def _run(self) -> None:
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
                if self.stop.is_set():
                    return
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
                if self.stop.is_set():
                    return  # close() shut the connection down
                # Dropped connection or a torn response: resume from the last resourceVersion.
                log.warning(
                    "watch connection lost: resuming", target=str(self.target), error=type(err).__name__
                )
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 30.0)
