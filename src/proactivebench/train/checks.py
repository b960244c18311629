"""What `train grpo` checks before it loads data or starts training.

A training run takes minutes to set up (the data is converted, the model loaded) and hours to
run; a wrong setting found by TRL or torch after that costs the setup and ends in a traceback.
So the settings are typed against `GRPOConfig`'s own annotations, the output directory is
made (or refused) first, and the model is read from its config and processor, not loaded, to
tell that it is an image-text-to-text model whose language model LoRA can target.
"""

from __future__ import annotations

import functools
import math
import os
import re
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proactivebench.core.errors import ProactiveBenchError, TrainError
from proactivebench.core.ranges import Range
from proactivebench.core.texts import loads
from proactivebench.run.settings import EvalSettings, SettingField, check_setting, offered

# ----- GRPOConfig and LoraConfig values ---------------------------------------------------------


POSITIVE = Range(0, low_open=True)
POSITIVE_INT = Range(1, integer=True)
NON_NEGATIVE = Range(0)
FRACTION = Range(0, 1)
#: An exponential moving average's coefficient, a dropout rate: 1 is out.
BELOW_ONE = Range(0, 1, high_open=True)


@dataclass(frozen=True)
class Section:
    """One part of the training config that goes to a library's config class, checked field by
    field against that class: names (an unknown one is a typo), types (from its annotations,
    `kinds` where an annotation is narrower than what the library accepts), ranges."""

    title: str
    #: How a field is named in messages ("lora." for the config file's `lora` section).
    prefix: str
    config_class: Callable[[], type]
    ranges: dict[str, Range]
    #: Fields the user may not set, and why.
    reserved: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, Any] = field(default_factory=dict)
    where: str = ""


def _grpo_config() -> type:
    from trl import GRPOConfig

    return GRPOConfig


def _lora_config() -> type:
    from peft import LoraConfig

    return LoraConfig


GRPO_FIELDS = Section(
    title="GRPOConfig",
    prefix="",
    config_class=_grpo_config,
    ranges={
        **dict.fromkeys(
            (
                "learning_rate",
                "temperature",
                "repetition_penalty",
                "num_train_epochs",
                "adam_epsilon",
                "logging_steps",
                "save_steps",
                "eval_steps",
                "vllm_server_timeout",
            ),
            POSITIVE,
        ),
        **dict.fromkeys(
            (
                "max_completion_length",
                "per_device_train_batch_size",
                "per_device_eval_batch_size",
                "gradient_accumulation_steps",
                "generation_batch_size",
                "steps_per_generation",
                "num_iterations",
                "save_total_limit",
                "ref_model_sync_steps",
                "vllm_tensor_parallel_size",
            ),
            POSITIVE_INT,
        ),
        **dict.fromkeys(
            (
                "beta",
                "epsilon",
                "top_k",
                "weight_decay",
                "max_grad_norm",
                "warmup_steps",
                "seed",
                "data_seed",
                "dataloader_num_workers",
            ),
            NON_NEGATIVE,
        ),
        **dict.fromkeys(
            ("min_p", "ref_model_mixup_alpha", "top_entropy_quantile"),
            FRACTION,
        ),
        **dict.fromkeys(("adam_beta1", "adam_beta2", "label_smoothing_factor"), BELOW_ONE),
        "top_p": Range(0, 1, low_open=True),
        "vllm_gpu_memory_utilization": Range(0, 1, low_open=True),
        **dict.fromkeys(
            ("num_generations", "num_generations_eval"),
            Range(2, integer=True, note="GRPO compares at least 2 generations per prompt"),
        ),
        "max_steps": Range(1, integer=True, also=(-1,), note="or -1: num_train_epochs decides"),
    },
    reserved={
        "output_dir": "the output directory is set with --out",
        # TrainingArguments keeps it for scripts; Trainer never reads it, so it was ignored.
        "resume_from_checkpoint": (
            "train grpo resumes by itself: with save_strategy set, rerun the same command and "
            "it continues from the last checkpoint in --out"
        ),
    },
    where="see TRL's GRPOConfig; sections 'rewards' and 'lora' hold our settings",
)

LORA_FIELDS = Section(
    title="LoraConfig",
    prefix="lora.",
    config_class=_lora_config,
    ranges={
        "r": POSITIVE_INT,
        "lora_alpha": POSITIVE,
        "lora_dropout": BELOW_ONE,
        "qalora_group_size": POSITIVE_INT,
    },
    reserved={"task_type": "set by train grpo (CAUSAL_LM: LoRA on the language model)"},
    # PEFT annotates lora_alpha as an int but scales by any number.
    kinds={"lora_alpha": float},
    where="see PEFT's LoraConfig",
)


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation the library cannot resolve here: check nothing
        return {}


def _alternatives(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return [a for arg in typing.get_args(annotation) for a in _alternatives(arg)]
    return [annotation]


def _describe(kind: Any) -> str:
    kind = typing.get_origin(kind) or kind
    names = {
        bool: "true or false",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a mapping (a JSON object)",
        type(None): "null",
    }
    return names.get(kind, getattr(kind, "__name__", str(kind)))


def _matches(value: Any, kind: Any) -> bool | None:
    """Whether `value` fits `kind`; None when the kind is not one we check (an enum, a class)."""
    base = typing.get_origin(kind) or kind
    if kind is Any:
        return True
    if base is type(None):
        return value is None
    if base is bool:
        return isinstance(value, bool)
    if base is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if base is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if base is str:
        return isinstance(value, str)
    if base is list:
        return isinstance(value, list)
    if base is dict:
        return isinstance(value, dict)
    if base is typing.Literal:
        return value in typing.get_args(kind)
    return None


def check_value(name: str, value: Any, annotation: Any) -> str | None:
    """Why `value` does not fit the field's annotation, or None when it does (or cannot be
    told). A string for a field that also takes a mapping must be a JSON object, as TRL
    parses it."""
    kinds = _alternatives(annotation)
    verdicts = [_matches(value, k) for k in kinds]
    if None in verdicts and isinstance(value, str):
        return None  # an enum-valued field given by name: TRL checks the name
    if True not in verdicts and None not in verdicts:
        wanted = " or ".join(dict.fromkeys(_describe(k) for k in kinds))
        return f"expected {wanted}, not {value!r}"
    if isinstance(value, str) and any((typing.get_origin(k) or k) is dict for k in kinds):
        try:
            parsed = loads(value)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            return f"expected a mapping (a JSON object), not {value!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"expected a finite number, not {value!r}"
    return None


def check_fields(section: Section, values: dict[str, Any], origin: str) -> None:
    """Refuse unknown fields and values of the wrong type or range, naming the field and where
    it was set (`origin`: the config file or `--set`)."""
    import dataclasses

    cls = section.config_class()
    hints = {**_type_hints(cls), **section.kinds}
    known = {f.name for f in dataclasses.fields(cls) if f.init}
    for name, why in section.reserved.items():
        if name in values:
            raise TrainError(f"{origin}: {section.prefix}{name}: {why}")
    unknown = sorted(set(values) - known)
    if unknown:
        inside = f" in '{section.prefix.rstrip('.')}'" if section.prefix else ""
        raise TrainError(
            f"{origin}: unknown {section.title} field(s){inside}: {', '.join(unknown)} "
            f"({section.where})"
        )
    for name, value in values.items():
        problem = check_value(name, value, hints[name]) if name in hints else None
        if problem is None and name in section.ranges:
            problem = section.ranges[name].problem(value)
        if problem is not None:
            raise TrainError(f"{origin}: {section.prefix}{name}: {problem}")


def check_grpo_values(values: dict[str, Any], origin: str) -> None:
    """The GRPOConfig fields of the config file or `--set` (see `check_fields`)."""
    check_fields(GRPO_FIELDS, values, origin)


def check_lora_values(values: dict[str, Any], origin: str) -> None:
    """The config file's `lora` section (see `check_fields`)."""
    check_fields(LORA_FIELDS, values, origin)


def check_bool(name: str, value: Any, origin: str) -> bool:
    if not isinstance(value, bool):
        raise TrainError(f"{origin}: {name}: expected true or false, not {value!r}")
    return value


def episode_settings(settings: type[EvalSettings] = EvalSettings) -> dict[str, SettingField]:
    """The run settings training honours, as `train grpo` offers them (surface "train" of
    `proactivebench.run.settings`): each is a `make_episode` option."""
    return {s.name: s for s in offered(settings, "train")}


def episode_defaults() -> dict[str, Any]:
    """Every episode option training offers, at its default."""
    return {name: spec.default for name, spec in episode_settings().items()}


def check_episode_option(name: str, value: Any, origin: str) -> Any:
    """An episode option's value, checked as `eval` checks it, or one error naming where it
    was set."""
    spec = episode_settings()[name]
    if spec.base_type is bool:
        return check_bool(name, value, origin)
    try:
        return check_setting(spec, value)
    except ProactiveBenchError as exc:
        raise TrainError(f"{origin}: {exc}") from None


def check_holdout(value: Any, origin: str) -> str | list[str] | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise TrainError(
        f"{origin}: holdout: expected scenario names (a string 'ROD,MVP-N' or a list), "
        f"not {value!r}"
    )


def one_line_warnings() -> None:
    """`datasets` and `huggingface_hub` print their warnings with their own handler and pass
    them on to the root logger too, which the CLI prints as well: keep one (the CLI's)."""
    import logging

    if logging.getLogger().handlers:
        for name in ("datasets", "huggingface_hub"):
            logging.getLogger(name).handlers.clear()


# ----- the output directory ----------------------------------------------------------------------

#: The traceback of a run that failed while training (the command says one line). A
#: directory holding only this file takes a new run as an empty one would.
ERROR_LOG = "train_error.log"
#: What a run writes in its output directory; `--overwrite` removes these and nothing else.
OWNED_FILES = (
    ERROR_LOG,
    "train_run.json",
    "train_resume.json",
    "README.md",
    "trainer_state.json",
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "model.safetensors.index.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "chat_template.json",
    "processor_config.json",
    "preprocessor_config.json",
    "video_preprocessor_config.json",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
    "training_args.bin",
)
OWNED_PATTERNS = ("model-*.safetensors", "checkpoint-*", "adapter", "runs")
#: Files only a training run writes: a directory with none of them never held one, so its
#: README.md, `runs/` (where the docs put eval runs) or model files are the user's own, not
#: outputs that `--overwrite` may replace. `trainer_state.json` covers a run killed while
#: it saved (the model written, `train_run.json` not yet).
RUN_MARKERS = (ERROR_LOG, "train_run.json", "train_resume.json", "trainer_state.json")


def owned_outputs(out: Path) -> list[Path]:
    """The files and directories of a previous run in `out` (what `--overwrite` replaces)."""
    found = [out / name for name in OWNED_FILES if (out / name).exists()]
    for pattern in OWNED_PATTERNS:
        found += sorted(out.glob(pattern))
    return found


def prepare_out_dir(out: Path, *, overwrite: bool) -> list[Path]:
    """Make sure `out` can take the run's outputs, before anything else is done; returns the
    directories made (removed again by `remove_if_empty` when the run produces nothing).

    A non-empty directory is refused unless `overwrite`, and then also unless it holds a
    previous run (one of `RUN_MARKERS`): `--overwrite` replaces outputs by name, and in any
    other directory those names (README.md, runs/) are the user's files. Only a previous
    run's outputs are replaced; the user's other files are never touched."""
    if out.exists() and not out.is_dir():
        raise TrainError(f"--out {out}: exists and is not a directory")
    if out.is_dir():
        try:
            present = sorted(p.name for p in out.iterdir())
        except OSError as exc:
            raise TrainError(f"--out {out}: cannot list it: {exc.strerror}") from None
        if present == [ERROR_LOG]:  # a failed run's traceback: replaced by this run's outcome
            present = []
        shown = ", ".join(present[:5]) + (", ..." if len(present) > 5 else "")
        if present and not overwrite:
            raise TrainError(
                f"--out {out}: not empty (holds {shown}); choose a new directory, or pass "
                "--overwrite to replace a previous run's outputs"
            )
        if present and not any((out / name).exists() for name in RUN_MARKERS):
            # --overwrite removes outputs by their names (README.md, runs/, config.json...):
            # in a directory no run wrote, those names are the user's files.
            raise TrainError(
                f"--out {out}: holds no previous training run (no train_run.json; it holds "
                f"{shown}), so --overwrite would replace files that are not a run's outputs; "
                "choose a new directory"
            )
        if not os.access(out, os.W_OK):
            raise TrainError(f"--out {out}: not writable")
        return []
    made = [p for p in (out, *out.parents) if not p.exists()]
    try:
        out.mkdir(parents=True)
    except OSError as exc:
        raise TrainError(f"--out {out}: cannot create it: {exc.strerror or exc}") from None
    return made


def clear_previous_outputs(paths: Iterable[Path]) -> None:
    """Remove a previous run's outputs (`owned_outputs`, listed before the new run started),
    so that nothing stale (an old adapter) stays beside the new ones."""
    import shutil

    for path in paths:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def remove_if_empty(made: Iterable[Path]) -> None:
    """Remove the directories `prepare_out_dir` made, deepest first, where nothing was left in
    them (a run that failed before saving leaves no empty directory behind)."""
    import shutil

    for path in made:
        # Empty folders (a logging folder TRL made) are not outputs; any file is.
        if path.is_dir() and not any(p.is_file() for p in path.rglob("*")):
            shutil.rmtree(path, ignore_errors=True)


# ----- the model ---------------------------------------------------------------------------------


def looks_like_path(model: str) -> bool:
    """A local path rather than a Hub id (`owner/name`)."""
    return (
        model.startswith(("/", "./", "../", "~", "."))
        or model.count("/") > 1
        or model.endswith("/")
        or (os.sep != "/" and os.sep in model)
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def check_model(model: str, lora_targets: Any | None) -> None:
    """Refuse a model that cannot train here, from its config and processor alone: a path that
    does not exist, a directory with no readable config, a model that is not image-text-to-text,
    and (with LoRA) a model none of whose modules the LoRA targets match."""
    path = Path(model).expanduser()
    if path.exists() and not path.is_dir():
        raise TrainError(f"--model {model}: not a directory")
    if not path.exists() and looks_like_path(model):
        raise TrainError(f"--model {model}: no such directory")
    from transformers import AutoConfig, AutoProcessor

    if path.is_dir() and not (path / "config.json").is_file():
        raise TrainError(f"--model {model}: no config.json in it (not a model directory)")
    try:
        config = AutoConfig.from_pretrained(str(path) if path.exists() else model)
    except Exception as exc:  # OSError (no config.json, offline), ValueError (unknown type)
        raise TrainError(f"--model {model}: cannot read its config: {_first_line(exc)}") from None
    if getattr(config, "vision_config", None) is None:
        raise TrainError(
            f"--model {model}: not an image-text-to-text model (its config has no "
            f"vision_config; model type {getattr(config, 'model_type', None) or 'unknown'!s})"
        )
    try:
        processor = AutoProcessor.from_pretrained(str(path) if path.exists() else model)
    except Exception as exc:
        raise TrainError(
            f"--model {model}: cannot load its processor: {_first_line(exc)}"
        ) from None
    if getattr(processor, "image_processor", None) is None:
        raise TrainError(
            f"--model {model}: not an image-text-to-text model (its processor has no image "
            "processor)"
        )
    if lora_targets is not None:
        names = module_names(config)
        if names is not None and not any(target_matches(lora_targets, n) for n in names):
            raise TrainError(
                f"--lora: no module of {model} matches target_modules {lora_targets!r} "
                "(the default targets the language_model's projections)"
            )


def module_names(config: Any) -> list[str] | None:
    """The module names of the model `config` describes, built on the meta device (no
    weights, no memory); None when it cannot be built that way."""
    import torch
    import transformers

    architectures = getattr(config, "architectures", None) or []
    cls = getattr(transformers, architectures[0], None) if architectures else None
    try:
        with torch.device("meta"):
            if cls is not None:
                model = cls._from_config(config)
            else:
                model = transformers.AutoModelForImageTextToText.from_config(config)
    except Exception:
        return None
    return [name for name, _ in model.named_modules()]


def target_matches(targets: Any, name: str) -> bool:
    """PEFT's rule: a string is a regex matched against the full module name; a list names
    module suffixes."""
    if isinstance(targets, str):
        return re.fullmatch(targets, name) is not None
    return any(name == t or name.endswith(f".{t}") for t in targets)
