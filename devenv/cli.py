"""`osprov dev install | up [--only identity] | down [--wipe] | status | kube …`."""

from __future__ import annotations

import argparse
import sys

from devenv.procs import StackError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="osprov dev", description="The local stack.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="Debian packages, the OpenStack virtualenv, Octavia certificates")
    up = sub.add_parser("up", help="start the stack (idempotent)")
    up.add_argument("--only", choices=["identity"], help="identity: MariaDB + Keystone + Temporal + kube")
    down = sub.add_parser("down", help="stop every process group the stack started")
    down.add_argument("--wipe", action="store_true", help="also delete the state (databases, logs, keys)")
    sub.add_parser("status", help="what is up, with ports and URLs")
    sub.add_parser("kube", help="run the Kubernetes emulator in the foreground (options forwarded)")
    return parser


def main(argv: list[str]) -> int:
    if argv and argv[0] == "kube":
        from devenv.kube.server import main as kube_main

        return int(kube_main(argv[1:]) or 0)
    args = _parser().parse_args(argv)
    try:
        if args.command == "install":
            from devenv.openstack.install import install

            install()
        elif args.command == "up":
            from devenv import stack

            stack.up(only_identity=args.only == "identity")
            _print_status()
        elif args.command == "down":
            from devenv import stack

            stack.down(wipe=args.wipe)
            print("stack down" + (" and wiped" if args.wipe else ""))
        elif args.command == "status":
            return _print_status()
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def _print_status() -> int:
    from devenv import stack

    rows = stack.status()
    for row in rows:
        state = "up" if row.running else "down"
        pids = ",".join(str(p) for p in row.pids) or "-"
        print(f"{row.name:<10} {state:<5} {row.url:<32} {row.rss_mb:7.0f} MiB  pids {pids}")
    print(f"{'total':<10} {'':<5} {'':<32} {sum(r.rss_mb for r in rows):7.0f} MiB")
    try:
        env = stack.load_env()
        print(f"env file: {stack.env_file()}  (OS_CLOUD={env.get('OS_CLOUD')}, "
              f"level={env.get('OSPROV_STACK_LEVEL')})")  # fmt: skip
        print(f"Temporal Web UI: {env.get('OSPROV_TEMPORAL_UI_URL')}  "
              f"gRPC: {env.get('OSPROV_TEMPORAL_ADDRESS')}  kubeconfig: {env.get('KUBECONFIG')}")  # fmt: skip
    except FileNotFoundError:
        print("env file: none (stack not up)")
    return 0 if any(r.running for r in rows) else 3
