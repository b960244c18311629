"""Where the tool keeps what it makes for the user: generated data, demo runs, response and
thumbnail caches."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_cache_dir


def cache_root() -> Path:
    """The user cache directory of proactivebench (`PROACTIVEBENCH_CACHE` overrides it)."""
    return Path(os.environ.get("PROACTIVEBENCH_CACHE") or user_cache_dir("proactivebench"))


def response_cache_path() -> Path:
    """The default SQLite response cache, shared by all runs of this user."""
    return cache_root() / "responses.sqlite"


def thumbnail_cache_path() -> Path:
    """The default SQLite thumbnail cache of reports, beside the response cache."""
    return cache_root() / "thumbnails.sqlite"
