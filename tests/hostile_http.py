"""Hostile HTTP requests for the end-to-end robustness test: a raw-socket client and the hypothesis strategies.

Why a raw socket: `requests` (and urllib3 under it) encode the URL and the headers themselves, so they cannot
send a raw non-UTF-8 byte in the request line or a header, and they refuse some of what a hostile client
sends. This client writes the request bytes exactly as generated and reads whatever comes back, including
nothing at all.

Why the `delay` rule: the app waits `delay` seconds (1 s when the parameter is absent, up to 30 s when it is
valid), so an example that happened to ask for a valid slow delay would make the test slow, not stronger.
Every generated query starts with a `delay` parameter, and when any plausible reading of that first value is
a number above FAST_DELAY, a `delay=0` goes in front of it (see `make_fast`).

Why well-formed request lines: the hostility is in the content (bytes, sizes, counts), not in the framing.
Space, CR, LF and # never go raw into the target, and CR and LF never into a header, so every server parses
the same request; `assert_sound` checks it on each example. REGRESSIONS are requests that broke a server once.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote_from_bytes, unquote_to_bytes, urlsplit

from hypothesis import strategies as st

FAST_DELAY = 0.05  # the longest wait an example may ask the app for, in seconds
MAX_DELAY = 30.0  # the app's own limit: above it, `delay` is a 400

# Bytes that would end or split the request target in the request line: they are always percent-encoded, so
# that every request line is well formed (method, target, version) and what is hostile is its content.
# Everything else goes raw when a part is sent raw, control characters, DEL and bytes >= 0x80 included.
_TARGET_BREAKERS = frozenset(b" \r\n#")
# A header value may hold any byte but the two that end its line.
_LINE_BREAKS = bytes.maketrans(b"\r\n", b"rn")


# Strings that only a crash prints: Python's traceback header and the body of Flask's unhandled-error page.
CRASH_MARKERS = (b"Traceback (most recent call last)", b"Internal Server Error")


@dataclass(frozen=True)
class HostileRequest:
    """One GET: the request target (path and query, as raw bytes) and extra header lines, each sent as
    `name:value` exactly: the optional whitespace after the colon, if any, is part of the value."""

    target: bytes
    headers: tuple[tuple[bytes, bytes], ...] = ()

    @property
    def query(self) -> bytes:
        return self.target.partition(b"?")[2]

    @property
    def path(self) -> bytes:
        return self.target.partition(b"?")[0]

    def describe(self, limit: int = 300) -> str:
        """A short, printable account for an assertion message: a 100 KB URL would drown the report."""

        def cut(data: bytes) -> str:
            shown = repr(data[:limit])
            return shown if len(data) <= limit else f"{shown}... ({len(data)} bytes)"

        header_bytes = sum(len(name) + len(value) + 3 for name, value in self.headers)
        headers = ", ".join(f"{cut(name)}: {cut(value)}" for name, value in self.headers[:5])
        more = f" and {len(self.headers) - 5} more" if len(self.headers) > 5 else ""
        return f"GET {cut(self.target)} with {len(self.headers)} headers ({header_bytes} bytes): [{headers}{more}]"


@dataclass(frozen=True)
class RawAnswer:
    """What came back on the connection. `status` is None when no HTTP status line did."""

    status: int | None
    headers: tuple[tuple[str, str], ...]
    body: bytes
    raw: bytes  # everything received, for the messages
    seconds: float
    timed_out: bool  # the server neither finished its answer nor closed the connection in time

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def describe(self, limit: int = 300) -> str:
        if self.timed_out:
            what = "timed out"
        elif self.status is None:
            what = "no answer, connection closed" if not self.raw else "no HTTP status line"
        else:
            what = f"status {self.status}"
        return f"{what} after {self.seconds:.2f} s, {len(self.raw)} bytes: {self.raw[:limit]!r}"


def request_bytes(host: str, port: int, request: HostileRequest) -> bytes:
    """The request as sent: our Host unless the request carries its own, and always `Connection: close`,
    so that the end of the answer is the end of the connection even when the server sends no length."""
    lines = [b"GET " + request.target + b" HTTP/1.1"]
    if not any(name.lower() == b"host" for name, _ in request.headers):
        lines.append(f"Host: {host}:{port}".encode())
    lines += [name + b":" + value for name, value in request.headers]
    lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n"


def send(url: str, request: HostileRequest, timeout: float = 10.0) -> RawAnswer:
    """Send one request on a new connection and read until the server closes it, the body is complete or
    `timeout` seconds have passed in all."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    received, timed_out, seconds = exchange(host, port, request_bytes(host, port, request), timeout, _complete)
    status, headers, body = _parse(received)
    return RawAnswer(status, headers, body, received, seconds, timed_out)


def exchange(
    host: str, port: int, payload: bytes, timeout: float, done: Callable[[bytes], bool]
) -> tuple[bytes, bool, float]:
    """Write `payload` on a new connection, then read until the server closes it, `done(what came)` says it is all
    or `timeout` seconds have passed in all: what came, whether the time ran out, and the seconds it took.

    A server may answer an oversized request before it has read all of it and then reset the connection:
    a failed send is not an error here, and whatever arrived before a reset still counts as the answer. No
    half-close after the request: some servers take a client's EOF for a disconnect and answer nothing."""
    started = time.monotonic()
    received = bytearray()
    timed_out = False
    with socket.create_connection((host, port), timeout=timeout) as connection:
        try:
            connection.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server stopped reading: its answer, if any, is already on its way
        except TimeoutError:
            timed_out = True
        while not timed_out:
            remaining = started + timeout - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            connection.settimeout(remaining)
            try:
                chunk = connection.recv(65536)
            except ConnectionResetError:
                break
            except TimeoutError:
                timed_out = True
                break
            if not chunk:
                break
            received += chunk
            if done(bytes(received)):
                break
    return bytes(received), timed_out, time.monotonic() - started


def _parse(raw: bytes) -> tuple[int | None, tuple[tuple[str, str], ...], bytes]:
    head, separator, body = raw.partition(b"\r\n\r\n")
    if not separator:
        head, body = raw, b""
    lines = head.split(b"\r\n")
    fields = lines[0].split(b" ", 2)
    if len(fields) < 2 or not fields[0].startswith(b"HTTP/") or not fields[1].isdigit():
        return None, (), raw
    headers = tuple(
        (name.decode("latin-1").strip(), value.decode("latin-1").strip())
        for name, _, value in (line.partition(b":") for line in lines[1:])
    )
    return int(fields[1]), headers, body


def _complete(raw: bytes) -> bool:
    """True once an answer with a Content-Length has all of its body: no need to wait for the close."""
    head, separator, body = raw.partition(b"\r\n\r\n")
    if not separator:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return len(body) >= int(value.strip())
    return False


# What the app will read as its delay.


def first_delay_readings(query: bytes) -> set[str]:
    """Every plausible text of the first `delay` value in this query string.

    The app reads `request.args.get("delay")`: werkzeug splits on `&`, then `=`, turns `+` into a space and
    percent-decodes, then decodes UTF-8. How the bytes become text is where servers and app versions may
    differ (strict, replacement characters, Latin-1), and `float()` is lenient (surrounding whitespace, even
    U+00A0, underscores between digits), so all the readings are checked, not just one."""
    readings: set[str] = set()
    for separators in (rb"&", rb"[&;]"):  # werkzeug 3 splits on & only; older parsers on ; too
        for pair in re.split(separators, query):
            name, _, value = pair.partition(b"=")
            if unquote_to_bytes(name.replace(b"+", b" ")) == b"delay":
                decoded = unquote_to_bytes(value.replace(b"+", b" "))
                readings |= {decoded.decode("utf-8", "replace"), decoded.decode("latin-1")}
                readings.add(decoded.decode("utf-8", "ignore"))
                break
        else:
            readings.add("1")  # absent: the app's default
    return readings


def delay_value(text: str) -> float | None:
    """The delay the app accepts for this text, None for a 400."""
    try:
        delay = float(text)
    except ValueError:
        return None
    return delay if 0 <= delay <= MAX_DELAY else None


def valid_delays(query: bytes) -> set[float]:
    """The delays a 200 may have served, over every reading of the first `delay` value."""
    return {delay for text in first_delay_readings(query) if (delay := delay_value(text)) is not None}


def is_fast(query: bytes) -> bool:
    return all(delay <= FAST_DELAY for delay in valid_delays(query))


def make_fast(query: bytes) -> bytes:
    """The query itself when it asks for at most FAST_DELAY, else the same behind a first `delay=0`:
    the slow value stays in the request as a repeated parameter, which the app ignores."""
    return query if is_fast(query) else b"delay=0&" + query


# Strategies.


def raw_part(data: bytes) -> bytes:
    """A query part sent raw: only what would end or split the request target is percent-encoded."""
    return b"".join(b"%%%02X" % byte if byte in _TARGET_BREAKERS else bytes([byte]) for byte in data)


def encoded(parts: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """Each part either percent-encoded in full (what a browser sends, non-UTF-8 bytes included, %ff%fe)
    or raw (non-UTF-8 and control bytes on the wire as they are)."""
    return st.one_of(parts.map(lambda data: quote_from_bytes(data, safe="").encode()), parts.map(raw_part))


def _repeat(piece: str, count: int) -> str:
    return (piece * (count // len(piece) + 1))[:count]


valid_fast_delays = st.one_of(
    st.sampled_from(["0", "0.0", "-0", "+0", "0e0", "0.01", "0.05", "1e-3", ".02", " 0 ", "0_0", "0000"]),
    st.floats(min_value=0, max_value=FAST_DELAY).map(repr),
)
non_numeric_delays = st.one_of(
    st.sampled_from(["", "abc", "1,5", "0x10", "1s", "one", "--1", "1e", "+", ".", "None", "null", "[]", "1/2"]),
    st.text(max_size=40),
)
negative_delays = st.one_of(
    st.sampled_from(["-1", "-0.01", "-1e400", "-inf"]),
    st.floats(max_value=-1e-9, allow_nan=False).map(repr),
    st.integers(max_value=-1).map(str),
)
huge_delays = st.one_of(
    st.sampled_from(["31", "30.0001", "1e400", "1e308", "9" * 400, "999999999999999999999"]),
    st.floats(min_value=30.0001, allow_nan=False).map(repr),
    st.integers(min_value=31).map(str),
)
nan_and_inf_delays = st.sampled_from(["nan", "NaN", "-nan", "inf", "-inf", "Infinity", "+inf", "INF", "nAn"])
# Past CPython's 4300-digit limit for int(); float() has none, and a 100-digit "0.000…1" is a valid 0.
overlong_digit_delays = st.one_of(
    st.integers(min_value=20, max_value=6000).map(lambda count: _repeat("9", count)),
    st.integers(min_value=20, max_value=6000).map(lambda count: _repeat("0", count)),
    st.integers(min_value=20, max_value=6000).map(lambda count: "0." + _repeat("0", count) + "1"),
    st.integers(min_value=20, max_value=6000).map(lambda count: "-" + _repeat("1", count)),
)
non_utf8_bytes = st.binary(min_size=1, max_size=12).map(lambda data: b"\xff" + data + b"\xfe")

hostile_delays: st.SearchStrategy[bytes] = st.one_of(
    encoded(valid_fast_delays.map(str.encode)),
    encoded(non_numeric_delays.map(str.encode)),
    encoded(negative_delays.map(str.encode)),
    encoded(huge_delays.map(str.encode)),
    encoded(nan_and_inf_delays.map(str.encode)),
    encoded(overlong_digit_delays.map(str.encode)),
    encoded(non_utf8_bytes),  # %ff%fe...: valid URL syntax, invalid UTF-8 once decoded
    encoded(st.binary(max_size=30)),
)
unknown_keys = st.one_of(
    st.sampled_from([b"x", b"delay[]", b"Delay", b"DELAY", b"delay+", b"delay%20", b"", b"=", b"__class__", b"%00"]),
    encoded(st.text(max_size=20).map(str.encode)),
    encoded(st.binary(max_size=20)),
)
huge_values = st.builds(
    lambda piece, count: _repeat(piece, count).encode(),
    st.sampled_from(["a", "9", "%ff", "%", "é"]),
    st.integers(1000, 20000),
)
other_values = st.one_of(encoded(st.text(max_size=40).map(str.encode)), encoded(st.binary(max_size=40)), huge_values)


@st.composite
def queries(draw: st.DrawFn) -> bytes:
    """`delay` first with a hostile value, then repeated `delay`s and unknown keys with arbitrary values, in
    any order, some without `=`; made fast by `make_fast`."""
    pairs = [b"delay=" + draw(hostile_delays)]
    extras = st.one_of(
        hostile_delays.map(lambda value: b"delay=" + value),
        st.builds(lambda key, value: key + b"=" + value, unknown_keys, other_values),
        unknown_keys,  # a bare key
    )
    pairs += draw(st.lists(extras, max_size=8))
    separator = draw(st.sampled_from([b"&", b"&", b"&&", b";"]))
    return make_fast(separator.join(pairs))


@st.composite
def long_targets(draw: st.DrawFn) -> bytes:
    """Request targets of 5 KB to 100 KB: past every server's request-line limit, some well past."""
    size = draw(st.integers(min_value=5_000, max_value=100_000))
    piece = draw(st.sampled_from(["a", "0", "%ff", "%41", "\xff", "é"])).encode(
        "latin-1" if draw(st.booleans()) else "utf-8"
    )
    padding = (piece * (size // len(piece) + 1))[:size]
    shape = draw(st.sampled_from(["value", "delay", "path", "many"]))
    if shape == "delay":  # a valid delay of thousands of zeros: 0 seconds, if the server lets it through
        return b"/?" + make_fast(b"delay=" + b"0" * size)
    if shape == "path":  # only / is routed: a long path is a 404 where the server accepts the line
        return b"/" + raw_part(padding) + b"?delay=0"
    if shape == "many":  # thousands of short parameters
        return b"/?" + make_fast(b"delay=0&" + b"&".join(b"k%d=v" % i for i in range(size // 8)))
    return b"/?" + make_fast(b"delay=0&pad=" + raw_part(padding))


header_names = st.one_of(
    st.sampled_from([b"X-Hostile", b"User-Agent", b"Accept", b"Accept-Language", b"Cookie", b"Referer"]),
    st.sampled_from([b"X-Forwarded-For", b"X-Forwarded-Proto", b"Forwarded", b"Host", b"X_Underscore"]),
    st.sampled_from([b"Authorization", b"If-Modified-Since", b"Accept-Encoding", b"X-Forwarded-Ssl", b"Uwsgi-Scheme"]),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-!#$%&'*+.^_`|~", min_size=1).map(
        lambda name: b"X-" + name.encode()
    ),
)
optional_whitespace = st.sampled_from([b" ", b" ", b"", b"\t", b"   "])
# Any byte but CR and LF: non-ASCII, non-UTF-8 (0x80-0xff alone), NUL and other control characters.
header_values = st.one_of(
    st.binary(max_size=200).map(lambda value: value.translate(_LINE_BREAKS)),
    st.text(max_size=60).map(lambda text: text.encode("utf-8").translate(_LINE_BREAKS)),
    st.sampled_from([b"\xff\xfe", b"caf\xe9", b"\xc3\x28", b"\xed\xa0\x80", b"\x00", b"\t", b" ", b"\x7f"]),
)


# Besides any size from 8 to 40 KB: the sizes around 32 KB, Nginx's default header limit, most likely.
_FLOOD_SIZES = (16_000, 31_000, 32_000, 32_500, 33_000, 40_000)


def _base36(number: int) -> str:
    """0 ... z, then 00 ... zz, then 000 ...: distinct names, each as short as it can be."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = digits[number % 36]
    while number >= 36:
        number = number // 36 - 1
        text = digits[number % 36] + text
    return text


def flood(size: int, value: bytes = b"") -> tuple[tuple[bytes, bytes], ...]:
    """Distinct headers, shortest names first, filling `size` bytes of header block."""
    headers: list[tuple[bytes, bytes]] = []
    used = 0
    while used < size:
        name = _base36(len(headers)).encode()
        headers.append((name, value))
        used += len(name) + 1 + len(value) + 2
    return tuple(headers)


@st.composite
def header_sets(draw: st.DrawFn) -> tuple[tuple[bytes, bytes], ...]:
    """None, a few hostile ones, many (past gunicorn's and http.server's 100), one of 5 KB to 100 KB, or a
    flood of short distinct ones that fills 8 to 40 KB."""
    shape = draw(st.sampled_from(["none", "few", "few", "few", "many", "long", "flood"]))  # shrinks to none
    if shape == "none":
        return ()
    if shape == "few":
        values = st.builds(bytes.__add__, optional_whitespace, header_values)
        return tuple(draw(st.lists(st.tuples(header_names, values), min_size=1, max_size=6)))
    if shape == "many":
        count = draw(st.integers(min_value=50, max_value=300))
        return tuple((b"X-Many-%d" % i, b" v") for i in range(count))
    if shape == "long":
        size = draw(st.integers(min_value=5_000, max_value=100_000))
        name = draw(st.sampled_from([b"X-Long", b"Cookie", b"User-Agent", b"Referer", b"Host"]))
        piece = draw(st.sampled_from([b"a", b"\xff", b"\xc3\xa9", b"%ff"]))
        return ((name, (piece * (size // len(piece) + 1))[:size]),)
    # The shortest distinct names (0 ... z, 10 ... zz, 100 ...) and no space: the most headers per byte, so the
    # most WSGI variables and the biggest uwsgi packet a proxy builds from a header block of that size. Sizes
    # around 32 KB are Nginx's default limit (large_client_header_buffers 4 8k), where the packet it builds for
    # uWSGI passes 64 KB.
    size = draw(st.one_of(st.sampled_from(_FLOOD_SIZES), st.integers(min_value=8_000, max_value=40_000)))
    return flood(size, draw(st.sampled_from([b"", b"", b"v"])))


@st.composite
def hostile_requests(draw: st.DrawFn) -> HostileRequest:
    """A hostile GET that asks the app to wait at most FAST_DELAY: usually a hostile query with hostile
    headers, sometimes an over-long request target."""
    # One in five: an over-long target. The ordinary query comes first, so that a failure shrinks towards it.
    target = draw(long_targets()) if draw(st.integers(min_value=0, max_value=4)) == 4 else b"/?" + draw(queries())
    return HostileRequest(target, draw(header_sets()))


# Requests that broke a server once, tried on every run before the generated ones: a random search may take many
# runs to hit a narrow window again.
REGRESSIONS = (
    HostileRequest(b"/?delay=\xff\xfe"),  # raw non-UTF-8 query: werkzeug's request.args raised UnicodeDecodeError
    HostileRequest(b"/?delay=%ff%fe"),  # the same, percent-encoded: werkzeug keeps it as %FF%FE
    HostileRequest(b"/?delay=0", ((b"X-Forwarded-Proto", b" \x80"),)),  # killed uWSGI's worker (SIGSEGV)
    HostileRequest(b"/?delay=0&pad=" + b"a" * 5_000),  # past uWSGI's default 4 KB buffer
    HostileRequest(b"/?delay=0&pad=" + b"a" * 100_000),  # past every limit
    HostileRequest(b"/?delay=0", tuple((b"X-Many-%d" % i, b" v") for i in range(120))),  # past uWSGI's 64 vars
    HostileRequest(b"/?delay=0", flood(32_500)),  # a 32 KB header block: Nginx built a uwsgi packet over 64 KB
    HostileRequest(b"/?delay=0", ((b"Host", b""),)),  # uWSGI's router has no key to route it by
    HostileRequest(b"/?delay=0", ((b"Host", b"a" * 300),)),  # nor with a Host over 255 bytes
)


def assert_sound(request: HostileRequest) -> None:
    """The promises the strategies keep, checked on each example so that a change to them cannot silently
    turn the test into a slow one, or into a test of malformed request lines: the request line is well formed
    and every header stays on its line, and a request that reaches the app asks it to wait FAST_DELAY at most."""
    assert request.target.startswith(b"/") and not _TARGET_BREAKERS.intersection(request.target), request.describe()
    assert not any(b"\r" in part or b"\n" in part for header in request.headers for part in header), request.describe()
    assert request.path != b"/" or is_fast(request.query), request.describe()
