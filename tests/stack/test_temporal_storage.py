"""The local stack's Temporal dev server keeps its SQLite database in write-ahead-log mode.

The rollback journal (SQLite's default, and the dev server's) synced every commit and cost the server half
as much CPU again per identity resource in the scale benchmark (docs/benchmarks.md). The journal mode is
stored in the database file itself, so it is read here from the file the running server uses.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from devenv.testing import StackEnv

pytestmark = pytest.mark.stack


def test_the_dev_server_database_is_in_wal_mode(identity_stack: StackEnv) -> None:
    database = identity_stack.state_dir / "temporal.db"
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=10)) as db:
        (mode,) = db.execute("PRAGMA journal_mode").fetchone()
    assert mode == "wal"
    # A WAL database has its log beside it while the server holds it open.
    assert (identity_stack.state_dir / "temporal.db-wal").exists()
