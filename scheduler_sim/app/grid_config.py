"""The dynamic keys of a run's ``[grid]`` section (#15): demand-response events, ramp-rate limit, battery, periodic
job power profile. The carbon / price keys live beside them in :class:`scheduler_sim.app.config.GridConfig`.

Example::

    [grid]
    ramp_limit_MW_per_min = 0.5
    [[grid.event]]
    start_day = 1.5          # after the trace origin, like scheduler.power_cap
    duration_h = 3.0
    reduction_fraction = 0.25    # or cap_MW = 0.7
    [grid.battery]
    capacity_kWh = 500.0
    power_kW = 1000.0
    round_trip_efficiency = 0.85
    [grid.power_profile]     # synchronous training: compute / communication phases
    period_s = 20.0
    duty = 0.7
    low_W = 700.0
    high_W = 2400.0
    min_nodes = 8
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["BatteryConfig", "GridDynamicsConfig", "GridEventConfig", "PowerProfileConfig"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class GridEventConfig(_Strict):
    """One demand-response event (``[[grid.event]]``)."""

    start_day: float = Field(..., ge=0, description="Event start, days after the trace origin")
    duration_h: float = Field(..., gt=0, description="Event length [h]")
    cap_MW: float | None = Field(None, gt=0, description="Facility power cap during the event [MW]")
    reduction_fraction: float | None = Field(
        None, gt=0, lt=1, description="Requested reduction as a fraction of reference_MW (cap = (1 - f) x reference)")
    reference_MW: float | None = Field(
        None, gt=0, description="Reference power of reduction_fraction [MW]; default the design peak facility power "
                                "(every batch node at the default utilisation, with losses and the cooling estimate)")
    label: str = Field("", description="Name of the event in reports")

    @model_validator(mode="after")
    def _one_of(self) -> "GridEventConfig":
        if (self.cap_MW is None) == (self.reduction_fraction is None):
            raise ValueError("give exactly one of cap_MW and reduction_fraction")
        if self.reference_MW is not None and self.reduction_fraction is None:
            raise ValueError("reference_MW applies to reduction_fraction only")
        return self


class BatteryConfig(_Strict):
    """A facility battery behind the meter (``[grid.battery]``), see :mod:`power.battery`."""

    capacity_kWh: float = Field(..., gt=0, description="Usable energy capacity [kWh]")
    power_kW: float = Field(..., gt=0, description="Charge / discharge power rating [kW]")
    round_trip_efficiency: float = Field(0.85, gt=0, le=1, description="Round-trip efficiency (NREL ATB Li-ion: 0.85)")
    soc_min: float = Field(0.1, ge=0, lt=1, description="Lowest state of charge [fraction of capacity]")
    soc_max: float = Field(0.9, gt=0, le=1, description="Highest state of charge [fraction of capacity]")
    soc_initial: float = Field(0.5, ge=0, le=1, description="State of charge at the start [fraction]")
    restore_time_s: float = Field(900.0, gt=0, description="Time constant of the return to soc_initial [s]")


class PowerProfileConfig(_Strict):
    """A periodic node power profile for matching jobs (``[grid.power_profile]``), see :mod:`power.ramps`."""

    period_s: float = Field(..., gt=0, description="Period of the compute / communication cycle [s]")
    duty: float = Field(..., ge=0, le=1, description="Share of the period at high power (compute)")
    low_W: float = Field(..., ge=0, description="Node DC power in the communication phase [W]")
    high_W: float = Field(..., ge=0, description="Node DC power in the compute phase [W]")
    floor_W: float = Field(0.0, ge=0, description="GPU power floor per node [W] (mitigation; 0 = none)")
    min_nodes: int = Field(1, ge=1, description="Jobs with at least this many nodes get the profile")
    queue: str = Field("", description="Only jobs of this queue ('' = any)")

    @model_validator(mode="after")
    def _ordered(self) -> "PowerProfileConfig":
        if self.low_W > self.high_W:
            raise ValueError(f"low_W ({self.low_W}) must not exceed high_W ({self.high_W})")
        return self


class GridDynamicsConfig(_Strict):
    """The dynamic keys of ``[grid]`` (module docstring)."""

    event: list[GridEventConfig] = Field(default_factory=list, description="Demand-response events")
    ramp_limit_MW_per_min: float | None = Field(None, gt=0, description="Facility ramp-rate limit [MW/min] on job "
                                                                        "starts (staggered) and in the ramp report")
    battery: BatteryConfig | None = Field(None, description="Facility battery (ramp smoothing)")
    power_profile: PowerProfileConfig | None = Field(None, description="Periodic node power of matching jobs")
    resample_s: float = Field(1.0, gt=0, description="Bin of the resampled facility power for ramps [s]")

    @model_validator(mode="after")
    def _events_apart(self) -> "GridDynamicsConfig":
        ev = sorted(self.event, key=lambda e: e.start_day)
        for a, b in zip(ev, ev[1:]):
            if a.start_day + a.duration_h / 24.0 > b.start_day:
                raise ValueError(f"grid events overlap: {a.label or a.start_day} and {b.label or b.start_day}")
        return self

    def dynamics_enabled(self) -> bool:
        """Whether any dynamic key is set (otherwise the run is unchanged)."""
        return bool(self.event) or self.ramp_limit_MW_per_min is not None or self.battery is not None \
            or self.power_profile is not None
