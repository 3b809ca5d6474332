"""Build an FMI 2.0 co-simulation FMU from Modelica source with rumoca + gcc, cached by content hash.

Pipeline: ``rumoca.loads(source, model=...).codegen("fmi2")`` (C source + modelDescription.xml) ->
:func:`order_algebraics` (rumoca 0.9.13 assigns algebraic variables out of dependency order) ->
:func:`install_integrator` (Heun sub-steps sized to the plant instead of 10 forward-Euler ones, and a C loop over
many communication steps) -> ``gcc -O2
-shared -fPIC`` -> fix-up of modelDescription.xml (rumoca 0.9.13 output fails ``fmpy.validation.validate_fmu``) ->
zip (in memory) -> ``fmpy.validation.validate_fmu`` -> :func:`jobs.cachedirs.write_entry` into the cache.

The cache key is the sha256 of (model name, source, rumoca version, gcc version, :data:`BUILD_SCRIPT_VERSION`), so
any change to one of them triggers a rebuild and nothing else does. Beside each ``<model>-<key16>.fmu`` a record
``<model>-<key16>.fmu.json`` holds the key and the SHA-256 of the FMU's bytes, written at build; every use hashes
the bytes again and compares (:func:`fetch_fmu`): a truncated, damaged or planted entry (no record, or a record
that does not match) is rebuilt, never loaded. The cache folder must be the user's own and not writable by others
(:func:`jobs.cachedirs.private_dir`; created ``0700``), else it is refused: a record beside an entry
proves nothing in a folder others can write; the check runs on every folder from the cache root down. Entries are
written by the one writer (:func:`jobs.cachedirs.write_entry`: a private temporary of random name, ``os.replace``)
under a lock of that entry only (:func:`jobs.cachedirs.cache_lock`), so concurrent MPI ranks see one build, another
plant's build never waits for it, and a killed build leaves at most a stray temporary, never a corrupt ``.fmu``.
The bytes verified are the bytes loaded: :func:`fetch_fmu_bytes` returns them, and the plant opens a private copy
of them (:func:`jobs.cachedirs.verified_copy`), never the cache file again by name.
"""

from __future__ import annotations

from collections.abc import Callable

import hashlib
import io
import json
import re
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from functools import lru_cache
from pathlib import Path

__all__ = [
    "BUILD_SCRIPT_VERSION",
    "FMUBuildError",
    "build_fmu",
    "cache_key",
    "default_cache_dir",
    "fetch_fmu",
    "fetch_fmu_bytes",
    "fix_model_description",
    "install_integrator",
    "quadrature_states",
    "order_algebraics",
]

#: Bump whenever this module changes what ends up in the FMU (part of the cache key).
BUILD_SCRIPT_VERSION = "4"

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class FMUBuildError(RuntimeError):
    """rumoca code generation, gcc compilation, or FMU validation failed (message carries the tool output)."""


def default_cache_dir() -> Path:
    """Return the default FMU cache directory (:func:`jobs.cachedirs.fmu_cache_dir`).

    Returns
    -------
    pathlib.Path
        ``$HPCTWIN_FMU_CACHE_DIR`` if set, else ``<root>/fmu`` with ``<root>`` = ``$HPCTWIN_CACHE_DIR`` or the
        platform's user cache folder (``~/.cache/hpctwin`` on Linux).
    """
    from jobs.cachedirs import fmu_cache_dir

    return fmu_cache_dir()


def _rumoca_version() -> str:
    import rumoca  # heavy, optional at import time: rumoca (Modelica compiler) is loaded only to build an FMU

    v = rumoca.version
    return str(v() if callable(v) else v)


@lru_cache(maxsize=4)
def _gcc_version(gcc: str) -> str:
    try:
        out = subprocess.run([gcc, "--version"], capture_output=True, text=True, check=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        raise FMUBuildError(f"C compiler {gcc!r} not usable: {exc}") from exc
    return out.stdout.splitlines()[0].strip() if out.stdout else "unknown"


def _gcc() -> str:
    gcc = shutil.which("gcc")
    if gcc is None:
        raise FMUBuildError("gcc not found on PATH: it is needed to compile the cooling-plant FMU")
    return gcc


def cache_key(source: str, model_name: str) -> str:
    """Content hash identifying one FMU build.

    Parameters
    ----------
    source : str
        Modelica source text.
    model_name : str
        Name of the model to build.

    Returns
    -------
    str
        Hex sha256 of model name, source, rumoca version, gcc version and :data:`BUILD_SCRIPT_VERSION`; for a
        plant built by CDU replication (:func:`cooling_fmu.replicate.build_fingerprint`), also of the replicator's
        source text, the number of CDUs it has rumoca generate and its gcc level.

    Notes
    -----
    Raises :class:`FMUBuildError` (from the gcc look-up) if gcc is missing.
    """
    from .replicate import build_fingerprint

    h = hashlib.sha256()
    parts = [model_name, source, _rumoca_version(), _gcc_version(_gcc()), BUILD_SCRIPT_VERSION]
    parts += [build_fingerprint(source)] if build_fingerprint(source) else []  # many-CDU plants: the replicator too
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


_ELEMENT = re.compile(r"\[(\d+)\]$")


def _fix_real_variable(sv: ET.Element, real: ET.Element, svs: list[ET.Element], index_of: dict) -> bool:
    """Fixes 1, 2 and 4 of :func:`fix_model_description` on one Real variable; True if it is a ``der(x)``.

    Raises :class:`FMUBuildError` for an array start value that names no element, or a ``der(x)`` of an unknown x.
    """
    name = sv.get("name", "")
    if sv.get("initial") == "calculated" and "start" in real.attrib:
        del real.attrib["start"]
    start = real.get("start")
    if start is not None and start.strip().startswith("["):
        m = _ELEMENT.search(name)
        values = [v.strip() for v in start.strip()[1:-1].split(",")]
        if m is None or int(m.group(1)) > len(values) or "[" in start.strip()[1:]:
            raise FMUBuildError(f"cannot fix array start value {start!r} of variable {name!r}")
        real.set("start", values[int(m.group(1)) - 1])
    if not (name.startswith("der(") and name.endswith(")")):
        return False
    state = name[4:-1]
    if state not in index_of:
        raise FMUBuildError(f"derivative {name!r} refers to unknown state {state!r}")
    real.set("derivative", str(index_of[state]))
    state_unit = svs[index_of[state] - 1].find("Real")
    if state_unit is not None and state_unit.get("unit") and "unit" not in real.attrib:
        real.set("unit", f"{state_unit.get('unit')}/s")
    return True


def fix_model_description(xml_text: str) -> str:
    """Make a rumoca 0.9.13 modelDescription.xml pass ``fmpy.validation.validate_fmu``.

    Fixes applied (each is a defect of rumoca 0.9.13's fmi2 template):

    1. ``start`` removed from variables with ``initial="calculated"`` (FMI 2.0 forbids it).
    2. Parameter array elements carry the whole array as start (``start="[300, 301]"``): replaced by the element.
    3. Declared units are added to ``<UnitDefinitions>``.
    4. ``der(x)`` variables get ``derivative="<index of x>"`` and the unit of ``x`` per second.
    5. ``<InitialUnknowns>`` lists every output and every state derivative (ascending indices), as FMI 2.0
       requires for ``initial="calculated"`` variables.

    Parameters
    ----------
    xml_text : str
        modelDescription.xml as generated by rumoca.

    Returns
    -------
    str
        The fixed XML (UTF-8 declaration included).

    Raises
    ------
    FMUBuildError
        If the XML cannot be parsed or a ``der(x)`` names an unknown variable.
    """
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise FMUBuildError(f"rumoca produced unparsable modelDescription.xml: {exc}") from exc
    mv = root.find("ModelVariables")
    if mv is None:
        raise FMUBuildError("modelDescription.xml has no <ModelVariables>")
    svs = list(mv.findall("ScalarVariable"))
    index_of = {sv.get("name"): i + 1 for i, sv in enumerate(svs)}
    units: list[str] = []
    outputs: list[int] = []
    derivatives: list[int] = []
    for i, sv in enumerate(svs, start=1):
        real = sv.find("Real")
        if real is None:
            continue
        if _fix_real_variable(sv, real, svs, index_of):
            derivatives.append(i)
        if real.get("unit") and real.get("unit") not in units:
            units.append(real.get("unit"))
        if sv.get("causality") == "output":
            outputs.append(i)
    # 3. unit definitions, right after ModelExchange/CoSimulation (schema order: ModelExchange, CoSimulation,
    #    UnitDefinitions, TypeDefinitions, LogCategories, ...)
    old = root.find("UnitDefinitions")
    if old is not None:
        root.remove(old)
    ud = ET.Element("UnitDefinitions")
    for u in units:
        ET.SubElement(ud, "Unit", {"name": u})
    children = list(root)
    pos = max((k + 1 for k, ch in enumerate(children) if ch.tag in ("ModelExchange", "CoSimulation")), default=0)
    root.insert(pos, ud)
    # 5. model structure
    ms = root.find("ModelStructure")
    if ms is None:
        ms = ET.SubElement(root, "ModelStructure")
    for child in list(ms):
        ms.remove(child)
    if outputs:
        o = ET.SubElement(ms, "Outputs")
        for i in outputs:
            ET.SubElement(o, "Unknown", {"index": str(i)})
    if derivatives:
        d = ET.SubElement(ms, "Derivatives")
        for i in derivatives:
            ET.SubElement(d, "Unknown", {"index": str(i)})
    init = sorted(set(outputs) | set(derivatives))
    if init:
        iu = ET.SubElement(ms, "InitialUnknowns")
        for i in init:
            ET.SubElement(iu, "Unknown", {"index": str(i)})
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=False).join(
        ['<?xml version="1.0" encoding="UTF-8"?>\n', "\n"]
    )


_ASSIGN = re.compile(r"^    ([A-Za-z_]\w*) = (.*);$")
_STORE = re.compile(r"^    m->[wy]\[\d+\] = ([A-Za-z_]\w*);  /\*.*\*/$")
_TOKEN = re.compile(r"[A-Za-z_]\w*")


def order_algebraics(c_source: str) -> tuple[str, int]:
    """Re-order the algebraic assignments of a rumoca 0.9.13 C file into dependency order.

    rumoca 0.9.13 (silent defect, found with the energy-balance test): ``compute_algebraics`` assigns outputs first
    and then the other algebraic variables, not in dependency order, and reads not-yet-assigned variables from the
    previous evaluation. ``fmi2DoStep`` evaluates it once per Euler sub-step, so every algebraic that depends on a
    later one lags one sub-step (the heat-balance residual of a transient was 6e-4 instead of 1e-12). This pass
    parses the ``NAME = EXPR;`` / ``m->w[k] = NAME;`` pairs of ``compute_algebraics`` and sorts them topologically
    (stable: original order among independent ones).

    Parameters
    ----------
    c_source : str
        The generated C file.

    Returns
    -------
    (str, int)
        The fixed C source and the number of assignments that moved.

    Raises
    ------
    FMUBuildError
        If the function is not found, a line in the assignment section has an unexpected form, or the
        assignments form an algebraic loop (the message names the variables).
    """
    head = "static void compute_algebraics(ModelInstance* m) {\n"
    start = c_source.find(head)
    if start < 0:
        raise FMUBuildError("order_algebraics: compute_algebraics() not found in the rumoca C source")
    end = c_source.find("\n}\n", start)
    body = c_source[start + len(head):end].split("\n")
    first = next((i for i, ln in enumerate(body) if _ASSIGN.match(ln) and not ln.lstrip().startswith(
        ("double", "const"))), None)
    if first is None:
        return c_source, 0
    pairs: list[tuple[str, str, str]] = []
    lines = [ln for ln in body[first:] if ln.strip() and not ln.strip().startswith("/*")]
    if len(lines) % 2:
        raise FMUBuildError("order_algebraics: odd number of lines in the assignment section")
    for a, b in zip(lines[::2], lines[1::2]):
        ma, mb = _ASSIGN.match(a), _STORE.match(b)
        if ma is None or mb is None or mb.group(1) != ma.group(1):
            raise FMUBuildError(f"order_algebraics: unexpected lines in compute_algebraics:\n{a}\n{b}")
        pairs.append((ma.group(1), a, b))
    names = {p[0]: i for i, p in enumerate(pairs)}
    deps = [{names[t] for t in _TOKEN.findall(_ASSIGN.match(a).group(2)) if t in names and t != nm}
            for nm, a, _ in pairs]
    done: list[int] = []
    placed = [False] * len(pairs)
    while len(done) < len(pairs):
        ready = [i for i in range(len(pairs)) if not placed[i] and all(placed[d] for d in deps[i])]
        if not ready:
            loop = [pairs[i][0] for i in range(len(pairs)) if not placed[i]]
            raise FMUBuildError(f"order_algebraics: algebraic loop among {loop[:10]}")
        for i in ready:
            placed[i] = True
        done += ready
    moved = sum(1 for k, i in enumerate(done) if k != i)
    new_body = body[:first] + [ln for i in done for ln in pairs[i][1:]]
    return c_source[:start + len(head)] + "\n".join(new_body) + c_source[end:], moved


#: Deepest bisection of a nominal Heun sub-step by the error control (2**6 = 64 pieces; :func:`install_integrator`).
MAX_BISECTIONS = 6

#: C that replaces the body of rumoca's fmi2DoStep (see :func:`install_integrator`).
_DOSTEP_C = """FMI2_EXPORT fmi2Status fmi2DoStep(
    fmi2Component c,
    fmi2Real      currentCommunicationPoint,
    fmi2Real      communicationStepSize,
    fmi2Boolean   noSetFMUStatePriorToCurrentPoint)
{
    (void)noSetFMUStatePriorToCurrentPoint;
    ModelInstance* m = (ModelInstance*)c;
    /* hpctwin: Heun's method (explicit trapezoidal rule, 2nd-order Runge-Kutta; Hairer, Norsett & Wanner,
       Solving ODEs I, 2nd ed., sec. II.1) in n equal sub-steps of at most hpctwin_h_max seconds
       (hpctwin_set_max_substep); unset, 10 sub-steps as rumoca's forward Euler had. Inputs are held.
       With a tolerance (hpctwin_set_tolerance), a piece whose local error estimate (Heun minus Euler,
       0.5 h |k2 - k1| per state; Hairer et al. sec. II.4) exceeds it is bisected, HPCTWIN_MAX_DEPTH levels at
       most: a dynamic state's estimate against tol_x (its own units), a running integral's (E_*, M_*) against
       tol_q times its increment over the piece. The pieces form a fixed binary tree on the nominal sub-step:
       the result depends on the states and inputs only, and a sub-step not bisected is the plain Heun step. */
    const double H = communicationStepSize;
    int n = 10;
    if (m->hpctwin_h_max > 0.0) {
        n = (int)ceil(H / m->hpctwin_h_max - 1.0e-9);
        if (n < 1) n = 1;
    }
    const double dt = H / (double)n;
#if N_STATES > 0
    double x0[N_STATES], k1[N_STATES];
    const int control = m->hpctwin_tol_x > 0.0 || m->hpctwin_tol_q > 0.0;
    const unsigned full = control ? 1u << HPCTWIN_MAX_DEPTH : 1u;
#endif
    for (int s = 0; s < n; s++) {
        const double t = currentCommunicationPoint + (double)s * dt;
#if N_STATES > 0
        unsigned pos = 0, level = 0;
        int have_k1 = 0;
        while (pos < full) {
            const unsigned size = full >> level;
            const double h = dt * (double)size / (double)full;
            const double tp = t + dt * (double)pos / (double)full;
            if (!have_k1) {
                m->time = tp;
                m->dirty_values = 1;
                compute_derivatives(m);
                for (int i = 0; i < N_STATES; i++) {
                    x0[i] = m->x[i];
                    k1[i] = m->xdot[i];
                }
                have_k1 = 1;
            }
            for (int i = 0; i < N_STATES; i++) m->x[i] = x0[i] + h * k1[i];
            m->time = tp + h;
            m->dirty_values = 1;
            compute_derivatives(m);
            int ok = 1;
            if (control && level < (unsigned)HPCTWIN_MAX_DEPTH) {
                for (int i = 0; i < N_STATES; i++) {
                    const double e = 0.5 * h * fabs(m->xdot[i] - k1[i]);
                    const double lim = hpctwin_quadrature[i]
                        ? m->hpctwin_tol_q * 0.5 * h * (fabs(k1[i]) + fabs(m->xdot[i]))
                        : m->hpctwin_tol_x;
                    if (e > lim) { ok = 0; break; }
                }
            }
            if (!ok) {  /* bisect: the first half from the same start, k1 kept */
                for (int i = 0; i < N_STATES; i++) m->x[i] = x0[i];
                level++;
                continue;
            }
            for (int i = 0; i < N_STATES; i++) m->x[i] = x0[i] + 0.5 * h * (k1[i] + m->xdot[i]);
            m->hpctwin_pieces += 1.0;
            have_k1 = 0;
            pos += size;
            while (level > 0 && pos % (full >> (level - 1)) == 0) level--;  /* both halves done: one level up */
        }
#else
        (void)t;
#endif
    }
    m->time = currentCommunicationPoint + H;
    m->dirty_values = 1;
    compute_derivatives(m);
    return fmi2OK;
}
"""

#: Exported helpers appended to the generated C (see :func:`install_integrator`).
_HELPERS_C = """
/* ---- hpctwin additions (cooling_fmu/build.py install_integrator) ---- */
FMI2_EXPORT int hpctwin_set_max_substep(fmi2Component c, double h_max)
{
    ModelInstance* m = (ModelInstance*)c;
    if (!(h_max >= 0.0)) return 1;
    m->hpctwin_h_max = h_max;
    return 0;
}

/* Error control of the sub-steps (fmi2DoStep): tol_x for dynamic states [their units], tol_q relative to a running
   integral's increment; both 0 (the default) = plain equal sub-steps. */
FMI2_EXPORT int hpctwin_set_tolerance(fmi2Component c, double tol_x, double tol_q)
{
    ModelInstance* m = (ModelInstance*)c;
    if (!(tol_x >= 0.0) || !(tol_q >= 0.0)) return 1;
    m->hpctwin_tol_x = tol_x;
    m->hpctwin_tol_q = tol_q;
    return 0;
}

/* Heun pieces taken since instantiation (sub-steps, counting each bisected piece). */
FMI2_EXPORT double hpctwin_pieces(fmi2Component c)
{
    return ((ModelInstance*)c)->hpctwin_pieces;
}

/* Advance n communication steps of length h from t0: row j of u (n_in values) is set, the step is taken and row
   j of out (n_out values) is read. Returns the number of steps completed; *status gets the first non-OK status
   shifted as in CoolingPlant.run (set << 0, step << 3, get << 6), 0 when all steps completed. */
FMI2_EXPORT size_t hpctwin_run(fmi2Component c, size_t n, double t0, double h,
                               const fmi2ValueReference* vr_in, size_t n_in, const double* u,
                               const fmi2ValueReference* vr_out, size_t n_out, double* out, int* status)
{
    *status = 0;
    for (size_t j = 0; j < n; j++) {
        int st = (int)fmi2SetReal(c, vr_in, n_in, u + j * n_in);
        st |= (int)fmi2DoStep(c, t0 + (double)j * h, h, 1) << 3;
        st |= (int)fmi2GetReal(c, vr_out, n_out, out + j * n_out) << 6;
        if (st) {
            *status = st;
            return j;
        }
    }
    return n;
}
"""


def install_integrator(c_source: str) -> str:
    """Replace rumoca's forward-Euler ``fmi2DoStep`` by Heun sub-steps sized to the plant; add a multi-step loop.

    rumoca 0.9.13's ``fmi2DoStep`` takes 10 forward-Euler sub-steps per communication step, whatever the step and
    the plant (27 us of a 30 us Theta-plant step went there). The replacement integrates with Heun's method
    (explicit trapezoidal rule: two evaluations per sub-step, global error O(h^2); Hairer, Norsett & Wanner,
    "Solving Ordinary Differential Equations I", 2nd ed., Springer 1993, sec. II.1) in ``n = ceil(H / h_max)``
    equal sub-steps, where ``h_max`` is set per instance by the exported ``hpctwin_set_max_substep(c, h_max)``
    (:class:`cooling_fmu.plant.CoolingPlant` passes :func:`cooling_fmu.plant.max_stable_step_s`); an instance
    whose ``h_max`` was never set (another FMI importer) takes 10 sub-steps. The running energy totals ``E_*`` are
    states like the temperatures, so their trapezoidal integrals are what the plant reports.

    ``hpctwin_run(c, n, t0, h, vr_in, n_in, u, vr_out, n_out, out, &status)`` runs ``n`` communication steps in
    one call (set inputs, step, get outputs, per row of ``u`` / ``out``) and returns how many completed, so the
    Python loop's per-step overhead goes (site FMUs without it keep the Python loop).

    Parameters
    ----------
    c_source : str
        The generated C file (after :func:`order_algebraics`).

    Returns
    -------
    str
        The C source with the new ``fmi2DoStep``, a ``hpctwin_h_max`` field in ``ModelInstance`` and the helpers.

    Raises
    ------
    FMUBuildError
        If the instance struct or ``fmi2DoStep`` is not where rumoca 0.9.13 puts them.
    """
    struct_end = "} ModelInstance;"
    if c_source.count(struct_end) != 1:
        raise FMUBuildError("install_integrator: 'typedef struct {...} ModelInstance;' not found once in the C source")
    fields = "".join(f"    fmi2Real    {f};\n" for f in ("hpctwin_h_max", "hpctwin_tol_x", "hpctwin_tol_q", "hpctwin_pieces"))
    c_source = c_source.replace(struct_end, fields + struct_end, 1)
    head = "FMI2_EXPORT fmi2Status fmi2DoStep("
    start = c_source.find(head)
    end = c_source.find("\n}\n", start)
    if start < 0 or end < 0 or "forward Euler" not in c_source[start:end]:
        raise FMUBuildError("install_integrator: rumoca's forward-Euler fmi2DoStep not found in the C source")
    if "#include <math.h>" not in c_source:
        c_source = "#include <math.h>\n" + c_source
    quad = quadrature_states(c_source)
    table = (f"#define HPCTWIN_MAX_DEPTH {MAX_BISECTIONS}\n"
             "/* hpctwin: 1 = a running integral (E_*, M_*: nothing depends on it), its error taken relative */\n"
             "static const unsigned char hpctwin_quadrature[N_STATES > 0 ? N_STATES : 1] = {"
             + (", ".join("1" if q else "0" for q in quad) or "0") + "};\n")
    return c_source[:start] + table + _DOSTEP_C.rstrip("\n") + c_source[end + 2:] + _HELPERS_C


#: rumoca 0.9.13's start value of a state in ``fmi2Instantiate``: ``m->x[i] = <value>;  /* <name> */``.
_STATE_START = re.compile(r"m->x\[(\d+)\] = [^;\n]*;\s*/\* ([A-Za-z_][A-Za-z0-9_]*)(?:\[\d+\])? \*/")
#: Names of the running integrals in the generated plant (cooling_fmu.modelica: ``der(E_x) = P_x``, ``M_makeup``).
_QUADRATURE_NAME = re.compile(r"^(E|M)_")


def quadrature_states(c_source: str) -> list[bool]:
    """Which states of rumoca's C are running integrals (energy ``E_*`` and mass ``M_*`` totals of the plant).

    Their derivative feeds no other equation, so their local error is judged against their own increment, not an
    absolute tolerance (:data:`_DOSTEP_C`'s error control).

    Parameters
    ----------
    c_source : str
        rumoca 0.9.13's C, whose ``fmi2Instantiate`` sets each state's start value with its name in a comment.

    Returns
    -------
    list of bool
        One per state index ``0 .. N_STATES - 1`` (True: a running integral); empty when no state is named (then
        every state is judged as a dynamic one, or there is none).
    """
    names: dict[int, str] = {}
    for mt in _STATE_START.finditer(c_source):
        names.setdefault(int(mt.group(1)), mt.group(2))
    n = max(names) + 1 if names else 0
    return [bool(_QUADRATURE_NAME.match(names.get(i, ""))) for i in range(n)]


def _codegen(source: str, model_name: str, out_dir: Path, phase=lambda _msg: None) -> None:
    """Write rumoca's C and modelDescription.xml of the model into ``out_dir``; many CDUs by CDU replication.

    A plant of :func:`cooling_fmu.modelica.generate_plant_modelica` with more than
    :data:`cooling_fmu.replicate.REPLICATE_ABOVE_CDUS` CDUs is generated by rumoca with
    :data:`cooling_fmu.replicate.K_CDUS` CDUs and rewritten for all of them (:mod:`cooling_fmu.replicate`); if its
    C is not of the shape the replicator knows, the whole model goes to rumoca instead (slow, and said).
    """
    from . import replicate

    if replicate.build_fingerprint(source):
        try:
            small = replicate.reduce_source(source)
            phase(f"rumoca code generation ({replicate.K_CDUS} CDUs, replicated to {replicate.n_cdus_of(source)})")
            _rumoca_save(small, model_name, out_dir)
            replicate.replicate_tree(out_dir, model_name, replicate.K_CDUS, replicate.n_cdus_of(source))
            return
        except replicate.ReplicationError as exc:
            phase(f"CDU replication not possible ({exc}); rumoca code generation of the whole model")
            shutil.rmtree(out_dir)
            out_dir.mkdir()
    _rumoca_save(source, model_name, out_dir)


def _rumoca_save(source: str, model_name: str, out_dir: Path) -> None:
    import rumoca  # heavy, optional at import time: rumoca (Modelica compiler) is loaded only to build an FMU

    try:
        model = rumoca.loads(source, model=model_name, filename=f"{model_name}.mo")
        result = model.codegen("fmi2")
    except Exception as exc:  # rumoca raises ParseError / CompileError / RuntimeError subclasses
        raise FMUBuildError(f"rumoca {_rumoca_version()} failed on model {model_name!r}: {exc}") from exc
    result.save_all(str(out_dir))


def _compile(src_c: Path, out_so: Path, opt: str = "-O2") -> None:
    import fmpy  # heavy: fmpy is loaded only when an FMU is built or opened

    include = Path(fmpy.__file__).resolve().parent / "c-code"
    cmd = [_gcc(), opt, "-shared", "-fPIC", f"-I{include}", "-o", str(out_so), str(src_c), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise FMUBuildError(
            f"gcc failed (exit {proc.returncode}) compiling {src_c.name}:\n$ {' '.join(cmd)}\n"
            f"{proc.stdout}{proc.stderr}"
        )


def _record_path(target: Path) -> Path:
    return target.with_name(target.name + ".json")


def _verified_entry(target: Path, key: str) -> tuple[str, bytes] | None:
    """``(sha256, bytes)`` of ``target`` if its record names ``key`` and the digest of these very bytes, else None.

    The entry is read once through a descriptor that does not follow links and is checked (owner, mode) on that
    descriptor (:func:`jobs.cachedirs.read_entry`); the bytes returned are the bytes hashed, so a caller that loads
    them (through :func:`jobs.cachedirs.verified_copy`) loads what was verified, whatever happens to the cache file
    afterwards.
    """
    from jobs.cachedirs import read_entry, sha256_bytes

    try:
        rec = json.loads(read_entry(_record_path(target), "FMU cache record").decode("utf-8"))
        data = read_entry(target, "FMU cache entry")
    except (FileNotFoundError, ValueError):
        return None
    digest = sha256_bytes(data)
    if not isinstance(rec, dict) or rec.get("key") != key or rec.get("sha256") != digest:
        return None
    return digest, data


def build_fmu(source: str, model_name: str, cache_dir: str | Path | None = None,
              on_phase: Callable[[str], None] | None = None) -> Path:
    """Build (or fetch from the cache, verified) an FMI 2.0 FMU for a Modelica model; see :func:`fetch_fmu`.

    Parameters
    ----------
    source : str
        Modelica source text.
    model_name : str
        Model to build.
    cache_dir : str | Path | None
        Cache directory (default :func:`default_cache_dir`).
    on_phase : Callable[[str], None] | None
        Told each build phase as it starts (see :func:`fetch_fmu`).

    Returns
    -------
    pathlib.Path
        Path of the cached ``<model_name>-<hash16>.fmu``.
    """
    return fetch_fmu(source, model_name, cache_dir, on_phase)[0]


def fetch_fmu(source: str, model_name: str, cache_dir: str | Path | None = None,
              on_phase: Callable[[str], None] | None = None) -> tuple[Path, str]:
    """Build (or fetch from the cache) an FMI 2.0 FMU for a Modelica model, with the SHA-256 it was verified by.

    Parameters
    ----------
    source : str
        Modelica source text containing ``model_name`` (one flat model; see the rumoca notes).
    model_name : str
        Name of the model to build; a plain Modelica identifier.
    cache_dir : str | Path | None
        Cache directory; default :func:`default_cache_dir`. Created ``0700`` if missing.
    on_phase : Callable[[str], None] | None
        Called with a short description as each phase of a build starts (rumoca code generation, ordering the
        algebraics, gcc, fmpy validation), so a caller can show progress; not called on a cache hit. Exceptions
        it raises propagate.

    Returns
    -------
    (pathlib.Path, str)
        Path of the cached ``<model_name>-<hash16>.fmu`` (model exchange + co-simulation, linux64 binary,
        sources and the Modelica source under ``sources/``) and the hex SHA-256 of its bytes, checked against the
        record written at build (a cached entry that fails the check is rebuilt first). Record this digest as the
        run's FMU checksum.

    Notes
    -----
    Errors are those of :func:`fetch_fmu_bytes`: ``ValueError`` for a model name that is not a plain identifier,
    :class:`FMUBuildError` if rumoca or gcc fails (message includes their output) or the result fails fmpy
    validation, :class:`jobs.cachedirs.CacheTrustError` if the cache folder, a folder above it up to the cache root,
    or the entry belongs to another user or is writable by others (unverifiable: refused).
    """
    target, digest, _data = fetch_fmu_bytes(source, model_name, cache_dir, on_phase)
    return target, digest


def fetch_fmu_bytes(source: str, model_name: str, cache_dir: str | Path | None = None,
                    on_phase: Callable[[str], None] | None = None) -> tuple[Path, str, bytes]:
    """As :func:`fetch_fmu`, with the verified bytes: load those (:func:`jobs.cachedirs.verified_copy`), not the path.

    The cache folder is checked on its whole path from the cache root (:func:`jobs.cachedirs.private_dir`), the
    entry is read once and hashed (:func:`_verified_entry`), under a lock of this entry only
    (:func:`jobs.cachedirs.cache_lock`): a build of another plant does not wait for it.

    Parameters
    ----------
    source : str
        Modelica source text containing ``model_name``.
    model_name : str
        Name of the model to build; a plain Modelica identifier.
    cache_dir : str | Path | None
        Cache directory; default :func:`default_cache_dir`. Created ``0700`` if missing.
    on_phase : Callable[[str], None] | None
        Told each build phase as it starts (see :func:`fetch_fmu`).

    Returns
    -------
    (pathlib.Path, str, bytes)
        The cache entry's path (its name is the FMU's name in messages and files), the hex SHA-256 of its bytes and
        the bytes themselves, as verified.

    Raises
    ------
    ValueError
        If ``model_name`` is not a plain identifier.
    FMUBuildError
        If rumoca or gcc fails, or the result fails fmpy validation, or a failed entry cannot be removed. A cache
        folder, a folder above it up to the cache root, or an entry that belongs to another user or is writable by
        others raises :class:`jobs.cachedirs.CacheTrustError` (unverifiable: refused).
    """
    from jobs.cachedirs import cache_lock, private_dir, sha256_bytes

    if not _IDENT.match(model_name):
        raise ValueError(f"model_name must be a plain Modelica identifier, got {model_name!r}")
    cache = private_dir(Path(cache_dir) if cache_dir is not None else default_cache_dir(), "FMU cache folder")
    key = cache_key(source, model_name)
    target = cache / f"{model_name}-{key[:16]}.fmu"
    with cache_lock(cache, target.name):
        hit = _verified_entry(target, key)
        if hit is not None:
            return target, hit[0], hit[1]
        for stale in (target, _record_path(target)):  # absent, or failed its check: rebuilt from the source
            try:
                stale.unlink(missing_ok=True)
            except OSError as exc:
                raise FMUBuildError(f"{stale}: FMU cache entry failed its content check and cannot be removed "
                                    f"({exc.strerror}); it is not used") from None
        digest, data = _build_into(source, model_name, cache, target, key, sha256_bytes,
                                   on_phase or (lambda _msg: None))
    return target, digest, data


def _build_into(source: str, model_name: str, cache: Path, target: Path, key: str, sha256_bytes,
                phase) -> tuple[str, bytes]:
    """Build the FMU, then write it and its record (key, SHA-256) into place; return the digest and the bytes."""
    from jobs.cachedirs import write_entry

    with tempfile.TemporaryDirectory(prefix=f".{model_name}-", dir=cache) as tmp:
        tree = Path(tmp) / "fmu"
        tree.mkdir()
        phase(f"rumoca code generation ({source.count(chr(10)) + 1:,} lines of Modelica)")
        _codegen(source, model_name, tree, phase)
        c_file = tree / "sources" / f"{model_name}.c"
        if not c_file.is_file():
            raise FMUBuildError(f"rumoca did not generate {c_file.relative_to(tree)}")
        phase("ordering the algebraics")
        c_file.write_text(install_integrator(order_algebraics(c_file.read_text(encoding="utf-8"))[0]),
                          encoding="utf-8")
        bindir = tree / "binaries" / "linux64"
        bindir.mkdir(parents=True)
        from .replicate import gcc_optimisation

        opt = gcc_optimisation(source)
        phase(f"gcc {opt} ({c_file.stat().st_size / 1e6:.1f} MB of C)")
        _compile(c_file, bindir / f"{model_name}.so", opt)
        md = tree / "modelDescription.xml"
        md.write_text(fix_model_description(md.read_text(encoding="utf-8")), encoding="utf-8")
        (tree / "sources" / f"{model_name}.mo").write_text(source, encoding="utf-8")
        for junk in ("build.sh",):
            (tree / junk).unlink(missing_ok=True)

        # zipped in memory, validated from a file in this private build folder (mkdtemp, 0700), then the very
        # bytes validated are hashed and written by the one writer (private temporary, no link followed)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(tree.rglob("*")):
                if path.is_file():
                    zf.write(path, path.relative_to(tree).as_posix())
        data = buf.getvalue()
        check = Path(tmp) / f"{model_name}.fmu"
        write_entry(check, data)
        from fmpy.validation import validate_fmu  # heavy: fmpy is loaded only when an FMU is built or opened

        phase("fmpy validation")
        problems = validate_fmu(str(check))
        if problems:
            raise FMUBuildError(f"FMU for {model_name!r} fails fmpy validation:\n" + "\n".join(problems))
        digest = sha256_bytes(data)
        write_entry(target, data)  # the FMU first, its record last: a record always names a whole FMU
        write_entry(_record_path(target), json.dumps({"key": key, "sha256": digest, "model": model_name,
                                                       "build_script_version": BUILD_SCRIPT_VERSION}).encode("utf-8"))
    return digest, data
