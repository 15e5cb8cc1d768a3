"""Frame output of state written by older windowkit, which numbered frames 0, 1, 2... per key.

Today a frame's ``frame_id`` is the time of its first row (see
:mod:`windowkit.core.frames._engine`). A frame open in older state bytes keeps the id it had
(its partial rows were already out under it); every later frame of the key takes today's id.
Tests of older bytes compare their output with older windowkit's after
:func:`with_todays_ids`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from windowkit.core.operator import KEY


def open_frame_ids(framer: Any) -> dict[tuple[Any, int], int]:
    """``(key, start) -> frame_id`` of the frames a framer holds with an id (open, certain;
    ``start`` the time of the frame's first row).

    Examples
    --------
    >>> import numpy as np
    >>> from windowkit.core.frames import ThresholdFramer
    >>> f = ThresholdFramer("1 rows")
    >>> _ = f.update(np.array([5, 6]), [True, True], key=np.array(["a", "a"]))
    >>> open_frame_ids(f)
    {('a', 5): 5}
    """
    keys, arrays = framer.key_state()
    ids, starts = arrays["frame_id"].tolist(), arrays["f_start"].tolist()
    return {(k, s): i for k, s, i in zip(keys.tolist(), starts, ids, strict=True) if i != -1}


def with_todays_ids(output: pd.DataFrame, still_open: dict[tuple[Any, int], int],
                    key: str = KEY) -> pd.DataFrame:
    """Frame rows of a conservative framing with the ids windowkit gives them after reading
    older state: the frames of ``still_open`` (:func:`open_frame_ids` of that state) keep
    their ids, the others take their ``start``.

    Examples
    --------
    >>> older = pd.DataFrame({"key": ["a", "a", "b"], "frame_id": [2, 3, 0],
    ...                       "start": [40, 90, 7]})
    >>> with_todays_ids(older, {("a", 40): 2})["frame_id"].tolist()
    [2, 90, 7]
    """
    ids = [still_open.get((k, s), s) for k, s in zip(output[key].tolist(),
                                                      output["start"].tolist(), strict=True)]
    return output.assign(frame_id=pd.array(ids, dtype="int64"))
