"""Report HTML from crafted output files (issue #21 kind 3): every value from the file is escaped, `seed` is an integer.

On main the report was assembled by hand with `html.escape` on most values; `seed` was inserted raw, so a run file
whose seed attribute held `<img src=x onerror=alert(1)>` (the content checksum recomputed: a plain SHA-256 anyone can
recompute) put that element into report.html, exit 0. Now the pages are rendered by Jinja2 with autoescape, and a
seed that is not an integer is refused.
"""

from __future__ import annotations

import html.parser
import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

from scheduler_sim.analysis.report import make_report
from scheduler_sim.app.cli import main
from scheduler_sim.io.hdf5 import SCHEMA_VERSION, DamagedFileError, content_digest

PAYLOAD = '"><img src=x onerror=alert(1)><script>alert(2)</script>'
ESCAPED = "&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;alert(2)&lt;/script&gt;"
KEEP = {"schema_version", "kind", "content_sha256", "seed", "complete"}
SWF = "1 0 0 100 1 -1 -1 1 200 -1 1 1 1 -1 1 -1 -1 -1\n2 10 0 50 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1\n"


class _Markup(html.parser.HTMLParser):
    """Every tag and attribute of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs.update(a for a, _ in attrs)


def _assert_nothing_unescaped(page: str) -> None:
    assert "<img src=x" not in page and "<script" not in page and "alert(" not in page.replace(ESCAPED, "")
    p = _Markup()
    p.feed(page)
    assert "script" not in p.tags and not any(a.startswith("on") for a in p.attrs), (p.tags, p.attrs)
    assert p.attrs <= {"lang", "charset", "data-figure", "data-overflow", "data-empty", "alt", "src", "class"}, p.attrs


def _poison_json(text: str) -> str:
    """Every string in a JSON document (and one new key) replaced by the payload; non-JSON text becomes it."""
    try:
        doc = json.loads(text)
    except ValueError:
        return PAYLOAD

    def walk(o):
        if isinstance(o, dict):
            return {**{k: walk(v) for k, v in o.items()}, PAYLOAD: PAYLOAD}
        if isinstance(o, list):
            return [walk(v) for v in o]
        return PAYLOAD if isinstance(o, str) else o

    return json.dumps(walk(doc))


def _poison(f: h5py.File) -> int:
    """Payload in every text attribute and every text dataset of the file; returns how many values were changed."""
    n = 0
    objs = [f]
    f.visititems(lambda _name, obj: objs.append(obj))
    for obj in objs:
        for k, v in list(obj.attrs.items()):
            if k in KEEP or not isinstance(v, (str, bytes)):
                continue
            v = v.decode() if isinstance(v, bytes) else v
            obj.attrs[k] = _poison_json(v) if k.endswith("_json") or v.lstrip().startswith(("{", "[")) else PAYLOAD
            n += 1
        if isinstance(obj, h5py.Dataset) and obj.dtype.kind in ("O", "S", "U") and obj.shape:
            data = obj[()]
            del f[obj.name]
            f.create_dataset(obj.name, data=np.array([PAYLOAD] * len(data), dtype=h5py.string_dtype()))
            n += 1
    return n


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("esc")
    (d / "two.swf").write_text(SWF)
    out = d / "run.h5"
    assert main(["run", "--system", "theta", "--trace", str(d / "two.swf"), "--start-day", "0", "--days", "0.01",
                 "--no-cooling", "--quiet", "--out", str(out)]) == 0
    return out


def test_run_report_escapes_every_text_value_of_a_crafted_file(run_file, tmp_path):
    """Run name, system, policy, versions, git sha, provenance (configuration, checksums, run information, the load
    report's notes and issues), job user/account/queue names, conversion split, a metric named by the payload:
    all shown escaped; the page holds no element or attribute the templates did not write."""
    bad = tmp_path / "crafted.h5"
    shutil.copyfile(run_file, bad)
    with h5py.File(bad, "r+") as f:
        changed = _poison(f)
        f["summary"].attrs[PAYLOAD] = 1.5  # a metric whose name is markup
        f.attrs["content_sha256"] = content_digest(f)
    assert changed >= 15
    page = make_report(bad, tmp_path / "rep").read_text()
    _assert_nothing_unescaped(page)
    assert page.count(ESCAPED) >= 8  # shown: title, heading, system, policy, versions, provenance blocks, metric


def test_run_report_refuses_a_seed_that_is_not_an_integer(run_file, tmp_path, capsys):
    """The field case: seed = '<img src=x onerror=alert(1)>' with the checksum recomputed -> exit 2, one line naming
    the file and the attribute, no report written."""
    bad = tmp_path / "x.h5"
    shutil.copyfile(run_file, bad)
    with h5py.File(bad, "r+") as f:
        f.attrs["seed"] = "<img src=x onerror=alert(1)>"
        f.attrs["content_sha256"] = content_digest(f)
    with pytest.raises(DamagedFileError, match=r"x\.h5: root attribute 'seed' is .*expected an integer"):
        make_report(bad, tmp_path / "r1")
    capsys.readouterr()
    assert main(["report", str(bad), "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(bad) in err[0] and "'seed'" in err[0]
    assert not (tmp_path / "rep").exists()


def test_sweep_report_escapes_every_text_value_of_a_crafted_summary(tmp_path):
    p = tmp_path / "summary.h5"
    with h5py.File(p, "w") as f:
        f.attrs.update(schema_version=SCHEMA_VERSION, kind="sweep-summary", study=PAYLOAD,
                       study_file=f'[axes]\n"cooling.weather" = ["{PAYLOAD}"]\n# {PAYLOAD}\n')
        g = f.create_group("scenarios")
        g["name"] = np.array([PAYLOAD, PAYLOAD + "2"], dtype=h5py.string_dtype())
        g["status"] = np.array(["done", PAYLOAD], dtype=h5py.string_dtype())
        g["config_json"] = np.array([json.dumps({"cooling": {"weather": PAYLOAD}})] * 2, dtype=h5py.string_dtype())
        for k, v in {"mean_wait_s": [7200.0, 3600.0], "E_facility_J": [3.6e12, 3.7e12],
                     "mean_bounded_slowdown": [5.0, 3.0], "PUE": [1.012, 1.013]}.items():
            g[k] = np.array(v)
        f.attrs["content_sha256"] = content_digest(f)  # a crafted file carries a fresh checksum (anyone can make one)
    page = make_report(p, tmp_path / "srep").read_text()
    _assert_nothing_unescaped(page)
    assert page.count(ESCAPED) >= 5  # title, heading, scenario names, status, study file, condition captions


def test_report_templates_are_package_data_with_one_base():
    """The pages come from templates shipped with the package; each report extends the one base template."""
    from scheduler_sim.analysis.report import TEMPLATES, _environment

    env = _environment()
    assert env.autoescape is True
    for name in ("run.html.j2", "cooling.html.j2", "sweep.html.j2"):
        assert (Path(TEMPLATES) / name).read_text().startswith('{% extends "base.html.j2" %}')


@pytest.mark.fmu
def test_cooling_report_escapes_every_text_value_of_a_crafted_file(tmp_path):
    """The cooling-only report (plant name, provenance attributes and their names) from a crafted file."""
    from conftest import write_power_series

    series = write_power_series(tmp_path / "power.csv")
    good = tmp_path / "c.h5"
    assert main(["cooling", str(series), "--plant", "theta", "--wet-bulb", "12", "--days", "0.25", "--out",
                 str(good)]) == 0
    bad = tmp_path / "crafted.h5"
    shutil.copyfile(good, bad)
    with h5py.File(bad, "r+") as f:
        assert _poison(f) >= 3
        f["provenance"].attrs[PAYLOAD] = PAYLOAD  # an attribute whose name is markup
        f.attrs["content_sha256"] = content_digest(f)
    page = make_report(bad, tmp_path / "crep").read_text()
    _assert_nothing_unescaped(page)
    assert page.count(ESCAPED) >= 4  # title, heading, provenance name and value
