"""Golden outputs: record and check that refactors keep every HDF5 dataset bit-identical (issue #14).

Usage (from the repository root, in the project's venv)::

    python tests/golden/golden.py check            # run every golden case, compare with tests/golden/digests.json
    python tests/golden/golden.py check main serving-hour
    python tests/golden/golden.py record "reason"  # re-record after an intended change; names the change
    python tests/golden/golden.py record "reason" serving-hour   # re-record only these cases

A digest is the SHA-256 of every dataset's bytes (dtype and shape included) and of every attribute, per HDF5
path, minus what legitimately differs between two runs of the same inputs: the volatile attributes of
``scheduler_sim.io.hdf5.VOLATILE_ATTRS``, package versions and the git commit (``/provenance`` attributes
``versions_json``; the root attribute ``git_sha`` and the root ``content_sha256``, a digest over all of that),
and wall-clock figures inside ``info_json`` (keys ending in
``wall_time_s`` / ``time_s`` measured by a clock, listed in ``_VOLATILE_INFO_KEYS``). The repository's own folder
is replaced by ``<root>`` in every string attribute (trace paths in the load reports), so a check gives the same
digests in any checkout or worktree; the FMU's checksum is dropped (builds of the same model differ in bytes).
``check`` prints each path that differs and exits 1.

Cases: the main job (30 days), a 7-day window per policy family (replay; FCFS no backfill; SJF + EASY;
priority + EASY best-fit; FCFS + conservative; largest-first + first-fit), the Azure conversation serving hour,
and the FCFS/EASY x weather sweep (4 scenarios and summary.h5). Goldens are bit-identical only on the same
packages (numpy, fmpy, gcc): the recorded versions are stored beside the digests and a check on other versions
says so first.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DIGESTS = Path(__file__).with_name("digests.json")
PY = sys.executable

_WEEK = ["--start-day", "181", "--days", "7"]
CASES: dict[str, list[str]] = {
    "main": ["run", "experiments/theta_easy_30d.toml"],
    "replay-7d": ["run", "--policy", "replay", *_WEEK],
    "fcfs-none-7d": ["run", "--policy", "fcfs", "--backfill", "none", *_WEEK],
    "sjf-easy-7d": ["run", "--policy", "sjf", "--backfill", "easy", *_WEEK],
    "priority-bestfit-7d": ["run", "--policy", "priority", "--backfill", "easy-bestfit", *_WEEK],
    "fcfs-conservative-7d": ["run", "--policy", "fcfs", "--backfill", "conservative", *_WEEK],
    "largest-firstfit-7d": ["run", "--policy", "largest", "--backfill", "firstfit", *_WEEK],
    "serving-hour": ["run", "experiments/llm_serving_azure_conv.toml"],
    "sweep": ["sweep", "experiments/theta_policies_weather.toml"],
}

_VOLATILE_PROVENANCE = ("versions_json", "git_sha")
#: Keys dropped from every JSON attribute. ``fmu``: the SHA-256 of the FMU in ``input_checksums_json``; two builds of
#: the same model (same cache key) differ in their bytes (archive timestamps), so it changes whenever the FMU cache
#: is rebuilt, with identical results.
_VOLATILE_INFO_KEYS = ("wall_time_s", "scheduling_time_s", "pass_time_s", "twin_latency_s", "fmu_path",
                       "sweep_timing_json", "fmu")


def _volatile_attrs() -> tuple[str, ...]:
    from scheduler_sim.io.hdf5 import CONTENT_DIGEST_ATTR, VOLATILE_ATTRS

    # the file's own content digest covers git_sha and package versions, so it changes with every commit; the
    # contents it digests are compared path by path here
    return tuple(VOLATILE_ATTRS) + _VOLATILE_PROVENANCE + (CONTENT_DIGEST_ATTR,)


def _clean_json(text: str) -> str:
    text = text.replace(str(ROOT), "<root>")
    try:
        obj = json.loads(text)
    except (TypeError, ValueError):
        return text

    def strip(o):
        if isinstance(o, dict):
            return {k: strip(v) for k, v in o.items() if k not in _VOLATILE_INFO_KEYS}
        if isinstance(o, list):
            return [strip(v) for v in o]
        return o

    return json.dumps(strip(obj), sort_keys=True)


def file_digests(path: Path) -> dict[str, str]:
    """SHA-256 per HDF5 path (dataset bytes + dtype + shape + attributes), volatile parts removed."""
    volatile = _volatile_attrs()
    out: dict[str, str] = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            h = hashlib.sha256()
            for k in sorted(obj.attrs.keys()):
                if k in volatile:
                    continue
                v = obj.attrs[k]
                if isinstance(v, bytes):
                    v = v.decode("utf-8", "replace")
                if isinstance(v, str):
                    h.update(k.encode() + b"=" + _clean_json(v).encode())
                else:
                    a = np.asarray(v)
                    h.update(k.encode() + b"=" + str(a.dtype).encode() + a.tobytes())
            if isinstance(obj, h5py.Dataset):
                h.update(str(obj.dtype).encode() + str(obj.shape).encode())
                data = obj[()]
                if obj.dtype.kind == "O":
                    h.update(repr(list(np.asarray(data).ravel())).encode())
                else:
                    h.update(np.ascontiguousarray(data).tobytes())
            elif isinstance(obj, h5py.ExternalLink):  # pragma: no cover - visititems does not yield links
                return
            out[name or "/"] = h.hexdigest()
        visit("", f)
        f.visititems(visit)
    return out


def run_case(name: str, work: Path) -> dict[str, dict[str, str]]:
    """Run one case in ``work``; return {file name: digests}."""
    argv = CASES[name]
    out = work / name
    if argv[0] == "sweep":
        cmd = [PY, "-m", "scheduler_sim", *argv, "--out", str(out)]
    else:
        cmd = [PY, "-m", "scheduler_sim", *argv, "--quiet", "--out", str(out) + ".h5"]
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"golden case {name} failed (exit {r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    files = sorted(out.glob("*.h5")) if argv[0] == "sweep" else [Path(str(out) + ".h5")]
    print(f"  {name}: {time.perf_counter() - t:.1f} s, {len(files)} file(s)", flush=True)
    return {p.name: file_digests(p) for p in files}


def _versions() -> dict[str, str]:
    from scheduler_sim.io.hdf5 import package_versions

    v = dict(package_versions())
    v.pop("hpctwin", None)
    return v


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("check", "record"):
        print(__doc__)
        return 2
    mode = argv[0]
    reason = argv[1] if mode == "record" and len(argv) > 1 else ""
    args = argv[1:] if mode == "check" else argv[2:]  # record: "reason" first, then the cases (none: every case)
    names = [a for a in args if a in CASES] or list(CASES)
    unknown = [a for a in args if a not in CASES]
    if unknown:
        print(f"unknown case(s) {unknown}; known: {', '.join(CASES)}")
        return 2
    with tempfile.TemporaryDirectory(prefix="hpctwin-golden-") as tmp:
        got = {n: run_case(n, Path(tmp)) for n in names}
    if mode == "record":
        old = json.loads(DIGESTS.read_text()) if DIGESTS.is_file() else {}
        history = old.get("history", [])
        history.append({"date": time.strftime("%Y-%m-%d"), "reason": reason or "(no reason given)"})
        cases = dict(old.get("cases", {})) if names != list(CASES) else {}
        cases.update(got)  # a partial record keeps the other cases' digests
        history[-1]["cases"] = names
        DIGESTS.write_text(json.dumps({"versions": _versions(), "history": history, "cases": cases}, indent=1,
                                      sort_keys=True) + "\n")
        print(f"recorded {len(got)} cases in {DIGESTS.relative_to(ROOT)}")
        return 0
    ref = json.loads(DIGESTS.read_text())
    if ref.get("versions") != _versions():
        print(f"note: packages differ from the recording ({ref.get('versions')} vs {_versions()}); "
              "bit-identity is only promised on the same versions")
    bad = 0
    for n in names:
        want = ref["cases"].get(n)
        if want is None:
            print(f"{n}: no golden recorded")
            bad += 1
            continue
        for fname in sorted(set(want) | set(got[n])):
            a, b = want.get(fname), got[n].get(fname)
            if a is None or b is None:
                print(f"{n}/{fname}: file {'new' if a is None else 'missing'}")
                bad += 1
                continue
            diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            if diff:
                bad += 1
                print(f"{n}/{fname}: {len(diff)} path(s) differ: {', '.join(diff[:12])}"
                      f"{' ...' if len(diff) > 12 else ''}")
    print("golden outputs identical" if not bad else f"{bad} golden difference(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
