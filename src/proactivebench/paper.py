"""The paper's published numbers, read from the package data (`spec/paper_results.json`).

The file is a transcription of De Min et al. (arXiv:2603.19466v2): every table and the numbers
printed in its figures, checked twice (its `verification` block says how; see NOTICE). Code that
uses a number of the paper (the GRPO recipe of Table 5, Table 3's rows beside a user's runs)
reads it from here, so that no module retypes one. Rows are kept as transcribed: `model`,
`config`, and `cells` (a value per column, or per column and metric).
"""

from __future__ import annotations

from typing import Any

from proactivebench.protocol import spec_json

PAPER_FILE = "paper_results.json"


def paper_results() -> dict[str, Any]:
    """The whole parsed file (read once; do not mutate)."""
    return spec_json(PAPER_FILE)


def paper_table(key: str) -> dict[str, Any]:
    """One table or figure of the paper by its key in `tables` (e.g. `table3_grpo`);
    KeyError naming the known keys for another."""
    tables = paper_results()["tables"]
    if key not in tables:
        raise KeyError(f"no table {key!r} in {PAPER_FILE}; known: {', '.join(tables)}")
    table: dict[str, Any] = tables[key]
    return table


def grpo_hyperparameters() -> dict[str, Any]:
    """Table 5 (the GRPO post-training hyperparameters, App. C) as {name: value}, in the
    paper's order and spelling ("learning rate": 2e-05, "LoRA modules": "q_proj, k_proj")."""
    rows = paper_table("table5_grpo_hyperparameters")["rows"]
    return {row["config"]: row["cells"]["value"] for row in rows}
