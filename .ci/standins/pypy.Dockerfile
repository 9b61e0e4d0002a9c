# Stand-in for pypy:3.11-slim: Debian trixie's PyPy 7.3.19 (Python 3.11), laid out as in the official
# image: PyPy in /opt/pypy, whose bin/ comes first on PATH with pypy, pypy3, python, python3 and pip;
# `pip install` as root puts packages in /opt/pypy and their commands (gunicorn) in /opt/pypy/bin.
FROM playground-standin/debian:trixie
ENV LANG=C.UTF-8
ENV PATH=/opt/pypy/bin:$PATH
# /opt/pypy is a venv of Debian's PyPy: the official image's layout without touching Debian's own
# packages (PEP 668 leaves a venv alone). Its pip and setuptools come from the wheels Debian ships
# for venvs; the official image also has both. pypy3-dev: the headers (Python.h) that C extensions
# compile against, which the official tarball has in /opt/pypy/include.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends \
      pypy3 pypy3-dev pypy3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && pypy3 -m venv /opt/pypy \
 && ln -s pypy3 /opt/pypy/bin/pypy3.11 \
 && ln -s /opt/pypy/bin/pypy3 /usr/local/bin/pypy3 \
 && python --version && pip --version
# The host's CA bundle (put in the base by .ci/images): pip then works behind a TLS-re-signing proxy.
ENV PIP_CERT=/etc/ssl/host-ca.crt
CMD ["pypy3"]
