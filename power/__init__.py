"""Power model of hpctwin: node DC power -> VRM / SIVOC loss -> rectifier loss -> rack input -> CDU heat.

Pure functions with typed parameters (:mod:`power.node`, :mod:`power.conversion`), the platform description
(:mod:`power.system`, files in ``power/systems/``), the vectorised chain for one instant (:mod:`power.chain`) and
the facility overheads outside IT and the liquid plant: electrical chain, air side, lighting (:mod:`power.facility`).
SI units throughout (W).
"""

from power.chain import ChainState, PowerChain
from power.conversion import (
    RectifierParams,
    SivocParams,
    conversion_efficiency,
    rectifier_input_w,
    sivoc_input_w,
    sivoc_loss_w,
)
from power.facility import FacilityOverheads, FacilitySpec
from power.node import NodePowerParams, node_power_w
from power.system import System, SystemFileError, available_systems, load_system

__all__ = [
    "ChainState",
    "FacilityOverheads",
    "FacilitySpec",
    "NodePowerParams",
    "PowerChain",
    "RectifierParams",
    "SivocParams",
    "System",
    "SystemFileError",
    "available_systems",
    "conversion_efficiency",
    "load_system",
    "node_power_w",
    "rectifier_input_w",
    "sivoc_input_w",
    "sivoc_loss_w",
]
