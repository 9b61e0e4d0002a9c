# Stand-in for python:3.13-slim: Debian trixie's Python 3.13 with pip in /usr/local, as in the
# official image: `python` and `pip` on PATH, `pip install` as root, `python -m venv` works.
FROM playground-standin/debian:trixie
ENV LANG=C.UTF-8
# Not Debian's python3-pip: it brings Debian's own packaging and wheel, which pip then cannot
# replace ("no RECORD file"), so pinning another version of either would fail. Instead pip is
# installed from the wheel Debian ships for venvs, into /usr/local: only pip, like the official
# image. Removing EXTERNALLY-MANAGED lets root install there without PEP 668's refusal.
# libpython3.13-dev: the headers (Python.h) and the shared libpython that the official image has too, which a
# C extension built in the image compiles and links against (mod_wsgi); not its static library.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends \
      python3 python3-venv libpython3.13-dev ca-certificates \
 && rm -rf /var/lib/apt/lists/* /usr/lib/python3*/EXTERNALLY-MANAGED \
      /usr/lib/*/libpython3.13.a /usr/lib/python3.13/config-3.13-*/libpython3.13*.a \
 && wheel=$(echo /usr/share/python-wheels/pip-*.whl) \
 && python3 "$wheel/pip" install --no-cache-dir --no-index --disable-pip-version-check \
      --root-user-action=ignore "$wheel" \
 && ln -s /usr/bin/python3 /usr/local/bin/python \
 && python --version && pip --version
# The host's CA bundle (put in the base by .ci/images): pip then works behind a TLS-re-signing proxy.
ENV PIP_CERT=/etc/ssl/host-ca.crt
CMD ["python3"]
