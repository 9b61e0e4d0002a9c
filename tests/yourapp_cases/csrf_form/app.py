"""A sign-up form with Flask-WTF, for tests/test_yourapp_cases.py: each page carries a new CSRF token (a random one,
signed with the time it was made) and sets the session cookie that holds it, as any Flask-WTF app's forms do."""

from flask import Flask, redirect, render_template_string, url_for
from flask_wtf import FlaskForm
from wtforms import StringField
from wtforms.validators import DataRequired, Length

app = Flask(__name__)
app.config["SECRET_KEY"] = "a test app's, not a secret"

PAGE = """<!doctype html>
<html><head><title>Sign up</title></head><body>
<h1>Sign up</h1>
<form method="post" action="{{ url_for('signup') }}">
  {{ form.csrf_token }}
  {{ form.name.label }} {{ form.name(size=20) }}
  {% for field, errors in form.errors.items() %}{% for error in errors %}
  <p class="error">{{ field }}: {{ error }}</p>
  {% endfor %}{% endfor %}
  <button type="submit">Sign up</button>
</form>
</body></html>
"""


class SignUp(FlaskForm):
    name = StringField("Name", validators=[DataRequired(), Length(max=40)])


@app.get("/")
def home():
    return redirect(url_for("signup"))


@app.route("/signup", methods=["GET", "POST"])
def signup():
    form = SignUp()
    if form.validate_on_submit():  # never with the requests file's POST: it carries no token
        return redirect(url_for("home"))
    return render_template_string(PAGE, form=form)
