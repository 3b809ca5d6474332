"""Node DC power from component utilisation: a linear idle-to-max model per component.

The model is the one used by ExaDigiT/RAPS (``compute_node_power``), written as a pure function with typed
parameters and with utilisation expressed per component as a fraction in [0, 1] (RAPS instead passes a CPU / GPU
*count* in [0, CPUS_PER_NODE]; ``u_here = u_raps / count``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["NodePowerParams", "node_power_w"]


class NodePowerParams(BaseModel):
    """Per-component power figures of one compute node (DC, at the output of the node's VRM / SIVOC).

    All powers are in W. Utilisation-dependent parts (CPU sockets, GPUs) go linearly from ``*_idle_W`` at
    utilisation 0 to ``*_max_W`` at utilisation 1; memory, NICs, NVMe and "other" are constant.

    Parameters
    ----------
    cpu_idle_W, cpu_max_W : float
        Power of one CPU socket at utilisation 0 and 1, W (``0 <= cpu_idle_W <= cpu_max_W``).
    cpus_per_node : int
        CPU sockets per node (>= 0).
    gpu_idle_W, gpu_max_W : float
        Power of one GPU at utilisation 0 and 1, W (``0 <= gpu_idle_W <= gpu_max_W``).
    gpus_per_node : int
        GPUs per node (>= 0; 0 for CPU-only nodes).
    mem_W : float
        Memory power of the whole node, W, constant.
    nic_W : float
        Power of one NIC (or the node's share of a router chip), W, constant.
    nics_per_node : int
        NICs per node (>= 0).
    nvme_W : float
        Power of one local NVMe / SSD drive, W, constant.
    nvmes_per_node : int
        Local drives per node (>= 0).
    other_W : float
        Any other constant node power (board, BMC, PCH), W.

    Raises
    ------
    pydantic.ValidationError
        If a power or count is negative, a max is below its idle, or an unknown field is given.

    References
    ----------
    .. [1] W. Brewer et al., "A Digital Twin Framework for Liquid-cooled Supercomputers as Demonstrated at
       Exascale", SC24 (ExaDigiT/RAPS); RAPS ``raps/power.py::compute_node_power`` for the linear form.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpu_idle_W: float = Field(ge=0.0, description="Power of one CPU socket at utilisation 0, W")
    cpu_max_W: float = Field(ge=0.0, description="Power of one CPU socket at utilisation 1, W")
    cpus_per_node: int = Field(ge=0, description="CPU sockets per node")
    gpu_idle_W: float = Field(0.0, ge=0.0, description="Power of one GPU at utilisation 0, W")
    gpu_max_W: float = Field(0.0, ge=0.0, description="Power of one GPU at utilisation 1, W")
    gpus_per_node: int = Field(0, ge=0, description="GPUs per node")
    mem_W: float = Field(0.0, ge=0.0, description="Memory power of the whole node (constant), W")
    nic_W: float = Field(0.0, ge=0.0, description="Power of one NIC / router share (constant), W")
    nics_per_node: int = Field(0, ge=0, description="NICs per node")
    nvme_W: float = Field(0.0, ge=0.0, description="Power of one local NVMe / SSD (constant), W")
    nvmes_per_node: int = Field(0, ge=0, description="Local drives per node")
    other_W: float = Field(0.0, ge=0.0, description="Other constant node power (board, BMC), W")

    @model_validator(mode="after")
    def _max_not_below_idle(self) -> NodePowerParams:
        if self.cpu_max_W < self.cpu_idle_W:
            raise ValueError(f"cpu_max_W ({self.cpu_max_W}) < cpu_idle_W ({self.cpu_idle_W})")
        if self.gpu_max_W < self.gpu_idle_W:
            raise ValueError(f"gpu_max_W ({self.gpu_max_W}) < gpu_idle_W ({self.gpu_idle_W})")
        return self

    @property
    def constant_W(self) -> float:
        """Utilisation-independent node power (memory + NICs + drives + other), W."""
        return self.mem_W + self.nics_per_node * self.nic_W + self.nvmes_per_node * self.nvme_W + self.other_W

    @property
    def idle_W(self) -> float:
        """Node DC power at cpu_util = gpu_util = 0, W."""
        return self.cpus_per_node * self.cpu_idle_W + self.gpus_per_node * self.gpu_idle_W + self.constant_W

    @property
    def max_W(self) -> float:
        """Node DC power at cpu_util = gpu_util = 1, W."""
        return self.cpus_per_node * self.cpu_max_W + self.gpus_per_node * self.gpu_max_W + self.constant_W


def _check_util(name: str, u: NDArray[np.float64]) -> None:
    # NaN fails both comparisons, so one pass catches NaN and out-of-range values.
    ok = (u >= 0.0) & (u <= 1.0)
    if not np.all(ok):
        bad = u[~ok] if u.ndim else u
        raise ValueError(f"{name} must be in [0, 1] and not NaN; got e.g. {np.ravel(bad)[:3]!r}")


def node_power_w(cpu_util: ArrayLike, gpu_util: ArrayLike, p: NodePowerParams) -> NDArray[np.float64]:  # noqa: DOC502
    """Node DC power for given CPU and GPU utilisation.

    ``P = n_cpu (P_cpu,idle + u_cpu (P_cpu,max - P_cpu,idle)) + n_gpu (P_gpu,idle + u_gpu (P_gpu,max -
    P_gpu,idle)) + P_mem + n_nic P_nic + n_nvme P_nvme + P_other``; all sockets (GPUs) of a node share one
    utilisation.

    Parameters
    ----------
    cpu_util : ArrayLike
        Mean utilisation of the node's CPU sockets, dimensionless in [0, 1], any shape broadcastable with
        ``gpu_util``.
    gpu_util : ArrayLike
        Mean utilisation of the node's GPUs, dimensionless in [0, 1], any shape broadcastable with ``cpu_util``
        (checked even when ``p.gpus_per_node == 0``).
    p : NodePowerParams
        Component power figures.

    Returns
    -------
    ndarray of float64, shape ``np.broadcast_shapes(cpu_util.shape, gpu_util.shape)``
        Node DC power, W (a 0-d array for scalar inputs).

    Raises
    ------
    ValueError
        If any utilisation is NaN or outside [0, 1] (raised by ``_check_util``), or the shapes do not broadcast.

    References
    ----------
    .. [1] ExaDigiT/RAPS ``raps/power.py::compute_node_power`` (linear idle-to-max component model).
    """
    u_c = np.asarray(cpu_util, dtype=np.float64)
    u_g = np.asarray(gpu_util, dtype=np.float64)
    _check_util("cpu_util", u_c)
    _check_util("gpu_util", u_g)
    cpu = p.cpus_per_node * (p.cpu_idle_W + u_c * (p.cpu_max_W - p.cpu_idle_W))
    gpu = p.gpus_per_node * (p.gpu_idle_W + u_g * (p.gpu_max_W - p.gpu_idle_W))
    return np.asarray(cpu + gpu + p.constant_W, dtype=np.float64)
