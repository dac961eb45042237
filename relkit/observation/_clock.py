"""A node's in-service clock: age without the gaps between windows (private)."""

from datetime import UTC, datetime
from typing import NamedTuple

import polars as pl

from relkit.observation._base import US_PER_H, hours_between, lit_ts

CLOCK_ZERO = datetime(1970, 1, 1, tzinfo=UTC)


class ServiceClock(NamedTuple):
    """What :func:`to_service_clock` returns; unpacks as ``units, failures``.

    Parameters
    ----------
    units : pl.DataFrame
        One assets-shaped row per node on its in-service clock.
    failures : pl.DataFrame
        The failures on that clock (``prior`` true for the prior ones).
    """

    units: pl.DataFrame
    failures: pl.DataFrame


def to_service_clock(
    windows: pl.DataFrame, failures: pl.DataFrame, prior: pl.DataFrame
) -> ServiceClock:
    r"""Move each node's windows and failures onto its in-service clock.

    Parameters
    ----------
    windows : pl.DataFrame
        :func:`service_windows` (one row per service window; ``host``,
        ``in_service_ts``, ``observed_from_ts``, ``out_of_service_ts``,
        ``exposure_h`` and unit attributes).
    failures : pl.DataFrame
        Failures inside a window (``host``, ``ts``).
    prior : pl.DataFrame
        Failures before observation began (``host``, ``ts``).

    Returns
    -------
    ServiceClock
        Named tuple ``(units, failures)``: one assets-shaped row per node
        and the failures (with ``prior`` true for the prior ones), their
        instants replaced by
        ``1970-01-01T00:00Z`` plus the node's hours in service until then. A
        gap between two windows is neither age nor exposure, so differences of
        these instants are times in service. ``in_service_ts`` is the clock's
        zero, or null when the node's first install date is unknown.

    Notes
    -----
    Window :math:`w` of a node starts service at
    :math:`s_w` (``in_service_ts``, else its entry into observation) and ends
    at :math:`e_w`; an instant :math:`t \in [s_w, e_w]` is at clock
    :math:`\sum_{v<w}(e_v - s_v) + (t - s_w)`.
    """
    attrs = [
        c
        for c in windows.columns
        if c
        not in {
            "source_id",
            "line_no",
            "in_service_ts",
            "observed_from_ts",
            "out_of_service_ts",
            "exposure_h",
            "exit_basis",
            "left_truncated",
            "in_service_unknown",
            "attrs",
            "device",
            "gpus",
        }
    ]
    w = (
        windows.with_columns(_s=pl.coalesce("in_service_ts", "observed_from_ts"))
        .filter(
            pl.col("_s").is_not_null() & (pl.col("out_of_service_ts") >= pl.col("_s"))
        )
        .sort("host", "_s")
        .with_columns(_len=hours_between(pl.col("out_of_service_ts"), pl.col("_s")))
        .with_columns(
            _offset=pl.col("_len").cum_sum().shift(1, fill_value=0.0).over("host"),
            _w=pl.int_range(pl.len()).over("host"),
        )
    )

    def clock(hours: pl.Expr) -> pl.Expr:
        return lit_ts(CLOCK_ZERO) + pl.duration(
            microseconds=(hours * US_PER_H).round(0).cast(pl.Int64)
        )

    first = w.filter(pl.col("_w") == 0).select(
        "host", _known=pl.col("in_service_ts").is_not_null()
    )
    observed = w.filter(pl.col("exposure_h") > 0)
    units = (
        observed.group_by("host")
        .agg(
            *[pl.col(c).first() for c in attrs if c != "host"],
            observed_from_ts=(
                pl.col("_offset")
                + hours_between(pl.col("observed_from_ts"), pl.col("_s"))
            )
            .sort_by("_s")
            .first(),
            out_of_service_ts=(pl.col("_offset") + pl.col("_len")).max(),
        )
        .join(first, on="host", how="left")
        .with_columns(
            in_service_ts=pl.when("_known").then(lit_ts(CLOCK_ZERO)),
            observed_from_ts=clock(pl.col("observed_from_ts")),
            out_of_service_ts=clock(pl.col("out_of_service_ts")),
        )
        .drop("_known")
    )
    both = pl.concat(
        [
            failures.with_columns(prior=pl.lit(False)),
            prior.with_columns(prior=pl.lit(True)),
        ],
        how="diagonal_relaxed",
    ).with_row_index("_fid")
    # a failure before the first window (a unit whose install date is unknown,
    # failing before tracking began) sits before the clock's zero
    before_first = pl.col("prior") & (pl.col("_w") == 0) & (pl.col("ts") < pl.col("_s"))
    placed = (
        both.select("_fid", "host", "ts", "prior")
        .join(
            w.select("host", "_s", "_offset", "_w", _e="out_of_service_ts"), on="host"
        )
        .filter(
            ((pl.col("ts") >= pl.col("_s")) & (pl.col("ts") <= pl.col("_e")))
            | before_first
        )
        .group_by("_fid")
        .agg(
            _clock=(
                pl.col("_offset") + hours_between(pl.col("ts"), pl.col("_s"))
            ).first()
        )
    )
    moved = (
        both.join(placed, on="_fid", how="inner")
        .with_columns(ts=clock(pl.col("_clock")))
        .drop("_fid", "_clock")
    )
    return ServiceClock(units, moved)
