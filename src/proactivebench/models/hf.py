"""Local Hugging Face `transformers` vision-language models: the `hf:PATH_OR_ID` backend.

Any checkpoint that `AutoModelForImageTextToText` and `AutoProcessor` load and whose processor
has a chat template works the same way (LLaVA(-OneVision), Qwen2.5-VL, InternVL3-hf, Gemma 3,
SmolVLM, ...): our messages become the standard multimodal chat format — each image part a
`{"type": "image"}` placeholder, with the view's PIL image handed to the processor in the same
order — and the processor's own template turns them into the model's prompt. We never write
model-specific glue, so a new architecture works as soon as `transformers` supports it.

Batches are padded on the LEFT, so every row's generated tokens start at the same column and a
batch yields exactly what each request would alone. Generation is greedy unless the decoding
asks for a temperature. `torch` and `transformers` are imported only when a model is loaded,
so the core package installs and imports without them.

All of a model's torch work — loading, encoding and generating — runs on one thread of its own,
which lives as long as the model (`HFModel._worker`). CPU torch runs its operators on an OpenMP
thread team, and libgomp keeps one team per thread that calls into it: a second calling thread
(a pool's next worker, or the main thread that loaded the model) makes a second team, and once
the teams' threads outnumber the cores libgomp stops letting idle team threads spin and puts
them to sleep after a few hundred spins, so each of the thousands of small parallel operators
of a `generate` waits for a thread to wake. Measured on a tiny LLaVA (benchmarks/hf_backend.py):
that cost 1.4× the time of a plain loop at batch 8; one thread for everything costs what the
plain loop does. Encoding is not overlapped with generation for the same reason: a processor
that computes with torch would make a second team again.

No failure is retried (none is a retryable `ModelError`): one here is a bug or out-of-memory,
which the same input repeats. `load_model` still wraps the backend in
`models.resilient.Resilient`, for its concurrency limit and, when asked
(`max_consecutive_failures`), its breaker.

The response cache keys answers on the checkpoint as well as its path or id
(`checkpoint_identity`): weights saved again under one path are another model to it. A `dtype`
or a `quantization_config` changes the weights' numbers, hence the answers: they are keyed too,
and recorded in the run's identity (`weight_settings`). Where the weights go (`device`,
`device_map`) and which attention kernel runs (`attn_implementation`) compute the same model,
and are not.

Hub kernels: transformers (5.25) swaps some layers of a model loaded on a GPU for kernels it
downloads from the Hub (`kernels-community/...`) unless told not to. Offline, as compute nodes
often are, the load then fails for a kernel nobody asked for, and online the layers run code
that is not the checkpoint's own. So `from_pretrained` gets `use_kernels=False` unless the
option `use_kernels=true` asks for them (seen on an H200: `HF_HUB_OFFLINE=1` failed every load).

Large models: `device_map` (e.g. `auto`) hands placement to `from_pretrained`, which shards one
model over every GPU of the machine; `quantization_config` (a JSON object with `quant_method`,
as transformers writes it) becomes transformers' own config class.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from hashlib import sha256
from pathlib import Path
from typing import Any

from PIL import Image

from proactivebench.benchmark.prompting import image_views, map_image_parts
from proactivebench.benchmark.scenarios import View
from proactivebench.core.errors import HFBackendError, ProactiveBenchError
from proactivebench.core.ranges import Range
from proactivebench.core.texts import dumps, shown_json
from proactivebench.models.base import ChatRequest, Completion, Decoding, Model
from proactivebench.models.options import Annotated

EXTRA_HINT = "install the extra: pip install -e '.[hf]'"
DTYPES = ("auto", "bfloat16", "float16", "float32")
#: The `device_map` strategies `from_pretrained` (through `accelerate`) computes a map for.
DEVICE_MAP_STRATEGIES = ("auto", "balanced", "balanced_low_0", "sequential")
DEVICE_MAP_HELP = (
    f"use {', '.join(DEVICE_MAP_STRATEGIES)}, one device (cpu, cuda:N or N), or a JSON object "
    'mapping module names to devices, e.g. {"": 0}'
)
QUANTIZATION_EXAMPLE = '{"quant_method": "bitsandbytes", "load_in_4bit": true}'

HFMessage = dict[str, Any]


def to_hf_conversation(
    messages: Sequence[dict[str, Any]], image_of: Callable[[View], Image.Image]
) -> tuple[list[HFMessage], list[Image.Image]]:
    """Our chat messages in the `transformers` multimodal chat format, and their images in order.

    Every content becomes a list of parts (string contents too): multimodal chat templates
    iterate over parts, and a bare string would be iterated character by character by some.
    """
    images = [image_of(view) for view in image_views(messages)]
    conversation: list[HFMessage] = []
    for message in map_image_parts(messages, lambda view: {"type": "image"}):
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for part in parts:
            if part.get("type") not in ("image", "text"):
                kind = part.get("type")
                raise ValueError(f"the hf backend cannot send a message part of type {kind!r}")
        conversation.append({"role": message["role"], "content": parts})
    return conversation, images


def _import_backend() -> tuple[Any, Any]:
    """`torch` and `transformers`, or an error that says which extra to install."""
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise HFBackendError(f"the hf backend needs {exc.name or 'torch'}; {EXTRA_HINT}") from None
    return torch, transformers


def _torch_dtype(torch: Any, dtype: str) -> Any:
    if dtype not in DTYPES:
        raise HFBackendError(f"unknown dtype {dtype!r}; choose from {', '.join(DTYPES)}")
    return "auto" if dtype == "auto" else getattr(torch, dtype)


def _launched_local_rank() -> int | None:
    """This process's `LOCAL_RANK` when a launcher (torchrun, accelerate launch) started several
    (`WORLD_SIZE` > 1; `proactivebench.jobs.launch` plays one shard per process), else None."""
    try:
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            return int(os.environ["LOCAL_RANK"])
    except (KeyError, ValueError):
        pass
    return None


def _placement(torch: Any, device: str) -> tuple[str, bool]:
    """Where to put the model, and whether `from_pretrained` can place it (`accelerate`).

    `auto` is the first GPU when there is one (every GPU, sharded, when `accelerate` is there),
    else the CPU. Under a launcher that started several processes, `auto` is this process's own
    GPU, `cuda:LOCAL_RANK` (data parallel: one model per GPU; the launcher starts at most as many
    processes per node as it is told, and a LOCAL_RANK without its GPU is refused). Without
    `accelerate` a `device_map` is refused, so the model is loaded and then moved.
    """
    has_accelerate = importlib.util.find_spec("accelerate") is not None
    if device == "auto":
        local_rank = _launched_local_rank()
        if torch.cuda.is_available() and local_rank is not None:
            count = torch.cuda.device_count()
            if local_rank >= count:
                raise HFBackendError(
                    f"LOCAL_RANK={local_rank}, but this node has {count} visible GPU(s): start "
                    "at most one process per GPU (--nproc-per-node / --num_processes), or choose "
                    "one with --model-option device=cuda:N"
                )
            return f"cuda:{local_rank}", has_accelerate
        if torch.cuda.is_available():
            return ("auto" if has_accelerate else "cuda:0"), has_accelerate
        device = "cpu"
    try:
        torch.device(device)
    except (RuntimeError, ValueError):
        raise HFBackendError(f"unknown device {device!r}; use auto, cpu, cuda or cuda:N") from None
    return device, has_accelerate and device != "cpu"


def _refuse_spreading_beside_other_ranks(strategy: str) -> None:
    """A strategy spreads one model over every GPU of the node: with several launched processes
    on the node (data parallel), each would spread its own copy over the same GPUs."""
    if _launched_local_rank() is None:
        return
    try:
        per_node = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    except ValueError:
        return
    if per_node > 1:
        raise HFBackendError(
            f"device_map={strategy!r} spreads one model over every GPU of this node, but the "
            f"launcher started {per_node} processes on it: start one process per node "
            "(--nproc-per-node 1 / --num_processes equal to the number of nodes), or give each "
            "process its own GPU without a device_map"
        )


def _device_map(torch: Any, device_map: Any, device: str) -> Any:
    """The `device_map` option, checked before anything loads: a strategy, one device, or a
    mapping of module names to devices, as `from_pretrained` takes it.

    It says where each part of the model goes, so `device` (where the whole model goes) must
    be left at `auto`: given both, neither would be obeyed whole.
    """
    if device != "auto":
        raise HFBackendError(
            f"give device or device_map, not both (device={device!r}, "
            f"device_map={shown_json(device_map)})"
        )
    if device_map in DEVICE_MAP_STRATEGIES:
        _refuse_spreading_beside_other_ranks(device_map)
        return device_map
    if _is_device(torch, device_map):
        return device_map
    if (
        isinstance(device_map, dict)
        and device_map
        and all(isinstance(k, str) and _is_device(torch, v) for k, v in device_map.items())
    ):
        return device_map
    raise HFBackendError(f"bad device_map {shown_json(device_map)}: {DEVICE_MAP_HELP}")


def _is_device(torch: Any, value: Any) -> bool:
    """A GPU number, `disk` (offloaded weights), or a device name torch knows."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    if not isinstance(value, str):
        return False
    try:
        return value == "disk" or bool(torch.device(value))
    except (RuntimeError, ValueError):
        return False


def _quantization_config(config: Any) -> Any:
    """transformers' own config object (e.g. `BitsAndBytesConfig`) for a JSON object with
    `quant_method`, built by `AutoQuantizationConfig` as a checkpoint's would be; a method
    transformers does not know, or bad settings for it, are one clear error. Whether the
    method's package is installed is checked by `from_pretrained` (its error names it)."""
    from transformers.quantizers import AutoQuantizationConfig
    from transformers.quantizers.auto import AUTO_QUANTIZATION_CONFIG_MAPPING

    if not isinstance(config, dict):
        raise HFBackendError(
            f"quantization_config must be a JSON object with quant_method, e.g. "
            f"{QUANTIZATION_EXAMPLE}; got {shown_json(config)}"
        )
    method = config.get("quant_method")
    bnb = config.get("load_in_4bit") or config.get("load_in_8bit")
    if not bnb and method not in AUTO_QUANTIZATION_CONFIG_MAPPING:
        known = sorted(
            {
                m.partition("_")[0] if m.startswith("bitsandbytes") else m
                for m in AUTO_QUANTIZATION_CONFIG_MAPPING
            }
        )
        hint = " (with load_in_4bit or load_in_8bit true)" if method == "bitsandbytes" else ""
        raise HFBackendError(
            f"unknown quant_method {shown_json(method)}{hint} in quantization_config; "
            f"transformers knows: {', '.join(known)}"
        )
    try:
        return AutoQuantizationConfig.from_dict(dict(config))
    except ImportError as exc:
        package = exc.name or str(exc)
        raise HFBackendError(
            f"quantization_config {method!r} needs {package}: pip install {package}"
        ) from None
    except (ValueError, TypeError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise HFBackendError(
            f"bad quantization_config {shown_json(config)}: {first_line}"
        ) from None


#: A load error is shown whole up to this many characters (a few lines), cut between sentences.
LOAD_ERROR_CHARS = 600
#: Import names (and transformers' names of libraries) whose pip package is called otherwise.
PIP_NAMES = {
    "pil": "pillow",
    "pytorch": "torch",
    "cv2": "opencv-python",
    "opencv": "opencv-python",
    "yaml": "pyyaml",
    "sklearn": "scikit-learn",
    "bs4": "beautifulsoup4",
    "beautiful soup": "beautifulsoup4",
    "pyav": "av",
}
_PIP_INSTALL = re.compile(r"pip install\s+[`'\"]?([A-Za-z0-9][\w.\-]*)")
_REQUIRES = re.compile(r"(\S+) requires the (?:🤗 )?([\w\- ]+?) library but it was not found")


def _describe_load_error(path: str, exc: Exception) -> str:
    """One clear message: a missing package in one line that says what to install (the
    checkpoint's processor may need one that its model does not, e.g. torchvision for a video
    processor); any other error whole, but at most a few lines."""
    looks_local = path.startswith((".", "/", "~")) or Path(path).exists()
    if looks_local and not Path(path).expanduser().exists():
        return f"cannot load hf model {path!r}: no such directory"
    missing = _missing_package(exc)
    if missing:
        who, package = missing
        return (
            f"cannot load hf model {path!r}: {who} needs {package}, which is not installed; "
            f"install {package}: pip install {package}"
        )
    return f"cannot load hf model {path!r}: {_bounded(str(exc)) or type(exc).__name__}"


def _missing_package(exc: BaseException | None) -> tuple[str, str] | None:
    """(what needs it, the pip package) when `exc` or its cause is a missing import."""
    while exc is not None:
        if isinstance(exc, ImportError):
            text = " ".join(str(exc).split())
            requires = _REQUIRES.search(text)
            who = requires.group(1) if requires else "this checkpoint"
            pip = _PIP_INSTALL.search(text)
            # Only a module not found names a package to install: "cannot import name" from
            # an installed one is a version mismatch.
            absent = exc.name if isinstance(exc, ModuleNotFoundError) else None
            name = (
                (pip.group(1) if pip else None)
                or (requires.group(2) if requires else None)
                or (absent.split(".")[0] if absent else None)
            )
            if name:
                name = name.lower().rstrip(".")
                return who, PIP_NAMES.get(name, name.replace(" ", "-"))
        exc = exc.__cause__ or exc.__context__
    return None


def _bounded(text: str) -> str:
    """The text as one paragraph (libraries hard-wrap their messages), its whole sentences up
    to `LOAD_ERROR_CHARS` characters (a few lines); "[...]" says that more was left out."""
    sentences = re.split(r"(?<=[.!?:])\s+", " ".join(text.split()))
    shown = ""
    for sentence in sentences:
        if len(shown) + len(sentence) + 1 > LOAD_ERROR_CHARS:
            # A first sentence longer than that is cut at a word; the others are left out.
            head = shown or sentence[:LOAD_ERROR_CHARS].rsplit(None, 1)[0]
            return f"{head} [...]"
        shown = f"{shown} {sentence}".strip()
    return shown


def checkpoint_identity(path: str, commit: str | None = None) -> str:
    """What tells one checkpoint from another under the same path or id, for the cache keys.

    A hub id: the commit it resolved to (`transformers` records it at load). A local
    directory: the names, sizes and modification times of its files (weights, config,
    tokenizer, chat template; hashing gigabytes of weights at each load would cost more than
    the cache saves) — so a copy without its times is a miss, never a stale hit. Empty when
    neither is known.
    """
    if commit:
        return f"commit={commit}"
    directory = Path(path).expanduser()
    if not directory.is_dir():
        return ""
    digest = sha256()
    for file in sorted(p for p in directory.iterdir() if p.is_file()):
        stat = file.stat()
        digest.update(f"{file.name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return f"files={digest.hexdigest()[:16]}"


class HFModel(Model):
    """A local `transformers` VLM; `max_batch` requests are generated together."""

    def __init__(
        self,
        path: str,
        *,
        seed: int = 0,
        device: str = "auto",
        dtype: str = "auto",
        attn_implementation: str | None = None,
        device_map: str | int | dict[str, Any] | None = None,
        quantization_config: dict[str, Any] | None = None,
        trust_remote_code: bool = False,
        use_kernels: bool = False,
        max_batch: Annotated[int, Range(1)] = 8,
    ) -> None:
        if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
            raise HFBackendError(f"max_batch must be a positive integer, not {max_batch!r}")
        self.path = path
        self.name = f"hf:{path}"
        self.seed = seed
        self.max_batch = max_batch
        #: The one thread all of this model's torch work runs on (see the module's docstring);
        #: it also runs one batch at a time, which one model needs. It ends with the model.
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="proactivebench-hf")
        #: What changes the weights' numbers, hence the answers (not where they are placed).
        self.weight_settings: dict[str, Any] = {}
        if dtype != "auto":
            self.weight_settings["dtype"] = dtype
        if quantization_config is not None:
            self.weight_settings["quantization_config"] = quantization_config
        self.torch, transformers = _import_backend()
        load_kwargs, move_to = self._load_kwargs(
            device, dtype, attn_implementation, device_map, quantization_config, use_kernels
        )
        try:
            self.processor, self.model = self._worker.submit(
                self._load, transformers, load_kwargs, move_to, trust_remote_code
            ).result()
        except BaseException:
            self._worker.shutdown(wait=False)
            raise
        self.identity = checkpoint_identity(path, getattr(self.model.config, "_commit_hash", None))
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        # Left padding: all prompts end in the same column, where generation starts.
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token

    def _load_kwargs(
        self,
        device: str,
        dtype: str,
        attn_implementation: str | None,
        device_map: Any,
        quantization_config: Any,
        use_kernels: bool,
    ) -> tuple[dict[str, Any], str | None]:
        """`from_pretrained`'s keyword arguments, and where to move the model once loaded
        (None: `from_pretrained` places it, by `device_map`), all checked before loading.

        A `device_map` given is passed as is; else `device` decides (`_placement`). A quantized
        model cannot be moved once loaded, so it is always placed as it loads.
        """
        kwargs: dict[str, Any] = {
            "dtype": _torch_dtype(self.torch, dtype),
            "use_kernels": use_kernels,  # Hub kernels: see the module's docstring
        }
        if attn_implementation:
            kwargs["attn_implementation"] = attn_implementation
        if quantization_config is not None:
            kwargs["quantization_config"] = _quantization_config(quantization_config)
        if device_map is not None:
            kwargs["device_map"] = _device_map(self.torch, device_map, device)
            return kwargs, None
        target, place_on_load = _placement(self.torch, device)
        if place_on_load or quantization_config is not None:
            kwargs["device_map"] = target
            return kwargs, None
        return kwargs, target

    def _load(
        self,
        transformers: Any,
        kwargs: dict[str, Any],
        move_to: str | None,
        trust_remote_code: bool,
    ) -> tuple[Any, Any]:
        kwargs["trust_remote_code"] = trust_remote_code
        try:
            processor = transformers.AutoProcessor.from_pretrained(
                self.path, trust_remote_code=trust_remote_code
            )
            model = transformers.AutoModelForImageTextToText.from_pretrained(self.path, **kwargs)
        except Exception as exc:  # any failure to load is the user's path, id or checkpoint
            raise HFBackendError(_describe_load_error(self.path, exc)) from None
        if move_to is not None:
            model = model.to(move_to)
        if getattr(processor, "chat_template", None) is None:
            raise HFBackendError(
                f"hf model {self.path!r} has no chat template; add chat_template.jinja to it"
            )
        return processor, model.eval()

    @property
    def cache_name(self) -> str:
        """The path or id, the checkpoint found there (`checkpoint_identity`), and the dtype
        or quantization it was loaded with (none: the checkpoint's own, keyed as before)."""
        name = f"{self.name}#{self.identity}" if self.identity else self.name
        if self.weight_settings:
            name += "#" + dumps(self.weight_settings, sort_keys=True, separators=(",", ":"))
        return name

    def answer_inputs(self, request: ChatRequest) -> dict[str, Any]:
        """The run's seed when the answer is sampled (`_generate_kwargs` seeds the sampler
        with it unless the decoding names its own): answers of `--seed 1` are not those of
        `--seed 2`. Greedy answers do not depend on it: no key of theirs changes."""
        decoding = request.decoding
        sampled = decoding.temperature is None or decoding.temperature > 0
        if not sampled or "seed" in dict(decoding.extra):
            return {}
        return {"seed": self.seed}

    def request_settings(self) -> dict[str, Any]:
        """The dtype and quantization the model was loaded with, when not the checkpoint's
        own: another quantization is another model, which a run must not resume with."""
        return dict(self.weight_settings)

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Generate on the model's own thread, so the event loop keeps serving other episodes;
        calls that arrive together (unbatched callers) queue there, one batch at a time."""
        loop = asyncio.get_running_loop()
        completions: list[Completion | None] = [None] * len(requests)
        for indices in _batches(requests, self.max_batch):
            chunk = [requests[i] for i in indices]
            outputs = await loop.run_in_executor(self._worker, self._generate_batch, chunk)
            for i, completion in zip(indices, outputs, strict=True):
                completions[i] = completion
        return [c for c in completions if c is not None]

    def _generate_batch(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        started = time.perf_counter()
        inputs = self._encode(requests)
        decoding = requests[0].decoding
        with self.torch.inference_mode():
            output = self.model.generate(**inputs, **self._generate_kwargs(decoding))
        prompt_len = inputs["input_ids"].shape[1]
        new_tokens = output[:, prompt_len:]
        texts = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        latency = time.perf_counter() - started
        prompt_counts = inputs["attention_mask"].sum(dim=1).tolist()
        return [
            Completion(
                text=text,
                usage={
                    "prompt_tokens": int(prompt_counts[row]),
                    "completion_tokens": self._count_generated(new_tokens[row].tolist()),
                },
                latency_s=latency,
            )
            for row, text in enumerate(texts)
        ]

    def _encode(self, requests: Sequence[ChatRequest]) -> Any:
        """Prompts rendered by the processor's chat template, images attached, left-padded."""
        if self.images is None:
            raise ProactiveBenchError("the hf backend has no image store; call bind_images first")
        conversations, images = [], []
        for request in requests:
            conversation, request_images = to_hf_conversation(request.messages, self.images.image)
            conversations.append(conversation)
            images.append(request_images)
        prompts = self.processor.apply_chat_template(
            conversations, add_generation_prompt=True, tokenize=False
        )
        # As `apply_chat_template(tokenize=True)` does: a template that writes the BOS itself
        # must not get a second one from the tokenizer.
        bos = self.tokenizer.bos_token
        add_special = not (bos and prompts[0].startswith(bos))
        inputs = self.processor(
            text=prompts,
            images=images if any(images) else None,
            padding=True,
            add_special_tokens=add_special,
            return_tensors="pt",
        )
        return inputs.to(self.model.device, dtype=self.model.dtype)

    def _generate_kwargs(self, decoding: Decoding) -> dict[str, Any]:
        extra = dict(decoding.extra)
        seed = extra.pop("seed", self.seed)
        kwargs: dict[str, Any] = {"max_new_tokens": decoding.max_tokens}
        if decoding.temperature is None:
            # The checkpoint's own generation config decides (sampling or not), as the
            # reference's open-ended generation does.
            self.torch.manual_seed(int(seed))
        elif decoding.temperature > 0:
            self.torch.manual_seed(int(seed))
            kwargs.update(do_sample=True, temperature=decoding.temperature)
            if decoding.top_p is not None:
                kwargs["top_p"] = decoding.top_p
        else:
            # Greedy, whatever sampling defaults the checkpoint's generation config carries.
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if self.model.generation_config.pad_token_id is None:
            kwargs["pad_token_id"] = self.tokenizer.pad_token_id
        kwargs.update(extra)
        return kwargs

    def _count_generated(self, tokens: list[int]) -> int:
        """New tokens up to and including the first stop token; the padding after it is not."""
        stops = self.model.generation_config.eos_token_id
        stops = set(stops if isinstance(stops, list) else [stops]) - {None}
        stops.add(self.tokenizer.pad_token_id)
        for position, token in enumerate(tokens):
            if token in stops:
                return position + 1
        return len(tokens)


def _batches(requests: Sequence[ChatRequest], size: int) -> list[list[int]]:
    """Indices grouped by decoding settings (one `generate` call each), at most `size` each."""
    groups: dict[str, list[int]] = {}
    for i, request in enumerate(requests):
        groups.setdefault(repr(request.decoding), []).append(i)
    return [
        indices[start : start + size]
        for indices in groups.values()
        for start in range(0, len(indices), size)
    ]
