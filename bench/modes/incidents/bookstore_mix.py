"""The bookstore's mixed load as the timeline's clients send it (make incidents, bench/loadgen/timeline.py): 90 % reads
of a random author, 10 % writes each named by a marker of its own, every answer judged against what it must say, and
the writes each client saw acknowledged kept for the lookup after the load (bench/measure/bookstore.py)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from bench.loadgen import timeline
from bench.measure.bookstore import MARKER_PREFIX, POST_BODY


class BookstoreMix:
    """The bookstore's mixed load for the timeline's clients: 90 % GET /author/<random id> (answered 200 with that
    author), 10 % POST /author with a marker unique to the load, client and request (answered 201 naming it). Each
    client has its own random stream and its own list of the writes it saw acknowledged."""

    def __init__(self, scale: int, clients: int, token: str, seed: int = 1) -> None:
        self.scale, self.token = scale, token
        self.random = [random.Random(seed * 1_000_003 + client) for client in range(clients)]
        self.sent = [0] * clients
        self.acknowledged: list[list[str]] = [[] for _ in range(clients)]

    def __call__(self, client: int) -> timeline.Exchange:
        self.sent[client] += 1
        if self.random[client].random() < 0.1:
            marker = f"{MARKER_PREFIX}{self.token}-{client}-{self.sent[client]}"
            body = json.dumps(POST_BODY).replace("@@MARKER@@", marker).encode()
            headers = {"Content-Type": "application/json"}
            return timeline.Exchange("POST", "/author", self.judge_write(client, marker), body, headers)
        author_id = self.random[client].randint(1, self.scale)
        return timeline.Exchange("GET", f"/author/{author_id}", self.judge_read(author_id))

    @staticmethod
    def judge_read(author_id: int) -> Callable[[int, bytes], str]:
        def judge(status: int, body: bytes) -> str:
            if status != 200:
                return f"status {status}"
            return timeline.OK if name_in(body) == f"Author {author_id}" else timeline.WRONG_BODY

        return judge

    def judge_write(self, client: int, marker: str) -> Callable[[int, bytes], str]:
        def judge(status: int, body: bytes) -> str:
            if status != 201:
                return f"status {status}"
            if name_in(body) != marker:
                return timeline.WRONG_BODY
            self.acknowledged[client].append(marker)
            return timeline.OK

        return judge

    def all_acknowledged(self) -> list[str]:
        return [marker for markers in self.acknowledged for marker in markers]


def name_in(body: bytes) -> str | None:
    """The `name` of a JSON object answer; None for anything else (a proxy's HTML error page with a 2xx, cut bytes)."""
    try:
        answer = json.loads(body)
    except ValueError:
        return None
    return answer.get("name") if isinstance(answer, dict) else None
