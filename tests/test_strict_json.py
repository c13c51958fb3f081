"""Issue 57: the strict reading of one line that the tee, the reference agent and ``validate``
share (``simulations.live.process.tee``: ``too_big``, ``read_json``), against Hypothesis's
JSON values and garbage: the depth measured on the text is the parsed value's, and nothing
raises.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from simulations.live.process.tee import read_json, too_big

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=40,
)


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


@settings(deadline=None)
@given(_json, st.integers(0, 8))
def test_the_strict_reading_measures_depth_before_parsing(value: object, limit: int) -> None:
    """The depth ``too_big`` measures on the text (strings skipped whole) is the parsed
    value's: what ``validate``, the tee and the reference agent refuse is exactly what nests
    deeper than their limit."""
    text = json.dumps(value)
    deep = too_big(text, limit) is not None
    assert deep == (_depth(value) > limit)
    reading = read_json(text, limit)
    assert (reading.problem is not None) == deep
    if not deep:
        assert reading.value == value and not reading.twice


@settings(deadline=None)
@given(st.binary(max_size=200) | st.text(alphabet='[]{}",:\\0aNn ', max_size=200))
def test_the_strict_reading_never_raises(garbage: bytes | str) -> None:
    """Any bytes or text: a value or a problem, never an exception."""
    reading = read_json(garbage, 4)
    assert reading.problem is None or reading.value is None
