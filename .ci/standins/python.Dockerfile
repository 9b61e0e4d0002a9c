# Stand-in for python:3.13-slim: `python` and `pip` on PATH, pip usable as root, as in the official image.
FROM playground-standin/debian:trixie
RUN apt-get update \
 && apt-get install --yes --no-install-recommends python3 python3-pip ca-certificates \
 && rm -rf /var/lib/apt/lists/* /usr/lib/python3*/EXTERNALLY-MANAGED \
 && ln -s /usr/bin/python3 /usr/local/bin/python \
 && ln -s /usr/bin/pip3 /usr/local/bin/pip
COPY host-ca.crt /etc/ssl/host-ca.crt
ENV PIP_CERT=/etc/ssl/host-ca.crt LANG=C.UTF-8
CMD ["python3"]
