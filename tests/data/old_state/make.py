"""Write the ``*.bin`` files beside this script from ``builders.states()``.

Run with the windowkit whose bytes are wanted on the path, from this folder::

    PYTHONPATH=<that windowkit's root>:. python make.py
"""

from __future__ import annotations

from pathlib import Path

if __name__ == "__main__":
    import builders

    from windowkit.core.serialization import pack_state, unpack_state

    here = Path(__file__).parent
    for name, state in builders.states().items():
        blob = state.to_bytes()
        (here / f"{name}.bin").write_bytes(blob)
        if name in builders.OLDER_OPERATOR_PATHS:
            meta, arrays = unpack_state(blob, state.FORMAT_TAG, state.FORMAT_VERSION)
            meta["operator_class"] = builders.OLDER_OPERATOR_PATHS[name]
            older = pack_state(state.FORMAT_TAG, state.FORMAT_VERSION, meta, arrays)
            (here / f"{name}_older_path.bin").write_bytes(older)
