"""Run by every Python process a local windowkit session starts, as its interpreter starts
(see :mod:`windowkit.worker_path`): PySpark from the installed package, then the
``sitecustomize`` this one hides."""

import os

try:
    from windowkit.worker_path import prefer_installed_pyspark, run_next_sitecustomize
except ImportError:  # windowkit is not importable here: the process starts as Spark set it
    pass
else:
    prefer_installed_pyspark()
    run_next_sitecustomize(os.path.dirname(os.path.abspath(__file__)))
