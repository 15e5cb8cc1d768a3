"""Synthetic freeway traffic: the frames paper's evaluation data (appendix G).

"The data is from approximately 600 sensors on the Portland-Vancouver metropolitan area
freeways that report traffic speed and count every 20 seconds." The real data set is not
public, so this generator reproduces its shape: every sensor reports ``speed`` (mph) and
``count`` (vehicles in the 20 s) on a fixed schedule. Speeds follow a daily pattern (free flow
around 60 mph at night, two rush hours per day when a sensor may congest down to 10-30 mph for
tens of minutes, with each sensor's own timing), plus noise; counts follow the flow. A fraction
of reports is absent (a gap in the schedule) and a fraction carries no speed (null).

Draws come from ``numpy.random.default_rng(seed)``: the same arguments give the same rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from windowkit.core.durations import to_micros

REPORT_PERIOD = "20 seconds"
"""The sensors' reporting period."""


def traffic_speeds(
    n_sensors: int = 600,
    n_reports: int = 4320,
    seed: int = 0,
    start: str = "2010-09-01",
    period: str = REPORT_PERIOD,
    absent: float = 0.002,
    null_speed: float = 0.002,
) -> pd.DataFrame:
    """Traffic reports of ``n_sensors`` sensors, ``n_reports`` each (4,320 = one day).

    Parameters
    ----------
    n_sensors : int
        Number of sensors (the paper: about 600).
    n_reports : int
        Reports per sensor before absences (the paper's data sets: 1 day to 2 months).
    seed : int
        Random seed.
    start : str
        Time of the first report (UTC).
    period : str
        Reporting period.
    absent, null_speed : float
        Fractions of reports absent from the rows, and of rows whose speed is null.

    Returns
    -------
    pandas.DataFrame
        ``sensor`` (str), ``time`` (``datetime64[us, UTC]``), ``speed`` (float, mph; NaN when
        unknown) and ``count`` (int), sorted by time then sensor.

    Examples
    --------
    >>> df = traffic_speeds(n_sensors=3, n_reports=100, seed=1)
    >>> list(df.columns), df["sensor"].nunique(), bool(df["time"].is_monotonic_increasing)
    (['sensor', 'time', 'speed', 'count'], 3, True)
    >>> bool(df["speed"].between(0, 90).all() or df["speed"].isna().any())
    True
    """
    if n_sensors < 1 or n_reports < 1:
        msg = f"`n_sensors` and `n_reports` must be >= 1; got {n_sensors}, {n_reports}"
        raise ValueError(msg)
    rng = np.random.default_rng(seed)
    period_us = to_micros(period, "period")
    t0 = pd.Timestamp(start, tz="UTC").value // 1000
    step = np.arange(n_reports, dtype=np.int64)
    day_fraction = ((t0 % 86_400_000_000 + step * period_us) / 86_400e6) % 1.0
    # each sensor: rush-hour centres (morning, evening), depth and width of its slowdowns
    centre = np.stack([rng.normal(0.33, 0.02, n_sensors), rng.normal(0.72, 0.02, n_sensors)], 1)
    width = rng.uniform(0.01, 0.04, (n_sensors, 2))
    depth = rng.uniform(0.0, 50.0, (n_sensors, 2)) * (rng.random((n_sensors, 2)) < 0.6)
    free = rng.normal(62.0, 4.0, n_sensors)
    dip = np.zeros((n_sensors, n_reports))
    for k in range(2):
        z = (day_fraction[None, :] - centre[:, k:k + 1]) / width[:, k:k + 1]
        dip += depth[:, k:k + 1] * np.exp(-0.5 * z * z)
    speed = free[:, None] - dip + rng.normal(0.0, 3.0, (n_sensors, n_reports))
    speed = np.clip(speed, 3.0, 85.0)
    flow = np.clip(speed / 60.0, 0.2, 1.0) * (0.3 + 0.7 * np.sin(np.pi * day_fraction) ** 2)
    count = rng.poisson(12.0 * flow)
    keep = rng.random((n_sensors, n_reports)) >= absent
    speed = np.where(rng.random((n_sensors, n_reports)) < null_speed, np.nan, speed)
    sensor_idx, report_idx = np.nonzero(keep)
    names = np.array([f"s{i:04d}" for i in range(n_sensors)], dtype=object)
    df = pd.DataFrame({
        "sensor": names[sensor_idx],
        "time": pd.to_datetime(t0 + report_idx * period_us, unit="us", utc=True),
        "speed": np.round(speed[sensor_idx, report_idx], 1),
        "count": count[sensor_idx, report_idx].astype(np.int64),
    })
    df["time"] = df["time"].astype("datetime64[us, UTC]")
    order = np.lexsort((sensor_idx, report_idx))
    return df.iloc[order].reset_index(drop=True)
