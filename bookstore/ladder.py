"""GET /author/<id>, the fast endpoint, read and answered the way the ladder's settings say (bookstore.yml's
ladder_* services; docs/bookstore.md: what each rung bought). Every way serves the same JSON.

AUTHOR_QUERY   two-statements (the default): the author, then their books with their genres (selectinload);
               one-statement: the author joined to their books and genres (joinedload), one round trip.
AUTHOR_ANSWER  marshmallow (the default): ORM objects marshalled by schemas.AuthorSchema;
               dicts: the same ORM objects, built into plain dicts by hand;
               core-rows: no ORM objects: one Core SELECT of the joined rows, built into the dicts.
GC_FREEZE      1: app.py calls gc.freeze() once it is imported, so that the collector no longer walks the
               objects of the start-up (modules, mappers, schemas) at every full collection.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import date, datetime
from typing import Any

from models import Author, Book, Genre, book_genres
from schemas import author_schema
from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload, selectinload


def setting(name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = os.environ.get(name) or default
    if value not in allowed:
        raise SystemExit(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return value


AUTHOR_QUERY = setting("AUTHOR_QUERY", "two-statements", ("two-statements", "one-statement"))
AUTHOR_ANSWER = setting("AUTHOR_ANSWER", "marshmallow", ("marshmallow", "dicts", "core-rows"))
GC_FREEZE = setting("GC_FREEZE", "0", ("0", "1")) == "1"


def author_in_two_statements(session: Session, author_id: int) -> Author | None:
    # Two statements, each with the author id as its only input: the author by primary key, then their books
    # joined to their genres (selectinload with one parent sends "author_id IN (<id>)"). selectinload on the
    # genres too would send a list of book ids, which the harness could not replay with pgbench.
    return session.get(Author, author_id, options=[selectinload(Author.books).joinedload(Book.genres)])


def author_in_one_statement(session: Session, author_id: int) -> Author | None:
    # The author LEFT JOINed to their books and the books' genres: one round trip, and one row per book and genre.
    return session.get(Author, author_id, options=[joinedload(Author.books).joinedload(Book.genres)])


def iso(value: date | datetime | None) -> str | None:
    return None if value is None else value.isoformat()  # as marshmallow's Date and DateTime fields write them


def author_as_dict(author: Author) -> dict[str, Any]:
    """What AuthorSchema answers, built by hand: the same keys, in the same order."""
    books = [
        {"id": book.id, "title": book.title, "published_on": iso(book.published_on),
         "genres": [genre.name for genre in book.genres]}
        for book in author.books
    ]  # fmt: skip
    return {
        "id": author.id,
        "name": author.name,
        "country_code": author.country_code,
        "date_of_birth": iso(author.date_of_birth),
        "biography": author.biography,
        "created_at": iso(author.created_at),
        "books": books,
        "genres": sorted({name for book in books for name in book["genres"]}),
    }


AUTHOR_ROWS = (
    select(Author.__table__, Book.id.label("book_id"), Book.title, Book.published_on, Genre.name.label("genre"))
    .outerjoin(Book, Book.author_id == Author.id)
    .outerjoin(book_genres, book_genres.c.book_id == Book.id)
    .outerjoin(Genre, Genre.id == book_genres.c.genre_id)
    .order_by(Book.id, Genre.name)
)


def author_from_rows(session: Session, author_id: int) -> dict[str, Any] | None:
    """The same dict from plain rows: one per book and genre, the author's columns repeated on each."""
    rows = session.execute(AUTHOR_ROWS.where(Author.id == author_id)).all()
    if not rows:
        return None
    first = rows[0]
    author = {
        "id": first.id, "name": first.name, "country_code": first.country_code,
        "date_of_birth": iso(first.date_of_birth), "biography": first.biography, "created_at": iso(first.created_at),
    }  # fmt: skip
    books: dict[int, dict[str, Any]] = {}
    for row in rows:
        if row.book_id is None:  # an author with no books: one row, its book columns NULL
            continue
        book = books.setdefault(
            row.book_id,
            {"id": row.book_id, "title": row.title, "published_on": iso(row.published_on), "genres": []},
        )
        if row.genre is not None:
            book["genres"].append(row.genre)
    author["books"] = list(books.values())
    author["genres"] = sorted({name for book in books.values() for name in book["genres"]})
    return author


def author_finder() -> Callable[[Session, int], Any]:
    """How GET /author/<id> reads its author: an ORM object, or (core-rows) the answer itself; None if unknown."""
    if AUTHOR_ANSWER == "core-rows":
        return author_from_rows
    return author_in_one_statement if AUTHOR_QUERY == "one-statement" else author_in_two_statements


def author_answer() -> Callable[[Any], dict[str, Any]]:
    """How GET /author/<id> turns what it read into its answer."""
    return {"marshmallow": author_schema.dump, "dicts": author_as_dict, "core-rows": dict}[AUTHOR_ANSWER]
