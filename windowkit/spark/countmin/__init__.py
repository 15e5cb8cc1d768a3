"""Windowed Count-Min on Spark: DistCM sites as Spark shards, a Spark aggregation as coordinator.

The distributed Count-Min of Rivetti, Busnel and Mostefaoui (Section 3.5, "DistCM") runs one
windowed sketch per *site* and sends each site's count matrix to a coordinator; the coordinator
sums the latest matrix of every site. Here, one module per part:

* :mod:`~windowkit.spark.countmin.sites`: each row's site (:func:`count_min_sites`), its step
  on the global clock, and its item's key (:func:`item_key`, hashed in the JVM);
* :mod:`~windowkit.spark.countmin.operator`: the core operator one site runs
  (:func:`make_operator`);
* :mod:`~windowkit.spark.countmin.snapshots`: :func:`windowed_count_min`, the sites run by the
  generic adapter (the mergeable variants, :data:`MERGEABLE`, in its mergeable mode on a
  batch), and :func:`latest_snapshots`;
* :mod:`~windowkit.spark.countmin.merge`: the coordinator, :func:`merge_count_min`;
* :mod:`~windowkit.spark.countmin.queries`: :func:`estimate_frequency` and
  :func:`heavy_hitters`.

Every function is lazy: no Spark job runs until an action on the DataFrame it returns.

One window whatever the shards. Every shard's sketch is time-based over the *global* steps:
for ``unit="ticks"`` the ticks of the event time, for ``unit="samples"`` the position of each
item in the whole stream (its sequence number, one tick per position). Every shard's clock is
moved to the same last step before its final snapshot (the input's last position or tick on a
batch DataFrame, the watermark on a stream), so each shard's window is the global steps
``(P - N, P]`` and, Count-Min being linear, the sum of the shards' matrices is the matrix of
the global window: exactly the same for any number of shards with ``"perfect"``, ``"simple"``
and ``"proportional"`` (up to float rounding), and within Splitter's approximation for
``"splitter"`` (each shard approximates its share of the window; its sub-cells are not
linear). The default number of shards is a constant, not the machine's core count, so a command
gives the same result on every machine.

Snapshot cadence: by default each shard sends one snapshot at the end of the input (batch) or
per micro-batch when the watermark moves (stream). ``snapshot_every=s`` adds the paper's
periodic snapshots every ``s`` samples (``ceil(epsilon N)`` in the paper); Theorem 7 then bounds
what the coordinator misses at any time: every cell of the merged matrix is within
``shards * s`` of the sum of the sites' current matrices.
"""

from __future__ import annotations

from windowkit.spark.countmin.merge import MERGED_COLUMNS, merge_count_min
from windowkit.spark.countmin.operator import (
    ALGORITHMS,
    JVM_SKETCHED,
    MERGEABLE,
    Algorithm,
)
from windowkit.spark.countmin.operator import (
    make_operator as make_operator,
)
from windowkit.spark.countmin.operator import (
    spark_count_min_counts as spark_count_min_counts,
)
from windowkit.spark.countmin.queries import estimate_frequency, heavy_hitters
from windowkit.spark.countmin.sites import (
    DEFAULT_SHARDS,
    ITEM_KEY,
    POSITION,
    POSITION_MICROS,
    SHARD,
)
from windowkit.spark.countmin.sites import (
    count_min_sites as count_min_sites,
)
from windowkit.spark.countmin.sites import (
    item_key as item_key,
)
from windowkit.spark.countmin.snapshots import (
    SNAPSHOT_COLUMNS,
    latest_snapshots,
    windowed_count_min,
)

__all__ = [
    "ALGORITHMS",
    "DEFAULT_SHARDS",
    "ITEM_KEY",
    "JVM_SKETCHED",
    "MERGEABLE",
    "MERGED_COLUMNS",
    "POSITION",
    "POSITION_MICROS",
    "SHARD",
    "SNAPSHOT_COLUMNS",
    "Algorithm",
    "estimate_frequency",
    "heavy_hitters",
    "latest_snapshots",
    "merge_count_min",
    "windowed_count_min",
]
