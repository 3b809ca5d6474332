"""Build a many-CDU plant FMU from rumoca's C for a few CDUs, replicating the CDU block (issue 26, item 5).

rumoca 0.9.13's code generation is quadratic in the number of scalar unknowns (``benchmarks/bench_plant_build.py``),
so the 257-CDU plant took 173-279 s to generate. The CDUs of the generated plant
(:func:`cooling_fmu.modelica.generate_plant_modelica`) are identical blocks: one ``for i in 1:n`` loop over arrays
of length ``n``, with the same parameters, coupled to the facility only through reductions (``sum``, the nested
``max`` of the valve openings, ``n.0 * T_ref``). This module

1. reduces the ``n``-CDU source to a ``k``-CDU source (:data:`K_CDUS`) that differs only in the array length, with
   every parameter value unchanged (:func:`reduce_source`; checked by expanding it back to the very same text),
2. has rumoca generate C and ``modelDescription.xml`` for the ``k``-CDU model (seconds), and
3. rewrites both for ``n`` CDUs (:func:`replicate_c`, :func:`replicate_model_description`): every element line of
   CDU ``k`` is copied for CDUs ``k+1 .. n`` with its names and storage indices moved, the reductions are extended
   to ``n`` terms in rumoca's own left-nested order, and every storage index (``m->x[i]``, ``__rumoca_solve_y(m, i)``,
   value references) is moved to the ``n``-CDU layout, which keeps rumoca's order of variables (an array's
   elements together, the arrays where rumoca put them).

The result is the same equations evaluated in the same order; ``tests/unit/test_replicate.py`` compares it with
rumoca's own FMU for the same plant (outputs of a transient with unequal CDU loads agree to round-off).
Anything of an unexpected shape raises :class:`ReplicationError`; :func:`cooling_fmu.build.fetch_fmu_bytes` then
falls back to rumoca on the whole model (slow, never wrong).
"""

from __future__ import annotations

import copy
import hashlib
import re
import xml.etree.ElementTree as ET
from functools import lru_cache
from pathlib import Path

from .components.valve import max_chain_expr

__all__ = ["K_CDUS", "REPLICATE_ABOVE_CDUS", "ReplicationError", "build_fingerprint", "drop_unused_locals",
           "gcc_optimisation", "n_cdus_of",
           "reduce_source", "replicate_c", "replicate_model_description", "replicate_tree"]

#: CDUs of the small model rumoca generates (>= 3, so every reduction shows its nesting and element runs end).
K_CDUS = 3

#: Plants with more CDUs than this are built by replication; the others by rumoca on the whole model, as before.
REPLICATE_ABOVE_CDUS = 40

_N_DECL = re.compile(r"^  input Real Q_flow_CDU\[(\d+)\]", re.M)


class ReplicationError(ValueError):
    """The source, C or XML is not of the shape this module replicates (the message says what was found)."""


def n_cdus_of(source: str) -> int | None:
    """Number of CDUs of a generated plant source, or None for any other Modelica source.

    Parameters
    ----------
    source : str
        Modelica source text.

    Returns
    -------
    int or None
        ``n`` of the declaration ``input Real Q_flow_CDU[n]`` of :func:`cooling_fmu.modelica.generate_plant_modelica`.
    """
    found = _N_DECL.findall(source)
    return int(found[0]) if len(found) == 1 else None


def build_fingerprint(source: str) -> str:
    """What the replicated build adds to the FMU cache key, or "" when the source is built by rumoca whole.

    Parameters
    ----------
    source : str
        Modelica source text.

    Returns
    -------
    str
        For a generated plant with more than :data:`REPLICATE_ABOVE_CDUS` CDUs: :data:`K_CDUS` and the SHA-256 of
        this module's source text (any change to the replicator rebuilds those FMUs); else "".
    """
    n = n_cdus_of(source)
    if n is None or n <= REPLICATE_ABOVE_CDUS:
        return ""
    return f"replicate k={K_CDUS} gcc {REPLICATED_GCC_OPT} {_module_sha256()}"


@lru_cache(maxsize=1)
def _module_sha256() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


#: gcc optimisation of a replicated plant's C (see :func:`gcc_optimisation`).
REPLICATED_GCC_OPT = "-O0"


def gcc_optimisation(source: str) -> str:
    """The gcc optimisation level for the FMU of ``source``: -O2, or :data:`REPLICATED_GCC_OPT` when replicated.

    gcc's optimising passes grow faster than linearly with the size of one function, and rumoca puts a whole
    plant's equations in three functions: at 257 CDUs (3.5 MB of C) ``-O2`` needs several minutes of CPU,
    ``-O0`` about 10 s. On x86-64 every level computes the same IEEE double results (SSE2 arithmetic, no FMA
    contraction without ``-march`` and no ``-ffast-math``), so the level changes the speed of a step only.

    Parameters
    ----------
    source : str
        Modelica source text.

    Returns
    -------
    str
        A gcc ``-O`` flag.
    """
    return REPLICATED_GCC_OPT if build_fingerprint(source) else "-O2"


def replicate_tree(out_dir: Path, model_name: str, k: int, n: int) -> None:
    """Rewrite rumoca's output for the k-CDU model in ``out_dir`` (``sources/<model>.c``, modelDescription.xml) for n.

    Parameters
    ----------
    out_dir : Path
        Folder where rumoca saved the k-CDU model (``save_all``).
    model_name : str
        Model name (the same for both: :func:`reduce_source` keeps it).
    k : int
        CDUs of the model rumoca generated.
    n : int
        CDUs wanted.

    Raises
    ------
    ReplicationError
        If rumoca's output is not of the shape replicated here (see :func:`replicate_c`).
    """
    c_file = out_dir / "sources" / f"{model_name}.c"
    md = out_dir / "modelDescription.xml"
    if not (c_file.is_file() and md.is_file()):
        raise ReplicationError(f"rumoca did not write {c_file.name} and modelDescription.xml")
    c_src, xml = c_file.read_text(encoding="utf-8"), md.read_text(encoding="utf-8")
    c_file.write_text(replicate_c(c_src, xml, k, n), encoding="utf-8")
    md.write_text(replicate_model_description(xml, c_src, k, n), encoding="utf-8")


def _resize(source: str, n_from: int, n_to: int, arrays: list[str]) -> str:
    for a in arrays:  # chains held out while the array lengths change (their last element is [n_from])
        source = source.replace(max_chain_expr(a, n_from), f"\0{a}\0")
    source = source.replace(f"for i in 1:{n_from} loop", f"for i in 1:{n_to} loop")
    source = source.replace(f"{n_from}.0 * T_ref", f"{n_to}.0 * T_ref")
    source = source.replace(f"[{n_from}]", f"[{n_to}]")
    for a in arrays:
        source = source.replace(f"\0{a}\0", max_chain_expr(a, n_to))
    return source


def reduce_source(source: str, k: int = K_CDUS) -> str:
    """The same plant source with ``k`` CDUs: array lengths, loop bound and reductions changed, nothing else.

    Parameters
    ----------
    source : str
        A source of :func:`cooling_fmu.modelica.generate_plant_modelica` with ``n > k`` CDUs.
    k : int
        CDUs of the reduced source.

    Returns
    -------
    str
        The reduced source; the model keeps its name and every parameter value (derived ones too).

    Raises
    ------
    ReplicationError
        If the source is not a generated plant, has ``n <= k`` CDUs, or the reduced source does not expand back
        to exactly the given text (something in it depends on ``n`` in a way this function does not know).
    """
    n = n_cdus_of(source)
    if n is None or n <= k:
        raise ReplicationError(f"not a generated plant source with more than {k} CDUs (found n = {n})")
    arrays = re.findall(rf"^  (?:input |output )?Real (\w+)\[{n}\]", source, re.M)
    small = _resize(source, n, k, arrays)
    if _resize(small, k, n, arrays) != source or f"[{n}]" in small:
        raise ReplicationError(f"the {n}-CDU source does not reduce to {k} CDUs and back to the same text")
    return small


# ---------------------------------------------------------------------------------------------------------------
# layout: rumoca's storage order, from modelDescription.xml
# ---------------------------------------------------------------------------------------------------------------
_EL_NAME = re.compile(r"^(der\()?([A-Za-z_]\w*)\[(\d+)\]\)?$")
_CATS = ("x", "xdot", "y", "u", "w", "p")
_COUNT = {"x": "N_STATES", "xdot": "N_DERIVATIVES", "y": "N_ALGEBRAICS", "u": "N_INPUTS", "w": "N_OUTPUTS",
          "p": "N_PARAMETERS"}


def _key(name: str) -> tuple[str, int]:
    """(base, element) of an XML variable name: ``("T_sec", 2)`` for ``T_sec[2]``, ``("der(T_sec)", 2)``, or (name, 0)."""
    m = _EL_NAME.match(name)
    if m is None:
        return name, 0
    return (f"der({m.group(2)})" if m.group(1) else m.group(2)), int(m.group(3))


class _Layout:
    """Storage of the k- and n-CDU models: per category the variable keys in order, and index maps."""

    def __init__(self, root: ET.Element, counts: dict[str, int], k: int, n: int):
        self.k, self.n, self.counts = k, n, counts
        svs = root.find("ModelVariables").findall("ScalarVariable")
        bounds, start = {}, 0
        for cat in _CATS:
            bounds[cat] = (start, start + counts[cat])
            start += counts[cat]
        self.keys: dict[str, list] = {c: [None] * counts[c] for c in _CATS}
        for sv in svs:
            vr = int(sv.get("valueReference"))
            for cat in _CATS:
                lo, hi = bounds[cat]
                if lo <= vr < hi:
                    self.keys[cat][vr - lo] = _key(sv.get("name"))
                    break
        for cat in _CATS:
            if None in self.keys[cat]:
                raise ReplicationError(f"modelDescription.xml leaves a {cat} slot without a variable")
        self.arrays = sorted({b for c in _CATS for b, i in self.keys[c] if i})
        self.plain = {b[4:-1] if b.startswith("der(") else b for b in self.arrays}
        self.new_keys: dict[str, list] = {}
        self.new_index: dict[str, dict] = {}
        for cat in _CATS:
            out = []
            ks = self.keys[cat]
            for pos, (b, i) in enumerate(ks):
                if i == 0:
                    out.append((b, 0))
                elif i == 1:
                    if ks[pos:pos + k] != [(b, e) for e in range(1, k + 1)]:
                        raise ReplicationError(f"elements of {b} are not stored together in {cat}")
                    out += [(b, e) for e in range(1, n + 1)]
            self.new_keys[cat] = out
            self.new_index[cat] = {kk: j for j, kk in enumerate(out)}
        self.new_counts = {c: len(self.new_keys[c]) for c in _CATS}

    def index(self, cat: str, old: int, sub: dict[int, int]) -> int:
        """New index in ``cat`` of the variable at ``old`` in the k-model, its element moved by ``sub``."""
        b, i = self.keys[cat][old]
        return self.new_index[cat][(b, sub.get(i, i) if i else 0)]

    def element(self, cat: str, old: int) -> int:
        """Element (1-based; 0 for a scalar) of the variable at ``old`` in ``cat``."""
        return self.keys[cat][old][1]

    _Y_SPACE = ("x", "y", "w")
    _P_SPACE = ("p", "u")

    def _space(self, cats, old: int, counts) -> tuple[str, int]:
        for cat in cats:
            if old < counts[cat]:
                return cat, old
            old -= counts[cat]
        raise ReplicationError(f"solve index beyond {cats}")

    def solve_index(self, which: str, old: int, sub: dict[int, int]) -> int:
        """New index of ``__rumoca_solve_{which}(m, old)`` (``which`` = "y": x, y, w; "p": p, u)."""
        cats = self._Y_SPACE if which == "y" else self._P_SPACE
        cat, loc = self._space(cats, old, self.counts)
        new = self.index(cat, loc, sub)
        for c in cats:
            if c == cat:
                return new
            new += self.new_counts[c]
        raise AssertionError(cat)

    def solve_element(self, which: str, old: int) -> int:
        """Element of the variable ``__rumoca_solve_{which}(m, old)`` reads."""
        cat, loc = self._space(self._Y_SPACE if which == "y" else self._P_SPACE, old, self.counts)
        return self.element(cat, loc)


def _counts_of(c_source: str) -> dict[str, int]:
    counts = {}
    for cat, name in _COUNT.items():
        m = re.search(rf"^#define {name}\s+(\d+)$", c_source, re.M)
        if m is None:
            raise ReplicationError(f"#define {name} not found in the rumoca C source")
        counts[cat] = int(m.group(1))
    for name in ("N_DISCRETE_REAL", "N_DISCRETE_VAL", "N_CONSTANTS"):
        if not re.search(rf"^#define {name}\s+0$", c_source, re.M):
            raise ReplicationError(f"{name} is not 0: discrete variables are not replicated")
    return counts


# ---------------------------------------------------------------------------------------------------------------
# modelDescription.xml
# ---------------------------------------------------------------------------------------------------------------
def replicate_model_description(xml_text: str, c_source: str, k: int, n: int) -> str:
    """The k-CDU model's ``modelDescription.xml`` rewritten for ``n`` CDUs (value references as in the new C).

    Parameters
    ----------
    xml_text : str
        rumoca's modelDescription.xml of the k-CDU model.
    c_source : str
        rumoca's C of the same model (for the counts of each storage category).
    k : int
        CDUs of the model rumoca generated.
    n : int
        CDUs wanted.

    Returns
    -------
    str
        The XML for ``n`` CDUs (before :func:`cooling_fmu.build.fix_model_description`).

    Raises
    ------
    ReplicationError
        If the XML does not parse or the variables are not stored as this module expects.
    """
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise ReplicationError(f"rumoca's modelDescription.xml does not parse: {exc}") from exc
    lay = _Layout(root, _counts_of(c_source), k, n)
    mv = root.find("ModelVariables")
    svs = list(mv.findall("ScalarVariable"))
    base = 0
    by_key = {}
    for cat in _CATS:
        for sv in svs:
            vr = int(sv.get("valueReference"))
            if base <= vr < base + lay.counts[cat]:
                by_key[(cat, _key(sv.get("name")))] = sv
        base += lay.counts[cat]
    for sv in svs:
        mv.remove(sv)
    vr = 0
    for cat in _CATS:
        for b, i in lay.new_keys[cat]:
            src = by_key[(cat, (b, min(i, k) if i else 0))]
            sv = copy.deepcopy(src)
            sv.tail = "\n"
            if i:
                sv.set("name", f"der({b[4:-1]}[{i}])" if b.startswith("der(") else f"{b}[{i}]")
            sv.set("valueReference", str(vr))
            mv.append(sv)
            vr += 1
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# ---------------------------------------------------------------------------------------------------------------
# C source
# ---------------------------------------------------------------------------------------------------------------
_SOLVE = re.compile(r"__rumoca_solve_(y|p)\(m, (\d+)\)")
_REG_DEF = re.compile(r"^\tdouble __r(\d+) = (.*);$")
_REG = re.compile(r"__r(\d+)\b")
_XDOT_STORE = re.compile(r"^\tm->xdot\[(\d+)\] = __r(\d+);$")
_TOKEN = re.compile(r"[A-Za-z_]\w*")


_ANY = re.compile(r"(?P<store>m->(xdot|x|y|u|w|p)\[(\d+)\])|(?P<solve>__rumoca_solve_(y|p)\(m, (\d+)\))"
                  r"|(?P<nom>\bx_nominal\[(\d+)\] = )|(?P<name>\b((?:pre_|der_)?)([A-Za-z_]\w*)_(\d+)\b)"
                  r"|(?P<br>\b((?:der\()?)([A-Za-z_]\w*)\[(\d+)\])")


class _Rewriter:
    """Tags and rewrites lines of the k-CDU C for the n-CDU layout (each line parsed once, then rendered)."""

    def __init__(self, lay: _Layout):
        self.lay = lay
        self._memo: dict[str, tuple[list, set[int]]] = {}

    def _parse(self, line: str) -> tuple[list, set[int]]:
        """Segments of the line (text, or (kind, name/category, index)) and the CDU elements it refers to."""
        hit = self._memo.get(line)
        if hit is not None:
            return hit
        lay, segs, found, pos = self.lay, [], set(), 0
        for m in _ANY.finditer(line):
            kind = m.lastgroup
            if kind == "store":
                seg, e = ("x", m.group(2), int(m.group(3))), lay.element(m.group(2), int(m.group(3)))
            elif kind == "solve":
                seg, e = ("s", m.group(5), int(m.group(6))), lay.solve_element(m.group(5), int(m.group(6)))
            elif kind == "nom":
                seg, e = ("n", "x", int(m.group(8))), lay.element("x", int(m.group(8)))
            elif kind == "name" and m.group(11) in lay.plain:
                seg, e = ("v", m.group(10) + m.group(11) + "_", int(m.group(12))), int(m.group(12))
            elif kind == "br" and m.group(15) in lay.plain:
                seg, e = ("b", m.group(14) + m.group(15) + "[", int(m.group(16))), int(m.group(16))
            else:
                continue
            segs.append(line[pos:m.start()])
            segs.append(seg)
            pos = m.end()
            if e:
                found.add(e)
        segs.append(line[pos:])
        if "= &m->" in line:  # array pointer: const double* T_sec = &m->x[0]; belongs to no element
            found = set()
        self._memo[line] = (segs, found)
        return segs, found

    def elements(self, line: str) -> set[int]:
        """CDU elements a line refers to (names, bracketed names in comments, storage and solve indices)."""
        return self._parse(line)[1]

    def rewrite(self, line: str, sub: dict[int, int]) -> str:
        """The line with its element ``e`` moved to ``sub[e]`` and every storage index in the n-CDU layout."""
        lay = self.lay
        out = []
        for seg in self._parse(line)[0]:
            if isinstance(seg, str):
                out.append(seg)
                continue
            kind, what, i = seg
            if kind == "x":
                out.append(f"m->{what}[{lay.index(what, i, sub)}]")
            elif kind == "s":
                out.append(f"__rumoca_solve_{what}(m, {lay.solve_index(what, i, sub)})")
            elif kind == "n":
                out.append(f"x_nominal[{lay.index('x', i, sub)}] = ")
            elif kind == "v":
                out.append(f"{what}{sub.get(i, i)}")
            else:
                out.append(f"{what}{sub.get(i, i)}]")
        return "".join(out)


def _extend_reductions(line: str, lay: _Layout) -> str:
    """Extend rumoca's left-nested sums / fmax chains over the k elements of an array to n elements."""
    k, n = lay.k, lay.n
    for a in sorted(lay.plain, key=len, reverse=True):
        for op in (" + ", " * "):
            k_chain = f"{a}_1" + "".join(f"{op}{a}_{i})" for i in range(2, k + 1))
            if k_chain in line:
                n_chain = "(" * (n - k) + f"{a}_1" + "".join(f"{op}{a}_{i})" for i in range(2, n + 1))
                line = line.replace(k_chain, n_chain)
        k_max = "fmax(" * (k - 1) + f"{a}_1" + "".join(f", {a}_{i})" for i in range(2, k + 1))
        if k_max in line:
            line = line.replace(k_max, "fmax(" * (n - 1) + f"{a}_1" + "".join(f", {a}_{i})" for i in range(2, n + 1)))
    return line.replace(f"({k}.0 * T_ref)", f"({n}.0 * T_ref)")


def _check_reduction(old: str, new: str, rw: _Rewriter, lay: _Layout) -> None:
    """Every array named in a reduction line must appear as often for each of the n elements as for element 1."""
    for a in lay.plain:
        c1 = len(re.findall(rf"\b{a}_1\b", new))
        if c1 and any(len(re.findall(rf"\b{a}_{j}\b", new)) != c1 for j in range(2, lay.n + 1)):
            raise ReplicationError(f"reduction over {a} not recognised in rumoca's C: {old.strip()[:200]}")
    if rw.elements(new) not in (set(), set(range(1, lay.n + 1))):
        raise ReplicationError(f"reduction line not fully extended: {old.strip()[:200]}")


def _units(lines: list[str]) -> list[list[str]]:
    """Lines grouped as the blank lines before a line and the line (rumoca's layout: blanks lead a statement)."""
    units: list[list[str]] = []
    pending: list[str] = []
    for ln in lines:
        pending.append(ln)
        if ln.strip():
            units.append(pending)
            pending = []
    if pending:
        units.append(pending)
    return units


def _named_section(lines: list[str], rw: _Rewriter) -> list[str]:
    """Replicate element runs, extend reductions and move indices in code that uses names (not Solve IR)."""
    lay = rw.lay
    k, n = lay.k, lay.n
    full = set(range(1, k + 1))
    out: list[str] = []
    units = _units(lines)
    run: list[list[str]] = []
    for pos, unit in enumerate(units):
        els = rw.elements(unit[-1])
        if len(els) <= 1:
            out += [rw.rewrite(ln, {}) for ln in unit]
        elif els == full:
            ext = _extend_reductions(unit[-1], lay)
            _check_reduction(unit[-1], ext, rw, lay)
            out += unit[:-1] + [rw.rewrite(ext, {})]
        else:
            raise ReplicationError(f"line refers to CDUs {sorted(els)} of {k}: {unit[-1].strip()[:200]}")
        if els == {k}:
            run.append(unit)
            nxt = units[pos + 1] if pos + 1 < len(units) else None
            if nxt is None or rw.elements(nxt[-1]) != {k}:
                for j in range(k + 1, n + 1):
                    out += [rw.rewrite(ln, {k: j}) for u in run for ln in u]
                run = []
    return out


class _SolveIR:
    """Replicate the register code (``double __rN = ...;``, ``m->xdot[i] = __rN;``) of compute_derivatives.

    Each register is tagged with the CDUs it depends on. A derivative of CDU k's state is copied, with its whole
    register block, for CDUs k+1 .. n right after it; a reduction link (a register over CDUs 1..k made of the
    partial result over 1..k-1 and a part of CDU k) is followed by a copy of CDU k's part and a new link for each
    of CDUs k+1 .. n, in rumoca's left-nested order. Registers are renumbered in order of definition at the end.
    """

    def __init__(self, rw: _Rewriter):
        self.rw, self.lay = rw, rw.lay
        self.k, self.n = self.lay.k, self.lay.n
        self.full = set(range(1, self.k + 1))
        self.expr: dict[int, str] = {}
        self.tag: dict[int, set[int]] = {}
        self.out: list[tuple] = []  # ("d", new id, text with {R<id>} placeholders) or ("s", xdot index, new id)
        self.final: dict[int, int] = {}  # old register -> new id holding its n-CDU value

    def emit(self, e: str, ren: dict[int, int], sub: dict[int, int]) -> int:
        """Append register ``e`` (its registers renamed by ``ren``, else their n-CDU value) with CDUs moved."""
        nid = len(self.out)
        text = _REG.sub(lambda m: f"{{R{ren.get(int(m.group(1)), self.final.get(int(m.group(1))))}}}", e)
        self.out.append(("d", nid, self.rw.rewrite(text, sub)))
        return nid

    def deps(self, root: int, allowed) -> list[int]:
        """Registers ``root`` depends on through registers accepted by ``allowed``, in order of definition."""
        seen, stack = set(), [root]
        while stack:
            r = stack.pop()
            if r in seen or not allowed(r):
                continue
            seen.add(r)
            stack += [int(q) for q in _REG.findall(self.expr[r])]
        return sorted(seen)

    def copy_tree(self, root: int, j: int, allowed) -> int:
        """Copy the registers of ``root``'s tree accepted by ``allowed`` with CDU k moved to j; the new root."""
        ren: dict[int, int] = {}
        for r in self.deps(root, allowed):
            ren[r] = self.emit(self.expr[r], ren, {self.k: j})
        return ren[root]

    def define(self, r: int, e: str) -> None:
        """One register of rumoca's code, and the reduction links it needs for CDUs k+1 .. n."""
        k, full, tag = self.k, self.full, self.tag
        if r in self.expr:
            raise ReplicationError(f"Solve IR register __r{r} defined twice")
        regs = [int(q) for q in _REG.findall(e)]
        if any(q not in self.expr for q in regs):
            raise ReplicationError(f"Solve IR register __r{r} uses a register defined later")
        self.expr[r] = e
        t = set(self.rw.elements(e)).union(*(tag[q] for q in regs))
        tag[r] = t
        self.final[r] = self.emit(e, {}, {})
        if t == full and not any(tag[q] == full for q in regs):
            prev = [q for q in regs if tag[q] == full - {k}]
            own = [q for q in regs if tag[q] == {k}]
            direct = [s for s in _SOLVE.finditer(e) if self.lay.solve_element(s.group(1), int(s.group(2))) == k]
            if len(prev) != 1 or len(own) + len(direct) != 1 or any(tag[q] not in (set(), full - {k}, {k})
                                                                     for q in regs):
                raise ReplicationError(f"Solve IR reduction of unknown shape: __r{r} = {e[:200]}")
            for j in range(k + 1, self.n + 1):
                ren = {prev[0]: self.final[r]}
                if own:
                    ren[own[0]] = self.copy_tree(own[0], j, lambda q: tag[q] == {k})
                self.final[r] = self.emit(e, ren, {} if own else {k: j})
        elif len(t) > 1 and t != set(range(1, len(t) + 1)) and t != full:
            raise ReplicationError(f"Solve IR register mixes CDUs {sorted(t)}: __r{r} = {e[:200]}")

    def store(self, xi: int, r: int) -> None:
        """A derivative store ``m->xdot[xi] = __r<r>;``; for CDU k's state, its copies for CDUs k+1 .. n."""
        k, lay, tag = self.k, self.lay, self.tag
        e = lay.element("xdot", xi)
        if e and not tag[r] <= {e}:
            raise ReplicationError(f"derivative of CDU {e} depends on other CDUs")
        self.out.append(("s", lay.index("xdot", xi, {}), self.final[r]))
        if e == k:
            for j in range(k + 1, self.n + 1):
                self.out.append(("s", lay.index("xdot", xi, {k: j}), self.copy_tree(r, j, lambda q: tag[q] <= {k})))

    def text(self) -> list[str]:
        """The register code, registers numbered 0, 1, 2, ... in order of definition."""
        number: dict[int, int] = {}
        lines: list[str] = []
        for kind, a, b in self.out:
            if kind == "d":
                number[a] = len(number)
                body = re.sub(r"\{R(\d+)\}", lambda m: f"__r{number[int(m.group(1))]}", b)
                lines.append(f"\tdouble __r{number[a]} = {body};")
            else:
                lines.append(f"\tm->xdot[{a}] = __r{number[b]};")
        return lines


def _solve_ir(lines: list[str], rw: _Rewriter) -> list[str]:
    """The Solve IR of compute_derivatives for n CDUs (:class:`_SolveIR`)."""
    ir = _SolveIR(rw)
    for ln in lines:
        m = _REG_DEF.match(ln)
        s = _XDOT_STORE.match(ln)
        if m:
            ir.define(int(m.group(1)), m.group(2))
        elif s:
            ir.store(int(s.group(1)), int(s.group(2)))
        else:
            raise ReplicationError(f"unexpected line in the Solve IR: {ln.strip()[:200]}")
    return ir.text()


_UNPACK = re.compile(r"^    (?:const )?double\*? (\w+) = &?m->\w+\[\d+\];$")
_FUNC = re.compile(r"^static void \w+\(ModelInstance\* m\) \{$")


def drop_unused_locals(c_source: str) -> str:
    """Remove the local copies rumoca unpacks in every function and the function never reads.

    Each of rumoca's ``static void f(ModelInstance* m)`` functions starts by copying every variable of the model
    into a local (``const double T_sec_1 = m->x[0];``, ``const double pre_T_sec_1 = m->x[0];``, ...): at 257 CDUs
    about 24,000 such lines, most never used, which gcc still has to parse. A line of that form whose name occurs
    nowhere else in its function is removed; nothing it computes is used, so the program is the same.

    Parameters
    ----------
    c_source : str
        C source as rumoca writes it.

    Returns
    -------
    str
        The C source without those lines.
    """
    lines = c_source.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        out.append(lines[i])
        if not _FUNC.match(lines[i]):
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j] != "}":
            j += 1
        body = lines[i + 1:j]
        count: dict[str, int] = {}
        for ln in body:
            for t in _TOKEN.findall(ln):
                count[t] = count.get(t, 0) + 1
        for ln in body:
            m = _UNPACK.match(ln)
            if m is None or count[m.group(1)] > 1:
                out.append(ln)
        i = j
    return "\n".join(out)


def replicate_c(c_source: str, xml_text: str, k: int, n: int) -> str:
    """Rewrite rumoca's C for the k-CDU model for ``n`` CDUs (before :func:`cooling_fmu.build.order_algebraics`).

    Parameters
    ----------
    c_source : str
        rumoca 0.9.13's C of the k-CDU model.
    xml_text : str
        rumoca's modelDescription.xml of the same model (storage order of the variables).
    k : int
        CDUs of the model rumoca generated (>= 3).
    n : int
        CDUs wanted (> k).

    Returns
    -------
    str
        The C for ``n`` CDUs, without the locals no function reads (:func:`drop_unused_locals`).

    Raises
    ------
    ReplicationError
        If a line refers to some but not all CDUs in a way not recognised, or the layout is unexpected.
    """
    if not (n > k >= 3):
        raise ReplicationError(f"replication needs n > k >= 3, got k = {k}, n = {n}")
    counts = _counts_of(c_source)
    lay = _Layout(ET.fromstring(xml_text), counts, k, n)
    rw = _Rewriter(lay)
    for cat, name in _COUNT.items():
        c_source = re.sub(rf"^(#define {name}\s+){counts[cat]}$", lambda m, c=cat: f"{m.group(1)}{lay.new_counts[c]}",
                          c_source, count=1, flags=re.M)
    lines = c_source.split("\n")
    start = next((i for i, ln in enumerate(lines) if ln.strip() == "memset(m->xdot, 0, sizeof(m->xdot));"), None)
    if start is None:
        raise ReplicationError("Solve IR of compute_derivatives not found")
    end = start + 1
    while end < len(lines) and (lines[end].startswith("\tdouble __r") or lines[end].startswith("\tm->xdot[")
                                or not lines[end].strip()):
        end += 1
    region = lines[start + 1:end]
    body = [i for i, ln in enumerate(region) if ln.strip()]
    if not body or any(not region[i].strip() for i in range(body[0], body[-1] + 1)):
        raise ReplicationError("Solve IR of compute_derivatives is empty or has blank lines inside")
    head = _named_section(lines[:start + 1], rw) + region[:body[0]]
    tail = region[body[-1] + 1:] + _named_section(lines[end:], rw)
    return drop_unused_locals("\n".join(head + _solve_ir(region[body[0]:body[-1] + 1], rw) + tail))
