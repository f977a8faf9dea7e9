"""Whose code a worker's Python CPU is: a py-spy profile's samples attributed to their owner.

Record the worker during a benchmark with py-spy (not a dependency of osprov; `pip install py-spy`):

    py-spy record -p <worker pid> --gil -r 100 -d 60 -f raw -o worker.spy

`--gil` keeps only the samples of the thread holding the GIL: Python's CPU, not its waits. Then
`python -m bench.attribute worker.spy` prints each owner's share. A sample belongs to the innermost frame
that is not the standard library, up to the event loop or pool thread that runs it: temporalio's Python
layer, osprov's own modules, the OpenStack and Kubernetes clients, the HTTP stack under them, pydantic.
What only the standard library ran (asyncio's loop, thread pools) is its own line. The Rust core's
threads (sdk-core) are never in such a profile: `bench.identity_common.sdk_core_share` measures them
from /proc.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Iterable

# Path fragments as py-spy prints them (relative to the entry of sys.path that holds the module).
OWNERS: list[tuple[str, tuple[str, ...]]] = [
    ("temporalio (Python layer)", ("temporalio/",)),
    ("openstacksdk + keystoneauth1", ("openstack/", "keystoneauth1/")),
    ("kubernetes client", ("kubernetes/",)),
    ("HTTP (requests, urllib3, http.client)", ("requests/", "urllib3/", "http/client.py")),
    ("pydantic", ("pydantic/", "pydantic_core/")),
    ("structlog", ("structlog/",)),
]
# osprov's top-level folders, installed as subpackages of `osprov` (pyproject.toml).
OSPROV = ("osprov/", "api/", "runtime/", "activities/", "workflows/", "worker/", "bridge/")
STDLIB = "standard library only (asyncio loop, thread pools)"
# Where a unit of work starts: the event loop running a callback, a pool thread running an item. Frames
# outside it (osprov's `main` running the loop) do not own what the loop does.
DISPATCH = ("(asyncio/events.py", "(asyncio/base_events.py", "(concurrent/futures/thread.py")
_PATH = re.compile(r"\(([^()]*?)(?::\d+)?\)$")


def owner(frame: str) -> str | None:
    """The owner of one frame (`function (path:line)`), None for the standard library."""
    found = _PATH.search(frame)
    path = found.group(1) if found else ""
    for name, fragments in OWNERS:
        if any(f in path for f in fragments):
            return name
    if path.startswith(OSPROV) or "/osprov/" in path:
        return "osprov"
    return None


def attribute(lines: Iterable[str]) -> tuple[Counter[str], int]:
    """Samples per owner, and the samples in all, from py-spy's raw (collapsed) lines."""
    shares: Counter[str] = Counter()
    total = 0
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        total += samples
        shares[_owner_of(stack.split(";"))] += samples
    return shares, total


def _owner_of(frames: list[str]) -> str:
    for frame in reversed(frames):
        if any(d in frame for d in DISPATCH):
            break
        found = owner(frame)
        if found is not None:
            return found
    return STDLIB


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.attribute", description=__doc__.splitlines()[0])
    parser.add_argument("profile", help="py-spy record -f raw output (recorded with --gil)")
    args = parser.parse_args()
    with open(args.profile) as profile:
        shares, total = attribute(profile)
    print(f"{total} samples")
    for name, samples in shares.most_common():
        print(f"{100 * samples / max(total, 1):5.1f} %  {name}")


if __name__ == "__main__":
    main()
