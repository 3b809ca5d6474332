"""Generate docs/output_schema.md from the schema table (:mod:`scheduler_sim.io.schema`) and its prose template.

The template, docs/output_schema.in.md, is Markdown with placeholder lines ``{{table KIND PREFIX ...}}``; each
becomes a table of the entries of file kind ``KIND`` under the prefixes (``/jobs``: the entry ``/jobs``, its
attributes and everything below it; ``=/timeseries``: the entry and its attributes only; ``/``: the whole table of
that kind; ``/@``: root attributes). Every entry of every table must appear in exactly one placeholder, so the
document cannot leave an entry out.

Usage::

    python -m scheduler_sim.io.schema_doc            # write docs/output_schema.md
    python -m scheduler_sim.io.schema_doc --check    # exit 1 when docs/output_schema.md is stale
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from .schema import DTYPES, SUMMARY_METRICS, TABLES, Entry

__all__ = ["render", "main", "TEMPLATE", "OUTPUT"]

_DOCS = Path(__file__).resolve().parents[2] / "docs"
#: The prose template.
TEMPLATE = _DOCS / "output_schema.in.md"
#: The generated document.
OUTPUT = _DOCS / "output_schema.md"
_PLACEHOLDER = re.compile(r"^\{\{table (\S+) (.+)\}\}$")


def _claims(prefix: str, e: Entry) -> bool:
    if prefix == "/":
        return True
    if prefix.endswith("@"):
        return e.path.startswith(prefix)
    if prefix.startswith("="):
        p = prefix[1:]
        return e.path == p or e.path.startswith(p + "@")
    return e.path == prefix or e.path.startswith(prefix + "/") or e.path.startswith(prefix + "@")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(e: Entry) -> str:
    shape = "" if e.shape is None else ("scalar" if e.shape == () else "(" + ", ".join(map(str, e.shape)) + ")")
    unit = "(writer)" if e.unit is None and e.kind == "dataset" else ("" if e.unit is None else f"`{e.unit}`")
    if e.kind == "dataset" and not e.has_units:
        unit = "(none)"
    kind = {"attribute": "attr", "dataset": "dataset", "group": "group", "link": "link"}[e.kind]
    dtype = "" if e.dtype in ("group", "link") else e.dtype
    desc = _cell(e.description) + (" *" if e.long_name else "")
    return (f"| `{_cell(e.path)}` | {kind} | {dtype} | {shape} | {unit} | {'yes' if e.required else ''} | "
            f"{e.since} | {desc} |")


def _metric_rows() -> list[str]:
    """Markdown rows of :data:`scheduler_sim.io.schema.SUMMARY_METRICS` (key, SI unit, kind, shown unit, meaning)."""
    rows = ["| key | SI unit | kind | shown as | name: definition |", "|---|---|---|---|---|"]
    for m in SUMMARY_METRICS:
        shown = "s / min / h / days (by magnitude)" if m.shown is None else (f"`{m.shown}`" if m.shown else "-")
        rows.append(f"| `{_cell(m.key)}` | `{m.unit}` | {m.kind} | {shown} | {_cell(m.label)}: "
                    f"{_cell(m.definition)} |")
    return rows


def render(template: str | None = None) -> str:
    """The generated document: the template with every placeholder replaced by its table.

    Parameters
    ----------
    template : str | None
        Template text; None reads :data:`TEMPLATE`.

    Returns
    -------
    str
        The Markdown document.

    Raises
    ------
    ValueError
        If a placeholder names an unknown kind or claims no entry, or an entry is in no placeholder or in two.
    """
    text = TEMPLATE.read_text(encoding="utf-8") if template is None else template
    placed: dict[tuple[str, str], int] = {}
    out = []
    for line in text.splitlines():
        if line.strip() == "{{summary-metrics}}":  # the one unit table of the headline metrics
            out += _metric_rows()
            continue
        m = _PLACEHOLDER.match(line.strip())
        if not m:
            out.append(line)
            continue
        kind, prefixes = m.group(1), m.group(2).split()
        if kind not in TABLES:
            raise ValueError(f"{TEMPLATE.name}: placeholder names unknown kind {kind!r}")
        rows = [e for e in TABLES[kind] if any(_claims(p, e) for p in prefixes)
                and (kind, e.path) not in placed]
        if not rows:
            raise ValueError(f"{TEMPLATE.name}: placeholder {line.strip()} claims no entry")
        for e in rows:
            placed[(kind, e.path)] = 1
        out += ["| path | kind | dtype | shape | units | required | since | description |",
                "|---|---|---|---|---|---|---|---|", *(_row(e) for e in rows)]
    missing = [f"{k}:{e.path}" for k, t in TABLES.items() for e in t if (k, e.path) not in placed]
    if missing:
        raise ValueError(f"{TEMPLATE.name}: entries in no placeholder: {', '.join(missing)}")
    classes = "; ".join(f"`{k}`: {v[1]}" for k, v in DTYPES.items() if v[0] is not None)
    out += ["", f"dtype classes: {classes}.", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Write (or, with ``--check``, compare) docs/output_schema.md; returns the exit status.

    Parameters
    ----------
    argv : list[str] | None
        Command-line arguments (``--check``).

    Returns
    -------
    int
        0 written or up to date; 1 stale (``--check``).
    """
    ap = argparse.ArgumentParser(prog="python -m scheduler_sim.io.schema_doc", description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/output_schema.md is stale")
    a = ap.parse_args(argv)
    text = render()
    if a.check:
        if not OUTPUT.is_file() or OUTPUT.read_text(encoding="utf-8") != text:
            print(f"{OUTPUT} is stale: run `python -m scheduler_sim.io.schema_doc`", file=sys.stderr)
            return 1
        return 0
    from jobs.cachedirs import atomic_write_text

    atomic_write_text(OUTPUT, text, what="schema page")
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
