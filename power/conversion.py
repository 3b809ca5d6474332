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
    "conversion_efficiency",
    "RectifierParams",
    "SivocParams",
    "linear_loss_w",
    "rectifier_input_share_w",
    "rectifier_input_w",
    "rectifier_no_load_share_w",
    "sivoc_input_w",
    "sivoc_loss_w",
    "two_stage_affine_w",
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


def _loss_form(p_out_W: ArrayLike, P_fixed_W: float, eta: float, k_per_W: float, what: str) -> NDArray[np.float64]:
    p = np.asarray(p_out_W, dtype=np.float64)
    if not np.all(p >= 0.0):  # also rejects NaN
        raise ValueError(f"{what} output power must be >= 0 W and not NaN")
    p_in = (p + P_fixed_W) / eta
    if k_per_W:
        p_in += k_per_W * p * p
    return np.asarray(p_in, dtype=np.float64)


def sivoc_input_w(p_out_W: ArrayLike, p: SivocParams) -> NDArray[np.float64]:
    """Input power of a node VRM / SIVOC for a given DC output.

    ``P_in = (P_out + P_fixed) / eta + k P_out^2``.

    Parameters
    ----------
    p_out_W : ArrayLike
        Any shape, W (>= 0). DC output power (the node's component power).
    p : SivocParams
        Loss parameters.

    Returns
    -------
    ndarray of float64, same shape as `p_out_W`
        Input power, W.

    Notes
    -----
    Raises ValueError (from the loss form) if any output power is negative or NaN.

    References
    ----------
    .. [1] ExaDigiT/RAPS ``raps/power.py::compute_loss``; Frontier fit (P + 13 W) / 0.98.
    """
    return _loss_form(p_out_W, p.P_fixed_W, p.eta, p.k_per_W, "SIVOC")


def sivoc_loss_w(p_out_W: ArrayLike, p: SivocParams) -> NDArray[np.float64]:
    """Loss of a node VRM / SIVOC at a given DC output: ``sivoc_input_w(P_out) - P_out``.

    ``P_loss = (P_out + P_fixed) / eta + k P_out^2 - P_out``. NaN outputs (a job that never ran has no power) give
    NaN losses; every other value must be >= 0 W.

    Parameters
    ----------
    p_out_W : ArrayLike
        DC output power (the node's component power), any shape, W (>= 0 or NaN; a negative value raises the
        ``ValueError`` of :func:`sivoc_input_w`).
    p : SivocParams
        Loss parameters.

    Returns
    -------
    ndarray of float64, same shape as `p_out_W`
        Loss, W (NaN where `p_out_W` is NaN).

    References
    ----------
    .. [1] ExaDigiT/RAPS ``raps/power.py::compute_loss``; Frontier fit (P + 13 W) / 0.98.
    """
    q = np.asarray(p_out_W, dtype=np.float64)
    ok = ~np.isnan(q)
    if ok.all():
        return sivoc_input_w(q, p) - q
    out = np.full(q.shape, np.nan)
    out[ok] = sivoc_input_w(q[ok], p) - q[ok]
    return out


def rectifier_input_w(p_out_W: ArrayLike, p: RectifierParams) -> NDArray[np.float64]:
    """AC input power of one rectifier for a given DC output.

    ``P_in = (P_out + P_fixed) / eta + k P_out^2``, applied per rectifier (not per node: the fixed term is paid
    once per rectifier).

    Parameters
    ----------
    p_out_W : ArrayLike
        Any shape, W (>= 0). DC output power of one rectifier (sum of its nodes' SIVOC inputs plus its share of DC rack overhead).
    p : RectifierParams
        Loss parameters.

    Returns
    -------
    ndarray of float64, same shape as `p_out_W`
        AC input power, W.

    Notes
    -----
    Raises ValueError (from the loss form) if any output power is negative or NaN.

    References
    ----------
    .. [1] ExaDigiT/RAPS ``raps/power.py::compute_rack_power``; Frontier fit (P + 17 W) / 0.96.
    """
    return _loss_form(p_out_W, p.P_fixed_W, p.eta, p.k_per_W, "rectifier")


def conversion_efficiency(p_out_W: ArrayLike, p: SivocParams | RectifierParams) -> NDArray[np.float64]:
    """Efficiency ``P_out / P_in`` of a VRM / SIVOC or of one rectifier (0 at zero load).

    Parameters
    ----------
    p_out_W : ArrayLike
        Any shape, W (>= 0). DC output power (of one rectifier, for :class:`RectifierParams`).
    p : SivocParams | RectifierParams
        Loss parameters; their type chooses the stage (:func:`sivoc_input_w` or :func:`rectifier_input_w`).

    Returns
    -------
    ndarray of float64, same shape as `p_out_W`
        Efficiency, dimensionless in [0, 1).

    Notes
    -----
    Raises ValueError (from the loss form) if any output power is negative or NaN.

    References
    ----------
    .. [1] Definition of conversion efficiency; loss forms as in :func:`sivoc_input_w` and :func:`rectifier_input_w`.
    """
    p_out = np.asarray(p_out_W, dtype=np.float64)
    return p_out / (rectifier_input_w(p_out, p) if isinstance(p, RectifierParams) else sivoc_input_w(p_out, p))


def linear_loss_w(p_out_W: ArrayLike, n_units: ArrayLike, p: SivocParams, duration_s: float = 1.0) -> ArrayLike:
    """Total loss of ``n_units`` linear stages (``k = 0``) that together deliver ``p_out_W``.

    ``P_loss = P_out (1 / eta - 1) + (n P_fixed / eta) T``: with ``k = 0`` the loss form of :func:`sivoc_input_w`
    is affine, so the loss of many stages depends only on their summed output, whatever its split. With the default
    ``T = 1`` the result is a power (W); with ``p_out_W`` an energy (J) over a duration ``T`` (s) it is an energy (J).
    The operation order is the one :class:`power.chain.PowerChain` relies on for bit-identical results.

    Parameters
    ----------
    p_out_W : ArrayLike
        Summed output of the stages, scalar or any shape, W (or J with `duration_s`).
    n_units : ArrayLike
        Number of stages, scalar or broadcastable to `p_out_W` (>= 0).
    p : SivocParams
        Loss parameters (a :class:`RectifierParams` too).
    duration_s : float
        Duration the no-load loss is paid over, s (default 1.0: the result is a power).

    Returns
    -------
    float or ndarray of float64
        Loss, W (or J), broadcast shape of `p_out_W` and `n_units`.

    Raises
    ------
    ValueError
        If ``p.k_per_W != 0`` (the loss then depends on each stage's own output).

    References
    ----------
    .. [1] ExaDigiT/RAPS ``raps/power.py::compute_loss`` with ``k = 0``, summed over the stages.
    """
    if p.k_per_W != 0.0:
        raise ValueError(f"linear_loss_w needs a linear stage (k_per_W == 0), got k_per_W = {p.k_per_W} 1/W")
    return p_out_W * (1.0 / p.eta - 1.0) + n_units * p.P_fixed_W / p.eta * duration_s


def two_stage_affine_w(s: SivocParams, r: RectifierParams) -> tuple[float, float]:
    """Slope and per-node intercept of a linear SIVOC feeding a linear rectifier.

    Through both stages a node's DC power ``P`` costs ``P / (eta_s eta_r) + P_fixed,s / (eta_s eta_r)`` at the
    rectifier's AC input (the rectifier's own fixed term, paid once per rectifier, is
    :func:`rectifier_no_load_share_w`).

    Parameters
    ----------
    s : SivocParams
        SIVOC loss parameters (``k_per_W == 0``).
    r : RectifierParams
        Rectifier loss parameters (``k_per_W == 0``).

    Returns
    -------
    tuple[float, float]
        Slope ``1 / (eta_s eta_r)`` (dimensionless) and intercept ``P_fixed,s / (eta_s eta_r)`` (W).

    Raises
    ------
    ValueError
        If either stage has ``k_per_W != 0``.

    References
    ----------
    .. [1] Composition of :func:`sivoc_input_w` and :func:`rectifier_input_w` with ``k = 0``.
    """
    if s.k_per_W != 0.0 or r.k_per_W != 0.0:
        raise ValueError(f"two_stage_affine_w needs linear stages (k_per_W == 0), got SIVOC {s.k_per_W} 1/W and "
                         f"rectifier {r.k_per_W} 1/W")
    return 1.0 / (s.eta * r.eta), s.P_fixed_W / (s.eta * r.eta)


def rectifier_no_load_share_w(extra_dc_W: ArrayLike, n_units: ArrayLike, p: RectifierParams) -> NDArray[np.float64]:
    """Share of each of a rectifier's ``n`` units in its fixed term and an extra DC load: ``(O + P_fixed) / (eta n)``.

    Parameters
    ----------
    extra_dc_W : ArrayLike
        Extra DC load carried by each rectifier (its share of DC rack overhead), shape (n_rect,) or scalar, W.
    n_units : ArrayLike
        Number of nodes each rectifier feeds, shape (n_rect,) or scalar (> 0).
    p : RectifierParams
        Rectifier loss parameters.

    Returns
    -------
    ndarray of float64, shape of the broadcast of the inputs
        AC input power per unit paid for the fixed term and the extra load, W.

    References
    ----------
    .. [1] Fixed term of :func:`rectifier_input_w`, split equally over the rectifier's nodes.
    """
    return np.asarray((extra_dc_W + p.P_fixed_W) / (p.eta * n_units), dtype=np.float64)


def rectifier_input_share_w(
    unit_in_W: NDArray[np.float64],
    group_load_W: NDArray[np.float64],
    extra_dc_W: NDArray[np.float64],
    n_units: NDArray[np.float64],
    group: NDArray[np.intp],
    p: RectifierParams,
    unit_ac_extra_W: ArrayLike = 0.0,
) -> NDArray[np.float64]:
    """Rectifier AC input attributed to each unit it feeds; the shares of a rectifier sum to its input.

    Unit ``i`` of rectifier ``g`` (``n_g`` units, load ``L_g``, extra DC load ``O_g``) receives
    ``s_i / eta + (P_fixed + O_g) / (eta n_g) + A_i + k L_g (s_i + O_g / n_g)``, where ``A_i`` is an AC-side
    addition passed through (the rack's AC overhead share) and added in this order for bit-identical results.

    Parameters
    ----------
    unit_in_W : NDArray[np.float64]
        DC power each unit draws from its rectifier (its SIVOC input), shape (n_units_total,), W.
    group_load_W : NDArray[np.float64]
        DC output ``L_g`` of every rectifier, shape (n_rect,), W.
    extra_dc_W : NDArray[np.float64]
        Extra DC load ``O_g`` of every rectifier, shape (n_rect,), W.
    n_units : NDArray[np.float64]
        Units fed by every rectifier, shape (n_rect,) (> 0).
    group : NDArray[np.intp]
        Rectifier of every unit, shape (n_units_total,).
    p : RectifierParams
        Rectifier loss parameters.
    unit_ac_extra_W : ArrayLike
        AC-side power added to every unit's share, scalar or shape (n_units_total,), W (default 0.0).

    Returns
    -------
    ndarray of float64, shape (n_units_total,)
        AC input power attributed to each unit, W.

    References
    ----------
    .. [1] Attribution rule of :meth:`power.chain.PowerChain.node_it_input_w`; loss form of
       :func:`rectifier_input_w`.
    """
    share = unit_in_W / p.eta + rectifier_no_load_share_w(extra_dc_W, n_units, p)[group] + unit_ac_extra_W
    if p.k_per_W:
        share += p.k_per_W * group_load_W[group] * (unit_in_W + (extra_dc_W / n_units)[group])
    return share
