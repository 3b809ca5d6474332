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
import math
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
from power.nodetypes import NodeTypeError, load_node_type, node_type_from_table

__all__ = ["SYSTEMS_DIR", "Partition", "System", "SystemFileError", "available_systems", "load_system"]

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
    nodes_per_rack: int | None = Field(None, ge=1, le=MAX_NODES, description="Compute nodes in every populated rack "
                                                                              "(per partition with [[partition]])")
    missing_rack_positions: list[int] = Field(default_factory=list, description="Unpopulated rack positions")
    n_nodes: int | None = Field(None, ge=1, le=MAX_NODES, description="Declared node count; must equal the count "
                                                                      "implied by the topology (at most MAX_NODES)")

    @property
    def n_positions(self) -> int:
        """Rack positions with a rack (all positions less the missing ones)."""
        return self.n_cdus * self.rack_positions_per_cdu - len(self.missing_rack_positions)

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
        if self.nodes_per_rack is None or self.n_nodes is None:  # a partitioned system: checked with its partitions
            return self
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


class _PartitionSpec(_Strict):
    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]*$", description="Partition name (as Slurm's)")
    kind: Literal["batch", "serving"] = Field("batch", description="'batch': the batch scheduler runs jobs here; "
                                                                   "'serving': an LLM-serving engine owns the nodes")
    node_type: str = Field("", description="Shipped node type (power.nodetypes); '' with an inline [node] table")
    node: dict | None = Field(None, description="Inline node type (power.nodetypes.NodeType fields)")
    nodes: int = Field(ge=1, le=MAX_NODES, description="Node count")
    nodes_per_rack: int = Field(ge=1, le=MAX_NODES, description="Nodes per rack (the last rack may hold fewer)")
    cooling: Literal["liquid", "air"] = Field("liquid", description="'liquid': racks on the CDUs of their positions")
    rack_limit_kW: float | None = Field(None, gt=0.0, description="Rack power limit (rack input), kW")
    feed_share: float | None = Field(None, gt=0.0, le=1.0, description="Share of the electrical feed (reported)")
    default: bool = Field(False, description="Jobs the trace does not place go here")
    trace_names: list[str] = Field(default_factory=list, description="Trace partition / queue / GPU-model names "
                                                                     "mapped to this partition")
    default_cpu_util: float | None = Field(None, ge=0.0, le=1.0, description="CPU utilisation of jobs with none")
    default_gpu_util: float | None = Field(None, ge=0.0, le=1.0, description="GPU utilisation of jobs with none")
    share: bool = Field(False, description="Jobs that ask for part of a node share its nodes (docs/partitions.md)")
    share_slots: int = Field(64, ge=2, le=1024, description="Slots per node of a sharing partition: the smallest "
                                                            "share a job is given (1/share_slots of a node)")


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
    node: NodePowerParams | None = None
    partition: list[_PartitionSpec] = Field(default_factory=list, description="Partitions ([[partition]] tables)")
    sivoc: SivocParams
    rectifier: RectifierParams
    rack_overhead: _RackOverheadSpec
    cdu: _CduSpec = _CduSpec()
    facility: FacilitySpec = FacilitySpec()
    site: _SiteSpec = _SiteSpec()

    @model_validator(mode="after")
    def _partitions(self) -> _SystemSpec:
        t = self.topology
        if not self.partition:
            missing = [k for k, v in (("topology.nodes_per_rack", t.nodes_per_rack), ("topology.n_nodes", t.n_nodes),
                                      ("node", self.node)) if v is None]
            if missing:
                raise ValueError(f"{', '.join(missing)} missing: a system without [[partition]] tables needs "
                                 f"topology.nodes_per_rack, topology.n_nodes and a [node] table")
            return self
        if self.node is not None or t.nodes_per_rack is not None:
            raise ValueError("a system with [[partition]] tables gives node types and nodes_per_rack per partition; "
                             "remove [node] and topology.nodes_per_rack")
        names = [p.name for p in self.partition]
        if len(set(names)) != len(names):
            raise ValueError(f"partition names repeat: {names}")
        if sum(p.default for p in self.partition) > 1:
            raise ValueError("more than one partition has default = true")
        for p in self.partition:
            if bool(p.node_type) == (p.node is not None):
                raise ValueError(f"partition {p.name!r}: give either node_type (shipped) or an inline [node] table")
            if p.cooling == "air":
                raise ValueError(f"partition {p.name!r}: cooling = 'air' is not supported yet (every partition is "
                                 f"liquid-cooled on the CDUs of its rack positions; the system's liquid_fraction "
                                 f"sends a share of all rack heat to room air)")
        liquid = sum(-(-p.nodes // p.nodes_per_rack) for p in self.partition)
        if liquid != t.n_positions:
            raise ValueError(f"the partitions fill {liquid} racks but the topology has {t.n_positions} populated rack "
                             f"positions ({t.n_cdus} x {t.rack_positions_per_cdu} - "
                             f"{len(t.missing_rack_positions)} missing)")
        total = sum(p.nodes for p in self.partition)
        if t.n_nodes is not None and t.n_nodes != total:
            raise ValueError(f"topology.n_nodes = {t.n_nodes} but the partitions hold {total} nodes")
        if total > MAX_NODES:
            raise ValueError(f"the partitions hold {total} nodes; at most {MAX_NODES} are supported")
        return self


@dataclasses.dataclass(frozen=True)
class Partition:
    """One partition of a system: a node type on a contiguous range of nodes and racks.

    Attributes
    ----------
    name : str
        Partition name (``"cpu"``, ``"gpu"``; ``"compute"`` for a system without ``[[partition]]`` tables).
    index : int
        Position in :attr:`System.partitions`.
    kind : {"batch", "serving"}
        Who runs work on it: the batch scheduler, or an LLM-serving engine (co-located partition).
    node : power.node.NodePowerParams
        Component power figures of its nodes.
    node_type : str
        Catalogue name of the node type ("" when defined inline or in the legacy ``[node]`` table).
    first_node, n_nodes : int
        Its nodes are ``first_node .. first_node + n_nodes - 1``.
    first_rack, n_racks : int
        Its racks are ``first_rack .. first_rack + n_racks - 1`` (populated-rack indices).
    cdus : tuple of int
        CDUs cooling its racks (from the rack positions).
    cooling : str
        ``"liquid"``.
    rack_limit_W : float
        Rack power limit at rack input [W] (NaN when not given).
    feed_share : float
        Share of the electrical feed given to it (NaN when not given; reported, not enforced).
    default : bool
        Jobs the trace does not place go here.
    trace_names : tuple of str
        Trace names (Slurm partition, SWF queue / partition, Alibaba GPU model) mapped to it.
    cores_per_node : int
        CPU cores per node.
    default_cpu_util, default_gpu_util : float
        Utilisation of jobs with none recorded, in [0, 1].
    source : str
        Where the node figures come from.
    share : bool
        Jobs that ask for part of a node share its nodes (``share = true``; docs/partitions.md "Sharing nodes").
    share_slots : int
        Slots per node: the scheduling unit of a sharing partition (1 on a whole-node partition).
    """

    name: str
    index: int
    kind: str
    node: NodePowerParams
    node_type: str
    first_node: int
    n_nodes: int
    first_rack: int
    n_racks: int
    cdus: tuple
    cooling: str
    rack_limit_W: float
    feed_share: float
    default: bool
    trace_names: tuple
    cores_per_node: int
    default_cpu_util: float
    default_gpu_util: float
    source: str = ""
    share: bool = False
    share_slots: int = 1

    @property
    def nodes(self) -> range:
        """Node indices of the partition."""
        return range(self.first_node, self.first_node + self.n_nodes)


def _build_partitions(s: _SystemSpec, source: str) -> tuple[list[Partition], list[int]]:
    """Partitions of a validated spec and the node count of each populated rack, in rack order."""
    if not s.partition:  # a single-type system: one partition over every node
        t = s.topology
        return ([Partition("compute", 0, "batch", s.node, "", 0, int(t.n_nodes), 0, t.n_positions,
                           tuple(range(t.n_cdus)), "liquid", math.nan, math.nan, True, (), s.cores_per_node,
                           s.default_cpu_util, s.default_gpu_util)],
                [int(t.nodes_per_rack)] * t.n_positions)
    parts, rack_nodes = [], []
    first_node = first_rack = 0
    for i, p in enumerate(s.partition):
        try:
            nt = load_node_type(p.node_type) if p.node_type else node_type_from_table(
                p.node, f"{source} partition {p.name!r} [node]")
        except NodeTypeError as exc:
            raise SystemFileError(f"{source}: partition {p.name!r}: {exc}") from None
        n_racks = -(-p.nodes // p.nodes_per_rack)
        rack_nodes += [p.nodes_per_rack] * (n_racks - 1) + [p.nodes - p.nodes_per_rack * (n_racks - 1)]
        parts.append(Partition(
            p.name, i, p.kind, nt.power_params(), p.node_type, first_node, p.nodes, first_rack, n_racks, (), p.cooling,
            p.rack_limit_kW * 1e3 if p.rack_limit_kW is not None else math.nan,
            p.feed_share if p.feed_share is not None else math.nan, p.default, tuple(p.trace_names),
            nt.cores_per_node or s.cores_per_node,
            s.default_cpu_util if p.default_cpu_util is None else p.default_cpu_util,
            s.default_gpu_util if p.default_gpu_util is None else p.default_gpu_util, nt.source,
            p.share, p.share_slots if p.share else 1))
        if p.share and p.kind != "batch":
            raise SystemFileError(f"{source}: partition {p.name!r}: share = true needs kind = 'batch' (the batch "
                                  f"scheduler places the shares), got kind = {p.kind!r}")
        first_node += p.nodes
        first_rack += n_racks
    if not any(p.default for p in parts):  # the first batch partition takes the jobs the trace does not place
        k = next((q.index for q in parts if q.kind == "batch"), 0)
        parts[k] = dataclasses.replace(parts[k], default=True)
    return parts, rack_nodes


def _beside(plant: str, source: str) -> str:
    """A plant given as a relative ``.toml`` path is relative to the system file's folder (a site's own pair of
    files, ``hpctwin site new``); a shipped plant name is kept as it is.
    """
    p = Path(plant)
    if p.suffix == ".toml" and not p.is_absolute() and source and Path(source).parent != Path(""):
        return str(Path(source).parent / p)
    return plant


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
        Node component power figures (of the first partition; per partition in :attr:`partitions`).
    partitions : tuple of Partition
        The partitions, in node order (one, ``"compute"``, for a system without ``[[partition]]`` tables).
    node_partition : ndarray of int64, shape (n_nodes,)
        Partition index of each node.
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
    partitions: tuple = ()
    node_partition: NDArray[np.int64] | None = None

    @property
    def partitioned(self) -> bool:
        """True when the system has more than one partition (outputs then carry the partition)."""
        return len(self.partitions) > 1

    @property
    def shares(self) -> bool:
        """True when a partition lets jobs share its nodes (``share = true``)."""
        return any(p.share for p in self.partitions)

    def partition(self, name: str) -> Partition:
        """The partition called ``name``.

        Parameters
        ----------
        name : str
            Partition name.

        Returns
        -------
        Partition
            The partition.

        Raises
        ------
        KeyError
            If the system has no such partition (the message lists its partitions).
        """
        for p in self.partitions:
            if p.name == name:
                return p
        raise KeyError(f"system {self.name!r} has no partition {name!r}; partitions: "
                       f"{', '.join(q.name for q in self.partitions)}")

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
        parts, rack_nodes_l = _build_partitions(s, source or "<spec>")
        n_pos = t.n_cdus * t.rack_positions_per_cdu
        missing = set(t.missing_rack_positions)
        rack_position = np.array([q for q in range(n_pos) if q not in missing], dtype=np.int64)
        n_racks = rack_position.size
        rack_cdu = rack_position // t.rack_positions_per_cdu
        rack_nodes = np.array(rack_nodes_l, dtype=np.int64)
        node_rack = np.repeat(np.arange(n_racks, dtype=np.int64), rack_nodes)
        rack_first = np.concatenate(([0], np.cumsum(rack_nodes)[:-1])).astype(np.int64)
        npr = s.rectifier.nodes_per_rectifier
        groups = -(-rack_nodes // npr)  # rectifier groups per rack (ceil)
        group_first = np.concatenate(([0], np.cumsum(groups)[:-1])).astype(np.int64)
        local = np.arange(node_rack.size, dtype=np.int64) - rack_first[node_rack]
        node_rectifier = group_first[node_rack] + local // npr
        rectifier_rack = np.repeat(np.arange(n_racks, dtype=np.int64), groups)
        parts = [dataclasses.replace(p, cdus=tuple(int(c) for c in np.unique(rack_cdu[p.first_rack:p.first_rack
                                                                                      + p.n_racks])))
                 for p in parts]
        node_partition = np.repeat(np.arange(len(parts), dtype=np.int64), [p.n_nodes for p in parts])
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
            node=parts[0].node,
            partitions=tuple(parts),
            node_partition=_ro(node_partition),
            sivoc=s.sivoc,
            rectifier=s.rectifier,
            rack_overhead_W=s.rack_overhead.P_W,
            rack_overhead_side=s.rack_overhead.side,
            default_cpu_util=s.default_cpu_util,
            default_gpu_util=s.default_gpu_util,
            cores_per_node=s.cores_per_node,
            trace_procs_per_node=s.trace_procs_per_node or s.cores_per_node,
            cooling_plant=_beside(s.cooling_plant, source),
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
    name_or_path : str | Path
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
