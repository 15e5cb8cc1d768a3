"""windowkit: data-driven and sketch-based windows for Apache Spark.

Importing ``windowkit`` or ``windowkit.core`` never imports pyspark; the Spark layer lives in
``windowkit.spark``.
"""

__version__ = "0.1.0"
