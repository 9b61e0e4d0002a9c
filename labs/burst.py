"""The labs' load client: requests sent on a schedule, each on its own new connection, with what happened to each.

Run inside a container on the lab's network (bench/labs.py mounts it into the ab image, which has Python): there,
nothing between the client and the server accepts a connection on the server's behalf, as docker-proxy does on a
published port. Standard library only.

    python burst.py [--timeout SECONDS] COUNT,START,EVERY,URL ...

sends COUNT requests to URL, the first START seconds after the run begins and one every EVERY seconds after that
(0: all at once), and prints one JSON record per request: when it was sent, how long the connection took, how long
the whole request took, the status, the body, or the error that ended it. A request unanswered after the timeout
(default 60 s, as many clients give) ends with TimeoutError.
"""

import asyncio
import json
import socket
import sys
import time
from urllib.parse import urlsplit


async def one(address: tuple[str, int], host: str, target: str, at: float, started: float, timeout: float) -> dict:
    await asyncio.sleep(max(0.0, started + at - time.monotonic()))
    sent = time.monotonic()
    record: dict = {"url": f"http://{host}{target}", "sent": round(sent - started, 4), "connect": None}
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(*address)
            record["connect"] = round(time.monotonic() - sent, 4)
            writer.write(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            answer = await reader.read()
            writer.close()
        head, _, body = answer.decode("utf-8", "replace").partition("\r\n\r\n")
        record["status"] = int(head.split()[1]) if head.startswith("HTTP/") else None
        record["body"] = body[:80]
    except (OSError, TimeoutError, IndexError, ValueError) as error:
        # Refused, reset, timed out: the kind is what a client in production would log.
        record["status"], record["error"] = None, error.__class__.__name__
    record["seconds"] = round(time.monotonic() - sent, 4)
    return record


async def main(plans: list[str], timeout: float) -> None:
    schedule = []
    addresses: dict[tuple[str, int], tuple[str, int]] = {}
    for plan in plans:
        count, start, every, url = plan.split(",", 3)
        parts = urlsplit(url)
        where = (parts.hostname or "", parts.port or 80)
        # Looked up once, before the clock starts: a burst of connections, not a burst of DNS queries.
        if where not in addresses:
            addresses[where] = (socket.gethostbyname(where[0]), where[1])
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        for i in range(int(count)):
            schedule.append((addresses[where], parts.netloc, target, float(start) + i * float(every)))
    started = time.monotonic()
    records = await asyncio.gather(*(one(*entry, started, timeout) for entry in schedule))
    for record in records:
        print(json.dumps(record))


if __name__ == "__main__":
    arguments = sys.argv[1:]
    timeout = float(arguments[1]) if arguments[:1] == ["--timeout"] else 60.0
    asyncio.run(main(arguments[2:] if arguments[:1] == ["--timeout"] else arguments, timeout))
