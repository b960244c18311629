"""Teaching proactiveness: GRPO post-training with TRL, rewarded by our own environments.

`examples` turns episodes (our generator's train split, any directory in the official layout)
and the official train split into one single-turn format; `rewards` scores completions with
the benchmark's answer reader; `multiturn` lets the episode state machine answer a model that
asks; `grpo` configures and runs TRL's `GRPOTrainer`; `compare` reads two eval runs.

Only `grpo` and `multiturn` need the `[train]` extra (TRL, PEFT, datasets); building examples
and computing rewards work with the core package and `datasets`.
"""
