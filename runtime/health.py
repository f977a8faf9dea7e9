"""/healthz (liveness) and /readyz (readiness) of the worker and the bridge, on OSPROV_HEALTH_PORT.

Liveness means progress, not "the process answers": each process decides from what it saw (a watch's
last event, a poller's last successful poll), and a failing probe says why in its JSON body (shown by
`kubectl describe pod` and in the kubelet's events). Checks read in-memory state only, so a probe is
answered at once even while a dependency hangs; an event loop that is stuck answers nothing, and the
probe's timeout catches that too. /metrics stays on OSPROV_METRICS_PORT (served by the Temporal runtime).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass(frozen=True)
class Report:
    ok: bool
    details: dict[str, Any] = field(default_factory=dict)


Check = Callable[[], Report]


def _respond(check: Check) -> Callable[[web.Request], Any]:
    async def handle(_: web.Request) -> web.Response:
        report = check()
        return web.json_response({"ok": report.ok, **report.details}, status=200 if report.ok else 503)

    return handle


async def serve(port: int, live: Check, ready: Check, host: str = "0.0.0.0") -> web.AppRunner:
    """Start serving the two endpoints; the caller cleans the returned runner up."""
    app = web.Application()
    app.add_routes([web.get("/healthz", _respond(live)), web.get("/readyz", _respond(ready))])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
