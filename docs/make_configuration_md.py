"""Regenerate docs/configuration.md from the pydantic models of scheduler_sim.config (so it cannot drift).

    python docs/make_configuration_md.py            # rewrite docs/configuration.md
    python docs/make_configuration_md.py --check    # exit 1 if the committed file is out of date (used by tests)
"""

from __future__ import annotations

import sys
import typing
from pathlib import Path

from pydantic import BaseModel

from scheduler_sim.config import RunConfig

HEADER = [
    "# Run configuration reference", "",
    "A run is described by a TOML file (`hpctwin run CONFIG`) whose top-level keys and tables follow",
    "`scheduler_sim.config.RunConfig`. Every key is optional; the defaults are the main job (30 days of the embedded",
    "Theta 2022 trace from day 181, EASY backfill, the Theta-like plant, its site's Chicago TMY3 weather). Unknown keys and bad",
    "values are errors naming the file and the dotted key. Relative paths are relative to the configuration file.",
    "`experiments/theta_easy_30d.toml` is the main job written out. This page is generated from the models by",
    "`python docs/make_configuration_md.py`.", ""]


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
