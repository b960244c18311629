"""Where a run's numbers came from: the package's version, the git commit of a checkout, and
the time, for `run.json`'s `provenance` entries (`rundir.PROVENANCE`).

Cheap and never failing: the commit is asked of `git` only when the package's source lies in
a git checkout, and anything that cannot be found is recorded as null.
"""

from __future__ import annotations

import datetime
import functools
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any


def now() -> str:
    """The time in ISO 8601, UTC, to the second."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


@functools.cache
def package_version() -> str | None:
    """The installed package's version (None when it is not installed, run from `src/`)."""
    try:
        return metadata.version("proactivebench")
    except metadata.PackageNotFoundError:
        return None


def software() -> dict[str, Any]:
    """`package_version`, and `git_commit` (plus `git_dirty`) when run from a checkout."""
    found: dict[str, Any] = {"package_version": package_version()}
    source = Path(__file__).resolve().parents[1]  # the package, not core/
    if any((folder / ".git").exists() for folder in source.parents):
        found.update(_git_state(source))
    return found


def _git_state(source: Path) -> dict[str, Any]:
    """The checkout's commit and whether it has changes; nothing when git is not there."""
    try:
        commit = _git(source, "rev-parse", "HEAD")
        dirty = bool(_git(source, "status", "--porcelain", "--untracked-files=no", "--", "."))
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"git_commit": commit, "git_dirty": dirty}


def _git(source: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(source), *args], capture_output=True, text=True, timeout=5, check=True
    )
    return done.stdout.strip()
