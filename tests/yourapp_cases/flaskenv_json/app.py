"""A JSON API whose folder has a .flaskenv with FLASK_DEBUG=1, for tests/test_yourapp_cases.py: `flask run` reads it
(python-dotenv is among the requirements) and pretty-prints every JSON answer in debug mode; no production server
reads it. Its index and one redirect write absolute URLs, made from the Host each server is asked with."""

from flask import Flask, abort, jsonify, redirect, url_for

app = Flask(__name__)

ITEMS = [
    {"id": 1, "name": "green tea", "price": 3.5, "tags": ["tea", "hot"]},
    {"id": 2, "name": "lemonade", "price": 2.75, "tags": ["cold"]},
    {"id": 3, "name": "espresso", "price": 2.2, "tags": ["coffee", "hot"]},
]


@app.get("/")
def index():
    return jsonify(items=url_for("items", _external=True), count=len(ITEMS))


@app.get("/api")
def api():
    return redirect(url_for("items", _external=True))


@app.get("/api/items")
def items():
    return jsonify(items=ITEMS, count=len(ITEMS))


@app.get("/api/items/<int:item_id>")
def item(item_id: int):
    found = [item for item in ITEMS if item["id"] == item_id]
    if not found:
        abort(404)
    return jsonify(found[0])


@app.errorhandler(404)
def not_found(error):
    return jsonify(error="not found"), 404
