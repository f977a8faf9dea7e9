"""MariaDB and RabbitMQ from Debian, run with their own data dirs on loopback and non-default ports."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from devenv import procs
from devenv.config import HOST, PORTS, Secrets, state_dir, write_private

DATABASES = (
    "keystone",
    "glance",
    "placement",
    "nova_api",
    "nova_cell0",
    "nova",
    "neutron",
    "cinder",
    "octavia",
)


def mysql_socket() -> Path:
    return state_dir() / "run" / "mysqld.sock"


def _as_root_args() -> list[str]:
    # mariadbd refuses to run as root unless told to; as another user the flag must be absent.
    return ["--user=root"] if os.geteuid() == 0 else []


def start_mariadb(secrets: Secrets) -> None:
    datadir = state_dir() / "mysql"
    (state_dir() / "run").mkdir(parents=True, exist_ok=True)
    if not (datadir / "mysql").exists():
        procs.run(
            "mariadb",
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={datadir}",
                "--auth-root-authentication-method=socket",
                "--skip-test-db",
                *_as_root_args(),
            ],
            timeout=120,
        )
    procs.start(
        "mariadb",
        [
            "mariadbd",
            "--no-defaults",
            f"--datadir={datadir}",
            f"--socket={mysql_socket()}",
            f"--port={PORTS.mariadb}",
            f"--bind-address={HOST}",
            f"--pid-file={state_dir() / 'run' / 'mysqld.pid'}",
            "--skip-name-resolve",
            "--skip-log-bin",
            "--max-connections=2000",
            "--innodb-buffer-pool-size=256M",
            "--innodb-flush-log-at-trx-commit=0",
            "--innodb-doublewrite=0",
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_general_ci",
            *_as_root_args(),
        ],
    )
    procs.wait_until(
        lambda: mysql_socket().exists() and procs.tcp_open(PORTS.mariadb), 60, "MariaDB to listen", "mariadb"
    )
    statements = [
        f"CREATE USER IF NOT EXISTS 'osprov'@'{HOST}' IDENTIFIED BY '{secrets.db_password}';",
        f"ALTER USER 'osprov'@'{HOST}' IDENTIFIED BY '{secrets.db_password}';",
        f"GRANT ALL PRIVILEGES ON *.* TO 'osprov'@'{HOST}';",
        *(f"CREATE DATABASE IF NOT EXISTS {db} CHARACTER SET utf8;" for db in DATABASES),
    ]
    mysql_exec("\n".join(statements))


def mysql_exec(sql: str, database: str | None = None) -> str:
    """Run SQL as the MariaDB root user over the private socket; SQL goes via stdin (not argv/ps)."""
    argv = [
        "mariadb",
        "--no-defaults",
        f"--socket={mysql_socket()}",
        "-u",
        "root",
        "--batch",
        "--skip-column-names",
    ]
    if database:
        argv.append(database)
    result = subprocess.run(argv, input=sql, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        # stderr of the client never echoes the statement, so no password can leak here.
        raise procs.StackError(f"mariadb client failed: {result.stderr.strip()[-500:]}")
    return result.stdout


def _rabbit_env() -> dict[str, str]:
    base = state_dir() / "rabbitmq"
    return {
        "HOME": str(base),  # the Erlang cookie lives here, not in root's home
        "ERL_EPMD_PORT": str(PORTS.epmd),
        # A failed boot writes erl_crash.dump into the cwd (once, into the repository); keep it with the stack.
        "ERL_CRASH_DUMP": str(base / "erl_crash.dump"),
        "RABBITMQ_NODENAME": "osprov@localhost",
        "RABBITMQ_NODE_IP_ADDRESS": HOST,
        "RABBITMQ_NODE_PORT": str(PORTS.rabbitmq),
        "RABBITMQ_DIST_PORT": str(PORTS.rabbitmq_dist),
        "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
        "RABBITMQ_LOG_BASE": str(base / "log"),
        "RABBITMQ_LOGS": "-",
        "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq.conf"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
        "RABBITMQ_PID_FILE": str(base / "rabbitmq.pid"),
        "RABBITMQ_CONF_ENV_FILE": str(base / "rabbitmq-env.conf"),
    }


def start_rabbitmq(secrets: Secrets) -> None:
    base = state_dir() / "rabbitmq"
    base.mkdir(parents=True, exist_ok=True)
    (base / "enabled_plugins").write_text("[].\n")
    (base / "rabbitmq-env.conf").write_text("")
    # default_user applies when the node first boots on an empty mnesia dir.
    write_private(
        base / "rabbitmq.conf",
        "\n".join(
            [
                "default_user = osprov",
                f"default_pass = {secrets.rabbit_password}",
                "loopback_users = none",
                "disk_free_limit.absolute = 50MB",
                "log.console = true",
                "log.console.level = warning",
                "",
            ]
        ),
    )
    env = _rabbit_env()
    # Our own foreground epmd on a private port: a daemonised epmd would escape our process groups.
    procs.start("epmd", ["epmd", "-port", str(PORTS.epmd), "-address", HOST], env=env)
    procs.wait_until(lambda: procs.tcp_open(PORTS.epmd), 20, "epmd to listen", "epmd")
    procs.start("rabbitmq", ["/usr/lib/rabbitmq/bin/rabbitmq-server"], env=env)
    procs.wait_until(lambda: procs.tcp_open(PORTS.rabbitmq), 90, "RabbitMQ to listen", "rabbitmq")
