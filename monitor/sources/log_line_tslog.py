"""A gateway file-log line (tslog JSON) decoded only as far as its notice needs.

A file-log line is a JSON object of about a dozen fields, of which a notice reads the
subsystem bindings (``"0"``), the positional arguments after them, ``message``, the level
and date in ``_meta``, ``time``, ``traceId`` and two id fields. ``decode_tslog`` decodes
those into typed structs and skips the rest without building it. A line these types do not
take (not an object, a ``_meta`` that is not one, a fourth positional argument: the fields
hold three) gives None, and ``log_line_forms`` reads it as a plain JSON object: so every line
gives the notice, or the error, that the plain read gives.
"""

from __future__ import annotations

from typing import Any

import msgspec

UNSET = msgspec.UNSET


class TslogMeta(msgspec.Struct):
    logLevelName: Any = None
    date: Any = None


class TslogLine(msgspec.Struct):
    """The fields a notice reads; ``UNSET`` where the line has no such key."""

    bindings: Any = msgspec.field(default=UNSET, name="0")
    first: Any = msgspec.field(default=UNSET, name="1")
    second: Any = msgspec.field(default=UNSET, name="2")
    third: Any = msgspec.field(default=UNSET, name="3")
    meta: TslogMeta | msgspec.UnsetType = msgspec.field(default=UNSET, name="_meta")
    time: Any = None
    message: Any = UNSET
    traceId: Any = None
    session_id: Any = None
    agent_id: Any = None

    def positional(self) -> tuple:
        """The values of ``"0"``, ``"1"``, ``"2"`` up to the first key the line lacks."""
        values = (self.bindings, self.first, self.second)
        for index, value in enumerate(values):
            if value is UNSET:
                return values[:index]
        return values


_DECODER = msgspec.json.Decoder(TslogLine)


def decode_tslog(text: str) -> TslogLine | None:
    """``text`` as a tslog line with its ``_meta``, or None when the plain read must take it
    (see the module docstring)."""
    try:
        line = _DECODER.decode(text)
    except (msgspec.MsgspecError, RecursionError):
        return None
    if line.meta is UNSET or line.third is not UNSET:
        return None
    return line
