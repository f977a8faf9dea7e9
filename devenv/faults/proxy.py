"""A small fault-injecting TCP proxy to put in front of one service endpoint.

It runs its own event loop in a daemon thread, so sync and async tests can use it alike, and the
fault can be switched while clients are connected:

    with FaultProxy("127.0.0.1", 35000) as proxy:           # e.g. Keystone
        url = f"http://127.0.0.1:{proxy.port}/v3"            # point a client (auth_url/endpoint_override) here
        proxy.set_fault(Fault.RESET)                         # every new connection is reset
        ...
        proxy.set_fault(Fault.PASS)

Faults apply to connections accepted after the switch; set_fault(..., drop_existing=True) also
severs live ones (pooled keep-alive connections would otherwise keep working). HOLD_ANSWER is the
exception: it is judged per request, so it also holds requests on live keep-alive connections.

blank_answers(pattern) edits what the service sends back instead (any fault, live connections too): every
match of the regular expression becomes spaces of the same length, so Content-Length and chunk sizes stay
right. Blanking `, "key": value` out of a JSON answer serves a cloud that omits that key (a policy-hidden
attribute) from the real service's answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import re
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass


class Fault(enum.Enum):
    PASS = "pass"  # forward bytes both ways
    RESET = "reset"  # accept, then RST (connection reset by peer)
    CLOSE = "close"  # accept, then close without a response (RemoteDisconnected / empty reply)
    HANG = "hang"  # accept, read, never answer (client timeouts)
    DELAY = "delay"  # forward after delay_seconds
    HTTP_503 = "http_503"  # answer 503 Service Unavailable without forwarding
    GARBAGE = "garbage"  # answer 200 with an unparseable JSON body and a short Content-Length
    # Forward every request, but a request with one of `hold_methods` gets no answer: it lands upstream
    # and the client waits (the crash window "the call was accepted, its result not yet recorded").
    HOLD_ANSWER = "hold_answer"
    # A request with one of `hold_methods` never goes upstream and gets no answer: the crash window "the
    # worker sent the call, the service never got it". `requests_held` counts them.
    HOLD_REQUEST = "hold_request"


@dataclass
class _Config:
    fault: Fault = Fault.PASS
    delay_seconds: float = 0.0
    hold_methods: tuple[str, ...] = ()
    hold_containing: bytes | None = None  # hold only requests whose bytes contain this (e.g. an action name)


# An answer's bytes are held back this long, at most, to see whether a blanked match continues in the next
# read (the service writes an answer in several chunks); matches are at most BLANK_MAX_MATCH bytes long.
BLANK_WAIT_SECONDS = 0.05
BLANK_MAX_MATCH = 256


def json_member(key: str) -> bytes:
    """A pattern for blank_answers: one `"key": scalar` member of a JSON object with the comma that joins
    it to its neighbour (the one before it, or after it when it comes first), so the blanked JSON stays valid."""
    k = re.escape(json.dumps(key)).encode()
    value = rb'(?:null|true|false|-?[0-9.eE+-]+|"(?:[^"\\]|\\.){0,160}")'
    return rb",\s*" + k + rb"\s*:\s*" + value + rb"|" + k + rb"\s*:\s*" + value + rb"\s*,?"


class FaultProxy:
    def __init__(self, target_host: str, target_port: int, listen_host: str = "127.0.0.1") -> None:
        self.target_host = target_host
        self.target_port = target_port
        self.listen_host = listen_host
        self.port = 0
        self.connections_seen = 0
        self.requests_held = 0  # requests HOLD_REQUEST kept from the service
        self._config = _Config()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy", daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._live: set[asyncio.StreamWriter] = set()
        self._blank: re.Pattern[bytes] | None = None

    # lifecycle -------------------------------------------------------------------------------
    def start(self) -> FaultProxy:
        self._thread.start()
        fut = asyncio.run_coroutine_threadsafe(self._serve(), self._loop)
        self.port = fut.result(timeout=10)
        return self

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for writer in list(self._live):
                writer.close()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.listen_host}:{self.port}"

    def set_fault(
        self,
        fault: Fault,
        delay_seconds: float = 0.0,
        drop_existing: bool = False,
        hold_methods: tuple[str, ...] = ("POST",),
        hold_containing: bytes | None = None,
    ) -> None:
        self._config = _Config(fault, delay_seconds, tuple(hold_methods), hold_containing)
        if drop_existing:

            async def drop() -> None:
                for writer in list(self._live):
                    _reset(writer)

            asyncio.run_coroutine_threadsafe(drop(), self._loop).result(timeout=10)

    def blank_answers(self, pattern: bytes | None) -> None:
        """Blank every match of `pattern` (at most BLANK_MAX_MATCH bytes) in the service's answers; None:
        answers pass unchanged again."""
        self._blank = re.compile(pattern) if pattern is not None else None

    @contextlib.contextmanager
    def holding(
        self,
        methods: tuple[str, ...] = ("POST",),
        fault: Fault = Fault.HOLD_ANSWER,
        containing: bytes | None = None,
    ) -> Iterator[FaultProxy]:
        """HOLD_ANSWER (or HOLD_REQUEST) for `methods` (only requests containing `containing`, if given)
        inside the block, PASS after it (also when the block fails)."""
        self.set_fault(fault, hold_methods=methods, hold_containing=containing)
        try:
            yield self
        finally:
            self.set_fault(Fault.PASS)

    # proxying --------------------------------------------------------------------------------
    async def _serve(self) -> int:
        self._server = await asyncio.start_server(self._handle, self.listen_host, 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections_seen += 1
        config = self._config
        self._live.add(writer)
        try:
            if config.fault is Fault.RESET:
                _reset(writer)
                return
            if config.fault is Fault.CLOSE:
                return
            if config.fault is Fault.HANG:
                while await reader.read(65536):
                    pass
                return
            if config.fault in (Fault.HTTP_503, Fault.GARBAGE):
                await reader.read(65536)
                writer.write(_canned(config.fault))
                await writer.drain()
                return
            if config.fault is Fault.DELAY:
                await asyncio.sleep(config.delay_seconds)
            up_reader, up_writer = await asyncio.open_connection(self.target_host, self.target_port)
            self._live.add(up_writer)
            held = asyncio.Event()  # set once a request on this connection must get no answer
            kept = asyncio.Event()  # set once a request on this connection must not reach the service
            request = _Request()
            try:
                await asyncio.gather(
                    _pipe(
                        reader,
                        up_writer,
                        on_chunk=lambda c: self._maybe_hold(c, held, kept, request),
                        muted=kept,
                    ),
                    self._answers(up_reader, writer, held),
                )
            finally:
                self._live.discard(up_writer)
                up_writer.close()
        except (ConnectionError, OSError):
            pass
        finally:
            self._live.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()

    async def _answers(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, held: asyncio.Event
    ) -> None:
        """The service's answers to the client: piped as they are unless blank_answers is on. Then the
        last BLANK_MAX_MATCH bytes wait for the next read (a match may span two reads), or are sent once
        no more bytes come within BLANK_WAIT_SECONDS (the end of an answer)."""
        pending = b""
        try:
            while True:
                if pending:
                    try:
                        data = await asyncio.wait_for(reader.read(65536), BLANK_WAIT_SECONDS)
                    except TimeoutError:
                        await _send(writer, pending, held)
                        pending = b""
                        continue
                else:
                    data = await reader.read(65536)
                if not data:
                    break
                if self._blank is None:
                    await _send(writer, pending + data, held)
                    pending = b""
                    continue
                buffer = self._blank.sub(lambda m: b" " * len(m.group(0)), pending + data)
                cut = max(0, len(buffer) - BLANK_MAX_MATCH)
                await _send(writer, buffer[:cut], held)
                pending = buffer[cut:]
            await _send(writer, pending, held)
        except (ConnectionError, OSError):
            pass
        finally:
            if not held.is_set():  # a held answer leaves the client waiting, not closed
                with contextlib.suppress(Exception):
                    writer.write_eof()

    def _maybe_hold(self, chunk: bytes, held: asyncio.Event, kept: asyncio.Event, request: _Request) -> None:
        # HTTP/1.1 clients send a request only after the previous answer, so a request line starts a
        # chunk; every chunk is judged before it goes upstream, hence before any answer can come back.
        # urllib3 2 writes the body after the headers, so it may arrive as a later chunk of the same
        # request: `containing` is looked for in each chunk of a request whose method matched.
        config = self._config
        if config.fault not in (Fault.HOLD_ANSWER, Fault.HOLD_REQUEST):
            return
        if _REQUEST_LINE.match(chunk):
            request.matched = any(chunk.startswith(method.encode() + b" ") for method in config.hold_methods)
        if not request.matched:
            return
        if config.hold_containing is not None and config.hold_containing not in chunk:
            return
        held.set()
        if config.fault is Fault.HOLD_REQUEST and not kept.is_set():
            kept.set()
            self.requests_held += 1


_REQUEST_LINE = re.compile(rb"[A-Z]+ \S+ HTTP/1\.[01]\r\n")


@dataclass
class _Request:
    """The request being sent on one connection: whether its method is one a fault holds."""

    matched: bool = False


async def _pipe(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    on_chunk: Callable[[bytes], None] | None = None,
    muted: asyncio.Event | None = None,
) -> None:
    try:
        while data := await reader.read(65536):
            if on_chunk is not None:
                on_chunk(data)
            if muted is not None and muted.is_set():
                continue  # swallowed: the client never hears back on this connection
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        if muted is None or not muted.is_set():  # a held answer leaves the client waiting, not closed
            with contextlib.suppress(Exception):
                writer.write_eof()


async def _send(writer: asyncio.StreamWriter, data: bytes, muted: asyncio.Event) -> None:
    if data and not muted.is_set():  # muted: swallowed, the client never hears back on this connection
        writer.write(data)
        await writer.drain()


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        # SO_LINGER 0 turns close() into a RST instead of a FIN.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.close()


def _canned(fault: Fault) -> bytes:
    if fault is Fault.HTTP_503:
        body = b'{"message": "injected by FaultProxy"}'
        head = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    else:
        body = b'{"truncated": '
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    return head + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body
