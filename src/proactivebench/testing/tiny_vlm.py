"""A tiny random LLaVA-style vision-language model, built in code and saved like a checkpoint.

`build_tiny_vlm(out_dir)` saves the model, its processor and its chat template with
`save_pretrained`; `hf:<out_dir>` then loads it as it loads a downloaded model (no network, no
torchvision), and `proactivebench train grpo --model <out_dir> --max-steps 1` runs a training
config end to end on a CPU. About 75 k parameters: generation takes milliseconds, importing
`transformers` takes most of the time. Its answers are random (untrained): a test of your code
checks that it runs and what it writes, not the scores.

From a shell: `python -m proactivebench.testing.tiny_vlm OUT_DIR [--seed N] [--tool-calls]`.
Needs the `hf` extra (torch, transformers; `--tool-calls` also the `train` extra's TRL),
imported only when a checkpoint is built, with one error naming the extra when missing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from proactivebench.core.errors import HFBackendError, ProactiveBenchError
from proactivebench.models.hf import EXTRA_HINT

#: Chat roles become special tokens, image parts `<image>`, text parts their text.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "<|{{ message['role'] }}|>"
    "{%- if message['content'] is string -%}{{ message['content'] }}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' -%}<image>"
    "{%- elif part['type'] == 'text' -%}{{ part['text'] }}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}<|end|>"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|assistant|>{%- endif -%}"
)
EOS = "<|endoftext|>"
SPECIALS = [EOS, "<|system|>", "<|user|>", "<|assistant|>", "<|end|>", "<image>"]
#: Placeholder tokens one image becomes: (28 / 14)² patches, CLS dropped ("default" strategy).
IMAGE_TOKENS = 4


def _require_hf() -> None:
    """Fail with one message naming the `hf` extra when torch, transformers or tokenizers is
    missing (they are imported only here, never when `proactivebench.testing` is)."""
    for module in ("torch", "transformers", "tokenizers"):
        try:
            __import__(module)
        except ImportError:
            raise HFBackendError(f"a tiny checkpoint needs {module}; {EXTRA_HINT}") from None


def byte_tokenizer(specials: list[str] = SPECIALS, named: dict[str, str] | None = None):
    """A byte-level BPE with no merges: every text round-trips, nothing is downloaded.

    `specials[0]` is the end-of-text (and padding) token. `named` are the model-specific special
    tokens some processors read off the tokenizer by name (`tokenizer.boi_token`, ...)."""
    _require_hf()
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {symbol: i for i, symbol in enumerate(sorted(alphabet))}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, extra_special_tokens=named)
    tokenizer.add_special_tokens({"eos_token": specials[0], "pad_token": specials[0]})
    tokenizer.add_special_tokens({"additional_special_tokens": specials[1:]})
    return tokenizer


#: Qwen-style chat tokens, for a tiny model that speaks a chat template with tool calling.
QWEN_SPECIALS = [
    "<|im_end|>",
    "<|im_start|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
]


def build_tiny_tool_vlm(out_dir: Path, seed: int = 0) -> Path:
    """The same tiny LLaVA with TRL's copy of the Qwen3-VL chat template, which TRL can parse
    tool calls from (its multi-turn mode needs one); `<|image_pad|>` is the image token."""
    try:
        from trl.chat_template_utils import qwen3_vl_chat_template
    except ImportError:
        raise HFBackendError(
            "a tiny model with tool calls needs TRL; install the extra: pip install -e '.[train]'"
        ) from None

    return build_tiny_vlm(
        out_dir,
        seed,
        chat_template=qwen3_vl_chat_template,
        specials=QWEN_SPECIALS,
        image_token="<|image_pad|>",
    )


def build_tiny_vlm(
    out_dir: Path,
    seed: int = 0,
    *,
    chat_template: str = CHAT_TEMPLATE,
    specials: list[str] = SPECIALS,
    image_token: str = "<image>",
) -> Path:
    """Save a random tiny LLaVA model and its processor to `out_dir` (returned); the same
    `seed` gives the same weights."""
    _require_hf()
    import torch
    from transformers import (
        CLIPImageProcessorPil,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    tokenizer = byte_tokenizer(specials)
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessorPil(
            size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28}
        ),
        tokenizer=tokenizer,
        chat_template=chat_template,
        image_token=image_token,
        patch_size=14,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
    )
    vision = CLIPVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=28,
        patch_size=14,
    )
    text = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=4096,
        # Wider than the default 0.02 so the top two logits rarely tie: greedy texts stay
        # stable under the tiny numeric differences between padded and unpadded batches.
        initializer_range=0.5,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_id=tokenizer.convert_tokens_to_ids(image_token),
        image_seq_length=IMAGE_TOKENS,
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
    return out_dir


def main(argv: list[str] | None = None) -> int:
    """`python -m proactivebench.testing.tiny_vlm OUT_DIR`: build the checkpoint, print its path."""
    parser = argparse.ArgumentParser(
        prog="python -m proactivebench.testing.tiny_vlm",
        description="Save a tiny random vision-language checkpoint for offline tests "
        "(hf:OUT_DIR, train grpo --model OUT_DIR).",
    )
    parser.add_argument("out_dir", type=Path, help="directory to write (created)")
    parser.add_argument("--seed", type=int, default=0, help="the weights' seed (default 0)")
    parser.add_argument(
        "--tool-calls",
        action="store_true",
        help="a Qwen-style chat template TRL parses tool calls from (train grpo --mode multi)",
    )
    args = parser.parse_args(argv)
    build = build_tiny_tool_vlm if args.tool_calls else build_tiny_vlm
    return print_built(lambda: build(args.out_dir, args.seed), args.out_dir)


def print_built(build: Callable[[], Path], out_dir: Path) -> int:
    """The end of a checkpoint command: the path built, printed; or one line saying what
    failed (a missing package, a folder that cannot be written) and exit status 2."""
    try:
        print(build())
    except ProactiveBenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot write {out_dir}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
