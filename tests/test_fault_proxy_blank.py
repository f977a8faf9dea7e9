"""FaultProxy.blank_answers without a stack: a real HTTP server behind the proxy, its JSON answer edited
in flight (the doctor's stack test serves a Nova that hides OS-EXT-STS:task_state this way)."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from devenv.faults.proxy import FaultProxy, json_member

BODY = json.dumps(
    {"server": {"id": "s1", "OS-EXT-STS:task_state": "rebuilding", "status": "REBUILD", "name": "x" * 300}}
).encode()
KEY = json_member("OS-EXT-STS:task_state")


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        # in two writes with a pause, the key split across them: a match must survive the split
        cut = BODY.index(b"task_state") + 4
        self.wfile.write(BODY[:cut])
        self.wfile.flush()
        time.sleep(0.01)
        self.wfile.write(BODY[cut:])

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def proxy() -> Iterator[FaultProxy]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with FaultProxy("127.0.0.1", server.server_address[1]) as p:
            yield p
    finally:
        server.shutdown()


def test_a_blanked_key_is_gone_from_the_answer_and_the_json_stays_valid(proxy: FaultProxy) -> None:
    with requests.Session() as session:  # one keep-alive connection for all three answers
        assert (
            session.get(f"{proxy.url}/s", timeout=5).json()["server"]["OS-EXT-STS:task_state"] == "rebuilding"
        )
        proxy.blank_answers(KEY)
        got = session.get(f"{proxy.url}/s", timeout=5)
        assert len(got.content) == len(BODY)
        assert got.json()["server"] == {"id": "s1", "status": "REBUILD", "name": "x" * 300}
        proxy.blank_answers(None)
        assert session.get(f"{proxy.url}/s", timeout=5).content == BODY


@pytest.mark.parametrize(
    "text",
    [
        '{"k": "v", "a": 1}',
        '{"a": 1, "k": null}',
        '{"a": 1, "k": "with \\"quotes\\"", "b": [2]}',
        '{"k": 3}',
        '{"a": {"k": false}, "k": "x"}',
    ],
)
def test_json_member_blanks_the_key_wherever_it_stands(text: str) -> None:
    blanked = re.sub(json_member("k"), lambda m: b" " * len(m.group(0)), text.encode()).decode()
    assert len(blanked) == len(text)

    def without(value: object) -> object:
        if isinstance(value, dict):
            return {key: without(v) for key, v in value.items() if key != "k"}
        return value

    assert json.loads(blanked) == without(json.loads(text))
