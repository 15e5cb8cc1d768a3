"""The figures of a written report as PNG files: the README's pictures are the demo's.

Each step's figure is written as ``FOLDER/STEP.png``; with ``only_existing``, only the files
the folder already holds are replaced, so::

    python -m windowkit.report.images out/demo/results/report.html docs/img

refreshes the README's pictures from the page the demo wrote, drawn by the report's code.
"""

from __future__ import annotations

import base64
import html
import os
import re
import sys

_STEP = re.compile(r'<section class="step"[^>]*\bdata-step="([^"]*)"(.*?)</section>', re.S)
_IMAGE = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def report_figures(page: str) -> dict[str, bytes]:
    """Step name -> PNG bytes of its figure, for each step of a report page with one.

    Examples
    --------
    >>> png = base64.b64encode(b"\\x89PNG...").decode()
    >>> page = (f'<section class="step" data-step="a &amp; b"><img src="data:image/png;'
    ...         f'base64,{png}"></section><section class="step" data-step="c"></section>')
    >>> report_figures(page)
    {'a & b': b'\\x89PNG...'}
    """
    found = {}
    for name, body in _STEP.findall(page):
        image = _IMAGE.search(body)
        if image is not None:
            found[html.unescape(name)] = base64.b64decode(image.group(1))
    return found


def write_figures(report: str, folder: str, only_existing: bool = True) -> list[str]:
    """Write the figures of the report page ``report`` into ``folder``; return the paths.

    Examples
    --------
    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> png = base64.b64encode(b"\\x89PNG...").decode()
    >>> page = os.path.join(out, "report.html")
    >>> _ = open(page, "w").write(f'<section class="step" data-step="levels">'
    ...                           f'<img src="data:image/png;base64,{png}"></section>')
    >>> [os.path.basename(p) for p in write_figures(page, out, only_existing=False)]
    ['levels.png']
    """
    with open(report, encoding="utf-8") as handle:
        figures = report_figures(handle.read())
    written = []
    for name, png in figures.items():
        path = os.path.join(folder, f"{name}.png")
        if only_existing and not os.path.exists(path):
            continue
        with open(path, "wb") as out:
            out.write(png)
        written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover - a maintainer's tool
    for written_path in write_figures(sys.argv[1], sys.argv[2]):
        print(written_path)
