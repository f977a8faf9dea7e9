"""Start, find and stop the stack's processes: each in its own process group, recorded by PID.

Nothing here ever matches processes by name: other engineers run the same programs on this machine.
A pid file records the group leader's PID and its start time (from /proc) so a recycled PID is never
mistaken for ours.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from devenv.config import Secrets, state_dir


@dataclass(frozen=True)
class Service:
    """A user-visible service: the process groups it owns and how to start it (assumes its deps are up)."""

    name: str
    processes: tuple[str, ...]
    start: Callable[[Secrets], None]
    url: str = ""
    identity: bool = False  # part of the `--only identity` fast path


class StackError(RuntimeError):
    """A stack step failed; the message carries the tail of the failing service's log."""


@dataclass(frozen=True)
class Recorded:
    name: str
    pid: int
    start_ticks: int
    log: str


_children: dict[str, subprocess.Popen[bytes]] = {}


def logs_dir() -> Path:
    return state_dir() / "logs"


def pids_dir() -> Path:
    return state_dir() / "pids"


def log_path(name: str) -> Path:
    return logs_dir() / f"{name}.log"


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # comm may contain spaces/parentheses: the fields after the last ')' are fixed.
    return raw[raw.rindex(")") + 2 :].split()


def _start_ticks(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is pgid."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields and fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def group_rss_mb(pgid: int) -> float:
    """Resident memory of a process group (sum of its members' RSS), in MiB."""
    total_kb = 0
    for pid in group_members(pgid):
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total_kb / 1024


def start(
    name: str,
    argv: Sequence[str | Path],
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Recorded:
    """Start argv as a new session (its own process group), output appended to logs/<name>.log."""
    logs_dir().mkdir(parents=True, exist_ok=True)
    pids_dir().mkdir(parents=True, exist_ok=True)
    full_env = dict(os.environ)
    full_env.update(env or {})
    with open(log_path(name), "ab") as log:
        log.write(f"\n=== start {time.strftime('%Y-%m-%dT%H:%M:%S')} ===\n".encode())
        log.flush()
        proc = subprocess.Popen(
            [str(a) for a in argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
    _children[name] = proc  # keep a reference: no "still running" ResourceWarning when it is collected
    ticks = _start_ticks(proc.pid) or 0
    rec = Recorded(name=name, pid=proc.pid, start_ticks=ticks, log=str(log_path(name)))
    (pids_dir() / f"{name}.json").write_text(json.dumps(asdict(rec)))
    return rec


def recorded(name: str) -> Recorded | None:
    path = pids_dir() / f"{name}.json"
    if not path.exists():
        return None
    return Recorded(**json.loads(path.read_text()))


def all_recorded() -> list[Recorded]:
    if not pids_dir().exists():
        return []
    return [r for p in sorted(pids_dir().glob("*.json")) if (r := recorded(p.stem)) is not None]


def _reap(pid: int) -> None:
    # Reap our own child if this process started it (tests restart services in-process).
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def is_running(name: str) -> bool:
    rec = recorded(name)
    if rec is None:
        return False
    _reap(rec.pid)
    if _start_ticks(rec.pid) == rec.start_ticks:
        return True
    # The leader may be gone while members of its group live on (uwsgi workers do).
    return bool(group_members(rec.pid))


def stop(name: str, term_timeout: float = 20.0) -> None:
    """SIGTERM the recorded process group, SIGKILL it after term_timeout, wait until it is empty."""
    rec = recorded(name)
    if rec is None:
        return
    pgid = rec.pid  # start_new_session: the leader's PID is the group ID
    leader_is_ours = _start_ticks(rec.pid) in (rec.start_ticks, None)
    if leader_is_ours or group_members(pgid):
        _signal_group(pgid, signal.SIGTERM)
        if not _wait_group_empty(pgid, term_timeout):
            _signal_group(pgid, signal.SIGKILL)
            if not _wait_group_empty(pgid, 10.0):
                raise StackError(f"{name}: process group {pgid} survived SIGKILL")
    (pids_dir() / f"{name}.json").unlink(missing_ok=True)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _wait_group_empty(pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(pgid)
        if not group_members(pgid):
            return True
        time.sleep(0.2)
    return False


def log_tail(name: str, lines: int = 40) -> str:
    path = log_path(name)
    if not path.exists():
        return f"(no log at {path})"
    text = path.read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:])


def wait_until(
    check: Callable[[], bool],
    timeout: float,
    what: str,
    service: str | None = None,
    interval: float = 0.25,
) -> None:
    """Poll check() until true; on timeout (or if service died) raise with the service's log tail."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except StackError:
            raise
        except Exception:
            pass
        if service is not None and recorded(service) is not None and not is_running(service):
            raise StackError(f"{service} exited while waiting for {what}; log tail:\n{log_tail(service)}")
        if time.monotonic() > deadline:
            tail = f"; log tail of {service}:\n{log_tail(service)}" if service else ""
            raise StackError(f"timed out after {timeout:.0f}s waiting for {what}{tail}")
        time.sleep(interval)


def tcp_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def http_status(url: str, timeout: float = 3.0) -> int:
    """HTTP status of a GET (any status counts as 'answering'); 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError):
        return 0


def run(
    name: str,
    argv: Sequence[str | Path],
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    ok_codes: tuple[int, ...] = (0,),
) -> None:
    """Run a one-shot setup command, appending output to logs/<name>.log; raise with its tail on failure."""
    logs_dir().mkdir(parents=True, exist_ok=True)
    full_env = dict(os.environ)
    full_env.update(env or {})
    with open(log_path(name), "ab") as log:
        log.write(f"\n=== run {' '.join(str(a) for a in argv[:3])} ===\n".encode())
        log.flush()
        try:
            result = subprocess.run(
                [str(a) for a in argv],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=full_env,
                timeout=timeout,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired as exc:
            raise StackError(f"{name}: timed out after {timeout}s; log tail:\n{log_tail(name)}") from exc
    if result.returncode not in ok_codes:
        raise StackError(f"{name}: exit {result.returncode}; log tail:\n{log_tail(name)}")
