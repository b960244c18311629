"""Tiny random checkpoints of the families that `hf:` supports, built with their REAL classes.

Each builder makes the family's own `*ForConditionalGeneration` model and `*Processor` (image
processor, video processor where the family has one, and our byte tokenizer from `tiny_vlm`)
from configs, gives the processor a chat template written here in the family's prompt format,
and saves both with `save_pretrained`: loading the directory through `hf:<dir>` is the same code
path as a downloaded checkpoint. The models are tiny (hidden size 32, one or two layers, images
of 28 to 56 pixels), so generation takes milliseconds; importing `transformers` dominates.

The processors of Qwen2.5-VL, LLaVA-OneVision, InternVL3 and SmolVLM include a video processor,
which needs torchvision, and the image processors built here (all but LLaVA-1.5's) are the
torchvision ones that checkpoints name; SmolVLM's processor also imports num2words. Both come
with the `hf` extra (`Family.needs`: a family whose packages are missing is skipped).

From a shell, `python -m proactivebench.testing.families FAMILY OUT_DIR` builds one family's
checkpoint and prints its path, as `python -m proactivebench.testing.tiny_vlm OUT_DIR` does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proactivebench.core.errors import HFBackendError
from proactivebench.models.hf import EXTRA_HINT
from proactivebench.testing.tiny_vlm import (
    _require_hf,
    build_tiny_vlm,
    byte_tokenizer,
    print_built,
)


def _chatml(image: str) -> str:
    """A ChatML template (`<|im_start|>role ... <|im_end|>`) that writes `image` for each image."""
    return (
        "{% for message in messages %}"
        "<|im_start|>{{ message['role'] }}\n"
        "{% for part in message['content'] %}"
        "{% if part['type'] == 'image' %}" + image + "{% else %}{{ part['text'] }}{% endif %}"
        "{% endfor %}<|im_end|>\n"
        "{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )


#: Idefics3 / SmolVLM: `User:` and `Assistant:` turns ending in `<end_of_utterance>`.
IDEFICS3_TEMPLATE = (
    "<|begin_of_text|>{% for message in messages %}"
    "{{ message['role'] | capitalize }}:"
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>{% else %}{{ part['text'] }}{% endif %}"
    "{% endfor %}<end_of_utterance>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}Assistant:{% endif %}"
)

#: Gemma 3: `<start_of_turn>user|model`; the system prompt opens the first user turn.
GEMMA3_TEMPLATE = (
    "{{ bos_token }}{% set ns = namespace(system='') %}"
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}"
    "{% set ns.system = message['content'][0]['text'] + '\n\n' %}"
    "{% else %}"
    "<start_of_turn>{{ 'model' if message['role'] == 'assistant' else 'user' }}\n"
    "{% if message['role'] == 'user' %}{{ ns.system }}{% set ns.system = '' %}{% endif %}"
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<start_of_image>{% else %}{{ part['text'] }}{% endif %}"
    "{% endfor %}<end_of_turn>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)

CHATML = ["<|im_end|>", "<|im_start|>"]


def _text(tokenizer: Any, **overrides: Any) -> dict[str, Any]:
    """The tiny language model's config (as a dict: each family has its own text config class).

    A wide `initializer_range` keeps the top two logits apart, so greedy texts stay the same
    under the tiny numeric differences between padded and unpadded batches."""
    return {
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "max_position_embeddings": 4096,
        "initializer_range": 0.5,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": None,
        **overrides,
    }


def _vision(**overrides: Any) -> dict[str, Any]:
    """The tiny vision tower's config: two layers of width 32, 28-pixel images of 14-pixel
    patches unless a family says otherwise."""
    return {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "image_size": 28,
        "patch_size": 14,
        **overrides,
    }


def _save(model_class: Any, config: Any, processor: Any, out_dir: Path, seed: int) -> Path:
    import torch

    torch.manual_seed(seed)
    model = model_class(config).eval()
    tokenizer = processor.tokenizer
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = None
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
    return out_dir


def build_qwen2_5_vl(out_dir: Path, seed: int = 0) -> Path:
    """Qwen2.5-VL: dynamic resolution, each image resized to about 56x56 pixels (16 patches of
    14, 4 tokens after the 2x2 merge; more or fewer with the aspect ratio)."""
    import transformers

    specials = [*CHATML, "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
    tokenizer = byte_tokenizer(specials)
    pixels = {"shortest_edge": 56 * 56, "longest_edge": 56 * 56}
    processor = transformers.Qwen2_5_VLProcessor(
        image_processor=transformers.Qwen2VLImageProcessor(size=pixels),
        video_processor=transformers.Qwen2VLVideoProcessor(size=pixels),
        tokenizer=tokenizer,
        chat_template=_chatml("<|vision_start|><|image_pad|><|vision_end|>"),
    )
    ids = tokenizer.convert_tokens_to_ids
    config = transformers.Qwen2_5_VLConfig(
        text_config=_text(
            tokenizer, rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3]}
        ),
        vision_config={
            "depth": 2,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "out_hidden_size": 32,
            "window_size": 56,
            "fullatt_block_indexes": [1],
        },
        image_token_id=ids("<|image_pad|>"),
        video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"),
        vision_end_token_id=ids("<|vision_end|>"),
    )
    return _save(transformers.Qwen2_5_VLForConditionalGeneration, config, processor, out_dir, seed)


def build_llava_onevision(out_dir: Path, seed: int = 0) -> Path:
    """LLaVA-OneVision: a SigLIP tower of 28-pixel tiles, any-resolution grids up to 2x2."""
    import transformers

    tokenizer = byte_tokenizer([*CHATML, "<image>", "<video>"])
    pinpoints = [[28, 28], [28, 56], [56, 28], [56, 56]]
    size = {"height": 28, "width": 28}
    processor = transformers.LlavaOnevisionProcessor(
        image_processor=transformers.LlavaOnevisionImageProcessor(
            size=size, image_grid_pinpoints=pinpoints
        ),
        video_processor=transformers.LlavaOnevisionVideoProcessor(size=size),
        tokenizer=tokenizer,
        chat_template=_chatml("<image>\n"),
        num_image_tokens=4,
        vision_feature_select_strategy="full",
    )
    ids = tokenizer.convert_tokens_to_ids
    config = transformers.LlavaOnevisionConfig(
        text_config={"model_type": "qwen2", **_text(tokenizer)},
        vision_config=_vision(model_type="siglip_vision_model"),
        image_token_index=ids("<image>"),
        video_token_index=ids("<video>"),
        image_grid_pinpoints=pinpoints,
        vision_feature_select_strategy="full",
    )
    return _save(
        transformers.LlavaOnevisionForConditionalGeneration, config, processor, out_dir, seed
    )


def build_internvl3(out_dir: Path, seed: int = 0) -> Path:
    """InternVL3 (-hf): one 28-pixel tile per image (no crops), 1 token after pixel shuffle."""
    import transformers

    named = {
        "start_image_token": "<img>",
        "end_image_token": "</img>",
        "context_image_token": "<IMG_CONTEXT>",
        "video_token": "<video>",
    }
    tokenizer = byte_tokenizer([*CHATML, *named.values()], named)
    size = {"height": 28, "width": 28}
    processor = transformers.InternVLProcessor(
        image_processor=transformers.GotOcr2ImageProcessor(
            size=size, crop_to_patches=False, max_patches=1
        ),
        video_processor=transformers.InternVLVideoProcessor(size=size),
        tokenizer=tokenizer,
        chat_template=_chatml("<IMG_CONTEXT>\n"),
        image_seq_length=1,
    )
    config = transformers.InternVLConfig(
        text_config={"model_type": "qwen2", **_text(tokenizer)},
        vision_config=_vision(image_size=[28, 28], patch_size=[14, 14]),
        image_token_id=tokenizer.convert_tokens_to_ids("<IMG_CONTEXT>"),
        image_seq_length=1,
    )
    return _save(transformers.InternVLForConditionalGeneration, config, processor, out_dir, seed)


def build_smolvlm(out_dir: Path, seed: int = 0) -> Path:
    """SmolVLM (Idefics3's architecture): 32-pixel images of 4 patches, 1 token after the
    pixel shuffle; no splitting into tiles. Its processor also needs num2words."""
    import transformers

    specials = ["<end_of_utterance>", "<|begin_of_text|>", "<fake_token_around_image>"]
    tokenizer = byte_tokenizer([*specials, "<global-img>", "<image>", "<video>"])
    size = {"longest_edge": 32}
    image_options = {"size": size, "max_image_size": size, "do_image_splitting": False}
    processor = transformers.SmolVLMProcessor(
        image_processor=transformers.SmolVLMImageProcessor(**image_options),
        video_processor=transformers.SmolVLMVideoProcessor(size=size, max_image_size=size),
        tokenizer=tokenizer,
        chat_template=IDEFICS3_TEMPLATE,
        image_seq_len=1,
    )
    config = transformers.SmolVLMConfig(
        text_config={"model_type": "llama", **_text(tokenizer)},
        vision_config=_vision(image_size=32, patch_size=16),
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        scale_factor=2,
    )
    return _save(transformers.SmolVLMForConditionalGeneration, config, processor, out_dir, seed)


def build_gemma3(out_dir: Path, seed: int = 0) -> Path:
    """Gemma 3: a SigLIP tower of 28-pixel images, pooled to 1 token; the template writes BOS."""
    import transformers

    named = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>"}
    named["image_token"] = "<image_soft_token>"
    turns = ["<end_of_turn>", "<bos>", "<start_of_turn>"]
    tokenizer = byte_tokenizer([*turns, *named.values()], named)
    # As Gemma's own tokenizer does, it adds BOS too: the backend must not send two.
    tokenizer.bos_token = "<bos>"
    tokenizer.add_bos_token = True
    tokenizer.update_post_processor()
    processor = transformers.Gemma3Processor(
        image_processor=transformers.Gemma3ImageProcessor(size={"height": 28, "width": 28}),
        tokenizer=tokenizer,
        chat_template=GEMMA3_TEMPLATE,
        image_seq_length=1,
    )
    ids = tokenizer.convert_tokens_to_ids
    text = _text(tokenizer, head_dim=16, query_pre_attn_scalar=16, sliding_window=64)
    config = transformers.Gemma3Config(
        text_config=text,
        vision_config=_vision(),
        mm_tokens_per_image=1,
        boi_token_index=ids("<start_of_image>"),
        eoi_token_index=ids("<end_of_image>"),
        image_token_index=ids("<image_soft_token>"),
    )
    return _save(transformers.Gemma3ForConditionalGeneration, config, processor, out_dir, seed)


@dataclass(frozen=True)
class Family:
    """A family's tiny checkpoint builder, the token its processor repeats for an image, and
    the packages (besides torch and transformers) its processor imports."""

    #: `build(out_dir, seed=0)`: the checkpoint written to `out_dir`.
    build: Callable[..., Path]
    image_token: str
    needs: tuple[str, ...] = ("torchvision",)


FAMILIES: dict[str, Family] = {
    "llava-1.5": Family(build_tiny_vlm, "<image>", needs=()),
    "qwen2.5-vl": Family(build_qwen2_5_vl, "<|image_pad|>"),
    "llava-onevision": Family(build_llava_onevision, "<image>"),
    "internvl3": Family(build_internvl3, "<IMG_CONTEXT>"),
    "smolvlm": Family(build_smolvlm, "<image>", needs=("torchvision", "num2words")),
    "gemma3": Family(build_gemma3, "<image_soft_token>"),
}


def _require(name: str, family: Family) -> None:
    """One message naming the `hf` extra when a package the family's processor imports is
    missing, before anything is written."""
    _require_hf()
    for module in family.needs:
        try:
            __import__(module)
        except ImportError:
            raise HFBackendError(f"{name} needs {module}; {EXTRA_HINT}") from None


def main(argv: list[str] | None = None) -> int:
    """`python -m proactivebench.testing.families FAMILY OUT_DIR`: build the family's tiny
    checkpoint, print its path (`tiny_vlm`'s command, for each family of `hf:`)."""
    parser = argparse.ArgumentParser(
        prog="python -m proactivebench.testing.families",
        description="Save a tiny random checkpoint of one model family, built with its own "
        "transformers classes, for offline tests (hf:OUT_DIR).",
    )
    parser.add_argument("family", help=f"the model family: {', '.join(FAMILIES)}")
    parser.add_argument("out_dir", type=Path, help="directory to write (created)")
    parser.add_argument("--seed", type=int, default=0, help="the weights' seed (default 0)")
    args = parser.parse_args(argv)
    family = FAMILIES.get(args.family.lower())
    if family is None:
        known = ", ".join(FAMILIES)
        print(f"error: unknown family {args.family!r}; known: {known}", file=sys.stderr)
        return 2

    def build() -> Path:
        _require(args.family.lower(), family)
        return family.build(args.out_dir, args.seed)

    return print_built(build, args.out_dir)


if __name__ == "__main__":
    sys.exit(main())
