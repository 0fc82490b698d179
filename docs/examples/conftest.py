"""A pytest fixture that runs Animal Store for a client team's test suite: copy this file
next to your tests.

Each test starts its own server on memory:// (a restart is the reset), with fixtures, fault
options, a clock file the test moves and any other arguments of `serve`, and learns the
server's address and keys from the ready file. The server's log goes to `server.log` in the
test's directory, which a failed start quotes. Only the standard library and pytest are used. The binary is the one
ANIMAL_STORE_BIN names, else `animal-store` on the PATH.
"""

import json
import os
import subprocess
import time
import urllib.error
import urllib.request

import pytest

BINARY = os.environ.get("ANIMAL_STORE_BIN", "animal-store")

FIXTURES = {
    "keys": [
        {"name": "tester", "plan": "enterprise", "perMinute": 3, "perDay": 100},
        {"name": "shop", "plan": "pro"},
        {"name": "storefront", "plan": "pro", "scope": "read"},
    ],
    "pets": [{"name": "Rex", "categoryId": 1}, {"name": "Mia", "categoryId": 2}],
    "orders": [{"key": "shop", "petId": 2, "status": "approved"}],
}


def _json(body):
    """The JSON of a body; `None` for none (a 204 or a 304)."""
    return json.loads(body) if body else None


class Server:
    """One run of the binary, until `stop`."""

    def __init__(self, workdir, fixtures, options, clock, args):
        os.makedirs(workdir)
        self.ready_file = os.path.join(workdir, "ready.json")
        self.clock_file = os.path.join(workdir, "clock")
        self.log_file = os.path.join(workdir, "server.log")
        fixtures_file = os.path.join(workdir, "fixtures.json")
        with open(fixtures_file, "w") as out:
            json.dump(fixtures, out)
        command = [BINARY, "serve", "--bind", "127.0.0.1:0",
                   "--fixtures", fixtures_file, "--ready-file", self.ready_file]
        if clock is not None:
            self.set_clock(clock)
            command += ["--clock-file", self.clock_file]
        command += list(args)
        url = "memory://" + (f"?{options}" if options else "")
        # The log goes to a file: a pipe nobody reads would fill and stall the server.
        with open(self.log_file, "w") as log:
            self.process = subprocess.Popen(
                command, env={"DATABASE_URL": url, "RUST_LOG": "warn"},
                stdout=subprocess.DEVNULL, stderr=log,
            )
        # The server removes a stale ready file before anything else, and writes its own in
        # one piece once it listens.
        for _ in range(300):
            if os.path.exists(self.ready_file):
                with open(self.ready_file) as ready:
                    self.ready = json.load(ready)
                return
            if self.process.poll() is not None:
                with open(self.log_file) as log:
                    pytest.fail(f"the server exited: {log.read()}")
            time.sleep(0.1)
        self.process.kill()
        pytest.fail("the server did not get ready within 30 s")

    def key(self, name):
        """The key the ready file names `name`: `demo`, or a fixture key."""
        return self.ready["keys"][name]

    def set_clock(self, unix_seconds):
        """Moves the server's time: the next request reads it."""
        partial = self.clock_file + ".partial"
        with open(partial, "w") as out:
            out.write(str(unix_seconds))
        os.replace(partial, self.clock_file)

    def request(self, method, path, key, body=None, headers=None, timeout=10):
        """(status, headers, JSON body) of one request. A connection closed without an
        answer raises `urllib.error.URLError` or `ConnectionError`; no answer within
        `timeout` seconds raises `TimeoutError`."""
        data = json.dumps(body).encode() if body is not None else None
        all_headers = {"Authorization": f"Bearer {key}", **(headers or {})}
        if data is not None:
            all_headers["Content-Type"] = "application/json"
        request = urllib.request.Request(
            self.ready["address"] + path, data=data, method=method, headers=all_headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.headers, _json(response.read())
        except urllib.error.HTTPError as error:
            return error.code, error.headers, _json(error.read())

    def stop(self):
        """A clean stop: the server removes its ready file."""
        self.process.terminate()
        self.process.wait(timeout=30)
        assert not os.path.exists(self.ready_file)


@pytest.fixture
def animal_store(tmp_path):
    """Starts servers for one test: `animal_store(fixtures=..., options="fail-every=2",
    clock=1900000000, args=["--webhooks-allow-private"])`; all are stopped when the test
    ends."""
    servers = []

    def start(fixtures=FIXTURES, options="", clock=None, args=()):
        workdir = str(tmp_path / f"run-{len(servers)}")
        server = Server(workdir, fixtures, options, clock, args)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
