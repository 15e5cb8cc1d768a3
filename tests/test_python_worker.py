"""Spark's Python workers invalidate import caches before every task: an unchanged zip on
the path is not read again, a changed one is (windowkit.spark.python_worker)."""

from __future__ import annotations

import importlib
import sys
import zipfile
import zipimport

from windowkit.spark.python_worker import install_zip_directory_cache


def write_zip(path, modules: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, source in modules.items():
            archive.writestr(f"{name}.py", source)


def test_unchanged_zip_is_not_read_again_and_a_changed_one_is(tmp_path, monkeypatch):
    archive = tmp_path / "lib.zip"
    write_zip(archive, {"wk_zip_first": "VALUE = 1\n"})
    monkeypatch.syspath_prepend(str(archive))
    assert importlib.import_module("wk_zip_first").VALUE == 1
    installed = install_zip_directory_cache()
    assert installed == (sys.version_info < (3, 12))
    reads = []
    real_read = zipimport._read_directory
    monkeypatch.setattr(zipimport, "_read_directory",
                        lambda path: reads.append(path) or real_read(path))

    importlib.invalidate_caches()  # the first time reads the zip, to know its stamp
    reads.clear()
    importlib.invalidate_caches()
    importlib.invalidate_caches()
    if installed:
        assert reads == []  # the zip did not change: nothing read

    write_zip(archive, {"wk_zip_first": "VALUE = 1\n", "wk_zip_second": "VALUE = 22\n"})
    importlib.invalidate_caches()
    assert importlib.import_module("wk_zip_second").VALUE == 22
    assert reads and set(reads) == {str(archive)}
    for name in ("wk_zip_first", "wk_zip_second"):
        sys.modules.pop(name, None)
