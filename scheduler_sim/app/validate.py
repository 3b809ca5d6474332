"""``hpctwin validate``: the load report of a trace, or the schema check of an hpctwin output file.

Kept apart from :mod:`scheduler_sim.app.commands` so that checking an output file imports only h5py and the schema
table (no pandas, no plant, no kernel): ``hpctwin validate FILE.h5`` starts in well under a second (issue #16 item
6, ``benchmarks/bench_startup.py``). A trace needs its loader (pandas), imported only then.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["cmd_validate"]


def _parse_map(items: list[str] | None, flag: str = "--map") -> dict[str, str]:
    """``["arrival=t_ms", ...]`` -> ``{"arrival": "t_ms"}``; a malformed item is an error naming the flag."""
    out: dict[str, str] = {}
    for it in items or []:
        key, sep, col = it.partition("=")
        if not sep or not key.strip() or not col.strip():
            raise ValueError(f"{flag} {it!r}: expected KEY=COLUMN, e.g. arrival=t_ms")
        out[key.strip()] = col.strip()
    return out


def cmd_validate(a: argparse.Namespace) -> int:
    """``hpctwin validate``: load report of a trace; 0 clean, 1 repaired or rejected records, 2 unusable.

    An HDF5 file (an hpctwin output) is checked against the output schema table instead
    (:func:`scheduler_sim.io.schema.validate_file`): 0 conforms, 1 problems (one line each), 2 unreadable.
    """
    import h5py

    if Path(a.trace).is_file() and h5py.is_hdf5(a.trace):
        return _validate_output(a.trace, allow_unverified=getattr(a, "no_verify", False))
    from dataloaders.registry import guess_format, load_trace
    from dataloaders.report import TraceError
    from dataloaders.swf import read_swf_header, swf_cores_per_node

    opts: dict = {"max_nodes": a.max_nodes, "strict": a.strict}
    if a.cores_per_node is not None:
        opts["cores_per_node"] = a.cores_per_node
    else:  # no system here: an SWF header's MaxProcs / MaxNodes, else 1 (dataloaders.swf.swf_cores_per_node)
        try:
            if (a.format or guess_format(a.trace)) == "swf":
                cpn = swf_cores_per_node(read_swf_header(a.trace), 1, 1)[0]
                if cpn != 1:
                    opts["cores_per_node"] = cpn
        except (OSError, ValueError):
            pass  # the load below reports the file's problem
    if a.timezone:
        opts["timezone"] = a.timezone
    opts.update(_parse_map(a.map))
    try:
        res = load_trace(a.trace, format=a.format, cache=a.cache, **opts)
    except TraceError as exc:
        print(f"hpctwin validate: {a.trace}: {'rejected in strict mode' if a.strict else 'cannot be used'}: {exc}",
              file=sys.stderr)
        return 2
    except (OSError, ValueError, TypeError, KeyError, IndexError, MemoryError) as exc:
        print(f"hpctwin validate: {a.trace}: cannot be used: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - the command promises no traceback; say it is a loader bug
        print(f"hpctwin validate: {a.trace}: cannot be used (loader error, please report): "
              f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(res.report.summary())
    if a.json:
        print(json.dumps(res.report.to_dict(), default=str))
    return 0 if (res.report.repaired == 0 and res.report.rejected == 0) else 1


def _validate_output(path: str, allow_unverified: bool = False) -> int:
    """Check an hpctwin output file: first its content record and shapes (:func:`scheduler_sim.io.hdf5.check_output`;
    exit 2 naming the file when it is tampered, damaged, has no checksum without ``--no-verify``, or asks for more
    memory than there is), then the output schema; print the problems; return the exit status (a partial file,
    ``complete = false``, is reported on the first line and exits 1).
    """
    import h5py

    from ..io.hdf5 import DamagedFileError, check_output
    from ..io.schema import file_kind, validate_file

    try:
        check = check_output(path, allow_unverified=allow_unverified)
    except DamagedFileError as exc:
        print(f"hpctwin validate: {exc}", file=sys.stderr)
        return 2
    for w in check.warnings:
        print(w)
    try:
        problems = validate_file(path)
    except OSError as exc:
        from ..io.hdf5 import describe_unreadable  # only for the message of an unreadable file

        print(f"hpctwin validate: {path}: {describe_unreadable(path, exc)}", file=sys.stderr)
        return 2
    if problems:
        print("\n".join(problems))
        print(f"{path}: {len(problems)} schema problem(s)")
        return 1
    with h5py.File(path, "r") as f:
        kind = file_kind(f)
    state = "content checksum verified" if check.verified else "NOT verified (no content checksum, --no-verify)"
    print(f"{path}: conforms to the {kind} schema (docs/output_schema.md); {state}"
          f"{'; PARTIAL run (complete = false)' if check.partial else ''}")
    return 1 if (check.partial or not check.verified) else 0
