"""Plots: the table behind the persistent-items heatmap, and that the PNG gets written."""

from __future__ import annotations

import math

import pandas as pd

from windowkit.plots import persistence_matrix, plot_persistence


def reports() -> pd.DataFrame:
    # c is reported in 3 windows, a and b in 2 each (b with the larger total), d in 1; the
    # malformed row has no window and must not count
    rows = [(10, "a", 4.0), (11, "a", 5.0), (10, "b", 6.0), (12, "b", 8.0),
            (10, "c", 3.0), (11, "c", 3.0), (12, "c", 3.0), (12, "d", 9.0), (None, None, None)]
    return pd.DataFrame(rows, columns=["window_end_slot", "ip", "estimate"])


def test_rows_are_the_items_reported_in_most_windows_then_by_total():
    grid = persistence_matrix(reports(), item="ip", top=3)
    assert grid.index.tolist() == ["c", "b", "a"]
    assert grid.columns.tolist() == [10, 11, 12]
    assert grid.loc["b"].tolist()[0] == 6.0 and math.isnan(grid.loc["b", 11])


def test_cells_are_the_fraction_of_the_window_slots():
    grid = persistence_matrix(reports(), item="ip", window_slots=8, top=10)
    assert grid.index.tolist() == ["c", "b", "a", "d"]
    assert grid.loc["d", 12] == 9.0 / 8 and grid.loc["a", 11] == 5.0 / 8


def test_the_heatmap_is_written_as_a_png(tmp_path):
    out = plot_persistence(reports(), str(tmp_path / "p.png"), item="ip", window_slots=8)
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out == str(tmp_path / "p.png")


def test_window_ends_label_the_axis_with_the_date_once_when_they_share_a_day():
    from windowkit.plots import _end_labels

    frame = reports()
    frame["window_end"] = frame["window_end_slot"].map(
        {10: pd.Timestamp("2026-11-01 00:05"), 11: pd.Timestamp("2026-11-01 00:05:30"),
         12: pd.Timestamp("2026-11-02 00:06")})
    assert _end_labels(frame, [10, 11]) == (["00:05:00", "00:05:30"], "window end (2026-11-01)")
    assert _end_labels(frame, [10, 12]) == (["2026-11-01 00:05", "2026-11-02 00:06"],
                                            "window end")
    assert _end_labels(reports(), [10, 12]) == (["10", "12"], "window end slot")
