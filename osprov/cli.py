"""The `osprov` console script: the top of the import graph.

`osprov worker`, `osprov bridge`, `osprov status`, `osprov approve`, `osprov plan`, `osprov doctor` and
`osprov codec-server` are built in. Other distributions add
commands through the `osprov.commands` entry-point group (the dev environment adds `dev` and
`demo`), so the product never imports them and a production install simply does not have them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from importlib.metadata import entry_points

Command = Callable[[list[str]], int]


def _worker(argv: list[str]) -> int:
    from osprov.worker.__main__ import main

    return main(argv)


def _bridge(argv: list[str]) -> int:
    from osprov.bridge.__main__ import main

    return main(argv)


def _status(argv: list[str]) -> int:
    from osprov.status import main

    code = main(argv)
    # A one-shot Temporal client: temporalio's Rust runtime threads can outlive the event loop and abort
    # the interpreter's teardown (SIGABRT, "PyGILState_Release ... finalizing": temporalio/sdk-python#300;
    # seen once in CI as exit -6 after a correct report). The report is printed: flush and skip teardown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _approve(argv: list[str]) -> int:
    from osprov.approve import main

    code = main(argv)
    sys.stdout.flush()  # a one-shot Temporal client: see _status
    sys.stderr.flush()
    os._exit(code)


def _plan(argv: list[str]) -> int:
    from osprov.plan import main

    code = main(argv)
    sys.stdout.flush()  # a one-shot Temporal client: see _status
    sys.stderr.flush()
    os._exit(code)


def _doctor(argv: list[str]) -> int:
    from osprov.doctor import main

    return main(argv)


def _codec_server(argv: list[str]) -> int:
    from osprov.codec_server import main

    return main(argv)


BUILTIN: dict[str, Command] = {
    "worker": _worker,
    "bridge": _bridge,
    "status": _status,
    "approve": _approve,
    "plan": _plan,
    "doctor": _doctor,
    "codec-server": _codec_server,
}


def _loaded(cmd: Command) -> Callable[[], Command]:
    return lambda: cmd


def commands() -> dict[str, Callable[[], Command]]:
    """Every command: the built-in ones and those other installed distributions contribute."""
    found: dict[str, Callable[[], Command]] = {name: _loaded(cmd) for name, cmd in BUILTIN.items()}
    for ep in entry_points(group="osprov.commands"):
        found.setdefault(ep.name, ep.load)
    return found


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    known = commands()
    if not args or args[0] in {"-h", "--help"}:
        print(f"usage: osprov {{{'|'.join(known)}}} …")
        return 0
    cmd, rest = args[0], args[1:]
    if cmd not in known:
        print(f"osprov: unknown command {cmd!r} (known: {', '.join(known)})", file=sys.stderr)
        return 2
    return int(known[cmd]()(rest) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
