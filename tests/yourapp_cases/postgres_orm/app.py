"""Notes on Postgres through SQLAlchemy's ORM, its URL from the environment a SERVICES= file gives the app: each
page one SELECT in a transaction of its own, so that the statements Postgres counts per request are known (BEGIN,
SELECT, ROLLBACK: three)."""

import os

from flask import Flask, abort
from sqlalchemy import String, create_engine, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

engine = create_engine(os.environ["DATABASE_URL"], pool_size=8)


class Base(DeclarativeBase):
    pass


class Note(Base):
    __tablename__ = "notes"
    id: Mapped[int] = mapped_column(primary_key=True)
    text: Mapped[str] = mapped_column(String(200))


def migrate() -> None:
    """The set-up (SETUP="python -c 'import app; app.migrate()'"): the table and three notes, once per database."""
    Base.metadata.create_all(engine)
    with Session(engine) as session, session.begin():
        if session.scalar(select(Note).limit(1)) is None:
            session.add_all(Note(id=number, text=f"note {number}") for number in (1, 2, 3))


app = Flask(__name__)


@app.get("/notes")
def notes() -> list[str]:
    with Session(engine) as session:
        return [note.text for note in session.scalars(select(Note).order_by(Note.id))]


@app.get("/notes/<int:number>")
def note(number: int) -> str:
    with Session(engine) as session:
        found = session.get(Note, number)
        return found.text if found else abort(404)
