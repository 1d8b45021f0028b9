"""Client streams (ImportMemories, ImportMemoriesStream): bounded apart from unary calls, paced
by their client without holding a worker, ended when the client falls silent.

At most ``max_streams`` are open at once; one more is answered RESOURCE_EXHAUSTED on arrival.
A stream's requests are read by a thread of its own: while the servicer waits for the next one
it holds no worker slot (it takes one for each message it works on), so silent streams cannot
keep unary calls from being served. A stream whose client sends nothing for ``idle_s`` seconds
ends with DEADLINE_EXCEEDED: the servicer sees its stream break (``StreamStopped``, a
``grpc.RpcError``) and, as for any broken stream, what it committed before stays and the
batch it was gathering is not committed (``sidecar.deadline`` reports the call as gone).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from sidecar.api.handlers import in_steps, live
from sidecar.api.workers import Workers

_EMPTY, _END, _IDLE = object(), object(), object()


class StreamStopped(grpc.RpcError):
    """The server stopped reading a client stream: its client fell silent (``idle``) or the
    call ended while the message waited for a worker."""

    def __init__(self, idle: bool) -> None:
        super().__init__("client stream idle" if idle else "call ended")
        self.idle = idle


class PacedRequests(Iterator[Any]):
    """A client stream's requests, handed over one at a time by a reader thread."""

    def __init__(self, requests: Iterator[Any], workers: Workers, idle_s: float,
                 context: grpc.ServicerContext) -> None:
        self.idle = False  # ended because the client sent nothing for idle_s
        self._workers, self._idle_s, self._context = workers, idle_s, context
        self._cond = threading.Condition()
        self._item: object = _EMPTY
        self._closed = self._expired = self._holding = False
        threading.Thread(target=self._read, args=(requests,), name="stream-reader",
                         daemon=True).start()

    def __next__(self) -> Any:
        self._give()  # no worker slot while the client is awaited
        item = self._wait()
        if item is _IDLE:
            self.idle = True
            raise StreamStopped(idle=True)
        if isinstance(item, BaseException):
            raise item
        if not self._workers.take(self.wanted, self._context.time_remaining, stream=True):
            raise StreamStopped(idle=False)
        self._holding = True
        if item is _END:
            raise StopIteration  # with a slot: the servicer finishes its work
        return item

    def wanted(self) -> bool:
        """The client still waits and has not fallen silent."""
        return not self.idle and live(self._context)

    def expire(self) -> None:
        """Time out now if no message is waiting (the idle clock's end, brought forward)."""
        with self._cond:
            self._expired = True
            self._cond.notify_all()

    def close(self) -> None:
        """The call is over: give back the slot; the reader stops with the call."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._give()

    def _give(self) -> None:
        if self._holding:
            self._holding = False
            self._workers.give(stream=True)

    def _wait(self) -> object:
        end = time.monotonic() + self._idle_s
        with self._cond:
            while self._item is _EMPTY:
                left = end - time.monotonic()
                if self._expired or left <= 0:
                    return _IDLE
                self._cond.wait(left)
            item, self._item = self._item, _EMPTY
            self._cond.notify_all()
            return item

    def _read(self, requests: Iterator[Any]) -> None:
        try:
            for request in requests:
                if not self._put(request):
                    return
            self._put(_END)
        except grpc.RpcError as err:  # the client's side broke or the call ended
            self._put(err)

    def _put(self, item: object) -> bool:
        with self._cond:
            while self._item is not _EMPTY and not self._closed:
                self._cond.wait()
            if self._closed:
                return False
            self._item = item
            self._cond.notify_all()
            return True


class StreamGate:
    """Admission of client streams, and their pacing and idle timeout."""

    def __init__(self, max_streams: int, idle_s: float, workers: Workers) -> None:
        self.max_streams, self.idle_s, self.workers = max_streams, idle_s, workers
        self.open: set[PacedRequests] = set()
        self._reserved = 0  # admitted streams, started or not
        self._lock = threading.Lock()

    def admit(self) -> bool:
        """Reserve a place for a stream that just arrived (its behaviour always runs and
        gives it back)."""
        with self._lock:
            if self._reserved >= self.max_streams:
                return False
            self._reserved += 1
            return True

    def pace(self, requests: Iterator[Any], context: grpc.ServicerContext) -> PacedRequests:
        paced = PacedRequests(requests, self.workers, self.idle_s, context)
        with self._lock:
            self.open.add(paced)
        return paced

    def leave(self, paced: PacedRequests | None) -> None:
        with self._lock:
            self._reserved -= 1
            self.open.discard(paced)
        if paced is not None:
            paced.close()

    def expire_idle(self) -> None:
        """Every open stream waiting for its client times out now (tests, operators)."""
        with self._lock:
            streams = list(self.open)
        for paced in streams:
            paced.expire()

    def refusal(self) -> str:
        return (f"server busy: {self.max_streams} import streams open (server.max_streams); "
                "retry with backoff")

    def idle_message(self) -> str:
        return (f"no message from the client for {self.idle_s:g} s "
                "(server.stream_idle_timeout_s): stream closed; what was acknowledged or "
                "committed before stays, the rest was not stored: re-send it")


def wrap_stream(gate: StreamGate, bind: Callable[[grpc.ServicerContext, Callable[[], bool]],
                                                 Any], behavior: Any) -> Any:
    """``behavior`` of a client-streaming method, paced and bounded by ``gate``; ``bind``
    makes ``sidecar.deadline`` answer with the given check while a step runs."""

    def paced(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
        stream = gate.pace(requests, context)
        try:
            with bind(context, stream.wanted):
                result = behavior(stream, context)
        except BaseException:
            gate.leave(stream)
            if stream.idle:
                context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, gate.idle_message())
            raise
        if isinstance(result, Iterator):
            return _replies(gate, stream, result, context, bind)
        gate.leave(stream)
        if stream.idle:
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, gate.idle_message())
        return result

    return paced


def _replies(gate: StreamGate, stream: PacedRequests, replies: Iterator[Any],
             context: grpc.ServicerContext, bind: Callable[..., Any]) -> Iterator[Any]:
    try:
        yield from in_steps(replies, lambda: bind(context, stream.wanted))
    finally:
        gate.leave(stream)
    if stream.idle:
        context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, gate.idle_message())
