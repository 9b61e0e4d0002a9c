"""A requests file in vegeta's HTTP targets format (v12.13.0's NewHTTPTargeter) read into a mix of requests, and
the mix written as vegeta's JSON targets for the harness's own server. Conventions of ours ride in comments, so that
vegeta still reads the file unchanged, each directly above its request's METHOD line or inside the request:
`# expect: 302`, the status a request must answer (by default, the development server's); `# weight: 3`, how many
times it counts in the mix; `# login`, the request that logs in, sent once per way before the rest and not in the
mix, whose cookies every request after it carries; `# lookup: /posts`, a write, whose `{marker}` (in its body or
URL) the harness makes each write's own, and the page on which each acknowledged write must show after a load.

Each JSON target's URL ends in a fragment naming its request of the file (`#line-12`, and a write's mark after it):
vegeta keeps the URL as given in its results, and Go's client never sends a fragment, so that each result is tied
to its request of the file however many share its method and path."""

from __future__ import annotations

import base64
import json
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from urllib.parse import urlsplit

WEIGHT_MAX = 1000
MARKER = "{marker}"  # in a write's body or URL: the harness puts each write's own mark there
# Marks per load at least, over the writes of the file: vegeta cycles through its targets, so that a mark is sent
# more than once in a long load; each is counted, and the lookup compares the counts mark by mark.
WRITE_MARKS = 200
_METHOD = re.compile(r"[A-Z]+")
# vegeta's startsWithHTTPMethod: right after a METHOD line, such a line starts the next target, not a header.
_STARTS_WITH_METHOD = re.compile(r"^[A-Z]+\s")
# `# login` alone on its line (a comment that goes on, "# login as admin", is any other comment); the others
# with their colon and value.
_DIRECTIVE = re.compile(r"#\s*(expect|weight|lookup|login)\s*(:\s*(.*))?", re.IGNORECASE)
_FRAGMENT = re.compile(r"line-(\d+)(?:-mark-(\S+))?")
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110's token: Go refuses to send any other
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # Go refuses these in a header value (a tab is allowed)
_QUOTED_MAX = 80


@dataclass(frozen=True)
class RequestSpec:
    line: int  # 1-based, of its METHOD line
    method: str
    target: str  # path and query: the harness sends to its own server, not to the file's host
    headers: tuple[tuple[str, str], ...]
    body: bytes
    expect: int | None  # None: the status Flask's development server answers
    weight: int
    login: bool = False  # sent once per way before the others, not in the mix; its cookies go with those after it
    lookup: str | None = None  # a write: the page of the app on which each acknowledged one shows after a load

    @property
    def name(self) -> str:
        return f"{self.method} {self.target}"

    def marked(self, mark: str) -> RequestSpec:
        """This request with its `{marker}` made `mark`, in its URL and its body."""
        return replace(
            self, target=self.target.replace(MARKER, mark), body=self.body.replace(MARKER.encode(), mark.encode())
        )

    def with_cookie(self, cookie: str) -> RequestSpec:
        """This request carrying the cookies of a login, after any Cookie header of its own (one header: a server
        reads one Cookie line, as HTTP/1.1 asks for)."""
        own = [value for name, value in self.headers if name.lower() == "cookie"]
        others = tuple((name, value) for name, value in self.headers if name.lower() != "cookie")
        return replace(self, headers=(*others, ("Cookie", "; ".join([*own, cookie]))))


class RequestsFileError(ValueError):
    """What is wrong with a requests file, in one line: `<path>:<line>: <what>`, or `<path>: <what>`."""

    def __init__(self, path: Path, line: int | None, what: str) -> None:
        self.path, self.line, self.what = path, line, what
        where = _printable(str(path)) if line is None else f"{_printable(str(path))}:{line}"
        super().__init__(f"{where}: {what}")


def _printable(text: str) -> str:
    # The message stays one line whatever the file holds: \r, \x85 or \u2028 in a line, or a newline in a path.
    return "".join(char if char.isprintable() else ascii(char)[1:-1] for char in text)


def _quoted(text: str) -> str:
    shown = text if len(text) <= _QUOTED_MAX else text[:_QUOTED_MAX] + "..."
    return '"' + _printable(shown) + '"'


@dataclass
class _Draft:
    """A target being read, with the directives found so far for it (each with its line, for the errors)."""

    line: int = 0
    method: str = ""
    target: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    directives: dict[str, tuple[str, int]] = field(default_factory=dict)  # name: (value, line), checked

    def spec(self) -> RequestSpec:
        expect = self.directives.get("expect")
        weight = self.directives.get("weight")
        lookup = self.directives.get("lookup")
        return RequestSpec(
            line=self.line,
            method=self.method,
            target=self.target,
            headers=tuple(self.headers),
            body=self.body,
            expect=int(expect[0]) if expect else None,
            weight=int(weight[0]) if weight else 1,
            login="login" in self.directives,
            lookup=lookup[0] if lookup else None,
        )


def _target(url: str) -> str | None:
    """The path and query of an absolute http(s) URL, as sent (no fragment); None when it is not one."""
    if not re.match(r"https?://", url, re.IGNORECASE) or re.search(r"[\s\x00-\x1f\x7f]", url):
        return None
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (reading it raises ValueError on a port that is not one)
    except ValueError:
        return None
    if not parts.hostname:
        return None
    # Cut by hand rather than rebuilt from urlsplit's parts, which drop an empty query's "?" that Go would send.
    rest = url[url.index("//") + 2 :]
    cut = min((rest.index(mark) for mark in "/?#" if mark in rest), default=len(rest))
    target = rest[cut:].split("#", 1)[0]
    return target if target.startswith("/") else "/" + target


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.specs: list[RequestSpec] = []
        self.draft: _Draft | None = None
        self.headers_started = False  # vegeta checks for a next METHOD line only right after the METHOD line
        self.pending = _Draft()  # the directives read between targets, for the next one
        self.login: tuple[int, int] | None = None  # the login's request line and its # login line

    def error(self, line: int, what: str) -> RequestsFileError:
        return RequestsFileError(self.path, line, what)

    def read(self, text: str) -> list[RequestSpec]:
        # Go's bufio.Scanner splits at "\n" only, dropping a "\r" before it: str.splitlines would also split at
        # "\x0c", "\x1c" or "\u2028" and number the lines otherwise than an editor.
        for number, raw in enumerate(text.split("\n"), 1):
            self.take(number, raw.strip())
        self.end_target()
        self.check_no_pending()
        if not self.specs:
            raise RequestsFileError(self.path, None, "no request in it")
        if self.login and self.specs[-1].login:
            raise self.error(self.login[1], "# login: no request after it to carry its session")
        return self.specs

    def take(self, number: int, line: str) -> None:
        if self.draft is None:
            self.between_targets(number, line)
        elif not line:
            self.end_target()
        elif not self.headers_started and _STARTS_WITH_METHOD.match(line):
            self.end_target()
            self.between_targets(number, line)
        else:
            self.headers_started = True
            self.in_target(number, line, self.draft)

    def between_targets(self, number: int, line: str) -> None:
        if not line:
            self.check_no_pending()
        elif line.startswith("#"):
            self.directive(number, line, self.pending)
        else:
            self.draft = self.request_line(number, line)
            self.draft.directives = self.pending.directives
            self.pending = _Draft()
            self.headers_started = False

    def in_target(self, number: int, line: str, draft: _Draft) -> None:
        if line.startswith("#"):
            self.directive(number, line, draft)
        elif line.startswith("@"):
            draft.body = self.body(number, line[1:])  # vegeta's own slicing: "@ x" names " x"
            self.end_target()
        else:
            draft.headers.append(self.header(number, line))

    def end_target(self) -> None:
        if self.draft is not None:
            self.check_roles(self.draft)
            self.specs.append(self.draft.spec())
            self.draft = None

    def check_roles(self, draft: _Draft) -> None:
        """A login is sent once, before the mix: nothing of the mix's on it, and one per file. A write needs its
        marker, or no write could be told from another."""
        found = draft.directives
        if "login" in found:
            for other in ("weight", "lookup"):
                if other in found:
                    raise self.error(found[other][1], f"# {other}: on the # login request, sent once, not in the mix")
            if self.login:
                raise self.error(found["login"][1], f"a second # login (the first: line {self.login[0]}): one per file")
            self.login = (draft.line, found["login"][1])
        if "lookup" in found and MARKER not in draft.target and MARKER.encode() not in draft.body:
            raise self.error(found["lookup"][1], f"# lookup: needs {MARKER} in its request's body or URL")

    def check_no_pending(self) -> None:
        # A directive followed by a blank line could be meant for the target above as well as for the one below.
        if self.pending.directives:
            name, (_, number) = next(iter(self.pending.directives.items()))
            raise self.error(number, f"# {name}: not directly above a request nor inside one")

    def request_line(self, number: int, line: str) -> _Draft:
        method, space, url = line.partition(" ")
        if not space:
            raise self.error(number, f"bad request line: {_quoted(line)} (METHOD URL, as vegeta reads)")
        if not _METHOD.fullmatch(method):
            raise self.error(number, f"bad method: {_quoted(method)} (uppercase letters, as vegeta reads)")
        target = _target(url)
        if target is None:
            raise self.error(number, f"bad URL: {_quoted(url)} (an absolute http:// URL, as vegeta reads)")
        return _Draft(line=number, method=method, target=target)

    def header(self, number: int, line: str) -> tuple[str, str]:
        name, colon, value = (part.strip() for part in line.partition(":"))
        if not colon or not name or not value or not _HEADER_NAME.fullmatch(name) or _CONTROL.search(value):
            looks_like_a_request = _METHOD.fullmatch(line.partition(" ")[0]) and _target(line.partition(" ")[2])
            hint = " (a request after headers needs a blank line before it)" if looks_like_a_request else ""
            raise self.error(number, f"bad header: {_quoted(line)}{hint}")
        return name, value

    def body(self, number: int, name: str) -> bytes:
        if not name:
            raise self.error(number, 'bad body: "@" (a file name after the @)')
        # vegeta opens it from its working directory; here, from the requests file's folder, wherever run from.
        try:
            return (self.path.parent / name).read_bytes()
        except FileNotFoundError:
            raise self.error(number, f"body file not found: {_printable(name)}") from None
        except OSError as error:
            raise self.error(number, f"body file unreadable: {_printable(name)} ({error.strerror})") from None

    def directive(self, number: int, line: str, draft: _Draft) -> None:
        found = _DIRECTIVE.fullmatch(line)
        if not found or (found[1].lower() != "login" and not found[2]):
            return  # any other comment ("# expect" without its colon one too, as it always was)
        name, value = found[1].lower(), (found[3] or "").strip()
        good, wanted = _directive_value(name, value)
        if not good:
            raise self.error(number, f"bad {name}: {_quoted(value)} ({wanted})")
        if name in draft.directives:
            raise self.error(number, f"a second # {name}: for one request (line {draft.directives[name][1]})")
        draft.directives[name] = (value, number)


def _directive_value(name: str, value: str) -> tuple[bool, str]:
    """Whether a directive's value is one it takes, and what it takes."""
    # ASCII digits only: int() would take "+3", " 3", "3_0" or "\u0663".
    if name == "expect":
        return bool(re.fullmatch(r"[1-5][0-9][0-9]", value)), "an HTTP status, 100 to 599"
    if name == "weight":
        good = bool(re.fullmatch(r"[0-9]{1,4}", value)) and 1 <= int(value) <= WEIGHT_MAX
        return good, f"an integer from 1 to {WEIGHT_MAX}"
    if name == "lookup":
        return bool(re.fullmatch(r"/[!-~]*", value)), "a path of the app, as /posts, where each write shows"
    return not value, "# login alone on its line: it takes no value"


def read_requests(path: Path) -> list[RequestSpec]:
    """The requests of a requests file, in its order; RequestsFileError, in one line, for whatever vegeta would not
    read as we do."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise RequestsFileError(path, None, f"cannot read it: {error.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise RequestsFileError(path, line, f"not UTF-8 (byte 0x{data[error.start]:02x})") from None
    return _Reader(path).read(text)


def _spread(requests: list[RequestSpec]) -> list[RequestSpec]:
    """Each request `weight` times, its k-th at (k + 1/2) / weight of the way through the list, ties in the file's
    order: any stretch of the list holds about the mix, where blocks would load one request type after another."""
    places = [
        (Fraction(2 * k + 1, 2 * spec.weight), index, spec)
        for index, spec in enumerate(requests)
        for k in range(spec.weight)
    ]
    return [spec for _, _, spec in sorted(places, key=lambda place: place[:2])]


def with_session(requests: list[RequestSpec], cookie: str | None) -> list[RequestSpec]:
    """The mix: every request of the file but its login, each one after the login carrying its cookies (those above
    it go without, as a visitor who has not logged in yet)."""
    login = next((spec.line for spec in requests if spec.login), None)
    return [
        spec.with_cookie(cookie) if cookie and login is not None and spec.line > login else spec
        for spec in requests
        if not spec.login
    ]


def labels(requests: list[RequestSpec]) -> dict[int, str]:
    """Each request's name on the page, by its line: METHOD path, and its line where two share them."""
    names = Counter(spec.name for spec in requests)
    return {spec.line: spec.name if names[spec.name] == 1 else f"{spec.name} (line {spec.line})" for spec in requests}


def write_mark(token: str, line: int, number: int) -> str:
    """A write's own mark: the load's token, its request's line, its number (0: the one sent before the load). The
    number's fixed width keeps one mark from being the start of another."""
    return f"{token}-{line}-{number:06d}"


def marks_in(text: str, token: str) -> Counter[str]:
    """How many times each mark of the load `token` shows in a page."""
    return Counter(re.findall(re.escape(token) + r"-[0-9]+-[0-9]{6}(?![0-9])", text))


def request_of(url: str) -> tuple[int, str | None] | None:
    """The line of the file's request a result's URL names in its fragment, and a write's mark; None without one."""
    found = _FRAGMENT.fullmatch(url.partition("#")[2])
    return (int(found[1]), found[2]) if found else None


def _json_target(spec: RequestSpec, base_url: str, fragment: str) -> str:
    target: dict[str, object] = {"method": spec.method, "url": f"{base_url.rstrip('/')}{spec.target}#{fragment}"}
    header: dict[str, list[str]] = {}
    for name, value in spec.headers:
        header.setdefault(name, []).append(value)
    if header:
        target["header"] = header
    if spec.body:
        target["body"] = base64.b64encode(spec.body).decode("ascii")
    return json.dumps(target, separators=(",", ":"))


def vegeta_json_targets(requests: list[RequestSpec], base_url: str, token: str = "load") -> str:
    """The mix as `vegeta attack -format=json` reads it, one target a line: vegeta cycles through them in order.
    Each URL's fragment names its request; with writes in the mix, the list is repeated until it holds WRITE_MARKS
    writes, each with its own mark of the load `token`."""
    spread = _spread(requests)
    writes = sum(1 for spec in spread if spec.lookup)
    rounds = -(-WRITE_MARKS // writes) if writes else 1
    numbers: Counter[int] = Counter()
    lines = []
    for _ in range(rounds):
        for spec in spread:
            sent, fragment = spec, f"line-{spec.line}"
            if spec.lookup:
                numbers[spec.line] += 1
                mark = write_mark(token, spec.line, numbers[spec.line])
                sent, fragment = spec.marked(mark), f"{fragment}-mark-{mark}"
            lines.append(_json_target(sent, base_url, fragment))
    # Every line ends in "\n": vegeta's JSON targeter drops a last line that does not (bufio's ReadBytes hits EOF).
    return "".join(line + "\n" for line in lines)
