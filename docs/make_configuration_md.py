"""Regenerate docs/configuration.md from the pydantic models of scheduler_sim.app.config (so it cannot drift).

    python docs/make_configuration_md.py            # rewrite docs/configuration.md
    python docs/make_configuration_md.py --check    # exit 1 if the committed file is out of date (used by tests)
"""

from __future__ import annotations

import sys
import typing
from pathlib import Path

from pydantic import BaseModel

from scheduler_sim.app.config import RunConfig

HEADER = [
    "# Run configuration reference", "",
    "A run is described by a TOML file (`hpctwin run CONFIG`) whose top-level keys and tables follow",
    "`scheduler_sim.app.config.RunConfig`. Every key is optional; the defaults are the main job (30 days of the embedded",
    "Theta 2022 trace from day 181, EASY backfill, the Theta-like plant, its site's Chicago TMY3 weather). Unknown keys and bad",
    "values are errors naming the file and the dotted key. Relative paths are relative to the configuration file.",
    "`experiments/theta_easy_30d.toml` is the main job written out. This page is generated from the models by",
    "`python docs/make_configuration_md.py`.", "",
    "## What-ifs: `--set KEY=VALUE`", "",
    "`hpctwin run` and `hpctwin sweep` take `--set KEY=VALUE` (repeatable, applied in order after the file and the other",
    "options) for any key of this page in dotted form (`--set scheduler.policy=fcfs`, `--set cooling.step_s=30`), for any",
    "key of the run's system description with the prefix `system.` (`--set system.node.cpu_idle_W=-10%`) and of its",
    "plant description with `plant.` (`--set plant.tower.n_cells=5`); `system.nodes` sets the machine's size in whole",
    "racks (`nodes_per_rack` = round(N / racks), `n_nodes` = racks x `nodes_per_rack`: `--set system.nodes=+20%` on Theta",
    "gives 24 racks x 220 = 5,280 nodes, 6 CDUs). Values are TOML values (`3`, `2.5`, `true`,",
    "`[1, 2]`), else text. Numbers can be relative to the value in force: `+20%`, `-10%`, `x1.5` (integers rounded to the",
    "nearest; `+5` alone is the number 5). A misspelt key is refused with the closest valid keys (\"did you mean\") and",
    "the valid keys of its section. Changed system and plant descriptions are validated like the shipped ones and written,",
    "content-addressed, to `<cache root>/derived/<name>+set-<sha256>.toml` (the header comment lists the overrides); the",
    "run's `system` / `cooling.plant` then name that file, and `overrides` records the `--set` texts. Sweep axes and",
    "`[[scenarios]]` take the same keys (`\"system.node.cpu_idle_W\" = [100.0, \"-20%\"]`). The resolver is",
    "`scheduler_sim.app.overrides.resolve_key`. Workload growth is two keys of `[trace]`: `arrival_rate_factor` (time",
    "compression of the submit times towards the window start) and `job_size_factor` (nodes x factor, stochastic rounding",
    "seeded by the run seed, capped at the pool); `scheduler.pool_nodes` (`--nodes N`) sets the schedulable pool.", "",
    "```", ".venv/bin/hpctwin run --days 1 --no-cooling --nodes 4360 --set trace.arrival_rate_factor=1.2",
    "...",
    "  note    facility stages left out by the system description (not counted in PUE): pdu",
    "  trace   ./experiments/data/theta_2022.swf.gz",
    "  machine trace 4360 nodes (SWF header MaxNodes) vs system 'theta' 4392 nodes: differs; pool 4360 nodes "
    "(scheduler.pool_nodes / --nodes), job sizes as in the trace (no scaling)",
    "  growth  arrival rate x 1.2: submit times from day 181 on compressed towards it, t' = t0 + (t - t0) / 1.2 "
    "(11296 jobs)",
    "...",
    ".venv/bin/hpctwin run --set scheduler.polcy=fcfs",
    "(stderr) hpctwin run: error: unknown configuration key 'scheduler.polcy'; did you mean 'scheduler.policy' or "
    "'scheduler.twin.pool' or 'scheduler.placement'? (valid keys under 'scheduler.': scheduler.policy, "
    "scheduler.backfill, ...)",
    "```", "",
    "The `machine` line compares the trace's machine (SWF header `MaxNodes`, else `MaxProcs` / cores per node; sacct:",
    "the distinct host names of `NodeList`) with the system. With `--nodes N` the batch jobs run on the N lowest-numbered",
    "batch nodes; the other nodes exist, idle at idle power (counted in IT energy as idle), never allocated; jobs larger",
    "than N are rejected at load (`larger_than_machine`, with the line) and no EASY reservation waits for nodes outside",
    "the pool (a downtime would leave such jobs queued for ever, holding the reservation). `utilisation` stays relative",
    "to the whole system.", ""]


def _policies() -> list[str]:
    from scheduler_sim.policies.registry import ORDERS, SHORTHANDS

    return ["replay", "twin", *ORDERS, *SHORTHANDS]


def _backfills() -> list[str]:
    from scheduler_sim.policies.registry import BACKFILLS

    return ["", *BACKFILLS]


#: Options that are plain strings in the model but take a fixed set of names (listed in the table).
_ALLOWED = {"scheduler.policy": _policies, "scheduler.backfill": _backfills}


def _type_text(ann) -> str:
    """A readable type for the table: ``one of `a`, `b` `` for Literal, ``list of float``, ``float or absent``; never
    a bare ``|`` (it would split a Markdown table cell)."""
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin in (list, tuple):
        return "list of " + (_type_text(args[0]) if args else "values")
    if origin is dict:
        return f"table of {_type_text(args[1])}" if len(args) == 2 else "table"
    if args and type(None) in args:  # Optional / X | None
        rest = [a for a in args if a is not type(None)]
        return " or ".join(_type_text(a) for a in rest) + " or absent"
    if args:  # other unions
        return " or ".join(_type_text(a) for a in args)
    return getattr(ann, "__name__", str(ann)).replace("typing.", "")


def _is_model(t) -> bool:
    return isinstance(t, type) and issubclass(t, BaseModel)


def _rows(model, prefix):
    rows, subs = [], []
    for name, f in model.model_fields.items():
        ann, key = f.annotation, f"{prefix}{name}"
        args = typing.get_args(ann)
        if _is_model(ann):
            subs.append((key, ann, False))
            continue
        if typing.get_origin(ann) is list and args and _is_model(args[0]):
            subs.append((key, args[0], True))
            rows.append((key, "array of tables", "[]", f.description or ""))
            continue
        if args and any(_is_model(a) for a in args):
            sub = next(a for a in args if _is_model(a))
            subs.append((key, sub, False))
            plain = [a for a in args if not _is_model(a) and a is not type(None)]
            if plain:  # a value or a table (e.g. router = "name" or [serving.router])
                d = f'"{f.default}"' if isinstance(f.default, str) else repr(f.default)
                rows.append((key, " or ".join(_type_text(a) for a in plain) + " or a table", d,
                             (f.description or "").replace("|", "/")))
            else:
                rows.append((key, "table (optional)", "absent",
                             f.description or sub.__doc__.strip().split("\n")[0]))
            continue
        default = f.default if f.default_factory is None else f.default_factory()
        if str(default) == "PydanticUndefined":
            default = "(required)"
        t = _type_text(ann)
        allowed = _ALLOWED.get(key)
        if allowed:
            t += " (one of " + ", ".join(f"`{v}`" if v else "`\"\"`" for v in allowed()) + ")"
        d = f'"{default}"' if isinstance(default, str) and default != "(required)" else repr(default)
        rows.append((key, t, d, (f.description or "").replace("|", "/")))
    return rows, subs


def _emit(title, model, prefix):
    rows, subs = _rows(model, prefix)
    out = [f"## {title}", "", (model.__doc__ or "").strip().split("\n")[0], "",
           "| key | type | default | meaning |", "|---|---|---|---|"]
    out += [f"| `{k}` | {t} | `{d}` | {m} |" for k, t, d, m in rows]
    out.append("")
    for key, sub, is_list in subs:
        out += _emit(f"[{'[' if is_list else ''}{key}{']' if is_list else ''}]", sub, key + ".")
    return out


def render() -> str:
    """The Markdown text of docs/configuration.md."""
    return "\n".join(HEADER + _emit("top level", RunConfig, "")) + "\n"


if __name__ == "__main__":
    path = Path(__file__).with_name("configuration.md")
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if path.read_text() == text else 1)
    path.write_text(text)
    print(f"wrote {path}")
