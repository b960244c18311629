"""Does `pip install -e '.[hf]'` into a fresh venv give everything a Qwen2.5-VL checkpoint needs?

The check the issue's acceptance asks for, from scratch on this machine: a new virtual
environment in a temporary directory, this checkout installed into it with the `hf` extra only
(no test or train extras), then, with that venv's Python, the tiny random Qwen2.5-VL checkpoint
of `testing.families` (its real model, processor and video processor: torchvision) is built
and evaluated through `hf:` by the installed `proactivebench` command on a small synthetic data
set. Prints the install time, the venv's size, the versions pip chose and the run's summary;
exits non-zero when any step fails. The venv is deleted afterwards (`--keep` keeps it).

Needs the package indexes that `pip` uses (PyPI, and on the development machines the torch
and torchvision wheels on local disk, which `/etc/xdg/pip` caps torch at); several minutes and
about 6 GB under the temporary directory (torch 2.14.1 is a CUDA build).

    python benchmarks/fresh_hf_install.py [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Run by the fresh venv's Python: the tiny checkpoint, saved where argv[1] says.
BUILD = """
import sys
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from proactivebench.testing.families import FAMILIES
FAMILIES["qwen2.5-vl"].build(Path(sys.argv[1]))
"""
#: Printed by the fresh venv's Python: what pip installed.
VERSIONS = """
import importlib.metadata as m
for name in ("torch", "torchvision", "transformers", "num2words", "proactivebench"):
    print(f"{name} {m.version(name)}")
"""


def run(command: list[str], env: dict[str, str]) -> float:
    """Seconds that `command` took; its output goes to ours. A failure ends the check."""
    print("$", " ".join(command), flush=True)
    started = time.perf_counter()
    subprocess.run(command, check=True, env=env)
    return time.perf_counter() - started


def size_mb(directory: Path) -> float:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the venv (its path is printed)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fresh-hf-"))
    venv, bin_dir = work / "venv", work / "venv" / "bin"
    # Nothing of this environment's packages may leak in, and nothing may reach the Hub.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HF_HUB_OFFLINE="1", PROACTIVEBENCH_CACHE=str(work / "cache"))
    # The editable install writes its metadata into the checkout: it goes with the venv, as
    # a second copy beside another install's would confuse entry-point lookups there.
    egg_info = ROOT / "src" / "proactivebench.egg-info"
    had_egg_info = egg_info.exists()
    try:
        created = run([sys.executable, "-m", "venv", str(venv)], env)
        installed = run([str(bin_dir / "pip"), "install", "-q", "-e", f"{ROOT}[hf]"], env)
        versions = subprocess.run(
            [str(bin_dir / "python"), "-c", VERSIONS],
            check=True,
            env=env,
            capture_output=True,
            text=True,
        ).stdout
        venv_mb = size_mb(venv)
        checkpoint, data, out = work / "qwen2.5-vl", work / "data", work / "run"
        built = run(
            [str(bin_dir / "python"), "-c", BUILD, str(checkpoint), str(ROOT / "tests")], env
        )
        cli = str(bin_dir / "proactivebench")
        run([cli, "data", "synth", "--out", str(data), "--per-scenario", "2"], env)
        evaluated = run(
            [
                cli,
                "eval",
                "--data",
                str(data),
                "--model",
                f"hf:{checkpoint}",
                "--out",
                str(out),
                "--model-option",
                "device=cpu",
                "--max-tokens",
                "4",
            ],
            env,
        )
        lines = (out / "results.jsonl").read_text().splitlines()
        errors = [line for line in lines if "error" in json.loads(line)]
        print(f"\nvenv created in {created:.1f} s; `pip install -e '.[hf]'` took {installed:.1f} s")
        print(f"venv size: {venv_mb:,.0f} MB; installed:\n{versions.rstrip()}")
        print(f"tiny Qwen2.5-VL built in {built:.1f} s (import included)")
        print(f"eval through hf: {len(lines)} episodes, {len(errors)} errors, {evaluated:.1f} s")
        if errors or not lines:
            sys.exit(f"the fresh venv's run ended in errors: {errors[:1]}")
    finally:
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
            if not had_egg_info:
                shutil.rmtree(egg_info, ignore_errors=True)


if __name__ == "__main__":
    main()
