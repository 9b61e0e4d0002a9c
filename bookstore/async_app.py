"""The bookstore ported to asyncio: Quart, SQLAlchemy's asyncio extension and psycopg 3's async connections.

The same models, schemas, queries and answers as app.py (see there); only the waiting differs: each request is a
task on one event loop, and every database call is awaited. It sends the same statements as the Flask app, so
capture.py (Flask) stands for both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from db import READS_END_WITH, database_failure, health_connection, make_async_engine, make_async_health_engine
from marshmallow import ValidationError
from models import Author, Book, page_of_authors
from quart import Quart, request
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
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import selectinload
from werkzeug.exceptions import HTTPException, NotFound

engine = make_async_engine()
health_engine = make_async_health_engine()
app = Quart(__name__)
app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
app.json.sort_keys = False


@asynccontextmanager
async def reading() -> AsyncIterator[AsyncSession]:
    """app.py's reading(), awaited."""
    async with AsyncSession(engine, expire_on_commit=False) as session:
        yield session
        if READS_END_WITH == "commit":
            await session.commit()


@app.get("/author/<int:author_id>")
async def get_author(author_id: int) -> Any:
    if author_id > LARGEST_ID:
        raise NotFound(f"no author with id {author_id}")
    async with reading() as session:
        options = [selectinload(Author.books).joinedload(Book.genres)]
        author = await session.get(Author, author_id, options=options)
    if author is None:  # marshalled after the session closes, as in app.py
        raise NotFound(f"no author with id {author_id}")
    return author_schema.dump(author)


@app.get("/author")
async def list_authors() -> Any:
    limit = query_integer("limit", request.args.get("limit"), 20, 1, MAX_LIMIT)
    offset = query_integer("offset", request.args.get("offset"), 0, 0, MAX_OFFSET)
    async with reading() as session:
        return author_list_schema.dump(list(await session.scalars(page_of_authors(limit, offset))))


@app.post("/author")
async def create_author() -> tuple[Any, int]:
    try:
        fields = new_author_schema.load(json_document(await request.get_data(cache=False)))
    except ValidationError as error:
        return {"errors": error.normalized_messages()}, 422
    async with AsyncSession(engine, expire_on_commit=False) as session:
        author = Author(**fields, books=[])
        session.add(author)
        await session.commit()
    return author_schema.dump(author), 201


@app.get("/health")
async def health() -> dict[str, str]:
    with health_connection():
        async with health_engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    return {"status": "ok"}


@app.errorhandler(HTTPException)
async def json_error(error: HTTPException) -> tuple[dict[str, str], int]:
    return {"error": error.description or error.name}, error.code or 500


@app.errorhandler(Exception)
async def database_error(error: Exception) -> tuple[dict[str, str], int]:
    answer = database_failure(error)
    if answer is None:  # a bug: logged with its traceback, answered with one line
        app.logger.exception("unexpected error")
        return {"error": "internal error"}, 500
    return await json_error(answer)
