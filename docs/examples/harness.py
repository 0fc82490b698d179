#!/usr/bin/env python3
"""Drives Animal Store from Python with the standard library only.

Starts the binary on memory:// with fixtures, learns its address and keys from the ready
file, checks that the key with a quota of 3 a minute gets 200, 200, 200 and then 429, and
stops the server. Usage: python3 harness.py PATH/TO/animal-store
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

FIXTURES = {
    "keys": [{"name": "tester", "plan": "enterprise", "perMinute": 3, "perDay": 100}],
    "pets": [{"name": "Rex", "categoryId": 1}],
}


def start(binary, workdir):
    """Starts the server and returns (process, ready), ready being the ready file's JSON."""
    fixtures = os.path.join(workdir, "fixtures.json")
    with open(fixtures, "w") as out:
        json.dump(FIXTURES, out)
    ready_file = os.path.join(workdir, "ready.json")
    server = subprocess.Popen(
        [binary, "serve", "--bind", "127.0.0.1:0",
         "--fixtures", fixtures, "--ready-file", ready_file],
        env={"DATABASE_URL": "memory://", "RUST_LOG": "warn"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    for _ in range(300):  # 30 s at most
        if os.path.exists(ready_file):
            with open(ready_file) as ready:
                return server, json.load(ready)
        if server.poll() is not None:
            sys.exit(f"the server exited with status {server.returncode}")
        time.sleep(0.1)
    server.kill()
    sys.exit("the server did not get ready within 30 s")


def status(url, key):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as workdir:
        server, ready = start(binary, workdir)
        try:
            url = ready["address"] + "/v1/pets"
            seen = [status(url, ready["keys"]["tester"]) for _ in range(4)]
            if seen != [200, 200, 200, 429]:
                sys.exit(f"expected 200, 200, 200, 429; got {seen}")
            print("ok:", seen)
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
