"""Platform description (:class:`System`) and its loader from TOML files in ``power/systems/``.

Topology convention
-------------------
Rack *positions* are numbered ``0 .. n_cdus * rack_positions_per_cdu - 1``; position ``q`` belongs to CDU
``q // rack_positions_per_cdu``. Positions listed in ``missing_rack_positions`` hold no rack. Populated racks are
numbered ``0 .. n_racks - 1`` in position order, and nodes are numbered rack by rack (``nodes_per_rack``
consecutive nodes per rack). Within a rack, rectifier groups are ``nodes_per_rectifier`` consecutive nodes; the
last group of a rack is smaller when ``nodes_per_rack`` is not a multiple of ``nodes_per_rectifier``.

Rack overhead (switches, controllers)
-------------------------------------
``rack_overhead.P_W`` is a constant per-rack load. With ``side = "dc"`` it is fed by the rack's rectifiers
(split equally among them) and so carries rectifier loss but no SIVOC loss, as RAPS does for Frontier's
switches. With ``side = "ac"`` it is added at rack input with no conversion loss modelled (the device's own
supply losses are inside its nameplate figure). Either way it is IT power (inside rack input).

CDU own power
-------------
``cdu.P_own_W`` (pumps, controls of each CDU) is a published reference figure (e.g. RAPS' 8,473.47 W for Frontier).
It is NOT IT power and the power chain never adds it to rack input or IT input; nor is it cooling energy: the
cooling plant computes its own CDU pump power (``P_pump_sec``), and the tests compare the two.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from jobs.textfiles import read_utf8, toml_loads
from power.conversion import RectifierParams, SivocParams
from power.facility import FacilitySpec
from power.node import NodePowerParams

__all__ = ["SYSTEMS_DIR", "System", "SystemFileError", "available_systems", "load_system"]

#: Directory holding the bundled system files (``<name>.toml``).
SYSTEMS_DIR = Path(__file__).with_name("systems")


class SystemFileError(ValueError):
    """A system TOML file is unreadable or invalid; the message names the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


#: Largest machine a system file may describe (node count, and rack positions): per-node arrays are allocated from
#: these numbers, so they are checked first. 2,000,000 is over 10x the largest machine built so far (Fugaku:
#: 158,976 nodes, RIKEN R-CCS).
MAX_NODES = 2_000_000


class _TopologySpec(_Strict):
    n_cdus: int = Field(ge=1, le=MAX_NODES, description="Number of CDUs")
    rack_positions_per_cdu: int = Field(ge=1, le=MAX_NODES, description="Rack positions served by one CDU")
    nodes_per_rack: int = Field(ge=1, le=MAX_NODES, description="Compute nodes in every populated rack")
    missing_rack_positions: list[int] = Field(default_factory=list, description="Unpopulated rack positions")
    n_nodes: int = Field(ge=1, le=MAX_NODES, description="Declared node count; must equal the count implied by the "
                                                         "topology (at most MAX_NODES)")

    @model_validator(mode="after")
    def _consistent(self) -> _TopologySpec:
        n_pos = self.n_cdus * self.rack_positions_per_cdu
        if n_pos > MAX_NODES:
            raise ValueError(f"n_cdus x rack_positions_per_cdu = {n_pos} rack positions; at most {MAX_NODES} are "
                             f"supported")
        bad = [q for q in self.missing_rack_positions if not 0 <= q < n_pos]
        if bad:
            raise ValueError(f"missing_rack_positions {bad} outside 0..{n_pos - 1}")
        if len(set(self.missing_rack_positions)) != len(self.missing_rack_positions):
            raise ValueError("missing_rack_positions has duplicates")
        implied = (n_pos - len(self.missing_rack_positions)) * self.nodes_per_rack
        if implied != self.n_nodes:
            raise ValueError(
                f"n_nodes = {self.n_nodes} but topology implies {implied} "
                f"(({self.n_cdus} x {self.rack_positions_per_cdu} - {len(self.missing_rack_positions)}) "
                f"x {self.nodes_per_rack})"
            )
        return self


class _RackOverheadSpec(_Strict):
    P_W: float = Field(ge=0.0, description="Constant overhead power per rack (switches, controllers), W")
    side: Literal["dc", "ac"] = Field(description="'dc': fed by the rack's rectifiers; 'ac': at rack input")


class _CduSpec(_Strict):
    P_own_W: float = Field(0.0, ge=0.0, description="Own electrical power of one CDU (pumps), W; plant, not IT")


class _SiteSpec(_Strict):
    name: str = Field("", description="Where the machine stands (free text, printed in the run header)")
    weather: str = Field("", description="Typical-year weather of the site: a shipped site name of "
                                         "cooling_fmu.weather.SITES (golden, chicago, knoxville) or an EPW / TMY3 "
                                         "file, relative to the system file; '' = Golden, CO")


class _SystemSpec(_Strict):
    name: str
    description: str = ""
    cores_per_node: int = Field(ge=1, description="Cores per node, to convert SWF processors to nodes")
    trace_procs_per_node: int | None = Field(
        None, ge=1, description="Processors per node as this site's job logs count them (SWF processors -> nodes "
                                "when neither the run nor the trace header says); default cores_per_node. 1 for "
                                "logs whose processor field counts nodes")
    cooling_plant: str = Field(min_length=1, description="Cooling plant name, resolved by cooling_fmu")
    liquid_fraction: float = Field(1.0, ge=0.0, le=1.0, description="Share of rack input heat sent to the CDU")
    default_cpu_util: float = Field(ge=0.0, le=1.0, description="CPU utilisation for jobs with none recorded")
    default_gpu_util: float = Field(0.0, ge=0.0, le=1.0, description="GPU utilisation for jobs with none recorded")
    topology: _TopologySpec
    node: NodePowerParams
    sivoc: SivocParams
    rectifier: RectifierParams
    rack_overhead: _RackOverheadSpec
    cdu: _CduSpec = _CduSpec()
    facility: FacilitySpec = FacilitySpec()
    site: _SiteSpec = _SiteSpec()


def _ro(a: NDArray[np.int64]) -> NDArray[np.int64]:
    a = np.ascontiguousarray(a, dtype=np.int64)
    a.setflags(write=False)
    return a


@dataclasses.dataclass(frozen=True, eq=False)
class System:
    """Platform description: topology index arrays and power parameters (read-only).

    Attributes
    ----------
    name : str
        System name (``"theta"``, ``"frontier"``, ...).
    source : str
        Path of the file it was loaded from ("" when built in code).
    n_nodes, n_racks, n_cdus, n_rectifiers : int
        Counts of compute nodes, populated racks, CDUs and rectifiers.
    node_rack : ndarray of int64, shape (n_nodes,)
        Rack index of each node, in ``0 .. n_racks - 1``.
    rack_cdu : ndarray of int64, shape (n_racks,)
        CDU index of each rack, in ``0 .. n_cdus - 1``.
    node_cdu : ndarray of int64, shape (n_nodes,)
        CDU index of each node (``rack_cdu[node_rack]``).
    node_rectifier : ndarray of int64, shape (n_nodes,)
        Rectifier index of each node, in ``0 .. n_rectifiers - 1``.
    rectifier_rack : ndarray of int64, shape (n_rectifiers,)
        Rack index of each rectifier.
    rack_position : ndarray of int64, shape (n_racks,)
        Physical rack position of each populated rack (see module docstring).
    node : NodePowerParams
        Node component power figures.
    sivoc : SivocParams
        Node VRM / SIVOC loss parameters.
    rectifier : RectifierParams
        Rectifier loss parameters and group size.
    rack_overhead_W : float
        Constant overhead per rack, W (IT power).
    rack_overhead_side : {"dc", "ac"}
        Where the overhead enters the chain (see module docstring).
    default_cpu_util, default_gpu_util : float
        Utilisation in [0, 1] used for jobs with no recorded utilisation.
    cores_per_node : int
        Cores per node, for converting SWF processors to nodes.
    trace_procs_per_node : int
        Processors per node as the site's job logs count them (the system's fallback for SWF processors -> nodes,
        see :func:`dataloaders.swf.swf_cores_per_node`); ``cores_per_node`` unless the file says otherwise.
    cooling_plant : str
        Name of the cooling plant (resolved by ``cooling_fmu``).
    liquid_fraction : float
        Share of rack input power rejected to the CDU loop, dimensionless in [0, 1].
    cdu_own_power_W : float
        Own electrical power of one CDU (pumps), W. A cooling-plant figure: never part of IT power.
    facility : power.facility.FacilitySpec
        Facility overhead stages (electrical chain, air side, lighting); each may be absent (not counted).
    description : str
        Free-text description from the file.
    site_name : str
        Where the machine stands (``[site] name``); "" if not given.
    site_weather : str
        The site's typical-year weather (``[site] weather``): a shipped site name of
        :data:`cooling_fmu.weather.SITES` or a file path (relative paths are relative to :attr:`source`'s folder);
        "" means the default Golden, CO file.
    """

    name: str
    source: str
    n_nodes: int
    n_racks: int
    n_cdus: int
    n_rectifiers: int
    node_rack: NDArray[np.int64]
    rack_cdu: NDArray[np.int64]
    node_cdu: NDArray[np.int64]
    node_rectifier: NDArray[np.int64]
    rectifier_rack: NDArray[np.int64]
    rack_position: NDArray[np.int64]
    node: NodePowerParams
    sivoc: SivocParams
    rectifier: RectifierParams
    rack_overhead_W: float
    rack_overhead_side: Literal["dc", "ac"]
    default_cpu_util: float
    default_gpu_util: float
    cores_per_node: int
    cooling_plant: str
    liquid_fraction: float
    cdu_own_power_W: float
    description: str = ""
    facility: FacilitySpec = FacilitySpec()
    site_name: str = ""
    site_weather: str = ""
    trace_procs_per_node: int = 0

    @classmethod
    def from_spec(cls, spec: dict, source: str = "") -> System:
        """Build a System from a parsed TOML mapping.

        Parameters
        ----------
        spec : dict
            Mapping with the layout of ``power/systems/*.toml``.
        source : str
            File name used in error messages and stored in :attr:`source`.

        Returns
        -------
        System
            The validated platform description with its index arrays.

        Raises
        ------
        SystemFileError
            If a field is missing, unknown or invalid; the message names `source` and the field path.

        References
        ----------
        .. [1] Topology convention: module docstring of :mod:`power.system`.
        """
        try:
            s = _SystemSpec.model_validate(spec)
        except ValidationError as exc:
            lines = [
                f"{source or '<spec>'}: field '{'.'.join(str(x) for x in e['loc']) or '<root>'}': {e['msg']}"
                for e in exc.errors()
            ]
            raise SystemFileError("invalid system file\n" + "\n".join(lines)) from None
        t = s.topology
        n_pos = t.n_cdus * t.rack_positions_per_cdu
        missing = set(t.missing_rack_positions)
        rack_position = np.array([q for q in range(n_pos) if q not in missing], dtype=np.int64)
        n_racks = rack_position.size
        rack_cdu = rack_position // t.rack_positions_per_cdu
        node_rack = np.repeat(np.arange(n_racks, dtype=np.int64), t.nodes_per_rack)
        npr = s.rectifier.nodes_per_rectifier
        groups_per_rack = -(-t.nodes_per_rack // npr)  # ceil
        local = np.tile(np.arange(t.nodes_per_rack, dtype=np.int64) // npr, n_racks)
        node_rectifier = node_rack * groups_per_rack + local
        rectifier_rack = np.repeat(np.arange(n_racks, dtype=np.int64), groups_per_rack)
        return cls(
            name=s.name,
            source=source,
            n_nodes=int(node_rack.size),
            n_racks=int(n_racks),
            n_cdus=t.n_cdus,
            n_rectifiers=int(rectifier_rack.size),
            node_rack=_ro(node_rack),
            rack_cdu=_ro(rack_cdu),
            node_cdu=_ro(rack_cdu[node_rack]),
            node_rectifier=_ro(node_rectifier),
            rectifier_rack=_ro(rectifier_rack),
            rack_position=_ro(rack_position),
            node=s.node,
            sivoc=s.sivoc,
            rectifier=s.rectifier,
            rack_overhead_W=s.rack_overhead.P_W,
            rack_overhead_side=s.rack_overhead.side,
            default_cpu_util=s.default_cpu_util,
            default_gpu_util=s.default_gpu_util,
            cores_per_node=s.cores_per_node,
            trace_procs_per_node=s.trace_procs_per_node or s.cores_per_node,
            cooling_plant=s.cooling_plant,
            liquid_fraction=s.liquid_fraction,
            cdu_own_power_W=s.cdu.P_own_W,
            description=s.description,
            facility=s.facility,
            site_name=s.site.name,
            site_weather=s.site.weather,
        )


def available_systems() -> list[str]:
    """Names of the bundled system files.

    Returns
    -------
    list of str
        Sorted stems of ``power/systems/*.toml``.

    References
    ----------
    .. [1] Bundled files: ``power/systems/``.
    """
    return sorted(p.stem for p in SYSTEMS_DIR.glob("*.toml"))


def load_system(name_or_path: str | Path) -> System:
    """Load a platform description from a bundled name or a TOML file path.

    Parameters
    ----------
    name_or_path : str or pathlib.Path
        A bundled system name (``"theta"``, ``"frontier"``) or the path of a ``.toml`` file.

    Returns
    -------
    System
        The validated platform description.

    Raises
    ------
    FileNotFoundError
        If the name is not bundled and no such file exists (the message lists the bundled names).
    SystemFileError
        If the file is not valid TOML or a field is missing / unknown / invalid (message names file and field).

    References
    ----------
    .. [1] Python ``tomllib`` (TOML v1.0.0); schema: :class:`System` and the module docstring.
    """
    p = Path(name_or_path)
    if not (p.suffix == ".toml" or p.exists()):
        p = SYSTEMS_DIR / f"{name_or_path}.toml"
    if not p.is_file():
        raise FileNotFoundError(f"no system file {str(name_or_path)!r}; bundled systems: {available_systems()}")
    text = read_utf8(p, "system file", SystemFileError)
    try:
        spec = toml_loads(text, p, "system file", SystemFileError)
    except tomllib.TOMLDecodeError as exc:
        raise SystemFileError(f"{p}: not valid TOML: {exc}") from None
    return System.from_spec(spec, source=str(p))
