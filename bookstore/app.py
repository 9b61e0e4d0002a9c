"""The bookstore: a Flask app on SQLAlchemy 2's ORM and Postgres, with marshmallow for validation and JSON.

GET /author/<id>      one author by primary key, with a summary of their books and all their genres (fast)
GET /author?limit=&offset=   a page of authors with their book counts; the offset sets the database's cost
POST /author          a validated write; answers the stored author with 201
GET /health           SELECT 1 on a connection of its own (not the requests' pool), for the healthcheck

Every error is JSON: {"error": "..."} or {"errors": {field: [messages]}}, 4xx for bad input, 503 when the
database is down or the pool has no free connection, 504 when a statement ran past the statement timeout.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import ladder
from db import READS_END_WITH, database_failure, health_connection, make_engine, make_health_engine
from flask import Flask, request
from marshmallow import ValidationError
from models import Author, page_of_authors
from schemas import (
    LARGEST_ID,
    MAX_BODY,
    MAX_LIMIT,
    MAX_OFFSET,
    author_list_schema,
    author_schema,
    json_document,
    new_author_schema,
    query_integer,
)
from sqlalchemy import text
from sqlalchemy.orm import Session
from werkzeug.exceptions import BadRequest, HTTPException, NotFound

engine = make_engine()
health_engine = make_health_engine()  # one connection, so that a busy pool does not fail the healthcheck
app = Flask(__name__)
app.config["MAX_CONTENT_LENGTH"] = MAX_BODY  # a larger body is a 413 before it is read
app.json.sort_keys = False  # keep the schemas' field order


@contextmanager
def reading() -> Iterator[Session]:
    """A session for reads, its transaction ended the way READS_END_WITH says (db.py: why it matters)."""
    # expire_on_commit=False: the rows are marshalled after the session ends, committed or not.
    with Session(engine, expire_on_commit=False) as session:
        yield session
        if READS_END_WITH == "commit":
            session.commit()


# How GET /author/<id> reads and answers: as the app was written, unless a rung of the ladder says otherwise.
find_author = ladder.author_finder()
author_answer = ladder.author_answer()


@app.get("/author/<int:author_id>")
def get_author(author_id: int) -> Any:
    if author_id > LARGEST_ID:
        raise NotFound(f"no author with id {author_id}")
    # Marshalled after the session closes: its connection goes back to the pool as soon as the rows are read,
    # not after the Python work on them, so the pool's connections measure time in the database.
    with reading() as session:
        author = find_author(session, author_id)
    if author is None:
        raise NotFound(f"no author with id {author_id}")
    return author_answer(author)


@app.get("/author")
def list_authors() -> Any:
    limit = query_integer("limit", request.args.get("limit"), 20, 1, MAX_LIMIT)
    offset = query_integer("offset", request.args.get("offset"), 0, 0, MAX_OFFSET)
    with reading() as session:
        return author_list_schema.dump(list(session.scalars(page_of_authors(limit, offset))))


@app.post("/author")
def create_author() -> tuple[Any, int]:
    try:
        body = request.get_data(cache=False)
    except HTTPException:
        raise  # a body over MAX_BODY: its 413
    except Exception:
        # The server could not read the body it passed on: gunicorn's workers raise their parser's error (a bad chunk
        # size, a chunk without its end: gunicorn.http.errors) into the app's read, where the other servers refuse
        # such a body before the app runs.
        raise BadRequest("the request body could not be read") from None
    try:
        fields = new_author_schema.load(json_document(body))
    except ValidationError as error:
        return {"errors": error.normalized_messages()}, 422
    with Session(engine, expire_on_commit=False) as session:
        author = Author(**fields, books=[])
        session.add(author)
        # flush sends the INSERT ... RETURNING id, created_at; commit makes it durable before the 201.
        session.commit()
    return author_schema.dump(author), 201


@app.get("/health")
def health() -> dict[str, str]:
    with health_connection(), health_engine.connect() as connection:
        connection.execute(text("SELECT 1"))
    return {"status": "ok"}


@app.errorhandler(HTTPException)
def json_error(error: HTTPException) -> tuple[dict[str, str], int]:
    return {"error": error.description or error.name}, error.code or 500


@app.errorhandler(UnicodeDecodeError)
def not_utf8(error: UnicodeDecodeError) -> tuple[dict[str, str], int]:
    # werkzeug decodes a raw (not %-encoded) query string as strict UTF-8. gunicorn, granian and uvicorn refuse such a
    # request line themselves; uWSGI passes it on, and request.args raises here.
    return {"error": "the query string must be UTF-8"}, 400


@app.errorhandler(Exception)
def database_error(error: Exception) -> tuple[dict[str, str], int]:
    answer = database_failure(error)
    if answer is None:  # a bug: logged with its traceback, answered with one line
        app.logger.exception("unexpected error")
        return {"error": "internal error"}, 500
    return json_error(answer)


if ladder.GC_FREEZE:  # last: everything the start-up made is in memory now, and stays
    gc.freeze()
