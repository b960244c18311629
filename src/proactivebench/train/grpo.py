"""`train grpo`: TRL's `GRPOTrainer` configured with our data and rewards, nothing re-implemented.

The engines do the work: TRL generates (in-process, or with vLLM when `use_vllm` is set),
scores with our reward callables and optimises; accelerate and DeepSpeed scale it when the
command runs under `accelerate launch` (`train.processes`: the main process alone writes the
outputs, every process trains on the same data). We choose data, rewards and sensible
defaults for the task (a short answer: `max_completion_length` 50, the protocol's token
limit), restrict LoRA to the language model, and leave a directory that `eval --model
hf:DIR` loads as it is: the final (merged) weights and the processor in DIR, a LoRA adapter
in DIR/adapter, TRL's `trainer_state.json` (reward mean and std per reward function and per
scenario, grad norm, loss) and our `train_run.json` (what was trained on and what was held
out, by how many processes).
"""

from __future__ import annotations

import json
import logging
import os
import tomllib
import traceback
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proactivebench.benchmark.paper_results import PAPER_FILE
from proactivebench.benchmark.protocol import mcqa_strings
from proactivebench.core.errors import ProactiveBenchError, TrainError, WriteError
from proactivebench.core.paths import write_whole
from proactivebench.core.texts import dumps, loads
from proactivebench.train.checks import (
    ERROR_LOG,
    check_episode_option,
    check_grpo_values,
    check_holdout,
    check_lora_values,
    check_model,
    clear_previous_outputs,
    episode_defaults,
    owned_outputs,
    prepare_out_dir,
    remove_if_empty,
)
from proactivebench.train.examples import load_examples, parse_holdout, scenario_counts
from proactivebench.train.processes import check_same_data, process_state
from proactivebench.train.recipe import BATCH_FIELDS, Layered, lay_under, load_recipe
from proactivebench.train.rewards import RewardSettings, reward_functions

if TYPE_CHECKING:
    from datasets import Dataset

EXTRA_HINT = "install the extra: pip install -e '.[train]'"
#: LoRA on the language model only: `q_proj|v_proj` alone would also match the vision
#: tower's attention of LLaVA-style models. A regex is matched against full module names.
LANGUAGE_MODEL_TARGETS = (
    r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"
)
DEFAULT_LORA: dict[str, Any] = {
    "r": 16,
    "lora_alpha": 32,
    "lora_dropout": 0.05,
    "target_modules": LANGUAGE_MODEL_TARGETS,
}
#: Written beside the model: what the run trained on and held out (read by `train compare`).
RUN_FILE = "train_run.json"
#: Written while a run trains: the settings its checkpoints belong to (a rerun of the same
#: settings resumes from the last checkpoint). Removed once the final model is saved.
RESUME_FILE = "train_resume.json"
ADAPTER_DIR = "adapter"
MODES = ("single", "multi")
#: The multi-turn mode's default `max_completion_length`: room for a few turns of a real VLM.
MULTI_TURN_COMPLETION_LENGTH = 4096

log = logging.getLogger(__name__)


def require_train_extra() -> None:
    """Fail with one message naming the extra when TRL, PEFT or datasets is missing."""
    for module in ("trl", "peft", "datasets", "transformers", "torch"):
        try:
            __import__(module)
        except ImportError:
            raise TrainError(f"training needs {module}; {EXTRA_HINT}") from None


# ----- configuration -----------------------------------------------------------------------------


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A YAML (.yaml/.yml) or TOML (.toml) file as a mapping, or one clear error."""
    where = Path(path)
    suffix = where.suffix.lower()
    try:
        text = where.read_text(encoding="utf-8")
    except OSError as exc:
        raise TrainError(f"{where}: cannot read the config file: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise TrainError(f"{where}: the config file is not UTF-8 text") from None
    try:
        if suffix == ".toml":
            loaded: Any = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            import yaml

            loaded = yaml.safe_load(text) or {}
        else:
            raise TrainError(f"{where}: expected a .yaml, .yml or .toml config file")
    except tomllib.TOMLDecodeError as exc:
        raise TrainError(f"{where}: invalid TOML: {exc}") from None
    except ImportError:
        raise TrainError(f"{where}: reading YAML needs PyYAML; {EXTRA_HINT}") from None
    except Exception as exc:  # yaml.YAMLError and its subclasses
        if isinstance(exc, TrainError):
            raise
        raise TrainError(f"{where}: invalid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(loaded, dict):
        raise TrainError(f"{where}: expected a mapping of settings at the top level")
    return loaded


@dataclass
class TrainSettings:
    """Everything a run needs. `grpo` holds `GRPOConfig` fields; `rewards` and `lora` come from
    the config file's `rewards` and `lora` sections."""

    model: str
    data: str
    out_dir: Path
    holdout: list[str] = field(default_factory=list)
    grpo: dict[str, Any] = field(default_factory=dict)
    rewards: RewardSettings = field(default_factory=RewardSettings)
    lora: dict[str, Any] | None = None
    mode: str = "single"
    #: `make_episode`'s options (hint, reference...): every setting training offers
    #: (`proactivebench.run.settings`, surface "train"), with its value.
    episode: dict[str, Any] = field(default_factory=episode_defaults)
    #: Replace a previous run's outputs in `out_dir` (otherwise a non-empty one is refused).
    overwrite: bool = False
    #: The recipe the settings were laid over (`train.recipe`), as `train_run.json` records it:
    #: its name, the values it set, those the user overrode. None without `--recipe`.
    recipe: dict[str, Any] | None = None

    @classmethod
    def build(
        cls,
        model: str,
        data: str,
        out_dir: str | os.PathLike[str],
        *,
        config: dict[str, Any] | None = None,
        overrides: dict[str, Any] | None = None,
        holdout: str | Iterable[str] | None = None,
        lora: bool = False,
        mode: str | None = None,
        config_name: str = "config",
        overwrite: bool = False,
        episode: dict[str, Any] | None = None,
        recipe: str | None = None,
        proactive_reward: float | None = None,
    ) -> TrainSettings:
        """Settings from a config mapping, then flag overrides (flags win; `episode` holds the
        episode options given as flags), both over a `recipe` when one is named (`paper`:
        `train.recipe`, with `proactive_reward` its rp). Every value is checked here, before
        any data or model is read; errors name the field and where it was set (`config_name`,
        or `--set`)."""
        raw = dict(config or {})
        reward_values = raw.pop("rewards", {}) or {}
        lora_values = raw.pop("lora", None)
        config_holdout = check_holdout(raw.pop("holdout", None), config_name)
        config_mode = raw.pop("mode", None)
        holdout = holdout if holdout is not None else config_holdout
        mode = mode or config_mode or "single"
        episode_options = episode_defaults()
        for name in episode_options:
            if name in raw:
                episode_options[name] = check_episode_option(name, raw.pop(name), config_name)
        for name, value in (episode or {}).items():
            episode_options[name] = check_episode_option(name, value, "the command line")
        require_train_extra()
        check_grpo_values(raw, config_name)
        check_grpo_values(dict(overrides or {}), "--set")
        grpo = {**raw, **(overrides or {})}
        if not isinstance(reward_values, dict):
            raise TrainError(f"{config_name}: the 'rewards' section must be a mapping")
        if lora_values is not None and not isinstance(lora_values, dict):
            raise TrainError(
                f"{config_name}: the 'lora' section must be a mapping of LoraConfig fields"
            )
        record = None
        if recipe is not None:
            layered = recipe_settings(
                recipe, proactive_reward, grpo, reward_values, lora_values, holdout, mode
            )
            grpo, reward_values, holdout = layered.grpo, layered.rewards, layered.holdout
            lora_values, record = layered.lora, layered.record
        elif proactive_reward is not None:
            raise TrainError(
                "--proactive-reward: only with --recipe paper (without it, set the 'rewards' "
                "section's intervention and intervention_when_answerable)"
            )
        try:
            rewards = RewardSettings.from_mapping(reward_values)
        except ValueError as exc:
            raise TrainError(f"{config_name}: rewards: {exc}") from None
        if lora_values is not None:
            check_lora_values(lora_values, config_name)
        lora_options = None
        if record is not None:
            lora_options = dict(lora_values or {})
        elif lora:
            lora_options = {**DEFAULT_LORA, **(lora_values or {})}
        elif lora_values is not None:
            log.warning(
                "%s: the 'lora' section applies only with --lora; training all the weights",
                config_name,
            )
        if not isinstance(mode, str) or mode not in MODES:
            raise TrainError(
                f"{config_name}: mode: expected one of {', '.join(MODES)}, not {mode!r}"
            )
        settings = cls(
            model=model,
            data=str(data),
            out_dir=Path(out_dir),
            holdout=parse_holdout(holdout),
            grpo=grpo,
            rewards=rewards,
            lora=lora_options,
            mode=mode,
            episode=episode_options,
            overwrite=overwrite,
            recipe=record,
        )
        if lora_options is not None:
            lora_config(lora_options)
        return settings


def recipe_settings(
    name: str,
    proactive_reward: float | None,
    grpo: dict[str, Any],
    rewards: dict[str, Any],
    lora: dict[str, Any] | None,
    holdout: Any,
    mode: str | None,
) -> Layered:
    """The user's settings laid over recipe `name` (`train.recipe.lay_under`); the recipe's own
    values are checked as the user's are, naming the paper's file."""
    chosen = load_recipe(name, proactive_reward)
    if mode not in (None, "single"):
        raise TrainError(
            f"--recipe {name}: the paper trains on single turns (§5); it cannot run --mode {mode}"
        )
    check_grpo_values(chosen.grpo, PAPER_FILE)
    check_lora_values(chosen.lora, PAPER_FILE)
    return lay_under(
        chosen,
        grpo=grpo,
        rewards=rewards,
        lora=lora,
        holdout=holdout,
        processes=process_state().num_processes,
    )


#: Deprecation notices transformers prints on every run because TRL still uses the old
#: names (`gradient_checkpointing`); nothing the user can act on.
_RENAMED = r"`(is_)?gradient_checkpointing\w*` is deprecated"


def grpo_config(settings: TrainSettings, reward_weights: list[float]) -> Any:
    """The `GRPOConfig`: our defaults for the task, then the user's fields."""
    import torch
    from trl import GRPOConfig

    on_cpu = not torch.cuda.is_available()
    values: dict[str, Any] = {
        "output_dir": str(settings.out_dir),
        "max_completion_length": mcqa_strings()["max_new_tokens"],
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "reward_weights": reward_weights,
    }
    if settings.mode == "multi":
        # A multi-turn completion holds every turn: the tool responses' images and questions too.
        values["max_completion_length"] = MULTI_TURN_COMPLETION_LENGTH
    if on_cpu:
        values.update(use_cpu=True, bf16=False)
    values.update(settings.grpo)
    values["output_dir"] = str(settings.out_dir)
    init = values.get("model_init_kwargs")
    if init is None or isinstance(init, dict):
        # As the hf backend does (models/hf.py, "Hub kernels"): no kernels downloaded from the
        # Hub in place of the checkpoint's layers unless the user's model_init_kwargs ask.
        values["model_init_kwargs"] = {"use_kernels": False, **(init or {})}
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_RENAMED, category=FutureWarning)
            return GRPOConfig(**values)
    except (ValueError, TypeError) as exc:
        why = _batch_explained(values) if "divisible" in str(exc) else ""
        raise TrainError(f"invalid GRPO settings: {str(exc).rstrip('.')}{why}") from None


def _batch_explained(values: dict[str, Any]) -> str:
    """How GRPO's batch counts depend on the number of processes, with this run's numbers: a
    config that trains on 8 GPUs may not on 1, or on 3."""
    processes = process_state().num_processes
    per_device = values.get("per_device_train_batch_size", 8)
    steps = values.get("steps_per_generation") or values.get("gradient_accumulation_steps", 1)
    generations = values.get("num_generations", 8)
    return (
        f" (with {processes} process(es): each generation samples per_device_train_batch_size "
        f"{per_device} x {processes} process(es) x steps_per_generation {steps} = "
        f"{per_device * processes * steps} completions, which must be whole groups of "
        f"num_generations {generations}; change per_device_train_batch_size or num_generations, "
        "or launch another number of processes)"
    )


def lora_config(options: dict[str, Any]) -> Any:
    from peft import LoraConfig

    try:
        return LoraConfig(task_type="CAUSAL_LM", **options)
    except (TypeError, ValueError) as exc:
        raise TrainError(f"invalid LoRA settings: {exc}") from None


# ----- running -----------------------------------------------------------------------------------


@dataclass
class TrainOutcome:
    out_dir: Path
    examples: int
    counts: dict[str, int]
    steps: int
    log_history: list[dict[str, Any]]
    #: False in the other processes of a launch, which wrote nothing and should print nothing.
    main_process: bool = True


def training_data(settings: TrainSettings) -> Dataset:
    """The examples the trainer gets: single-turn states, or episodes for the multi-turn mode."""
    if settings.mode == "multi":
        from proactivebench.train.multiturn import load_episode_rows

        return load_episode_rows(settings.data, holdout=settings.holdout, **settings.episode)
    return load_examples(settings.data, holdout=settings.holdout, **settings.episode)


class QuietProgress:
    """The progress bar without the per-step dicts that transformers writes to stdout below it
    (they are kept in `trainer_state.json`); stdout keeps only the command's result."""

    @staticmethod
    def install(trainer: Any) -> None:
        from transformers.trainer_callback import ProgressCallback

        class _Progress(ProgressCallback):
            def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any):
                return None

        if trainer.pop_callback(ProgressCallback) is not None:
            trainer.add_callback(_Progress())


def build_trainer(
    settings: TrainSettings, dataset: Dataset, callbacks: list[Any] | None = None
) -> Any:
    """A `GRPOTrainer` for `settings` on `dataset` (the model loaded from its path or id)."""
    require_train_extra()
    from trl import GRPOTrainer

    if settings.mode == "multi":
        from proactivebench.train.multiturn import environment_factory, multiturn_rewards

        funcs, weights = multiturn_rewards(settings.rewards)
        extra: dict[str, Any] = {"environment_factory": environment_factory(settings.data)}
    else:
        funcs, weights = reward_functions(settings.rewards)
        extra = {}
    args = grpo_config(settings, weights)
    peft = lora_config(settings.lora) if settings.lora is not None else None
    try:
        trainer = GRPOTrainer(
            model=settings.model,
            reward_funcs=funcs,
            args=args,
            train_dataset=dataset,
            peft_config=peft,
            callbacks=callbacks,
            **extra,
        )
    except OSError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TrainError(f"cannot load model {settings.model!r}: {first}") from None
    except ValueError as exc:
        if settings.mode == "multi" and "tool calling" in str(exc):
            raise TrainError(
                f"the multi-turn mode needs a chat template with tool calling that TRL can "
                f"parse (e.g. Qwen3-VL's); {settings.model!r} has none: {exc}"
            ) from None
        if type(exc).__name__ == "NoMatchingPeftModuleError" or "target modules" in str(exc):
            raise TrainError(f"--lora: no module of {settings.model} matches: {exc}") from None
        raise
    QuietProgress.install(trainer)
    if settings.lora is None:
        resume_weights_as_saved(trainer)
    return trainer


def resume_weights_as_saved(trainer: Any) -> None:
    """Make a resumed full fine-tune start from its checkpoint's weights, not the base model's.

    `Trainer._load_from_checkpoint` reads `model.safetensors` with a raw `load_state_dict`, but
    `save_pretrained` writes the checkpoint in the family's published key layout (transformers'
    weight conversions: LLaVA's `language_model.model.*` for the module's
    `model.language_model.*`, and so on per family), so no key matches: the stock loader warns
    of missing keys and trains on from the base weights with the step counter advanced. Loading
    the checkpoint with `from_pretrained` applies the same conversions backwards. LoRA (PEFT's
    `load_adapter`), FSDP and DeepSpeed (their own formats) keep the stock loader."""
    stock = trainer._load_from_checkpoint

    def load(checkpoint: str, model: Any = None) -> None:
        target = trainer.model if model is None else model
        if trainer.is_fsdp_enabled or not (Path(checkpoint) / "config.json").is_file():
            return stock(checkpoint, model)
        load_checkpoint_weights(target, Path(checkpoint))
        return None

    trainer._load_from_checkpoint = load


def load_checkpoint_weights(model: Any, checkpoint: Path) -> None:
    """Copy the weights saved in `checkpoint` (by `save_pretrained`) into `model`, every one of
    them, or fail naming what did not fit. It loads a second copy of the model on the CPU for
    the moment of the copy."""
    import torch

    dtype = next(model.parameters()).dtype
    try:
        saved, info = type(model).from_pretrained(
            str(checkpoint),
            dtype=dtype,
            device_map="cpu",
            output_loading_info=True,
            use_kernels=False,  # only its weights are read (models/hf.py, "Hub kernels")
        )
    except Exception as exc:  # OSError (unreadable files), ValueError (a broken config)
        raise TrainError(f"{checkpoint}: cannot load the checkpoint's weights: {exc}") from None
    missing = list(info.get("missing_keys") or []) + list(info.get("mismatched_keys") or [])
    if not missing:
        with torch.no_grad():
            result = model.load_state_dict(saved.state_dict(), strict=False)
        missing = list(result.missing_keys) + list(result.unexpected_keys)
    del saved
    if missing:
        shown = ", ".join(map(str, missing[:3])) + (" ..." if len(missing) > 3 else "")
        raise TrainError(
            f"{checkpoint}: the checkpoint does not hold every weight of the model "
            f"({len(missing)} differ: {shown}); resume from another checkpoint or pass --overwrite"
        )


def save_outputs(
    trainer: Any,
    settings: TrainSettings,
    counts: dict[str, int],
    stale: Iterable[Path] = (),
    processes: int = 1,
) -> None:
    """Final weights and processor in DIR (merged for LoRA, the adapter in DIR/adapter), TRL's
    `trainer_state.json`, and `train_run.json` (with the number of `processes` that trained);
    `stale`: a previous run's outputs, removed first (with --overwrite). The main process's
    work alone."""
    out = settings.out_dir
    clear_previous_outputs(stale)
    out.mkdir(parents=True, exist_ok=True)
    model = trainer.model
    if settings.lora is not None:
        model.save_pretrained(out / ADAPTER_DIR)
        model = model.merge_and_unload()
    model.save_pretrained(out)
    trainer.processing_class.save_pretrained(out)
    trainer.state.save_to_json(str(out / "trainer_state.json"))
    seen = [s for s in counts if s not in settings.holdout]
    record = {
        "model": settings.model,
        "data": settings.data,
        "mode": settings.mode,
        **settings.episode,
        "held_out": settings.holdout,
        "trained_on": seen,
        "examples_per_scenario": counts,
        "lora": settings.lora,
        "rewards": settings.rewards.as_dict(),
        "grpo": {k: _jsonable(v) for k, v in settings.grpo.items()},
        "steps": trainer.state.global_step,
        "processes": processes,
    }
    if settings.recipe is not None:
        record["recipe"] = settings.recipe
    # The run is finished once RUN_FILE is written; RESUME_FILE goes first, so that the two
    # are never both this run's (a RESUME_FILE beside a RUN_FILE is a run started with
    # --overwrite over a previous one, not yet saved).
    (out / RESUME_FILE).unlink(missing_ok=True)
    write_whole(out / RUN_FILE, dumps(record, indent=2) + "\n")


def _jsonable(value: Any) -> Any:
    try:
        dumps(value)
    except TypeError:
        return repr(value)
    return value


def check_settings(settings: TrainSettings) -> None:
    """Everything that can be told before the data is read: the GRPO config as TRL builds it
    (its own consistency checks), the output directory's state, the model's kind."""
    require_train_extra()
    grpo_config(settings, reward_weights(settings))


def reward_weights(settings: TrainSettings) -> list[float]:
    """The weights of the mode's reward functions, as `GRPOConfig` takes them."""
    if settings.mode == "multi":
        from proactivebench.train.multiturn import multiturn_rewards

        return multiturn_rewards(settings.rewards)[1]
    return reward_functions(settings.rewards)[1]


def settings_identity(settings: TrainSettings) -> dict[str, Any]:
    """What must be the same for a rerun to resume a run's checkpoints (`--max-steps` too: a
    resumed run ends where the first would have)."""
    return {
        "model": settings.model,
        "data": settings.data,
        "mode": settings.mode,
        **settings.episode,
        "held_out": settings.holdout,
        "lora": settings.lora,
        "rewards": settings.rewards.as_dict(),
        "grpo": {k: _jsonable(v) for k, v in settings.grpo.items()},
    }


def unfinished_run(out: Path, identity: dict[str, Any]) -> bool:
    """Whether `out` holds a run with these settings that has not saved its final model:
    `RESUME_FILE` is written when training starts and removed before `RUN_FILE` is written,
    so it stands for an unfinished run even beside a previous run's outputs (a run started
    with --overwrite keeps those until it saves)."""
    try:
        recorded = loads((out / RESUME_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(recorded == identity)


def complete_checkpoint(path: Path) -> bool:
    """Whether a checkpoint was written to the end: transformers writes `trainer_state.json`
    last (after the weights, optimizer and RNG states), and a process killed or interrupted
    while saving leaves a folder without it, which `Trainer` cannot resume from."""
    try:
        state = loads((path / "trainer_state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(state, dict)


def last_checkpoint(out: Path, identity: dict[str, Any]) -> Path | None:
    """The last complete checkpoint of an unfinished run in `out` with these settings, if any
    (one cut short while saving is passed over)."""
    if not unfinished_run(out, identity):
        return None
    whole = [p for p in checkpoints(out) if complete_checkpoint(p)]
    return whole[-1] if whole else None


def resumable_checkpoint(settings: TrainSettings) -> Path | None:
    """Where a rerun of `settings` without --overwrite would resume (what an interrupted run
    tells the user)."""
    identity = json.loads(dumps(settings_identity(settings)))
    return last_checkpoint(settings.out_dir, identity)


def checkpoints(out: Path) -> list[Path]:
    """`checkpoint-N` folders of `out`, in step order."""
    found = [p for p in out.glob("checkpoint-*") if p.is_dir() and p.name[11:].isdigit()]
    return sorted(found, key=lambda p: int(p.name[11:]))


#: What an unfinished run itself wrote in its directory while training; the rest of the
#: outputs there (a previous run's, when it was started with --overwrite) are replaced when
#: the continued run saves.
_OWN_WHILE_TRAINING = (RESUME_FILE, "README.md", "runs")


def train_grpo(
    settings: TrainSettings,
    *,
    on_data: Callable[[dict[str, int]], None] | None = None,
    callbacks: list[Any] | None = None,
) -> TrainOutcome:
    """Check, load the data, train, save; `on_data` hears the examples per scenario before
    training. A run that fails or is interrupted before saving leaves no directory it made;
    one that wrote checkpoints (`save_strategy`) is resumed by a rerun of the same settings.

    Under a launcher every process runs this: all of them check and read the same files, only
    the main one prepares the directory, hears `on_data`, and saves (`train.processes`)."""
    check_settings(settings)
    state = process_state()
    main = state.is_main_process
    out = settings.out_dir
    identity = json.loads(dumps(settings_identity(settings)))
    # An unfinished run of the same settings is continued: from its last complete checkpoint,
    # or from the start when it was stopped before one was whole.
    continuing = not settings.overwrite and unfinished_run(out, identity)
    resume_from = last_checkpoint(out, identity) if continuing else None
    if not continuing and not settings.overwrite and (out / RESUME_FILE).is_file():
        raise TrainError(
            f"--out {out}: holds an unfinished run with other settings (its checkpoints); "
            "rerun it with the same settings to resume, or pass --overwrite"
        )
    # Every process has decided from the directory as it was: only now may the main one change
    # it (a process that failed above has ended the launch).
    state.wait_for_everyone()
    made = [] if continuing or not main else prepare_out_dir(out, overwrite=settings.overwrite)
    stale: list[Path] = []
    if main and settings.overwrite:
        # The previous run's outputs, kept until the new model is saved; its checkpoints go
        # now, so that the new run's own are not mixed with them.
        stale = owned_outputs(out)
        clear_previous_outputs(p for p in stale if p.name.startswith("checkpoint-"))
    elif main and continuing:
        # What the unfinished run kept of an earlier run (it was started with --overwrite) is
        # replaced at the save, as it would have been; its checkpoints cut short while saving
        # go now (a resume re-saves those steps).
        stale = [
            p
            for p in owned_outputs(out)
            if not p.name.startswith("checkpoint-") and p.name not in _OWN_WHILE_TRAINING
        ]
        clear_previous_outputs(p for p in checkpoints(out) if not complete_checkpoint(p))
    state.wait_for_everyone()
    trainer = None
    try:
        check_model(settings.model, settings.lora["target_modules"] if settings.lora else None)
        dataset = training_data(settings)
        check_same_data(state, dataset)
        counts = scenario_counts(dataset)
        check_enough_examples(settings, len(dataset))
        if on_data is not None and main:
            on_data(counts)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_RENAMED, category=FutureWarning)
            trainer = build_trainer(settings, dataset, callbacks)
            if main:
                write_whole(out / RESUME_FILE, dumps(identity, indent=2) + "\n")
            # The checkpoint by path: transformers' own choice (`True`) is the highest
            # numbered folder, complete or not.
            trainer.train(resume_from_checkpoint=resume_from and str(resume_from))
        if trainer.state.global_step == 0:  # saving would pass the base weights off as trained
            raise TrainError(
                f"training took no step on the {len(dataset)} examples (no whole batch came "
                "from the data); nothing was saved"
            )
        if main:
            save_outputs(trainer, settings, counts, stale, state.num_processes)
            (out / RESUME_FILE).unlink(missing_ok=True)
            (out / ERROR_LOG).unlink(missing_ok=True)
        state.wait_for_everyone()  # no process returns before the outputs are whole
    except BaseException as exc:
        if main and not list(out.glob("checkpoint-*")):  # nothing to resume from
            (out / RESUME_FILE).unlink(missing_ok=True)
        failure = None
        if isinstance(exc, Exception) and not isinstance(exc, ProactiveBenchError):
            failure = training_failed(exc, out, 0 if trainer is None else trainer.state.global_step)
        remove_if_empty(made)
        if failure is not None:
            raise failure from exc
        raise
    return TrainOutcome(
        out_dir=settings.out_dir,
        examples=len(dataset),
        counts=counts,
        steps=trainer.state.global_step,
        log_history=list(trainer.state.log_history),
        main_process=main,
    )


def check_enough_examples(settings: TrainSettings, examples: int) -> None:
    """Refuse data smaller than one generation's prompts: TRL's sampler keeps whole batches of
    `generation_batch_size / num_generations` distinct examples only, so with fewer examples it
    yields none and the trainer takes no step (or fails asking for max_steps)."""
    args = grpo_config(settings, reward_weights(settings))
    needed = args.generation_batch_size // args.num_generations
    if examples < needed:
        processes = process_state().num_processes
        raise TrainError(
            f"--data {settings.data}: {examples} training example(s), fewer than the "
            f"{needed} distinct examples one generation samples (per_device_train_batch_size "
            f"{args.per_device_train_batch_size} x {processes} process(es) "
            f"x steps_per_generation {args.steps_per_generation} / num_generations "
            f"{args.num_generations}): no step could train; "
            + too_few_advice(settings, examples, needed, args.num_generations, processes)
        )


def too_few_advice(
    settings: TrainSettings, examples: int, needed: int, generations: int, processes: int
) -> str:
    """What makes a run with too few examples train. A recipe that chose a batch field keeps
    its batch whatever the other is (lowering per_device_train_batch_size raises
    gradient_accumulation_steps), so under it only more data or a batch of the user's helps."""
    chosen = (settings.recipe or {}).get("set", {}).get("grpo", {})
    if not any(name in chosen for name in BATCH_FIELDS):
        return "lower per_device_train_batch_size or hold out fewer scenarios"
    assert settings.recipe is not None
    name, paper = settings.recipe["name"], settings.recipe["batch"]["paper"]
    advice = (
        f"--recipe {name} keeps the paper's batch of {paper} completions whatever "
        "per_device_train_batch_size is (it sets gradient_accumulation_steps to match): give "
        f"{needed} or more examples (more data, or hold out fewer scenarios with --holdout)"
    )
    # Both batch fields set: the batch is the user's. One group a process and step samples
    # processes x steps_per_generation examples (steps_per_generation if set, else 1).
    smallest = processes * int(settings.grpo.get("steps_per_generation") or 1)
    if examples >= smallest:
        advice += (
            f", or set the batch yourself for a trial: --set per_device_train_batch_size="
            f"{generations} --set gradient_accumulation_steps=1 ({generations * processes} "
            f"completions a step, not the paper's {paper})"
        )
    return advice


def training_failed(exc: Exception, out: Path, step: int) -> TrainError:
    """What TRL, PEFT, transformers or torch raised once the run was under way (out of memory,
    a generation setting that only the model rejects), as one message; the traceback, which
    the user or a bug report needs, goes to `ERROR_LOG` in the output directory."""
    text = "".join(traceback.format_exception(exc)).rstrip() + "\n"
    where = out / ERROR_LOG
    try:
        write_whole(where, text)
        kept = f"the full traceback is in {where}"
    except WriteError as error:
        log.debug("the training traceback:\n%s", text)
        kept = f"its traceback could not be written: {error}"
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return TrainError(
        f"training failed at step {step}: {type(exc).__name__}"
        + (f": {reason}" if reason else "")
        + f" ({kept})"
    )


def read_run_file(model_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """`train_run.json` of a model directory, or None when it has none."""
    path = Path(model_dir) / RUN_FILE
    try:
        loaded = loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


__all__ = [
    "LANGUAGE_MODEL_TARGETS",
    "TrainError",
    "TrainOutcome",
    "TrainSettings",
    "build_trainer",
    "read_config_file",
    "train_grpo",
]
