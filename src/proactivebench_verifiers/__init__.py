"""The verifiers entry point of ProactiveBench: `vf-eval proactivebench-verifiers`.

verifiers loads an environment by importing a top-level module named after its id and taking
the `Taskset` (and `Env`) its `__all__` exports; the code lives in
`proactivebench.adapters.verifiers_env`.
"""

from proactivebench.adapters.verifiers_env import ProactiveEnv, ProactiveTaskset

__all__ = ["ProactiveEnv", "ProactiveTaskset"]
