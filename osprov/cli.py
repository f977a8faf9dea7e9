"""The `osprov` console script: `osprov worker`, `osprov bridge`, `osprov dev …`."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help"}:
        print("usage: osprov {worker|bridge|codec-server|dev|demo} …")
        return 0
    cmd, rest = args[0], args[1:]
    if cmd == "worker":
        from worker.__main__ import main as worker_main

        return worker_main(rest)
    if cmd == "bridge":
        from bridge.__main__ import main as bridge_main

        return bridge_main(rest)
    if cmd == "codec-server":
        from osprov.codec_server import main as codec_main

        return codec_main(rest)
    if cmd == "dev":
        from devenv.cli import main as dev_main

        return dev_main(rest)
    if cmd == "demo":
        from devenv.demo import main as demo_main

        return demo_main(rest)
    print(f"osprov: unknown command {cmd!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
