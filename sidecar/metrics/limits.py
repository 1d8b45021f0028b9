"""What one HTTP client can hold: connections, time and bytes (fixed, documented constants).

One request per connection (responses are HTTP/1.0, the connection closes after each), so a
connection is idle only until its request line arrives: the header deadline bounds that too.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class HttpLimits:
    max_connections: int = 64  # served at once; one more is answered 503 and closed
    header_s: float = 5.0  # from accept to the end of the headers (idle time included): 408
    body_s: float = 10.0  # from the end of the headers to the end of the body: 408
    write_s: float = 30.0  # to write a response to a client that does not read: closed
    max_request_line: int = 8 * 1024  # 414
    max_header_bytes: int = 16 * 1024  # request line and headers together: 431
    max_body_bytes: int = 64 * 1024  # a form; Content-Length checked before reading: 413
    backlog: int = 128  # connections the kernel queues before they are accepted


LIMITS = HttpLimits()
