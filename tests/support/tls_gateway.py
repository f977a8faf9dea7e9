"""A TLS-terminating gateway in front of a plaintext Temporal frontend, for transport-security tests.

The Temporal dev server (`temporal server start-dev`) has no TLS options, so tests put this in front of
it, as an ingress or a sidecar terminates TLS before a real frontend: OpenSSL (Python's ssl) does the
handshake, with ALPN h2 as gRPC requires and, when asked, client-certificate verification against a CA
(mTLS). With `api_key` it also plays the part of an API-key checking frontend: it reads the HTTP/2
request headers (hpack) and closes the connection on any request without `authorization: Bearer <key>`.
It records what it saw, so a test can prove what the client sent. Plaintext bytes never reach it in
the clear: a client that does not speak TLS fails the handshake.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import hpack
from hyperframe.frame import ContinuationFrame, Frame, HeadersFrame

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


@dataclass
class Seen:
    """What the gateway observed (read from the test thread: only appended to, never rewritten)."""

    connections: int = 0
    requests: list[str] = field(default_factory=list)  # gRPC method paths
    authorizations: list[str] = field(default_factory=list)  # one per request ("" when absent)
    refused: list[str] = field(default_factory=list)  # why a connection was closed


class RequestHeaders:
    """Incremental parser of the client side of an HTTP/2 connection: yields each request's headers."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._preface = False
        self._decoder = hpack.Decoder()
        self._block = bytearray()

    def feed(self, data: bytes) -> list[dict[str, str]]:
        self._buf += data
        if not self._preface:
            if len(self._buf) < len(PREFACE):
                return []
            if bytes(self._buf[: len(PREFACE)]) != PREFACE:
                raise ValueError("not HTTP/2")
            del self._buf[: len(PREFACE)]
            self._preface = True
        found: list[dict[str, str]] = []
        while len(self._buf) >= 9:
            length = int.from_bytes(self._buf[:3], "big")
            if len(self._buf) < 9 + length:
                break
            frame, _ = Frame.parse_frame_header(memoryview(bytes(self._buf[:9])))
            frame.parse_body(memoryview(bytes(self._buf[9 : 9 + length])))
            del self._buf[: 9 + length]
            if isinstance(frame, HeadersFrame | ContinuationFrame):
                self._block += frame.data
                if "END_HEADERS" in frame.flags:
                    # Every block is decoded in order: HPACK's dynamic table depends on all of them.
                    headers = self._decoder.decode(bytes(self._block))
                    self._block.clear()
                    found.append({str(k): str(v) for k, v in headers})
        return found


class TlsGateway:
    def __init__(
        self,
        upstream: str,
        server_cert: Path,
        server_key: Path,
        *,
        client_ca: Path | None = None,
        api_key: str | None = None,
    ) -> None:
        host, _, port = upstream.rpartition(":")
        self._upstream = (host, int(port))
        self._api_key = api_key
        self.seen = Seen()
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self.context.load_cert_chain(server_cert, server_key)
        self.context.set_alpn_protocols(["h2"])
        if client_ca is not None:  # mTLS: no certificate, or one from another CA, fails the handshake
            self.context.verify_mode = ssl.CERT_REQUIRED
            self.context.load_verify_locations(client_ca)
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tls-gateway", daemon=True)
        self._server: asyncio.base_events.Server | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> TlsGateway:
        self._loop.set_exception_handler(lambda _loop, _ctx: None)  # failed handshakes are expected here
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.context), self._loop
        ).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        async def close() -> None:
            assert self._server is not None
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.seen.connections += 1
        up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        upstream = asyncio.ensure_future(self._pipe(up_reader, writer, None))
        try:
            await self._pipe(reader, up_writer, RequestHeaders())
        finally:
            upstream.cancel()
            for w in (writer, up_writer):
                with contextlib.suppress(Exception):
                    w.close()

    async def _pipe(
        self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, requests: RequestHeaders | None
    ) -> None:
        while data := await src.read(65536):
            if requests is not None and not self._admit(requests.feed(data)):
                return
            dst.write(data)
            await dst.drain()

    def _admit(self, requests: list[dict[str, str]]) -> bool:
        for headers in requests:
            auth = headers.get("authorization", "")
            self.seen.requests.append(headers.get(":path", ""))
            self.seen.authorizations.append(auth)
            if self._api_key is not None and auth != f"Bearer {self._api_key}":
                self.seen.refused.append("no or wrong API key")
                return False
        return True
