"""Reading the /healthz and /readyz endpoints of osprov's processes (OSPROV_HEALTH_PORT) in tests."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def probe(port: int, path: str = "/healthz") -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON body); a process that does not answer raises (wait_for counts that as "not yet")."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())
