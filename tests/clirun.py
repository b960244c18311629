"""Running the CLI in-process, as a user would from the shell (exit code and all output)."""

from __future__ import annotations

from pathlib import Path

import pytest

from proactivebench.cli import main


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Exit code and stdout + stderr of `proactivebench ARGS`."""
    with pytest.raises(SystemExit) as exit_info:
        main(args)
        raise SystemExit(0)
    captured = capsys.readouterr()
    return int(exit_info.value.code or 0), captured.out + captured.err


def eval_args(data: Path, out: Path, *extra: str) -> list[str]:
    """`eval` of the oracle on `data` into `out`, plus extra flags."""
    return ["eval", "--data", str(data), "--model", "baseline:oracle", "--out", str(out), *extra]
