"""A webhook receiver that verifies every delivery with the Standard Webhooks library.

    python3 -m pip install standardwebhooks
    WEBHOOK_SECRET=whsec_... python3 webhook_receiver.py 8000

Each delivery whose signature holds is answered 204 and printed as a line of JSON: its
`webhook-id` and the event. Any other request is answered 400 and printed as refused.
"""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def secret():
    """The endpoint's secret: WEBHOOK_SECRET, or the file WEBHOOK_SECRET_FILE names."""
    path = os.environ.get("WEBHOOK_SECRET_FILE")
    if path:
        with open(path, encoding="utf-8") as file:
            return file.read().strip()
    return os.environ["WEBHOOK_SECRET"]


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            # Checks the signature and the timestamp (within 5 minutes), then parses the body.
            event = Webhook(secret()).verify(body, dict(self.headers))
        except WebhookVerificationError as err:
            self.send_response(400)
            self.end_headers()
            print(json.dumps({"refused": str(err)}), flush=True)
            return
        self.send_response(204)
        self.end_headers()
        print(json.dumps({"webhook-id": self.headers["webhook-id"], "event": event}), flush=True)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = HTTPServer(("127.0.0.1", port), Receiver)
    print(json.dumps({"listening": server.server_address[1]}), flush=True)
    server.serve_forever()
