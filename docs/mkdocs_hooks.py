"""MkDocs hooks (mkdocs.yml `hooks:`): the site's home page is the repository's README.md.

The README is what a newcomer reads first on GitHub and on the site alike; generating the home
page from it keeps one text instead of two. Its links point into `docs/` (as GitHub resolves
them from the repository root); on the site the pages sit at the root, so `docs/` is dropped.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

#: A Markdown link or image target that starts in docs/: `](docs/...)`.
INTO_DOCS = re.compile(r"\]\(docs/")


def home_page(readme: str) -> str:
    """The README as the site's index.md: its links into docs/ made relative to the site."""
    return INTO_DOCS.sub("](", readme)


def on_files(files: Files, config: Any) -> Files:
    readme = Path(config["config_file_path"]).parent / "README.md"
    files.append(File.generated(config, "index.md", content=home_page(readme.read_text("utf-8"))))
    return files
