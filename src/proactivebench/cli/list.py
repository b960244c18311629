"""`proactivebench list`: what this installation knows, as tables or as JSON (`catalog`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from proactivebench.cli.fit import entry_blocks, fits, framed, wrapped, wrapped_cells
from proactivebench.cli.output import out
from proactivebench.core.texts import dumps

if TYPE_CHECKING:
    from proactivebench.jobs.catalog import Catalog


@click.command("list")
@click.option(
    "--data",
    "data_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="A data directory: also count each scenario's records there and how many the "
    "official test filter keeps.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object, for scripts.")
def list_command(data_dir: Path | None, as_json: bool) -> None:
    """List the scenarios, baselines, model spec kinds, the paper's experiments and the
    optional extras installed."""
    from proactivebench.jobs.catalog import catalog  # the suite and data layers: when listed only

    found = catalog(data_dir)
    if as_json:
        click.echo(dumps(found.to_json(), indent=2))
        return
    width = out.width
    narrowed = False
    for table in tables(found):
        shown = fitted(table, width)
        narrowed |= shown[0] is not table
        for renderable in shown:
            out.print(renderable)
    if narrowed:
        note = f"narrowed to {width} columns: `proactivebench list --json` gives every field"
        out.print(Text("\n".join(wrapped(note, width)), style="dim"))


def fitted(table: Table, width: int) -> list[RenderableType]:
    """A section as it fits `width`: the table as it is; else its cells wrapped between words
    (a spec or a module name is one word, never broken: whole for the eye and for
    copy-paste); else, where even that is too wide, a block of lines per entry."""
    if fits(out, table, width):
        return [table]
    narrower = wrapped_cells(out, table, width)
    if narrower is not None:
        return framed(out, table, width, [narrower])
    return framed(out, table, width, entry_blocks(out, table, width))


def tables(found: Catalog) -> list[Table]:
    """The catalog's sections, one rich table each (cells as `Text`: no markup is read)."""
    counted = found.data is not None
    scenarios = _table("scenarios", ["scenario", "data file stem", "in paper"])
    if counted:
        kept = "kept (official filter)"
        scenarios.add_column("records", justify="right")
        scenarios.add_column(kept, justify="right")
        scenarios.caption = _data_caption(found)
    for s in found.scenarios:
        row = [s.short, s.stem, "yes" if s.in_paper else "no"]
        if counted:
            row += ["-" if s.records is None else str(s.records)]
            row += ["-" if s.official is None else str(s.official)]
        _row(scenarios, row)
    baselines = _table("built-in baselines", ["spec", "plays"])
    for b in found.baselines:
        _row(baselines, [b["spec"], b["doc"]])
    kinds = _table("model spec kinds", ["kind", "spec", "what", "eval", "judge", "extra"])
    for k in found.model_kinds:
        yes_no = ["yes" if k["eval"] else "no", "yes" if k["judge"] else "no"]
        _row(kinds, [k["kind"], k["form"], k["doc"], *yes_no, k["extra"] or "-"])
    experiments = _table(
        "the paper's experiments (proactivebench paper)", ["id", "paper", "settings"]
    )
    for e in found.experiments:
        settings = " ".join(f"{k}={_value(v)}" for k, v in e.settings.items()) or "(defaults)"
        _row(experiments, [e.id, e.paper, settings])
    extras = _table("optional extras", ["extra", "installed", "missing modules"])
    for x in found.extras:
        _row(extras, [x.name, "yes" if x.installed else "no", ", ".join(x.missing) or "-"])
    return [scenarios, baselines, kinds, experiments, extras]


def _data_caption(found: Catalog) -> Text | None:
    """What the counts of a data directory need said: generated data (the filter is off), and
    each scenario file that holds no records (an empty file showed "0" unsaid)."""
    notes = (
        ["generated data: eval plays every record (the filter is off)"] if found.synthetic else []
    )
    notes += [f"{s.file} holds no records" for s in found.scenarios if s.records == 0]
    return Text("\n".join(notes)) if notes else None


def _table(title: str, columns: list[str]) -> Table:
    table = Table(title=Text(title), title_justify="left")
    for column in columns:
        table.add_column(column)
    return table


def _row(table: Table, cells: list[str]) -> None:
    table.add_row(*(Text(cell) for cell in cells))


def _value(value: object) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    return dumps(value) if isinstance(value, bool) else str(value)
