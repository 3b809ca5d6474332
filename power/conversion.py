"""Power-conversion stages: node VRM / SIVOC (DC-DC) and rack rectifier (AC-DC).

Both stages use the same loss form, fitted by ExaDigiT/RAPS to Frontier measurements::

    P_in = (P_out + P_fixed) / eta + k * P_out**2

``P_fixed / eta`` is the no-load loss, ``(1/eta - 1) P_out`` the proportional loss, and the optional
``k P_out**2`` a load-dependent I^2 R term (default ``k = 0``). Efficiency ``P_out / P_in`` therefore rises with
load while ``k = 0`` and peaks at ``P_out = sqrt(P_fixed / (eta k))`` otherwise.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "RectifierParams",
    "SivocParams",
    "rectifier_efficiency",
    "rectifier_input_w",
    "sivoc_efficiency",
    "sivoc_input_w",
    "sivoc_loss_w",
]


class SivocParams(BaseModel):
    """Node voltage regulator (VRM / HPE SIVOC) loss parameters.

    Parameters
    ----------
    P_fixed_W : float
        Fixed term of the fit, W (>= 0); the no-load loss is ``P_fixed_W / eta``.
    eta : float
        Proportional efficiency, dimensionless in (0, 1].
    k_per_W : float
        Coefficient of the I^2 R term, 1/W (>= 0); default 0.

    Raises
    ------
    pydantic.ValidationError
        If a value is out of range or an unknown field is given.

    References
    ----------
    .. [1] ExaDigiT/RAPS Frontier power config: ``sivoc_loss_constant = 13``, ``sivoc_efficiency = 0.98``;
       ``raps/power.py::compute_loss``. Brewer et al., SC24.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    P_fixed_W: float = Field(ge=0.0, description="Fixed loss term of the fit (no-load loss = P_fixed_W / eta), W")
    eta: float = Field(gt=0.0, le=1.0, description="Proportional efficiency, dimensionless in (0, 1]")
    k_per_W: float = Field(0.0, ge=0.0, description="I^2 R loss coefficient (loss = k P_out^2), 1/W")


class RectifierParams(SivocParams):
    """Rack rectifier (AC-DC power-supply module) loss parameters and group size.

    Parameters
    ----------
    P_fixed_W : float
        Fixed term of the fit, W (>= 0).
    eta : float
        Proportional efficiency, dimensionless in (0, 1].
    k_per_W : float
        Coefficient of the I^2 R term, 1/W (>= 0); default 0.
    nodes_per_rectifier : int
        Number of consecutive nodes of one rack fed by one rectifier (>= 1); the last group of a rack may be
        smaller when the rack's node count is not a multiple.

    Raises
    ------
    pydantic.ValidationError
        If a value is out of range or an unknown field is given.

    References
    ----------
    .. [1] ExaDigiT/RAPS Frontier config: ``rectifier_loss_constant = 17``, ``rectifier_efficiency = 0.96``,
       ``nodes_per_rectifier = 4``; ``raps/power.py::compute_rack_power``.
    """

    nodes_per_rectifier: int = Field(ge=1, description="Consecutive nodes of one rack fed by one rectifier")


def _loss_form(p_out_w: ArrayLike, P_fixed_W: float, eta: float, k_per_W: float, what: str) -> NDArray[np.float64]:
    p = np.asarray(p_out_w, dtype=np.float64)
    if not np.all(p >= 0.0):  # also rejects NaN
        raise ValueError(f"{what} output power must be >= 0 W and not NaN")
    p_in = (p + P_fixed_W) / eta
    if k_per_W:
        p_in = p_in + k_per_W * p * p
    return np.asarray(p_in, dtype=np.float64)


def sivoc_input_w(p_out_w: ArrayLike, p: SivocParams) -> NDArray[np.float64]:
    """Input power of a node VRM / SIVOC for a given DC output.

    ``P_in = (P_out + P_fixed) / eta + k P_out^2``.

    Parameters
    ----------
    p_out_w : array_like, any shape, W (>= 0)
        DC output power (the node's component power).
    p : SivocParams
        Loss parameters.

    Returns
    -------
    ndarray of float64, same shape as `p_out_w`
        Input power, W.

    Raises
    ------
    ValueError
        If any output power is negative or NaN.

    References
    ----------
    .. [1] ExaDigiT/RAPS ``raps/power.py::compute_loss``; Frontier fit (P + 13 W) / 0.98.
    """
    return _loss_form(p_out_w, p.P_fixed_W, p.eta, p.k_per_W, "SIVOC")


def sivoc_loss_w(p_out_w: ArrayLike, p: SivocParams) -> NDArray[np.float64]:
    """Loss of a node VRM / SIVOC at a given DC output: ``sivoc_input_w(P_out) - P_out``.

    ``P_loss = (P_out + P_fixed) / eta + k P_out^2 - P_out``. NaN outputs (a job that never ran has no power) give
    NaN losses; every other value must be >= 0 W.

    Parameters
    ----------
    p_out_w : ArrayLike
        DC output power (the node's component power), any shape, W (>= 0 or NaN; a negative value raises the
        ``ValueError`` of :func:`sivoc_input_w`).
    p : SivocParams
        Loss parameters.

    Returns
    -------
    ndarray of float64, same shape as `p_out_w`
        Loss, W (NaN where `p_out_w` is NaN).

    References
    ----------
    .. [1] ExaDigiT/RAPS ``raps/power.py::compute_loss``; Frontier fit (P + 13 W) / 0.98.
    """
    q = np.asarray(p_out_w, dtype=np.float64)
    ok = ~np.isnan(q)
    if ok.all():
        return sivoc_input_w(q, p) - q
    out = np.full(q.shape, np.nan)
    out[ok] = sivoc_input_w(q[ok], p) - q[ok]
    return out


def rectifier_input_w(p_out_w: ArrayLike, p: RectifierParams) -> NDArray[np.float64]:
    """AC input power of one rectifier for a given DC output.

    ``P_in = (P_out + P_fixed) / eta + k P_out^2``, applied per rectifier (not per node: the fixed term is paid
    once per rectifier).

    Parameters
    ----------
    p_out_w : array_like, any shape, W (>= 0)
        DC output power of one rectifier (sum of its nodes' SIVOC inputs plus its share of DC rack overhead).
    p : RectifierParams
        Loss parameters.

    Returns
    -------
    ndarray of float64, same shape as `p_out_w`
        AC input power, W.

    Raises
    ------
    ValueError
        If any output power is negative or NaN.

    References
    ----------
    .. [1] ExaDigiT/RAPS ``raps/power.py::compute_rack_power``; Frontier fit (P + 17 W) / 0.96.
    """
    return _loss_form(p_out_w, p.P_fixed_W, p.eta, p.k_per_W, "rectifier")


def sivoc_efficiency(p_out_w: ArrayLike, p: SivocParams) -> NDArray[np.float64]:
    """Efficiency ``P_out / P_in`` of a VRM / SIVOC (0 at zero load).

    Parameters
    ----------
    p_out_w : array_like, any shape, W (>= 0)
        DC output power.
    p : SivocParams
        Loss parameters.

    Returns
    -------
    ndarray of float64, same shape as `p_out_w`
        Efficiency, dimensionless in [0, 1).

    Raises
    ------
    ValueError
        If any output power is negative or NaN.

    References
    ----------
    .. [1] Definition of conversion efficiency; loss form as in :func:`sivoc_input_w`.
    """
    p_out = np.asarray(p_out_w, dtype=np.float64)
    return p_out / sivoc_input_w(p_out, p)


def rectifier_efficiency(p_out_w: ArrayLike, p: RectifierParams) -> NDArray[np.float64]:
    """Efficiency ``P_out / P_in`` of one rectifier (0 at zero load).

    Parameters
    ----------
    p_out_w : array_like, any shape, W (>= 0)
        DC output power of one rectifier.
    p : RectifierParams
        Loss parameters.

    Returns
    -------
    ndarray of float64, same shape as `p_out_w`
        Efficiency, dimensionless in [0, 1).

    Raises
    ------
    ValueError
        If any output power is negative or NaN.

    References
    ----------
    .. [1] Definition of conversion efficiency; loss form as in :func:`rectifier_input_w`.
    """
    p_out = np.asarray(p_out_w, dtype=np.float64)
    return p_out / rectifier_input_w(p_out, p)
