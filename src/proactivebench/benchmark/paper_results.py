"""The paper's published numbers, read from the package data (`spec/paper_results.json`).

The file is a transcription of De Min et al. (arXiv:2603.19466v2): every table and the numbers
printed in its figures, checked twice (its `verification` block says how; see NOTICE). Code that
uses a number of the paper (the GRPO recipe of Table 5, Table 3's rows beside a user's runs)
reads it from here, so that no module retypes one. Rows are kept as transcribed: `model`,
`config`, and `cells` (a value per column, or per column and metric).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from proactivebench.benchmark.protocol import spec_json
from proactivebench.core.errors import ProactiveBenchError

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


# ----- the paper's models -----------------------------------------------------------------------

#: Who the published numbers are by: what every table and plot that shows them names.
PAPER_SOURCE = "De Min et al. 2026"


@dataclass(frozen=True)
class PaperModel:
    """One of the 22 models the paper evaluated (`models` of paper_results.json)."""

    name: str
    family: str
    #: Billions of parameters; None for the API models, whose size is not published.
    params_b: float | None
    api: bool
    table_family: str
    table_model: str
    figure_label: str


def paper_models() -> list[PaperModel]:
    """The paper's 22 models in the order of its tables."""
    return [PaperModel(**entry) for entry in paper_results()["models"]]


#: How a model family's Hub ids spell it (lower case, `_`/space read as `-`): the family alone,
#: the size is matched apart (`recognise_model`). Each regex must keep its neighbours out:
#: InternVL3.5 is no InternVL3, Qwen2-VL no Qwen2.5-VL, LLaVA-1.6 is LLaVA-NeXT.
_FAMILY_PATTERNS: dict[str, str] = {
    "LLaVA-1.5": r"llava-?v?1\.5(?![\d])",
    "LLaVA-NeXT": r"llava-?(next|v?1\.6)(?![\d])",
    "LLaVA-OV": r"llava-?(ov|onevision)",
    "SmolVLM2": r"smolvlm-?2",
    "Idefics3": r"idefics-?3",
    "InstructBLIP": r"instructblip",
    "Qwen-2.5-VL": r"qwen-?2\.5-?vl",
    "InternVL3": r"internvl-?3(?![.\-]?5)(?!\d)",
    "Phi-4-Multimodal": r"phi-?4-?multimodal",
}

#: The API models are recognised by their whole name (a dated snapshot allowed): GPT-4.1 is
#: not gpt-4.1-mini.
_API_PATTERNS: dict[str, str] = {
    "o4-mini": r"o4-mini",
    "GPT-4.1": r"gpt-4\.1",
    "GPT-5.2": r"gpt-5\.2",
}
_SNAPSHOT = r"(-\d{4}-\d{2}-\d{2})?"
_SIZE_TOKEN = re.compile(r"(^|-)\d+(\.\d+)?[bm](-|$)")


def _model_name(spec: str) -> str:
    """The model's own name in a model spec, lower case with `-` separators:
    `openai:Qwen/Qwen2.5-VL-7B-Instruct@http://host:8000/v1` -> `qwen2.5-vl-7b-instruct`."""
    name = spec.split("@", 1)[0]
    if re.match(r"^[A-Za-z][\w-]*:", name):
        name = name.split(":", 1)[1]
    name = name.rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"[\s_]+", "-", name.lower())


def _matches(model: PaperModel, name: str, sized_in_family: int) -> bool:
    """Whether `name` (`_model_name`) names `model`: its family, and its size where the name
    states one (a name with no size matches a family with one model only: Phi-4-multimodal)."""
    if model.api:
        return re.fullmatch(_API_PATTERNS[model.name] + _SNAPSHOT, name) is not None
    if re.search(_FAMILY_PATTERNS[model.family], name) is None:
        return False
    size = re.escape(re.sub(r"\s+", "-", model.table_model.lower()))
    if re.search(rf"(^|-){size}(-|$)", name):
        return True
    return _SIZE_TOKEN.search(name) is None and sized_in_family == 1


def recognise_model(spec: str) -> PaperModel | None:
    """The paper's model a model spec names (`hf:llava-hf/llava-1.5-7b-hf` -> LLaVA-1.5 7B),
    matched on family and size; None when no model or more than one matches (then the
    report says so rather than guess: `--paper-model` names it)."""
    models = paper_models()
    name = _model_name(spec)
    per_family: dict[str, int] = {}
    for model in models:
        per_family[model.family] = per_family.get(model.family, 0) + 1
    found = [m for m in models if _matches(m, name, per_family[m.family])]
    return found[0] if len(found) == 1 else None


def _plain(text: str) -> str:
    return re.sub(r"[^a-z0-9.]", "", text.lower())


def paper_model_named(name: str) -> PaperModel:
    """The paper's model called `name` (`--paper-model`): its name, figure label or Hub-like
    spelling, case and separators aside ("Qwen-2.5-VL 7B", "Qwen2.5-VL-7B"); an unknown name
    is one error that lists the known ones."""
    wanted = _plain(name)
    for model in paper_models():
        if wanted in {_plain(model.name), _plain(model.figure_label)}:
            return model
    known = ", ".join(m.name for m in paper_models())
    raise UnknownPaperModelError(f"--paper-model {name!r} is none of the paper's models: {known}")


class UnknownPaperModelError(ProactiveBenchError):
    """`--paper-model` names no model of the paper."""


# ----- figure averages --------------------------------------------------------------------------

#: The models a figure's "averaged over MLLMs" covers, as PAPER_AUDIT.md §2 identified them from
#: the printed labels (the only subsets whose column means give them): Figs. 3, 6 and 11 the
#: 21 models other than GPT-5.2 (of the table averaged: Table 2/9 hold 17), Figs. 8 and 9 ten
#: models that support multi-image inference.
FIGURE_SUBSETS: dict[str, tuple[str, ...] | None] = {
    "fig3_reference_vs_benchmark": None,
    "fig6_hint": None,
    "fig11_filtering_accuracy": None,
    "fig8_history": (
        "LLaVA-OV 0.5B",
        "LLaVA-OV 7B",
        "SmolVLM2 2.2B",
        "Idefics3 8B",
        "Qwen-2.5-VL 3B",
        "Qwen-2.5-VL 7B",
        "InternVL3 1B",
        "InternVL3 2B",
        "InternVL3 8B",
        "Phi-4-Multimodal 6B",
    ),
}
FIGURE_SUBSETS["fig9_icl"] = FIGURE_SUBSETS["fig8_history"]
#: The figure that prints a table's column means of a metric (a report shows that mean beside
#: the table's rows): (table, the paper's metric) -> figure (PAPER_AUDIT.md §2; each checked
#: against the printed values in tests/test_paper_rows.py).
FIGURE_AVERAGES: dict[tuple[str, str], str] = {
    ("table1_mcqa", "acc"): "fig3_reference_vs_benchmark",
    ("table6_oracle", "acc"): "fig3_reference_vs_benchmark",
    ("table7_hint", "acc"): "fig6_hint",
    ("table7_hint", "psr"): "fig6_hint",
    ("table2_oeg", "ps"): "fig6_hint",
    ("table9_oeg_hint", "ps"): "fig6_hint",
}
#: Left out of the "all MLLMs" figure averages (None in `FIGURE_SUBSETS`).
_NOT_IN_FIGURE_AVERAGES = ("GPT-5.2",)


def figure_models(figure: str, table: str) -> list[str]:
    """The models of `table` whose mean a figure prints (`FIGURE_SUBSETS`)."""
    if figure not in FIGURE_SUBSETS:
        raise KeyError(f"no model subset for {figure!r}; known: {', '.join(FIGURE_SUBSETS)}")
    rows = [row["model"] for row in paper_table(table)["rows"]]
    subset = FIGURE_SUBSETS[figure]
    if subset is None:
        return [m for m in rows if m not in _NOT_IN_FIGURE_AVERAGES]
    return [m for m in rows if m in subset]


def figure_mean(figure: str, table: str, column: str, metric: str) -> float:
    """The mean of `table`'s printed `column`/`metric` over the models `figure` averages: the
    number the figure prints (to its rounding)."""
    models = set(figure_models(figure, table))
    values = [
        row["cells"][column][metric] for row in paper_table(table)["rows"] if row["model"] in models
    ]
    return sum(values) / len(values)


def paper_average(cells: dict[str, Any], metric: str, columns: list[str]) -> float | None:
    """The paper's average of one row: the unweighted mean of its scenario columns (the
    printed avg is this mean of the printed cells, to within 0.1)."""
    values = [cells[c][metric] for c in columns if c in cells and cells[c].get(metric) is not None]
    return sum(values) / len(values) if values else None


#: The paper's table of each metric's published averages against size (Table 1 for MCQA's
#: accuracy and ps rate, Table 2 for OEG's cc and ps): our metric key -> (table, its metric).
SIZE_TABLES: dict[str, tuple[str, str]] = {
    "accuracy": ("table1_mcqa", "acc"),
    "ps_rate": ("table1_mcqa", "psr"),
    "cp": ("table2_oeg", "cc"),
    "ps": ("table2_oeg", "ps"),
}


def published_sizes(key: str) -> list[tuple[float, float, str]]:
    """(params_b, printed average, model) of every paper model of published size for our
    metric `key` (`SIZE_TABLES`); the API models, of no published size, are left out; none
    for a metric the paper plots no size of."""
    if key not in SIZE_TABLES:
        return []
    table, theirs = SIZE_TABLES[key]
    sizes = {m.name: m.params_b for m in paper_models()}
    points = []
    for row in paper_table(table)["rows"]:
        size, value = sizes.get(row["model"]), row["cells"]["avg"].get(theirs)
        if size is not None and value is not None:
            points.append((float(size), float(value), str(row["model"])))
    return points
