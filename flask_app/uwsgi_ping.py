"""The healthcheck of an app server that speaks only the uwsgi protocol (nginx-gunicorn-uwsgi.yml): one request, as
Nginx's uwsgi_pass sends it, for `/?delay=0`; exit 0 on a 200. A bare TCP connect would be healthy too, but gunicorn
logs a traceback for every connection that closes before a whole uwsgi header."""

import socket
import struct
import sys

VARIABLES = {
    "REQUEST_METHOD": "GET", "REQUEST_URI": "/?delay=0", "PATH_INFO": "/", "QUERY_STRING": "delay=0",
    "SERVER_PROTOCOL": "HTTP/1.1", "SERVER_NAME": "localhost", "SERVER_PORT": "3000", "HTTP_HOST": "localhost",
}  # fmt: skip


def packet(variables: dict[str, str]) -> bytes:
    body = b"".join(
        struct.pack("<H", len(key)) + key + struct.pack("<H", len(value)) + value
        for key, value in ((k.encode(), v.encode()) for k, v in variables.items())
    )
    return struct.pack("<BHB", 0, len(body), 0) + body  # modifier 0: a WSGI request


if __name__ == "__main__":
    with socket.create_connection(("127.0.0.1", 3000), timeout=2) as connection:
        connection.sendall(packet(VARIABLES))
        answer = connection.recv(64)
    sys.exit(0 if answer.split(b" ", 2)[1:2] == [b"200"] else 1)
