"""Validation of what clients send and marshalling of what the app answers, with marshmallow 4 (see README.md
for why marshmallow rather than pydantic)."""

from __future__ import annotations

import json
import re
from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate
from models import Author
from werkzeug.exceptions import BadRequest

MAX_BODY = 16 * 1024  # POST /author: a larger body is a 413 before it is read
MAX_LIMIT = 100
MAX_OFFSET = 10_000_000
LARGEST_ID = 2**63 - 1  # bigint: a larger id is unknown (404), where Postgres would fail on it
# Plain ASCII digits only: int() would also take " 7", "+7", "7_0" and other scripts' digits.
DIGITS = re.compile(r"[0-9]{1,9}")
MAX_NAME = 200
MAX_BIOGRAPHY = 10_000


LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class StoredText(fields.String):
    """A string Postgres can store, or a 422 that says why not. JSON accepts two kinds of strings that a
    Postgres text column cannot hold, and each used to reach the driver and end in a 500:
    - NUL ("\\u0000"): Postgres's text cannot hold it;
    - a lone UTF-16 surrogate, "\\ud800" to "\\udfff" outside a pair (or its bytes, ED A0 80 ..., which
      Python's parser decodes to the same): the string cannot be encoded to UTF-8 (psycopg: UnicodeEncodeError).
    Every string the app stores is one of these, so the whole class is refused where the fields are read."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        text = super()._deserialize(value, attr, data, **kwargs)
        if "\x00" in text:
            raise ValidationError("must not contain NUL characters")
        if surrogate := LONE_SURROGATE.search(text):
            raise ValidationError(
                f"must be valid Unicode: a lone surrogate (U+{ord(surrogate.group()):04X}) at position"
                f" {surrogate.start()}, which UTF-8 cannot encode"
            )
        return text


class BookSummarySchema(Schema):
    id = fields.Integer()
    title = fields.String()
    published_on = fields.Date()
    genres = fields.Method("genre_names")

    def genre_names(self, book: Any) -> list[str]:
        return [genre.name for genre in book.genres]


class AuthorSchema(Schema):
    """One author as GET /author/<id> and POST /author answer: their books, and the union of those books'
    genres, deduplicated and sorted."""

    id = fields.Integer()
    name = fields.String()
    country_code = fields.String()
    date_of_birth = fields.Date()
    biography = fields.String()
    created_at = fields.DateTime()
    books = fields.List(fields.Nested(BookSummarySchema))
    genres = fields.Method("all_genres")

    def all_genres(self, author: Author) -> list[str]:
        return sorted({genre.name for book in author.books for genre in book.genres})


class AuthorListItemSchema(Schema):
    """One author in the page GET /author answers."""

    id = fields.Integer()
    name = fields.String()
    country_code = fields.String()
    date_of_birth = fields.Date()
    book_count = fields.Integer()


class NewAuthorSchema(Schema):
    """What POST /author accepts; any other field is an error (marshmallow's RAISE)."""

    class Meta:
        unknown = RAISE

    name = StoredText(required=True, validate=validate.Length(min=1, max=MAX_NAME))
    country_code = StoredText(
        required=True, validate=validate.Regexp(r"^[A-Z]{2}\Z", error="must be two capital letters (ISO 3166)")
    )
    date_of_birth = fields.Date(required=True)
    biography = StoredText(load_default="", validate=validate.Length(max=MAX_BIOGRAPHY))


author_schema = AuthorSchema()
author_list_schema = AuthorListItemSchema(many=True)
new_author_schema = NewAuthorSchema()


def query_integer(name: str, raw: str | None, default: int, low: int, high: int) -> int:
    """A query parameter such as ?limit=: its default when absent, else an integer in [low, high] or a 400."""
    if raw is None:
        return default
    if not DIGITS.fullmatch(raw) or not low <= int(raw) <= high:
        raise BadRequest(f"{name} must be an integer from {low} to {high}")
    return int(raw)


def json_document(body: bytes) -> Any:
    """A request body parsed as JSON, or a 400 that says why not."""
    try:
        return json.loads(body)
    except json.JSONDecodeError as error:
        # Where, not what: the parser's message quotes the character it met, and PyPy 3.11's formatting of one that
        # is a lone surrogate (bytes read as UTF-16: b"\xff\xfe\xfd\xfc") raises SystemError, a 500.
        raise BadRequest(f"malformed JSON at character {error.pos}") from None
    except ValueError:  # a body that is no text in any encoding JSON allows (UnicodeDecodeError)
        raise BadRequest("malformed JSON: not UTF-8, UTF-16 or UTF-32") from None
    except RecursionError:  # nesting deeper than the parser's stack, e.g. 10,000 "["
        raise BadRequest("malformed JSON: nested too deeply") from None
