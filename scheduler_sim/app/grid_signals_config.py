"""The carbon / price keys of a run's ``[grid]`` section (#15) and the carbon-aware policy's settings.

Kept apart from :mod:`scheduler_sim.app.config` so that the grid-dynamics keys (events, ramps, battery) and these
can be combined in one ``GridConfig`` by multiple inheritance.

Example::

    [grid]
    carbon = "pjm-carbon-2022"        # or a file: Electricity Maps / EIA-930 CSV
    carbon_basis = "lca"
    price = "pjm-price-2022"          # PJM real-time LMP CSV
    price_fallback_per_MWh = 89.53
    [scheduler.carbon]                # with scheduler.policy = "carbon-aware"
    slack_h = 12.0
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["GridSignalsConfig", "CarbonPolicyConfig"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class GridSignalsConfig(_Strict):
    """Grid signals (optional ``[grid]`` section): hourly carbon intensity and electricity price.

    Each is a step function of time read from a file (one loader per format, :mod:`dataloaders.grid`), aligned to
    the trace's calendar (UTC); where the file has no value (a gap, or outside its span) a constant fallback holds
    and the run says how much energy it priced that way. The run then writes ``/grid`` (cost and emissions per job,
    account, CDU and interval; :mod:`scheduler_sim.analysis.grid`).
    """

    carbon: str = Field("", description="Carbon-intensity file (Electricity Maps, EIA-930 CSV; .gz allowed), a "
                                        "shipped name (pjm-carbon-2022, fi-carbon-2022), or 'constant' (the "
                                        "fallback all the time); '' = no carbon signal unless a fallback is set")
    carbon_format: str = Field("", description="Grid loader name (electricitymaps, eia930); '' = from the header")
    carbon_basis: Literal["direct", "lca"] = Field(
        "lca", description="'lca': life-cycle intensity; 'direct': combustion only (Electricity Maps only)")
    carbon_region: str = Field("USA", description="codecarbon region of the constant fallback: ISO3 country (USA, "
                                                  "FIN) or US state name (illinois)")
    carbon_fallback_g_per_kWh: float | None = Field(
        None, ge=0, le=2000, description="Constant fallback intensity [gCO2eq/kWh], in [0, 2000] like every "
                                         "intensity; unset = codecarbon's factor of carbon_region")
    price: str = Field("", description="Price file (PJM real-time LMP CSV; .gz allowed) or a shipped name "
                                       "(pjm-price-2022); '' = no price unless price_fallback_per_MWh is set")
    price_format: str = Field("", description="Grid loader name (pjm_prices); '' = from the header")
    price_fallback_per_MWh: float | None = Field(
        None, allow_inf_nan=False, description="Constant price [currency/MWh] used in the price file's gaps "
                                               "(required when a price file has gaps), or alone without a file")
    price_range_per_MWh: tuple[float, float] = Field(
        (-1000.0, 10000.0), description="Valid prices [currency/MWh], closed: a price record outside is rejected "
                                        "with its line (reported; the fallback holds there). The default is wider "
                                        "than any US market's offer caps; widen it for a market that needs it")
    currency: str = Field("USD", description="Currency of the prices (a label)")
    calendar: Literal["absolute", "typical-year"] = Field(
        "absolute", description="'absolute': read the series at the trace's own UTC times (same year); "
                                "'typical-year': the series' year stands for any year (month/day/hour)")
    utc_offset_h: float | None = Field(None, ge=-14, le=14, description="Site local standard time minus UTC [h], "
                                       "used only when the trace has no calendar; unset = the weather file header")
    strict: bool = Field(False, description="Stop at the first bad or duplicate record of a grid file")

    def signals_enabled(self) -> bool:
        """Whether a carbon or price signal is asked for (a file, ``carbon = "constant"``, or a constant)."""
        return bool(self.carbon or self.price or self.carbon_fallback_g_per_kWh is not None
                    or self.price_fallback_per_MWh is not None)


class CarbonPolicyConfig(_Strict):
    """Settings of the carbon- / price-aware policy (``scheduler.policy = "carbon-aware"`` or ``"price-aware"``)."""

    slack_h: float = Field(12.0, ge=0, description="Start delay a job may be given at most [h] after its submission "
                                                   "(default for every queue not in slack_by_queue)")
    slack_by_queue: dict[str, float] = Field(default_factory=dict, description="Slack per queue (QoS) name [h]; 0 "
                                             "makes a queue's jobs inflexible")
    max_estimate_h: float = Field(24.0, gt=0, description="Jobs whose requested time exceeds this [h] are not "
                                                          "delayed (their run spans many signal steps)")
    min_gain: float = Field(0.05, ge=0, lt=1, description="Delay a job only if a later start lowers the mean "
                                                          "signal over its run by at least this fraction")
    near_zero_price_per_MWh: float = Field(10.0, ge=0, description="price-aware: below this |price now| "
                                           "[currency/MWh] the gain is absolute (min_gain_abs_price_per_MWh), "
                                           "since a relative gain means nothing near zero")
    min_gain_abs_price_per_MWh: float = Field(0.5, ge=0, description="price-aware: drop of the run-mean price "
                                              "[currency/MWh] needed to hold a job where |price now| < "
                                              "near_zero_price_per_MWh")
    near_zero_carbon_g_per_kWh: float = Field(10.0, ge=0, description="carbon-aware: below this intensity "
                                              "[gCO2eq/kWh] the gain is absolute (min_gain_abs_carbon_g_per_kWh)")
    min_gain_abs_carbon_g_per_kWh: float = Field(0.5, ge=0, description="carbon-aware: drop of the run-mean "
                                                 "intensity [gCO2eq/kWh] needed to hold a job near zero")
