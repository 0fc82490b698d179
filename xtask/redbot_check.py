"""Checks one answer of the service with REDbot and prints its notes, one JSON object a line.

Run by `cargo xtask redbot` (xtask/src/redbot.rs), one answer per process: a second check in
one process can stall on REDbot's connection pool. REDbot's command line sends no header of
the caller's, so an answer to a request with a key is checked through its Python API.

    python3 redbot_check.py URL METHOD HEADERS_JSON [BODY]
"""

import json
import sys
from configparser import ConfigParser

import thor
from redbot.resource import HttpResource


def main() -> None:
    url, method, headers = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    body = sys.argv[4].encode() if len(sys.argv) > 4 else b""
    parser = ConfigParser()
    parser.read_dict({"redbot": {"enable_local_access": "True"}})
    resource = HttpResource(parser["redbot"])
    resource.set_request(url, method=method, headers=[tuple(h) for h in headers], content=body)

    @thor.events.on(resource)
    def check_done() -> None:
        thor.stop()

    resource.check()
    thor.run()
    if resource.fetch_error:
        print(json.dumps({"error": str(resource.fetch_error)}))
        sys.exit(1)
    print(json.dumps({"status": str(resource.response.status_code)}))
    for note in resource.response.notes:
        print(json.dumps({
            "level": note.level.value,
            "category": note.category.name,
            "name": type(note).__name__,
            "summary": str(note.summary),
        }))


main()
