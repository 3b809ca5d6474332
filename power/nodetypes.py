"""Node types: the shipped catalogue of compute nodes a partition (:mod:`power.system`) is built from.

The catalogue is the ``[node]`` table of the hardware files in ``scheduler_sim/serving/data/gpus/*.toml`` (one list
of hardware with its sources: the GPU figures the serving model reads, and the node built on that GPU). A file of
``kind = "cpu-node"`` holds a CPU-only node and no GPU. Shipped node types:

==================  =====================================================================================
``mi250x-4gpu``     Frontier-like node: 1 x EPYC 7A53 + 4 x MI250X (RAPS Frontier figures)
``h100-sxm-8gpu``   DGX/HGX H100: 8 x H100 SXM5 + 2 x Xeon 8480C (10.2 kW max, NVIDIA datasheet)
``b200-8gpu``       DGX/HGX B200: 8 x B200 + 2 x Xeon 8570 (~14.3 kW max, NVIDIA datasheet)
``gh200-4``         quad GH200 node (HPE Cray EX254n)
``a100-4gpu-epyc``  Perlmutter-like GPU node: 1 x EPYC 7763 + 4 x A100 SXM4
``epyc-7763-2s``    dual-socket CPU node: 2 x EPYC 7763 (Perlmutter-like CPU node)
==================  =====================================================================================

The files are read as data (TOML), never imported, so :mod:`power` stays below :mod:`scheduler_sim` in the layers.
A system file may also define a node type inline (``[partition.node]``, the fields of :class:`NodeType`).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import Field, ValidationError

from jobs.textfiles import read_utf8
from power.node import NodePowerParams

__all__ = ["CATALOGUE_DIR", "NodeType", "NodeTypeError", "available_node_types", "load_node_type"]

#: Folder of the hardware catalogue (``[node]`` tables of ``*.toml``).
CATALOGUE_DIR = Path(__file__).resolve().parents[1] / "scheduler_sim" / "serving" / "data" / "gpus"


class NodeTypeError(ValueError):
    """A node type is unknown or its table is invalid; the message names the file and the field."""


class NodeType(NodePowerParams):
    """One compute node type: its component power figures (:class:`power.node.NodePowerParams`) and where they
    come from.

    Parameters
    ----------
    name : str
        Catalogue name (``"h100-sxm-8gpu"``).
    description : str
        One line, printed by ``hpctwin site check``.
    source : str
        Where the figures come from (datasheet, published configuration, ASSUMPTION).
    cores_per_node : int or None
        CPU cores per node (to convert SWF processors to nodes); None: the system's ``cores_per_node``.
    **power
        The fields of :class:`power.node.NodePowerParams` (W, counts).

    Raises
    ------
    pydantic.ValidationError
        If a field is missing, unknown or out of range.
    """

    name: str = Field(min_length=1, description="Node type name")
    description: str = Field("", description="One-line description")
    source: str = Field("", description="Where the figures come from")
    cores_per_node: int | None = Field(None, ge=1, description="CPU cores per node")

    def power_params(self) -> NodePowerParams:
        """The node's power figures alone (the fields of :class:`power.node.NodePowerParams`).

        Returns
        -------
        NodePowerParams
            Same component figures, without the catalogue fields.
        """
        return NodePowerParams(**{k: getattr(self, k) for k in NodePowerParams.model_fields})


def _catalogue() -> dict[str, tuple[Path, dict]]:
    """Node name -> (file, raw ``[node]`` table) over the catalogue folder."""
    out: dict[str, tuple[Path, dict]] = {}
    for p in sorted(CATALOGUE_DIR.glob("*.toml")):
        try:
            data = tomllib.loads(read_utf8(p, "hardware file", NodeTypeError))
        except tomllib.TOMLDecodeError as exc:
            raise NodeTypeError(f"{p}: not valid TOML: {exc}") from None
        node = data.get("node")
        if isinstance(node, dict) and isinstance(node.get("name"), str):
            out[node["name"]] = (p, node)
    return out


def available_node_types() -> list[str]:
    """Names of the shipped node types.

    Returns
    -------
    list of str
        Sorted names of the ``[node]`` tables of the catalogue (:data:`CATALOGUE_DIR`).
    """
    return sorted(_catalogue())


def node_type_from_table(table: dict, source: str) -> NodeType:
    """Validate a ``[node]`` table (shipped or inline in a system file).

    Parameters
    ----------
    table : dict
        The table's keys (:class:`NodeType` fields).
    source : str
        File and table named in error messages.

    Returns
    -------
    NodeType
        The validated node type.

    Raises
    ------
    NodeTypeError
        If a field is missing, unknown or invalid (the message names ``source`` and the field).
    """
    try:
        return NodeType.model_validate(table)
    except ValidationError as exc:
        lines = [f"{source}: field '{'.'.join(str(x) for x in e['loc']) or '<root>'}': {e['msg']}"
                 for e in exc.errors()]
        raise NodeTypeError("invalid node type\n" + "\n".join(lines)) from None


def load_node_type(name: str) -> NodeType:
    """A shipped node type by name.

    Parameters
    ----------
    name : str
        Catalogue name (:func:`available_node_types`).

    Returns
    -------
    NodeType
        Its validated figures.

    Raises
    ------
    NodeTypeError
        If no shipped node type has that name (the message lists them) or its table is invalid.
    """
    cat = _catalogue()
    if name not in cat:
        raise NodeTypeError(f"unknown node type {name!r}; shipped: {', '.join(sorted(cat))} (or define it inline "
                            f"in the system file as [partition.node])")
    path, table = cat[name]
    return node_type_from_table(table, f"{path} [node]")
