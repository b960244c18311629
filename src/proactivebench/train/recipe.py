"""`train grpo --recipe paper`: the paper's GRPO post-training (§5, App. C, Table 5).

Every number comes from the paper's transcription (`proactivebench.benchmark.paper_results`),
none is retyped here: what is ours is how each of Table 5's entries reaches TRL's `GRPOConfig`
or PEFT's `LoraConfig` (`TABLE5`), and how the paper's batch of 512 is split over the processes
of a run.

- Hyperparameters (Table 5): AdamW (`optim: adamw_torch`), the learning rate, the cosine
  schedule, its warm-up steps, the weight decay, the rollouts (`num_generations`), the epochs,
  LoRA's rank, alpha, dropout and modules. "batch size" is the completions of one optimizer
  step, as TRL counts them: `per_device_train_batch_size` × `gradient_accumulation_steps` ×
  processes (with 8 rollouts, 64 prompts of 8 completions each).
- "deepspeed conf.: zero 3" is a property of the launch, not of one process: the recipe names
  the accelerate config shipped beside this module (`configs/zero3.yaml`, for `accelerate
  launch --config_file`) and records whether the run was launched under it; it never sets
  `GRPOConfig.deepspeed`, so the recipe also runs in one process without DeepSpeed (on CPU).
- Rewards (§5): the correct category 1, a valid proactive suggestion `rp` (the paper ran 0.5,
  0.75 and 1.0: Table 3's rows), anything else 0. Here that is `RewardSettings` with
  `intervention` and `intervention_when_answerable` both `rp`.
- Data (§5, Table 3): trained on the in-domain scenarios (QD, COCO), the out-of-domain five
  held out.

What the user sets (the config file, `--set`, `--holdout`, `--max-steps`) wins over the recipe;
`train_run.json` records the recipe, the values it set and the ones the user overrode.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from proactivebench.benchmark.paper_results import PAPER_FILE, grpo_hyperparameters, paper_table
from proactivebench.core.errors import TrainError

log = logging.getLogger(__name__)

RECIPES = ("paper",)
#: The accelerate config of the paper's DeepSpeed ZeRO-3, shipped with the package.
ZERO3_CONFIG = "zero3.yaml"
#: Completions per process and step when the user sets neither batch field: TRL's default.
#: The paper does not say how its 512 were split over its GPUs.
PER_DEVICE_DEFAULT = 8
BATCH_FIELDS = ("per_device_train_batch_size", "gradient_accumulation_steps")
#: Table 5's optimizer names → transformers' `optim` (plain torch.optim.AdamW).
OPTIMIZERS = {"adamw": "adamw_torch"}


def accelerate_config_path(name: str = ZERO3_CONFIG) -> str:
    """Where the shipped accelerate config lies (for `accelerate launch --config_file`)."""
    return str(resources.files("proactivebench.train").joinpath("configs", name))


def _optimizer(value: Any) -> str:
    name = OPTIMIZERS.get(str(value).strip().lower())
    if name is None:
        raise TrainError(f"{PAPER_FILE}: no optimizer known for Table 5's {value!r}")
    return name


def _modules(value: Any) -> list[str]:
    return [name.strip() for name in str(value).split(",") if name.strip()]


def zero_stage(value: Any) -> int:
    """ "zero 3" → 3."""
    found = re.fullmatch(r"\s*zero[\s-]*(\d)\s*", str(value), re.IGNORECASE)
    if found is None:
        raise TrainError(f"{PAPER_FILE}: cannot read Table 5's DeepSpeed config {value!r}")
    return int(found.group(1))


@dataclass(frozen=True)
class Entry:
    """Where one Table 5 entry goes: `section` "grpo" (a `GRPOConfig` field), "lora" (a
    `LoraConfig` field), "batch" (split into `BATCH_FIELDS`), "launch" (the accelerate config)
    or "check" (a value this recipe requires, e.g. the algorithm)."""

    section: str
    field: str
    convert: Callable[[Any], Any] = lambda value: value


#: Every entry of Table 5, by its name in the paper; an entry missing here is an error.
TABLE5: dict[str, Entry] = {
    "algorithm": Entry("check", "GRPO"),
    "batch size": Entry("batch", " x ".join([*BATCH_FIELDS, "processes"]), int),
    "optimizer": Entry("grpo", "optim", _optimizer),
    "learning rate": Entry("grpo", "learning_rate", float),
    "weight decay": Entry("grpo", "weight_decay", float),
    "scheduler": Entry("grpo", "lr_scheduler_type", str),
    "warmup steps": Entry("grpo", "warmup_steps", int),
    "num. rollouts": Entry("grpo", "num_generations", int),
    "epochs": Entry("grpo", "num_train_epochs", float),
    "deepspeed conf.": Entry("launch", "accelerate_config", zero_stage),
    "LoRA rank": Entry("lora", "r", int),
    "LoRA α": Entry("lora", "lora_alpha", int),
    "LoRA dropout": Entry("lora", "lora_dropout", float),
    "LoRA modules": Entry("lora", "target_modules", _modules),
}


def proactive_rewards() -> list[float]:
    """The values of `rp` the paper ran (Table 3's "rp = X" rows), in increasing order."""
    found = set()
    for row in paper_table("table3_grpo")["rows"]:
        match = re.fullmatch(r"rp\s*=\s*([0-9.]+)", str(row["config"]))
        if match is not None:
            found.add(float(match.group(1)))
    return sorted(found)


def split_scenarios() -> tuple[list[str], list[str]]:
    """(trained on, held out): Table 3's in-domain and out-of-domain column groups."""
    groups = paper_table("table3_grpo")["column_groups"]
    return list(groups["in-domain"]), list(groups["out-of-domain"])


@dataclass(frozen=True)
class Recipe:
    """What a recipe sets, by section, before the user's settings are laid over it."""

    name: str
    grpo: dict[str, Any]
    lora: dict[str, Any]
    rewards: dict[str, Any]
    holdout: list[str]
    #: Completions per optimizer step, over all processes.
    batch_size: int
    zero_stage: int
    proactive_reward: float
    #: Table 5 as transcribed, for the record.
    table: dict[str, Any] = field(default_factory=dict)


def check_proactive_reward(value: Any, origin: str = "--proactive-reward") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TrainError(f"{origin}: expected a finite number, not {value!r}")
    if value < 0:
        raise TrainError(f"{origin}: expected a number >= 0, not {value!r}")
    if value > 1:
        log.warning(
            "%s %g pays an intervention more than the correct category (1): a policy that "
            "always asks then earns more than one that answers (the paper ran %s)",
            origin,
            value,
            ", ".join(f"{v:g}" for v in proactive_rewards()),
        )
    return float(value)


def paper_recipe(proactive_reward: float | None = None) -> Recipe:
    """The paper's recipe, with `rp` = `proactive_reward` (default: the smallest the paper ran,
    0.5: at 1.0 asking pays as much as answering, and Qwen2.5-VL-3B's ps rate rose from 0.9 to
    15.1 while its accuracy fell from 37.4 to 17.2 %, Table 3's averages)."""
    table = grpo_hyperparameters()
    unknown = [name for name in table if name not in TABLE5]
    if unknown:
        raise TrainError(f"{PAPER_FILE}: Table 5 entries this recipe cannot place: {unknown}")
    if table["algorithm"] != TABLE5["algorithm"].field:
        raise TrainError(f"{PAPER_FILE}: Table 5's algorithm is {table['algorithm']!r}, not GRPO")
    placed: dict[str, dict[str, Any]] = {"grpo": {}, "lora": {}}
    for name, value in table.items():
        entry = TABLE5[name]
        if entry.section in placed:
            placed[entry.section][entry.field] = entry.convert(value)
    rp = (
        proactive_rewards()[0]
        if proactive_reward is None
        else check_proactive_reward(proactive_reward)
    )
    _, held_out = split_scenarios()
    return Recipe(
        name="paper",
        grpo=placed["grpo"],
        lora=placed["lora"],
        rewards={
            "category": 1.0,
            "intervention": rp,
            "intervention_when_answerable": rp,
            "format_weight": 0.0,
            "answer_extraction": "strict",
        },
        holdout=held_out,
        batch_size=TABLE5["batch size"].convert(table["batch size"]),
        zero_stage=TABLE5["deepspeed conf."].convert(table["deepspeed conf."]),
        proactive_reward=rp,
        table=dict(table),
    )


def load_recipe(name: str, proactive_reward: float | None = None) -> Recipe:
    """A recipe by name, or one error naming the known ones."""
    if name not in RECIPES:
        raise TrainError(f"--recipe: unknown recipe {name!r}; known: {', '.join(RECIPES)}")
    return paper_recipe(proactive_reward)


def batch_split(batch_size: int, given: dict[str, Any], processes: int) -> dict[str, int]:
    """The batch fields the user left unset, chosen so that `per_device_train_batch_size` ×
    `gradient_accumulation_steps` × `processes` = `batch_size` (the user's values win; with
    both set, nothing is chosen and the run's batch is theirs)."""
    per_device = given.get("per_device_train_batch_size")
    accumulation = given.get("gradient_accumulation_steps")
    if per_device is not None and accumulation is not None:
        return {}
    if per_device is None and accumulation is not None:
        fixed, wanted, missing = accumulation, "per_device_train_batch_size", {}
    else:
        fixed = per_device if per_device is not None else PER_DEVICE_DEFAULT
        wanted = "gradient_accumulation_steps"
        missing = {} if per_device is not None else {"per_device_train_batch_size": fixed}
    share = fixed * processes
    if batch_size % share:
        other = next(f for f in BATCH_FIELDS if f != wanted)
        raise TrainError(
            f"--recipe: the paper's batch of {batch_size} completions cannot be split over "
            f"{processes} process(es) with {other} {fixed} ({batch_size} is not a multiple of "
            f"{share}); set per_device_train_batch_size and gradient_accumulation_steps "
            "with --set"
        )
    return {**missing, wanted: batch_size // share}


def launched_deepspeed() -> dict[str, Any]:
    """Whether this process runs under `accelerate launch` with DeepSpeed, and its ZeRO stage
    (accelerate passes both to its processes in the environment)."""
    used = os.environ.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true"
    stage = os.environ.get("ACCELERATE_DEEPSPEED_ZERO_STAGE")
    return {"in_effect": used, "zero_stage": int(stage) if used and stage else None}


def recipe_record(
    recipe: Recipe,
    applied: dict[str, dict[str, Any]],
    overridden: dict[str, Any],
    batch: int,
) -> dict[str, Any]:
    """What `train_run.json` keeps of a recipe: the values it set (`set`), the user's values
    that replaced some (`overridden`, keyed by section.field), the batch this run trained with
    against the paper's, and the DeepSpeed config the paper used against this launch's."""
    return {
        "name": recipe.name,
        "source": f"{PAPER_FILE}: tables.table5_grpo_hyperparameters, tables.table3_grpo",
        "table5": recipe.table,
        "proactive_reward": recipe.proactive_reward,
        "set": applied,
        "overridden": overridden,
        "batch": {"paper": recipe.batch_size, "this_run": batch},
        "deepspeed": {
            "paper_zero_stage": recipe.zero_stage,
            "accelerate_config": accelerate_config_path(),
            **launched_deepspeed(),
        },
    }


@dataclass(frozen=True)
class Layered:
    """A run's settings with the recipe under the user's: each section as the run takes it,
    and the record for `train_run.json`."""

    grpo: dict[str, Any]
    rewards: dict[str, Any]
    lora: dict[str, Any]
    holdout: Any
    record: dict[str, Any]


def lay_under(
    recipe: Recipe,
    *,
    grpo: dict[str, Any],
    rewards: dict[str, Any],
    lora: dict[str, Any] | None,
    holdout: Any,
    processes: int,
) -> Layered:
    """The recipe's values where the user set none (`grpo`, `rewards`, `lora`, `holdout`: what
    the config file and the command line set, None or empty where nothing was)."""
    user_lora = lora or {}
    own = {
        "grpo": {**recipe.grpo, **batch_split(recipe.batch_size, grpo, processes)},
        "lora": dict(recipe.lora),
        "rewards": dict(recipe.rewards),
    }
    users = {"grpo": grpo, "lora": user_lora, "rewards": rewards}
    applied = {s: {k: v for k, v in own[s].items() if k not in users[s]} for s in own}
    overridden = {f"{s}.{k}": users[s][k] for s in own for k in own[s] if k in users[s]}
    # The user's batch fields replace the paper's batch even where the recipe chose neither.
    overridden.update({f"grpo.{k}": grpo[k] for k in BATCH_FIELDS if k in grpo})
    if holdout is None:
        applied["holdout"] = list(recipe.holdout)
    else:
        overridden["holdout"] = holdout
    final_grpo = {**own["grpo"], **grpo}
    batch = (
        final_grpo.get("per_device_train_batch_size", PER_DEVICE_DEFAULT)
        * final_grpo.get("gradient_accumulation_steps", 1)
        * processes
    )
    return Layered(
        grpo=final_grpo,
        rewards={**own["rewards"], **rewards},
        lora={**own["lora"], **user_lora},
        holdout=recipe.holdout if holdout is None else holdout,
        record=recipe_record(recipe, applied, overridden, batch),
    )
