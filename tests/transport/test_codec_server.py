"""`osprov codec-server` as a process, over HTTP: a token on every call, /encode off unless enabled,
CORS for the UI's origin only, payloads of several MiB, and the token never in its output."""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.contrib.pydantic import pydantic_data_converter

from osprov.runtime.codec import AesGcmCodec, parse_keys
from tests.support.health import free_port
from tests.support.waiting import wait_for

KEY = base64.b64encode(secrets.token_bytes(32)).decode()
CODEC = AesGcmCodec(parse_keys(f"k1:{KEY}"), "k1")
UI = "http://ui.example:8233"
TOKEN = secrets.token_urlsafe(32)


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def start_server(tmp: Path, *flags: str, **env: str) -> Iterator[Server]:
    port = free_port()
    log = tmp / f"codec-{port}.log"
    environment = {
        "PATH": "/usr/bin:/bin",
        "OSPROV_CODEC_KEYS": f"k1:{KEY}",
        "OSPROV_CODEC_TOKEN": TOKEN,
    } | env
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "osprov",
                "codec-server",
                "--port",
                str(port),
                "--cors-origin",
                UI,
                *flags,
            ],
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = Server(f"http://127.0.0.1:{port}", process, log)
    try:
        wait_for(lambda: status(f"{server.url}/healthz", method="GET") == 200, "the codec server", 60)
        yield server
    finally:
        process.terminate()
        process.wait(30)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from start_server(tmp_path_factory.mktemp("codec"), "--token-in-path")


def request(
    url: str, body: bytes = b"", method: str = "POST", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(
        url, data=body if method == "POST" else None, method=method, headers=headers or {}
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def status(url: str, **kwargs: object) -> int:
    return request(url, **kwargs)[0]  # type: ignore[arg-type]


def sealed_body(*values: object) -> bytes:
    plain = pydantic_data_converter.payload_converter.to_payloads(list(values))
    return json_format.MessageToJson(Payloads(payloads=asyncio.run(CODEC.encode(plain)))).encode()


def decoded(body: bytes) -> list[Payload]:
    return list(json_format.Parse(body, Payloads()).payloads)


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


def test_decode_needs_the_token(server: Server) -> None:
    body = sealed_body({"spec": "visible only with the token"})
    assert status(f"{server.url}/decode", body=body) == 401
    assert status(f"{server.url}/decode", body=body, headers=bearer("x" * 43)) == 401
    assert status(f"{server.url}/decode", body=body, headers={"Authorization": TOKEN}) == 401  # not Bearer
    assert status(f"{server.url}/{'x' * 43}/decode", body=body) == 401
    code, _, out = request(f"{server.url}/decode", body=body, headers=bearer())
    assert code == 200 and b"visible only with the token" in decoded(out)[0].data
    code, _, out = request(f"{server.url}/{TOKEN}/decode", body=body)  # the Web UI's way (--token-in-path)
    assert code == 200 and b"visible only with the token" in decoded(out)[0].data


def test_without_token_in_path_the_path_form_is_refused(tmp_path: Path) -> None:
    for strict in start_server(tmp_path):
        assert status(f"{strict.url}/{TOKEN}/decode", body=sealed_body("x")) == 404
        assert status(f"{strict.url}/decode", body=sealed_body("x"), headers=bearer()) == 200


def test_encode_is_off_by_default_and_on_when_enabled(server: Server, tmp_path: Path) -> None:
    plain = json_format.MessageToJson(
        Payloads(payloads=pydantic_data_converter.payload_converter.to_payloads(["x"]))
    )
    assert status(f"{server.url}/encode", body=plain.encode(), headers=bearer()) == 404
    for enabled in start_server(tmp_path, OSPROV_CODEC_ENABLE_ENCODE="true"):
        assert status(f"{enabled.url}/encode", body=plain.encode()) == 401
        code, _, out = request(f"{enabled.url}/encode", body=plain.encode(), headers=bearer())
        assert code == 200 and decoded(out)[0].metadata["encoding"] == b"binary/encrypted"


def test_cors_answers_only_the_ui_origin(server: Server) -> None:
    preflight = request(f"{server.url}/decode", method="OPTIONS", headers={"Origin": UI})
    assert preflight[1]["Access-Control-Allow-Origin"] == UI
    assert "authorization" in preflight[1]["Access-Control-Allow-Headers"]
    other = request(f"{server.url}/decode", method="OPTIONS", headers={"Origin": "http://evil.example"})
    assert "Access-Control-Allow-Origin" not in other[1]
    code, headers, _ = request(
        f"{server.url}/decode", body=sealed_body("x"), headers=bearer() | {"Origin": UI}
    )
    assert code == 200 and headers["Access-Control-Allow-Origin"] == UI


def test_payloads_of_several_mib_are_accepted(server: Server) -> None:
    big = secrets.token_hex(2 * 1024 * 1024)  # 4 MiB of text in one payload
    body = sealed_body(big)
    assert len(body) > 4 * 1024 * 1024
    code, _, out = request(f"{server.url}/decode", body=body, headers=bearer())
    assert code == 200 and big.encode() in decoded(out)[0].data
    too_big = b'{"payloads": [' + b" " * (9 * 1024 * 1024) + b"]}"
    assert status(f"{server.url}/decode", body=too_big, headers=bearer()) == 413


def test_errors_are_400_and_the_token_never_appears_in_its_output(server: Server) -> None:
    assert status(f"{server.url}/decode", body=b"not json", headers=bearer()) == 400
    foreign = AesGcmCodec(parse_keys(f"k9:{base64.b64encode(secrets.token_bytes(32)).decode()}"), "k9")
    plain = pydantic_data_converter.payload_converter.to_payloads(["x"])
    body = json_format.MessageToJson(Payloads(payloads=asyncio.run(foreign.encode(plain)))).encode()
    code, _, out = request(f"{server.url}/{TOKEN}/decode", body=body)
    assert code == 400 and "unknown key 'k9'" in json.loads(out)["error"]
    text = server.output()
    assert "codec server listening" in text and TOKEN not in text and KEY not in text


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"OSPROV_CODEC_TOKEN": ""}, "needs an access token"),
        ({"OSPROV_CODEC_TOKEN": "short"}, "at least 32 URL-safe characters"),
        ({"OSPROV_CODEC_TOKEN": "a/b" * 20}, "at least 32 URL-safe characters"),
        ({"OSPROV_CODEC_KEYS": f"k1:{KEY},k1:{KEY}"}, "appears twice"),
    ],
)
def test_refuses_to_start_without_a_usable_token_or_keys(env: dict[str, str], message: str) -> None:
    environment = {
        "PATH": "/usr/bin:/bin",
        "OSPROV_CODEC_KEYS": f"k1:{KEY}",
        "OSPROV_CODEC_TOKEN": TOKEN,
    } | env
    out = subprocess.run(
        [sys.executable, "-m", "osprov", "codec-server", "--port", str(free_port())],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0 and message in out.stderr
    assert KEY not in out.stderr + out.stdout
