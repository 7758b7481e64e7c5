"""One ``transcript_events.event_zstd`` value decompressed, within bounds.

The source and the kill evidence both read these blobs; either may meet a hostile or
damaged row. OpenClaw's schema holds an event to ``MAX_EVENT_BYTES`` of UTF-8, so nothing
larger is ever produced: a frame that declares more is refused before any allocation (the
decompressor trusts a declared size over ``max_output_size``), and one that declares
nothing is cut off at the limit.
"""

from __future__ import annotations

import zstandard

MAX_EVENT_BYTES = 4 * 1024 * 1024


class EventBlobError(ValueError):
    """An ``event_zstd`` value that gives no event; the message says why."""


def decompress_event(decompressor: zstandard.ZstdDecompressor, data: object,
                     utf8_bytes: object) -> bytes:
    """The event JSON bytes of ``data``, at most ``utf8_bytes`` (the row's own count, when
    it is a sane one) or ``MAX_EVENT_BYTES``; raises ``EventBlobError``."""
    if not isinstance(data, bytes):
        raise EventBlobError("not a blob")
    limit = utf8_bytes if isinstance(utf8_bytes, int) and 0 < utf8_bytes <= MAX_EVENT_BYTES \
        else MAX_EVENT_BYTES
    try:
        declared = zstandard.frame_content_size(data)
        if declared > MAX_EVENT_BYTES:
            raise EventBlobError(f"the frame declares {declared} bytes, over the "
                                 f"{MAX_EVENT_BYTES} limit")
        return decompressor.decompress(data, max_output_size=limit)
    except zstandard.ZstdError as exc:
        raise EventBlobError(str(exc)) from None
