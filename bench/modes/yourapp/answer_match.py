"""Whether a server answered what Flask's development server answers, the parts that change from one answer to the
next (a CSRF token, a date, a nonce, what the set-up wrote) masked: the development server is asked more than once,
what differs between its answers becomes a wildcard, and the rest must come back as it was. A wildcard covers the
whole token a difference falls in (a run of letters, digits and - _ . = + /, as tokens, ids and salts are written),
and the whole date or time: the characters two answers happen to share inside one are no literal a third keeps."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import accumulate

# Runs of token characters (bytes from 0x80 up count as letters, so a UTF-8 word stays whole), runs of white space,
# and single other bytes. Matching whole runs keeps two random tokens (a CSRF token: base64 in parts joined by "."
# and "-") from lining up on the pieces they happen to share, pieces a third token does not have.
_TOKEN_CHARACTERS = rb"\w\x80-\xff\-.=+/"
_TOKEN = re.compile(rb"[" + _TOKEN_CHARACTERS + rb"]+|\s+|[^\s" + _TOKEN_CHARACTERS + rb"]")
# Dates and times as apps write them: ISO 8601 and str(datetime), HTTP's and e-mail's dates, ctime's, a time alone.
# A difference inside one masks all of it: two answers a few seconds apart share the date, the hour and the minute,
# which a way asked minutes later does not.
_MONTH = rb"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
_WEEKDAY = rb"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? "
_CLOCK = rb"\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?"
_ZONE = rb"(?: ?(?:Z|GMT|UTC|[+-]\d{2}:?\d{2}))?"
_THEN_CLOCK = rb"(?:(?:T|,? (?:at )?)" + _CLOCK + rb")?"  # "T10:00", " 10:00", ", 10:00", " at 10:00"
_ISO_DATE = rb"\d{4}-\d{2}-\d{2}" + _THEN_CLOCK + _ZONE  # 2026-11-27T10:00:01.5+00:00, str(datetime)
_HTTP_DATE = rb"(?:" + _WEEKDAY + rb")?\d{1,2}[ -]" + _MONTH + rb"[ -]\d{2,4}" + _THEN_CLOCK + _ZONE
_CTIME = rb"(?:" + _WEEKDAY + rb")?" + _MONTH + rb" [ \d]?\d(?:,? \d{4})?" + _THEN_CLOCK + rb"(?: \d{4})?"
_DATE_TIME = re.compile(b"|".join([_ISO_DATE, _HTTP_DATE, _CTIME, _CLOCK]))
# A literal this short between two wildcards is taken for a coincidence (the ":" both times had, the " " between a
# changing date and a changing count) and masked with them.
_SHORTEST_LITERAL = 4
# Stretches of the two answers with no token found once in each are aligned by SequenceMatcher, whose time grows with
# the product of their lengths: 0.35 s for 2,000 tokens each of two kinds only, its worst, half a minute for two
# whole 100 KB pages. Past this product, the stretch is masked whole.
_ALIGN_MAX = 4_000_000
_SHOWN = 40


@dataclass(frozen=True)
class Mismatch:
    """Where an answer first stops matching a mask: the byte, what the reference has from there (up to its next
    wildcard) and what the answer has."""

    at: int
    expected: bytes
    got: bytes

    def __str__(self) -> str:
        return f"at byte {self.at}: expected {shown(self.expected)}, got {shown(self.got)}"


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
        found = self.mismatch(body)
        return None if found is None else str(found)

    def mismatch(self, body: bytes) -> Mismatch | None:
        """None when `body` matches; else where it first differs."""
        parts = self.literal_parts
        if len(parts) == 1 and body == parts[0]:
            return None
        if len(parts) == 1 or not body.startswith(parts[0]):
            at = _common_prefix(parts[0], body)
            return Mismatch(at, parts[0][at:], body[at:])
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


def _missing(part: bytes, body: bytes, start: int) -> Mismatch:
    """Where `part`, expected somewhere from `start` on, stops matching: after its longest beginning found there."""
    low, high = 0, len(part)
    while low < high:  # a beginning found means every shorter one is
        middle = (low + high + 1) // 2
        if body.find(part[:middle], start) >= 0:
            low = middle
        else:
            high = middle - 1
    at = body.find(part[:low], start) + low
    return Mismatch(at, part[low:], body[at:])


def shown(data: bytes) -> str:
    """Bytes as a line shows them: their first _SHOWN, quoted; "the end" for none."""
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


def _kept_tokens(a: list[bytes], b: list[bytes]) -> tuple[list[bool], list[bool]]:
    """Which tokens of `a` come back in `b`, in order (kept, one per token), and where `b` has tokens between two
    of `a` that `a` has not (inserted, one per place: before each token and after the last)."""
    kept = [False] * len(a)
    inserted = [False] * (len(a) + 1)
    ends = (0, 0)
    for i, j, n in _matching_blocks(a, b):
        kept[i : i + n] = [True] * n
        if i == ends[0] and j != ends[1]:  # nothing of `a` since the block before, something of `b`
            inserted[i] = True
        ends = (i + n, j + n)
    if ends[0] == len(a) and ends[1] != len(b):
        inserted[len(a)] = True
    return kept, inserted


def _whole_dates(first: bytes, starts: list[int], kept: list[bool], inserted: list[bool]) -> None:
    """A date or time of `first` with a difference in it is masked whole, not only the digits that differed."""
    for found in _DATE_TIME.finditer(first):
        low = bisect_right(starts, found.start()) - 1  # the token it begins in
        high = bisect_left(starts, found.end())  # the first token after it
        if not all(kept[low:high]) or any(inserted[low + 1 : high]):
            kept[low:high] = [False] * (high - low)


def mask(first: bytes, *others: bytes) -> AnswerMask:
    """The reference's answers to one request (asked twice, in each of two set-ups): what all of them say stays
    literal, what any of them differs in becomes a wildcard."""
    others = tuple(dict.fromkeys(other for other in others if other != first))
    if not others:
        return AnswerMask(literal_parts=(first,), masked=0)
    a = _TOKEN.findall(first)
    kept, inserted = [True] * len(a), [False] * (len(a) + 1)
    for other in others:
        kept_here, inserted_here = _kept_tokens(a, _TOKEN.findall(other))
        kept = [both and here for both, here in zip(kept, kept_here, strict=True)]
        inserted = [either or here for either, here in zip(inserted, inserted_here, strict=True)]
    _whole_dates(first, [0, *accumulate(map(len, a))], kept, inserted)
    parts: list[list[bytes]] = [[]]  # the literal parts, as tokens of `first`: a wildcard before each but the first
    wildcard = False  # one is due before the next literal token
    for index, token in enumerate(a):
        wildcard = wildcard or inserted[index] or not kept[index]
        if kept[index]:
            if wildcard:
                parts.append([])
                wildcard = False
            parts[-1].append(token)
    if wildcard or inserted[len(a)]:
        parts.append([])
    joined = [b"".join(part) for part in parts]
    if len(joined) == 1:
        return AnswerMask(literal_parts=(joined[0],), masked=0)
    inner = [part for part in joined[1:-1] if len(part) >= _SHORTEST_LITERAL]
    literal_parts = (joined[0], *inner, joined[-1])
    return AnswerMask(literal_parts=literal_parts, masked=len(literal_parts) - 1)


def same_answer(expected_status: int, mask: AnswerMask, status: int, body: bytes) -> str | None:
    """None when the status and the body match the reference's; else the first difference, in one line."""
    if status != expected_status:
        return f"status {status}, expected {expected_status}"
    return mask.difference(body)
