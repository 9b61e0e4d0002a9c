"""`waitress-serve`, with the graceful stop waitress does not have: `python waitress_serve.py [its options] app:app`.

waitress-serve leaves SIGTERM (`docker compose stop`) to Python's default, which ends the process at once and cuts
every request in flight. On SIGINT it stops its main loop, which alone reads requests and writes answers, and gives
its threads 5 s to finish while it cancels the requests still queued for a thread. Here SIGTERM closes the listening
socket and the main loop goes on until every request already accepted, queued ones too, has its answer, for up to
GRACEFUL_TIMEOUT; connections with nothing in flight are closed as they fall idle. Nothing else differs: the same
options, parsed by waitress itself, and the same server.
"""

import logging
import signal
import sys
import time
from pkgutil import resolve_name

from waitress import create_server, wasyncore
from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel

# How long a stop waits for requests in flight, like every other server here (the compose files give 35 s).
GRACEFUL_TIMEOUT = 30.0


def serve(argv: list[str]) -> None:
    settings, (application,) = Adjustments.parse_args(argv)
    del settings["call"], settings["help"]  # waitress-serve's own, not the server's
    server = create_server(resolve_name(application), **settings)
    logging.basicConfig(level=logging.INFO)  # as waitress-serve: its start, and its queue warnings; no request log
    server.print_listen("Serving on http://{}:{}")
    stop_requested: list[float] = []
    signal.signal(signal.SIGTERM, lambda *_: stop_requested.append(time.monotonic()))

    def run_once(timeout: float) -> None:
        wasyncore.loop(timeout=timeout, use_poll=server.adj.asyncore_use_poll, map=server._map, count=1)

    while not stop_requested:
        run_once(server.adj.asyncore_loop_timeout)
    # The listening socket only: BaseWSGIServer.close() would also close the trigger the threads wake the loop with.
    wasyncore.dispatcher.close(server)
    while time.monotonic() < stop_requested[0] + GRACEFUL_TIMEOUT:
        channels = [channel for channel in server._map.values() if isinstance(channel, HTTPChannel)]
        if not channels:
            break
        for channel in channels:
            if not channel.requests and not channel.total_outbufs_len:  # nothing in flight, nothing left to send
                channel.will_close = True
        run_once(0.1)
    server.task_dispatcher.shutdown()


if __name__ == "__main__":
    serve(sys.argv[1:])
