"""Test your own code against ProactiveBench offline: a fake model server and a tiny real model.

Two stand-ins, the way httpx ships `MockTransport` and Inspect ships `mockllm`:

- `proactivebench.testing.server` — `FakeOpenAI`, an OpenAI-compatible chat-completions server
  on 127.0.0.1. Its answers are scripted (`respond=`: a function of the request body; `answers=`:
  one answer per request fingerprint) or, by default, a deterministic hash of the request; it
  waits `latency` seconds, injects faults (HTTP 500/429/400, hangs, dropped connections,
  malformed JSON: `schedule=` for the first requests, `fault_rate=` after them) and records every
  request (`.requests`, `.chat_requests`) for assertions. Test an agent, a judge or any client
  that speaks the OpenAI API::

      from proactivebench import evaluate, EvalSettings
      from proactivebench.testing import FakeOpenAI

      with FakeOpenAI(respond=lambda body: "A") as server:
          # point `openai:<model>@<server.url>` (or your own client, or a judge) at it
          ...
          assert server.chat_requests[0].body["messages"]

  From a shell: `python -m proactivebench.testing.server --port 8011` serves until Ctrl-C.

- `proactivebench.testing.anthropic_server` — `FakeAnthropic`, the same server speaking
  Anthropic's Messages API (`POST /v1/messages`: the system prompt apart, base64 image blocks,
  `x-api-key`, its error shape and its 529 `overloaded_error`), for `anthropic:` runs and any
  client of that API; it refuses what the real API refuses (no `max_tokens`, a system role
  among the messages).

- `proactivebench.testing.tiny_vlm` — `build_tiny_vlm(out_dir)` saves a random LLaVA-style
  vision-language model of about 75 k parameters, its processor and chat template, so that
  `hf:<out_dir>` and `proactivebench train grpo --model <out_dir>` run the real code paths on a CPU
  in seconds (a training config is tried in one step before the GPU hours). `families` builds
  the same for every family `hf:` supports. From a shell:
  `python -m proactivebench.testing.tiny_vlm OUT_DIR`. Needs the `hf` extra (torch,
  transformers), imported only when a checkpoint is built: this package imports neither.

docs/testing.md ("Testing offline") has one recipe per path (`openai:`, `hf:`, `train grpo`,
Inspect's `openai-api` provider, verifiers).
"""

from __future__ import annotations

from typing import Any

#: Where each public name lives: loaded on first use, so that `python -m
#: proactivebench.testing.server` runs its module once and importing this package costs nothing.
_HOMES = {
    "ANTHROPIC_FAULTS": "anthropic_server",
    "FakeAnthropic": "anthropic_server",
    "FAULTS": "server",
    "FakeOpenAI": "server",
    "Raw": "server",
    "Recorded": "server",
    "ServerConfig": "server",
    "ServerProcess": "server",
    "closed_port_url": "server",
    "fingerprint": "server",
    "build_tiny_tool_vlm": "tiny_vlm",
    "build_tiny_vlm": "tiny_vlm",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
