"""Files at a cache database's place for the cache tests: one of ours damaged the way a bad
disk or a stray write damages it, and the files a user may name there by a slip (a JSONL file,
another program's database), which must be left byte for byte."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def damage_schema(path: Path) -> None:
    """Overwrite the first page after SQLite's 100-byte header (the schema's b-tree): the file
    still begins as a SQLite database, and reading its tables is 'database disk image is
    malformed' (SQLITE_CORRUPT)."""
    with path.open("r+b") as f:
        f.seek(100)
        f.write(b"\xa5" * 3996)


def another_programs_database(path: Path) -> None:
    """A sound SQLite database of some other program (rollback journal, a table of its own)."""
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
        db.execute("INSERT INTO notes (text) VALUES ('keep me')")
    db.close()


#: What each kind of foreign file at a cache's place is made with.
FOREIGN = {
    "jsonl": lambda path: path.write_bytes(b'{"episode": 1, "correct": true}\n' * 40),
    "another-programs-database": another_programs_database,
}
