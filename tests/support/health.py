"""Reading the /healthz and /readyz endpoints of osprov's processes (OSPROV_HEALTH_PORT) in tests."""

from __future__ import annotations

import json
import random
import socket
import urllib.error
import urllib.request
from typing import Any

# Listener ports for processes a test starts come from below the kernel's ephemeral range (32768+), where
# the stack's fixed ports also live: a port picked with bind(0) is an ephemeral one that any outgoing
# connection on this busy machine may take before the child binds it (its health server then fails to
# start). Random, so concurrent pytest sessions rarely try the same one; checked free on every address.
LISTEN_PORTS = range(20000, 30000)


def free_port() -> int:
    for _ in range(200):
        port = random.choice(LISTEN_PORTS)
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {LISTEN_PORTS}")


def probe(port: int, path: str = "/healthz") -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON body); a process that does not answer raises (wait_for counts that as "not yet")."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())
