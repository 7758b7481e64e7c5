"""``UnitTally`` places each event on its session and source; it takes the source of the
event before again only when no other source's path extends that source's path."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from monitor.events import ToolCall
from monitor.replay_tally import UnitTally


@dataclass
class Source:
    path: str
    kind: str = "jsonl"


SOURCES = [Source("/s/agents/main/sessions"), Source("/s/agents/main/sessions/x"),
           Source("/s/agents/other/sessions"), Source("/s/agents/other/sessions")]


def longest_prefix(origin: str):
    matches = [s for s in sorted(SOURCES, key=lambda s: len(s.path), reverse=True)
               if origin.startswith(s.path)]
    return matches[0] if matches else None


ORIGINS = st.sampled_from(["/s/agents/main/sessions/a.jsonl@0", "/s/agents/main/sessions/x.jsonl@9",
                           "/s/agents/main/sessions/x/b.jsonl@5", "/s/agents/other/sessions/c@1",
                           "/elsewhere/d.jsonl@3"])


@given(st.lists(st.tuples(st.sampled_from(["s1", "s2", ""]), ORIGINS), max_size=40))
def test_every_event_is_counted_on_the_source_with_the_longest_path_prefix(events):
    tally = UnitTally(SOURCES)
    tally.add([ToolCall(sid, f"c{n}", "exec", {}, None, None, origin)
               for n, (sid, origin) in enumerate(events)])
    expected: dict[str, dict[str, int]] = {}
    unplaced = 0
    for sid, origin in events:
        source = longest_prefix(origin)
        if not sid or source is None:
            unplaced += 1
            continue
        name = f"jsonl:{source.path}"
        expected.setdefault(sid, {})[name] = expected.get(sid, {}).get(name, 0) + 1
    assert {sid: {name: unit[0] for name, unit in units.items()}
            for sid, units in tally.units.items()} == expected
    assert tally.unplaced == unplaced
