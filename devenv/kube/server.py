"""Entry point: `python -m devenv.kube --port 0 --crds deploy/crds --kubeconfig kubeconfig --ready-file port`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from .admin import discovery_response, faults_response
from .errors import ApiError, bad_request, internal
from .handlers import Emulator, Handlers
from .httpio import error_response
from .openapi import OpenAPI
from .requests import too_large
from .store import Store
from .validation import MAX_REQUEST_BODY_BYTES

_DISCOVERY_ROOTS = ("/version", "/api", "/apis")


# Exceptions that, escaping a handler, come from what the client sent (a body of an unexpected shape): a
# 400 like the apiserver's decoders give, never a 500. The traceback still goes to the log.
CLIENT_MISTAKES = (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError, OverflowError)


def build_app(emulator: Emulator) -> web.Application:
    handlers = Handlers(emulator)
    openapi = OpenAPI(emulator.store)

    async def route(request: web.Request) -> web.StreamResponse:
        emulator.store.warnings = []
        try:
            response = await dispatch(request)
        except ApiError as err:
            return error_response(err)
        except web.HTTPRequestEntityTooLarge:
            return error_response(too_large())
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except CLIENT_MISTAKES as exc:
            traceback.print_exc()
            return error_response(
                bad_request(f"the request could not be processed: {type(exc).__name__}: {exc}")
            )
        except Exception:
            # A bug in the emulator: answer like an apiserver would (500 Status), keep the traceback for
            # the log (tracebacks carry no request bodies, so no Secret values).
            traceback.print_exc()
            return error_response(internal("the emulator failed to handle the request; see its log"))
        if emulator.store.warnings and not response.prepared:
            # RFC 7234 warn-text is a quoted-string: escape the quotes inside it.
            texts = (w.replace("\\", "\\\\").replace('"', '\\"') for w in emulator.store.warnings)
            response.headers["Warning"] = ", ".join(f'299 - "{text}"' for text in texts)
        return response

    async def dispatch(request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        parts = [p for p in path.split("/") if p]
        if path in ("/healthz", "/readyz", "/livez"):
            return web.Response(text="ok")
        if path == "/_emulator/faults":
            return await faults_response(emulator.store, emulator.faults, request)
        if parts and parts[0] == "openapi":
            return openapi.handle(request)
        is_discovery = (
            path in _DISCOVERY_ROOTS or parts == ["api", "v1"] or (parts[:1] == ["apis"] and len(parts) <= 3)
        )
        if is_discovery and request.method == "GET":
            return discovery_response(emulator.store, request)
        return await handlers.resource(request)

    # One byte more than the apiserver's limit: aiohttp refuses bodies of client_max_size bytes or more.
    app = web.Application(client_max_size=MAX_REQUEST_BODY_BYTES + 1)
    app.router.add_route("*", "/{tail:.*}", route)
    return app


def load_crd_files(store: Store, dirs: list[str]) -> int:
    count = 0
    for directory in dirs:
        if not Path(directory).is_dir():
            raise SystemExit(f"kube emulator: --crds {directory}: not a directory")
        for path in sorted(Path(directory).glob("*.yaml")):
            # libyaml's loader when present: the pure-Python one alone would eat the start-up budget.
            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            for doc in yaml.load_all(path.read_text(), Loader=loader):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    try:
                        store.register_crd(doc)
                    except ApiError as err:
                        raise SystemExit(f"kube emulator: {path}: {err.message}") from None
                    count += 1
    return count


def write_kubeconfig(path: str, url: str) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "osprov-dev", "cluster": {"server": url}}],
        "users": [{"name": "osprov-dev", "user": {}}],
        "contexts": [
            {
                "name": "osprov-dev",
                "context": {"cluster": "osprov-dev", "user": "osprov-dev", "namespace": "default"},
            }
        ],
        "current-context": "osprov-dev",
        "preferences": {},
    }
    _atomic_write(path, yaml.safe_dump(config, sort_keys=False))


def _atomic_write(path: str, text: str) -> None:
    """Write-then-rename so readers never see half a file; owner-only, as the state holds Secrets."""
    tmp = f"{path}.tmp{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


# A snapshot waits at least this long after the first write of a burst, and at least SAVE_SPACING times
# as long as the last snapshot took: with 10,000 resources and their Events a snapshot takes seconds, and
# one every 0.5 s was 93% of the emulator's CPU (py-spy, docs/benchmarks.md), on the cores it shares with
# osprov. Stopping the emulator (SIGTERM) always saves.
SAVE_DEBOUNCE_S = 0.5
SAVE_SPACING = 20


def save_delay(last_save_s: float) -> float:
    """Seconds from a change to the next snapshot: keeps snapshots to about 1/SAVE_SPACING of the time."""
    return max(SAVE_DEBOUNCE_S, SAVE_SPACING * last_save_s)


class Persistence:
    """Debounced snapshots of the store, so a burst of writes costs one file write."""

    def __init__(self, store: Store, path: str) -> None:
        self.store, self.path = store, path
        self.pending: asyncio.TimerHandle | None = None
        self.last_save_s = 0.0

    def load(self) -> None:
        if os.path.exists(self.path):
            self.store.restore(json.loads(Path(self.path).read_text()))

    def schedule(self) -> None:
        if self.pending is None:
            self.pending = asyncio.get_running_loop().call_later(save_delay(self.last_save_s), self.save)

    def save(self) -> None:
        self.pending = None
        started = time.monotonic()
        _atomic_write(self.path, json.dumps(self.store.snapshot(), separators=(",", ":")))
        self.last_save_s = time.monotonic() - started


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="osprov dev kube", description="Kubernetes API server emulator")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True, help="0 picks a free port")
    parser.add_argument(
        "--crds", action="append", default=[], metavar="DIR", help="load every *.yaml CRD in DIR"
    )
    parser.add_argument("--state", metavar="FILE", help="persist the store here and reload it at start")
    parser.add_argument("--watch-window", type=int, default=1000, help="retained events per resource type")
    parser.add_argument("--kubeconfig", metavar="PATH", help="write a kubeconfig (context osprov-dev) here")
    parser.add_argument("--ready-file", metavar="PATH", help="write the bound port here once listening")
    parser.add_argument(
        "--bookmark-interval", type=float, default=5.0, help="seconds between watch bookmarks"
    )
    parser.add_argument("--audit-log", metavar="PATH", help="append one JSON line per resource request")
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    store = Store(watch_window=args.watch_window)
    persistence = Persistence(store, args.state) if args.state else None
    if persistence is not None:
        persistence.load()
    load_crd_files(store, args.crds)
    emulator = Emulator(store, bookmark_interval_s=args.bookmark_interval)
    if args.audit_log:
        emulator.audit = open(args.audit_log, "a", encoding="utf-8")  # noqa: ASYNC230, SIM115 - lives with the server
    if persistence is not None:
        emulator.on_change = persistence.schedule
    runner = web.AppRunner(
        build_app(emulator), access_log=None, handler_cancellation=True, shutdown_timeout=1.0
    )
    await runner.setup()
    site = web.TCPSite(runner, args.host, args.port)
    await site.start()
    server: Any = site._server  # aiohttp exposes the bound sockets only here
    port = server.sockets[0].getsockname()[1]
    url = f"http://{args.host}:{port}"
    if args.kubeconfig:
        write_kubeconfig(args.kubeconfig, url)
    if args.ready_file:
        _atomic_write(args.ready_file, str(port))
    print(f"kube emulator listening on {url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    for state in store.types.values():
        state.cut_all()
    if persistence is not None:
        persistence.save()
    with contextlib.suppress(Exception):
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    # Objects may nest up to requests.MAX_JSON_DEPTH levels; copying and walking them recurses per level.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
    asyncio.run(serve(args))
    return 0


__all__ = ["build_app", "error_response", "main"]
