"""A stand-in for a library that bound a blocking name at import: `from socket import socket`.

It calls slow_api the way the app's requests.Session does (`get(url, params=..., timeout=...)`, an answer with
`status_code` and `text`), over a socket class it looked up once, when it was imported. A monkey-patch applied
after that import replaces `socket.socket` in the socket module, not the name this module already holds.
`from time import sleep` behaves the same. `from socket import create_connection` does not: that function looks
`socket` up in the socket module each time it runs, so it gets gevent's once the patch is in.
"""

from socket import socket  # bound here, at import: the point of this lab
from urllib.parse import urlencode, urlsplit

import requests


class Answer:
    def __init__(self, status_code: int, text: str) -> None:
        self.status_code, self.text = status_code, text


def get(url: str, params: dict[str, float], timeout: tuple[float, float]) -> Answer:
    parts = urlsplit(url)
    try:
        with socket() as connection:
            connection.settimeout(timeout[1])
            connection.connect((parts.hostname, parts.port or 80))
            head = f"GET {parts.path}?{urlencode(params)} HTTP/1.0\r\nHost: {parts.netloc}\r\n\r\n"
            connection.sendall(head.encode())
            answer = b""
            while chunk := connection.recv(65536):
                answer += chunk
    # The app turns these into its 504 and 502, as it does for requests' own.
    except TimeoutError:
        raise requests.Timeout() from None
    except OSError:
        raise requests.ConnectionError() from None
    status_line, _, body = answer.decode().partition("\r\n\r\n")
    return Answer(int(status_line.split()[1]), body)
