"""A webhook receiver for the e2e tests that checks every delivery with the Standard
Webhooks reference library (PyPI `standardwebhooks`), as a user's receiver would.

    python standard_webhooks.py PORT

POST /hook        a delivery: verified against the secrets set, recorded, answered with
                  the status set (204 at first); one that does not verify is recorded
                  as such and answered 400
POST /control     {"secrets": [...], "status": 503}: what to check with, how to answer
GET  /received    every delivery so far, in arrival order
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

lock = threading.Lock()
state = {"secrets": [], "status": 204, "received": []}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _answer(self, status, body=b""):
        self.send_response(status)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path != "/received":
            return self._answer(404)
        with lock:
            body = json.dumps(state["received"]).encode()
        self._answer(200, body)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path == "/control":
            asked = json.loads(raw)
            with lock:
                state.update({k: v for k, v in asked.items() if k in ("secrets", "status")})
            return self._answer(204)
        if self.path != "/hook":
            return self._answer(404)
        headers = {k: v for k, v in self.headers.items()}
        with lock:
            secrets, status = list(state["secrets"]), state["status"]
        verified_by = []
        payload = None
        for secret in secrets:
            try:
                payload = Webhook(secret).verify(raw, headers)
                verified_by.append(secret)
            except WebhookVerificationError:
                pass
        record = {
            "id": headers.get("webhook-id") or headers.get("Webhook-Id"),
            "verified_by": len(verified_by),
            "answered": status if verified_by else 400,
            "event": payload,
        }
        with lock:
            state["received"].append(record)
        self._answer(record["answered"])


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.serve_forever()
