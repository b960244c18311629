"""A tiny random LLaVA-style vision-language model, built in code and saved like a checkpoint.

The HF backend must load real checkpoints by path, so the tests save this model, its processor
and its chat template with `save_pretrained` and load them back through `hf:<dir>` — the same
code path as a downloaded model, with no network and no torchvision. About 75 k parameters:
generation on CPU takes milliseconds, importing `transformers` takes most of the time.
"""

from __future__ import annotations

from pathlib import Path

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


def byte_tokenizer(specials: list[str] = SPECIALS, named: dict[str, str] | None = None):
    """A byte-level BPE with no merges: every text round-trips, nothing is downloaded.

    `specials[0]` is the end-of-text (and padding) token. `named` are the model-specific special
    tokens some processors read off the tokenizer by name (`tokenizer.boi_token`, ...)."""
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
    from trl.chat_template_utils import qwen3_vl_chat_template

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
    """Save a random tiny LLaVA model and its processor to `out_dir` (returned)."""
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
