"""The depth guard of ``untrusted_json.loads``: a long line is judged by walking its decoded
containers, a short one by its bracket count; either way the value is the one the plain
decoder gives, clipped exactly where a container nests past ``MAX_DEPTH``."""

from __future__ import annotations

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from monitor import untrusted_json
from monitor.untrusted_json import COUNT_BRACKETS_UP_TO, MAX_DEPTH, TOO_DEEP


def depth_of(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


def chain(depth: int, leaf, kinds: list[bool]):
    """``depth`` containers, each the only nested one of its parent (a dict where ``kinds``
    says so), around ``leaf``."""
    value = leaf
    for level in range(depth):
        value = {"k": value, "n": level} if kinds[level % len(kinds)] else [level, value]
    return value


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                 max_size=4),
    max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(depth=st.integers(0, MAX_DEPTH + 6), leaf=values,
       kinds=st.lists(st.booleans(), min_size=1, max_size=5),
       padding=st.sampled_from([0, COUNT_BRACKETS_UP_TO]))
def test_loads_clips_exactly_what_nests_past_the_limit(depth, leaf, kinds, padding) -> None:
    value = {"pad": "[{" * (padding // 2), "body": chain(depth, leaf, kinds)}
    text = json.dumps(value)
    assert (len(text) > COUNT_BRACKETS_UP_TO) == bool(padding)
    expected = untrusted_json.clip_depth(copy.deepcopy(value))
    assert untrusted_json.loads(text) == expected
    assert untrusted_json.nests_deeper(value) == (depth_of(value) > MAX_DEPTH)


def test_a_long_line_deeper_than_the_limit_is_clipped_and_keeps_the_rest() -> None:
    text = json.dumps({"output": "x" * COUNT_BRACKETS_UP_TO,
                       "deep": chain(MAX_DEPTH + 5, "leaf", [False])})
    value = untrusted_json.loads(text)
    assert value["output"] == "x" * COUNT_BRACKETS_UP_TO
    assert depth_of(value) == MAX_DEPTH and TOO_DEEP in json.dumps(value, ensure_ascii=False)


def test_a_long_line_of_brackets_in_strings_is_left_as_it_is() -> None:
    text = json.dumps({"output": "[{" * COUNT_BRACKETS_UP_TO, "list": [[1], {"a": [2]}]})
    assert untrusted_json.loads(text) == json.loads(text)
