"""Whether a server answered what Flask's development server answers, the parts that change from one request to the
next (a CSRF token, a date, a nonce) masked: the development server is asked twice, what differs between its two
answers becomes a wildcard, and the rest must come back as it was."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import accumulate

# Words (bytes from 0x80 up count as letters, so a UTF-8 word stays whole), runs of white space, and single other
# bytes. Matching whole words rather than characters keeps two random tokens from lining up on the few characters
# they happen to share, which would be literals that a third token misses.
_TOKEN = re.compile(rb"[\w\x80-\xff]+|\s+|[^\w\s\x80-\xff]")
# A literal this short between two wildcards is taken for a coincidence (the "." both numbers had, the "+" both
# nonces had) and masked with them.
_SHORTEST_LITERAL = 4
# Stretches of the two answers with no token found once in each are aligned by SequenceMatcher, whose time grows with
# the product of their lengths: 0.35 s for 2,000 tokens each of two kinds only, its worst, half a minute for two
# whole 100 KB pages. Past this product, the stretch is masked whole.
_ALIGN_MAX = 4_000_000
_SHOWN = 40


@dataclass(frozen=True)
class AnswerMask:
    """The reference answer as literal parts with a wildcard, any run of bytes, between each two: a first part
    b"" means a wildcard at the start, a last part b"" one at the end."""

    literal_parts: tuple[bytes, ...]
    masked: int  # wildcards: len(literal_parts) - 1

    @property
    def stable_bytes(self) -> int:
        return sum(map(len, self.literal_parts))

    @property
    def summary(self) -> str:
        if not self.masked:
            return f"nothing masked, {self.stable_bytes} bytes"
        return f"{self.masked} part{'s' if self.masked > 1 else ''} masked, {self.stable_bytes} bytes stable"

    def difference(self, body: bytes) -> str | None:
        """None when `body` matches; else where it first differs, in one line."""
        parts = self.literal_parts
        if len(parts) == 1 and body == parts[0]:
            return None
        if len(parts) == 1 or not body.startswith(parts[0]):
            at = _common_prefix(parts[0], body)
            return _describe(at, parts[0][at:], body[at:])
        at = len(parts[0])
        # Each part at its leftmost place after the one before: if any placing matches, this one does, as a later
        # place only leaves less room for the parts after it.
        for part in parts[1:-1]:
            found = body.find(part, at)
            if found < 0:
                return _missing(part, body, at)
            at = found + len(part)
        last = parts[-1]
        if body.endswith(last) and len(body) - len(last) >= at:
            return None
        return _missing(last, body, at)


def _common_prefix(a: bytes, b: bytes) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:  # by halves, each comparison in C: a byte at a time in Python takes ms per 100 KB
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _missing(part: bytes, body: bytes, start: int) -> str:
    """Where `part`, expected somewhere from `start` on, stops matching: after its longest beginning found there."""
    low, high = 0, len(part)
    while low < high:  # a beginning found means every shorter one is
        middle = (low + high + 1) // 2
        if body.find(part[:middle], start) >= 0:
            low = middle
        else:
            high = middle - 1
    at = body.find(part[:low], start) + low
    return _describe(at, part[low:], body[at:])


def _describe(at: int, expected: bytes, got: bytes) -> str:
    return f"at byte {at}: expected {_shown(expected)}, got {_shown(got)}"


def _shown(data: bytes) -> str:
    if not data:
        return "the end"
    return repr(data[:_SHOWN]) + ("..." if len(data) > _SHOWN else "")


def _unique_anchors(a: list[bytes], b: list[bytes]) -> list[tuple[int, int]]:
    """The tokens found once in each, paired, the longest run of pairs in the same order in both (patience diff)."""
    count_a, count_b = Counter(a), Counter(b)
    where_b = {token: j for j, token in enumerate(b) if count_b[token] == 1 and count_a[token] == 1}
    pairs = [(i, where_b[token]) for i, token in enumerate(a) if token in where_b]
    # Longest increasing subsequence of the b positions: tails[k], the smallest end of a run of k + 1 pairs.
    tails: list[int] = []  # indexes into pairs
    before: list[int] = []  # for each pair, the pair before it in its run
    for index, (_, j) in enumerate(pairs):
        low, high = 0, len(tails)
        while low < high:
            middle = (low + high) // 2
            if pairs[tails[middle]][1] < j:
                low = middle + 1
            else:
                high = middle
        before.append(tails[low - 1] if low else -1)
        if low == len(tails):
            tails.append(index)
        else:
            tails[low] = index
    run, index = [], tails[-1] if tails else -1
    while index >= 0:
        run.append(pairs[index])
        index = before[index]
    return run[::-1]


def _matching_blocks(a: list[bytes], b: list[bytes]) -> list[tuple[int, int, int]]:
    """(i, j, n): a[i:i + n] == b[j:j + n], in order in both. Answers asked twice are mostly equal, so the common
    beginning and end go first; in between, the tokens found once in each split the rest into short stretches,
    and only a stretch with none is left to SequenceMatcher, which is slow on long ones."""
    blocks: list[tuple[int, int, int]] = []
    stretches = [(0, len(a), 0, len(b))]
    while stretches:
        a_low, a_high, b_low, b_high = stretches.pop()
        same = 0
        while a_low + same < a_high and b_low + same < b_high and a[a_low + same] == b[b_low + same]:
            same += 1
        if same:
            blocks.append((a_low, b_low, same))
            a_low, b_low = a_low + same, b_low + same
        same = 0
        while a_high - same > a_low and b_high - same > b_low and a[a_high - same - 1] == b[b_high - same - 1]:
            same += 1
        if same:
            blocks.append((a_high - same, b_high - same, same))
            a_high, b_high = a_high - same, b_high - same
        if a_low == a_high or b_low == b_high:
            continue
        anchors = _unique_anchors(a[a_low:a_high], b[b_low:b_high])
        if anchors:
            i_next, j_next = a_low, b_low
            for i, j in anchors:
                stretches.append((i_next, a_low + i, j_next, b_low + j))
                blocks.append((a_low + i, b_low + j, 1))
                i_next, j_next = a_low + i + 1, b_low + j + 1
            stretches.append((i_next, a_high, j_next, b_high))
        elif (a_high - a_low) * (b_high - b_low) <= _ALIGN_MAX:
            matcher = SequenceMatcher(None, a[a_low:a_high], b[b_low:b_high], autojunk=False)
            blocks.extend((a_low + i, b_low + j, n) for i, j, n in matcher.get_matching_blocks() if n)
    return sorted(blocks)


def mask(first: bytes, second: bytes) -> AnswerMask:
    """The reference answer asked twice: what both say stays literal, what differs becomes a wildcard."""
    if first == second:
        return AnswerMask(literal_parts=(first,), masked=0)
    a, b = _TOKEN.findall(first), _TOKEN.findall(second)
    starts = [0, *accumulate(map(len, a))]  # the byte offset of each token of `first`
    blocks = _matching_blocks(a, b)
    spans: list[tuple[int, int]] = []  # bytes of `first` that stay literal, a wildcard between each two
    ends = (0, 0)
    for i, j, n in blocks:
        if spans and (i, j) == ends:
            spans[-1] = (spans[-1][0], starts[i + n])
        else:
            spans.append((starts[i], starts[i + n]))
        ends = (i + n, j + n)
    parts = [first[start:end] for start, end in spans]
    if not blocks or blocks[0][:2] != (0, 0):
        parts.insert(0, b"")
    if ends != (len(a), len(b)):
        parts.append(b"")
    inner = [part for part in parts[1:-1] if len(part) >= _SHORTEST_LITERAL]
    literal_parts = (parts[0], *inner, parts[-1])
    return AnswerMask(literal_parts=literal_parts, masked=len(literal_parts) - 1)


def same_answer(expected_status: int, mask: AnswerMask, status: int, body: bytes) -> str | None:
    """None when the status and the body match the reference's; else the first difference, in one line."""
    if status != expected_status:
        return f"status {status}, expected {expected_status}"
    return mask.difference(body)
