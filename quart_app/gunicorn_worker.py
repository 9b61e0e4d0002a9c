"""gunicorn 27.0.1's asgi worker, with a fix: `--worker-class gunicorn_worker.ASGIWorker`.

The worker hands gunicorn's listening socket to asyncio's create_server(), which listens on it again with its own
default backlog, 100, whatever --backlog says. Past 100 connections arriving at once the kernel drops the rest,
whose clients try again a second later: 2 to 5 % of requests at 200 clients took 2 s. Its own module, so that
gunicorn's master process, which loads the worker class, does not import the app too.
"""

from gunicorn.workers import gasgi


class ASGIWorker(gasgi.ASGIWorker):
    def notify(self) -> None:
        super().notify()
        # The worker's heartbeat, every second and first right after it starts listening; listen() again only
        # resizes the queue.
        for listener in self.sockets:
            listener.sock.listen(self.cfg.backlog)
