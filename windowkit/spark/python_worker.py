"""Make Spark's reused Python workers cheaper per task on Python 3.11.

Spark puts ``pyspark.zip`` (3.5 MB, thousands of entries) on every Python worker's path, so
the workers import pyspark from it, one ``zipimporter`` per package they touch. Before each
task a worker calls ``importlib.invalidate_caches()``, and on Python 3.11 every one of those
zipimporters then re-reads the whole zip directory in pure Python. windowkit's streaming
workers spent two fifths of their time there (measured with py-spy on the multi-granular
streaming benchmark: 807 of 1,940 samples). Python 3.12 made that
invalidation lazy (CPython gh-103200, found by a Spark developer for this very reason);
:func:`install_zip_directory_cache` gives 3.11 the same effect: a zip's
directory is read again only when the file changed (its size or modification time), so the
imports see exactly what they would have.
"""

from __future__ import annotations

import os
import sys
import zipimport

_INSTALLED = "_windowkit_stat_checked"


def install_zip_directory_cache() -> bool:
    """Re-read a zip archive's directory on ``invalidate_caches`` only if the file changed.

    Idempotent, and a no-op on Python 3.12 and later (whose zipimport is lazy already).

    Returns
    -------
    bool
        True if the check is in place (installed now or before).

    Examples
    --------
    >>> import sys
    >>> install_zip_directory_cache() == (sys.version_info < (3, 12))
    True
    """
    if sys.version_info >= (3, 12):
        return False
    reread = zipimport.zipimporter.invalidate_caches
    if getattr(reread, _INSTALLED, False):
        return True
    read_at: dict[str, tuple[int, int]] = {}

    def invalidate_caches(self: zipimport.zipimporter) -> None:
        try:
            st = os.stat(self.archive)
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        cached = zipimport._zip_directory_cache.get(self.archive)  # noqa: SLF001
        if stamp is not None and cached is not None and read_at.get(self.archive) == stamp:
            self._files = cached  # noqa: SLF001
            return
        reread(self)
        if stamp is not None:
            read_at[self.archive] = stamp

    setattr(invalidate_caches, _INSTALLED, True)
    zipimport.zipimporter.invalidate_caches = invalidate_caches
    return True
