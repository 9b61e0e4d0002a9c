# Stand-in for python:3.14-slim (Debian forky's Python 3.14) and python:3.13-slim (Debian trixie's
# Python 3.13): .ci/images passes SUITE and PYTHON. Laid out as in the official image: pip in
# /usr/local, `python`, `python3`, `pip` and `pip3` on PATH, `pip install` as root, `python -m venv`.
ARG SUITE=trixie
FROM playground-standin/debian:${SUITE}
ARG PYTHON=3.13
ENV LANG=C.UTF-8
# Not Debian's python3-pip: it brings Debian's own packaging and wheel, which pip then cannot
# replace ("no RECORD file"), so pinning another version of either would fail. Instead pip is
# installed from the wheel Debian ships for venvs, into /usr/local: only pip, like the official
# image. Removing EXTERNALLY-MANAGED lets root install there without PEP 668's refusal. The
# versioned packages (python3.14, not python3): a suite's default python3 may be another version
# (forky also packages 3.15), and the links in /usr/local/bin, first on PATH, name this one.
# libpython<version>-dev: the headers (Python.h) and the shared libpython that the official image has too, which a
# C extension built in the image compiles and links against (mod_wsgi); not its static library.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends \
      "python$PYTHON" "python$PYTHON-venv" "libpython$PYTHON-dev" ca-certificates \
 && rm -rf /var/lib/apt/lists/* "/usr/lib/python$PYTHON/EXTERNALLY-MANAGED" \
      /usr/lib/*/"libpython$PYTHON.a" /usr/lib/"python$PYTHON"/config-"$PYTHON"-*/"libpython$PYTHON"*.a \
 && wheel=$(echo /usr/share/python-wheels/pip-*.whl) \
 && "python$PYTHON" "$wheel/pip" install --no-cache-dir --no-index --disable-pip-version-check \
      --root-user-action=ignore "$wheel" \
 && ln -sf "/usr/bin/python$PYTHON" /usr/local/bin/python \
 && ln -sf "/usr/bin/python$PYTHON" /usr/local/bin/python3 \
 && python --version | grep -q "^Python $PYTHON\." \
 && pip --version | grep -q "(python $PYTHON)" \
 && pip3 --version | grep -q "(python $PYTHON)"
# The host's CA bundle (put in the base by .ci/images): pip then works behind a TLS-re-signing proxy.
ENV PIP_CERT=/etc/ssl/host-ca.crt
CMD ["python3"]
