"""What a storefront's suite checks against Animal Store, with the fixture of conftest.py.
Run with: ANIMAL_STORE_BIN=PATH/TO/animal-store python3 -m pytest docs/examples"""

import http.client
import http.server
import threading
import time
import urllib.error

import pytest

START = 1_900_000_000


def test_a_429_is_lifted_by_moving_the_clock(animal_store):
    server = animal_store(clock=START)
    seen = [server.request("GET", "/v1/pets", server.key("tester"))[0] for _ in range(4)]
    assert seen == [200, 200, 200, 429]
    server.set_clock(START + 60)
    assert server.request("GET", "/v1/pets", server.key("tester"))[0] == 200


def test_a_restart_is_the_reset(animal_store):
    first = animal_store()
    status, _, _ = first.request("POST", "/v1/pets", first.key("shop"),
                                 {"name": "Tom", "categoryId": 3})
    assert status == 201
    first.stop()
    second = animal_store()
    _, _, pets = second.request("GET", "/v1/pets", second.key("shop"))
    assert [pet["name"] for pet in pets] == ["Rex", "Mia"]
    _, _, orders = second.request("GET", "/v1/store/orders", second.key("shop"))
    assert [(order["petId"], order["status"]) for order in orders] == [(2, "approved")]


def test_every_second_request_fails_as_in_an_outage(animal_store):
    server = animal_store(options="fail-every=2")
    answers = [server.request("GET", "/v1/pets", server.key("shop")) for _ in range(4)]
    assert [status for status, _, _ in answers] == [200, 503, 200, 503]
    _, headers, body = answers[1]
    assert headers["Retry-After"] == "1"
    assert body["code"] == "service_unavailable"


def test_a_lost_answer_is_replayed_to_the_retry(animal_store):
    server = animal_store(options="drop-answer-every=1")
    key, pet = server.key("shop"), {"name": "Tom", "categoryId": 3}
    retry = {"Idempotency-Key": "order-form-17"}
    with pytest.raises((urllib.error.URLError, http.client.HTTPException, ConnectionError)):
        server.request("POST", "/v1/pets", key, pet, retry)
    status, headers, created = server.request("POST", "/v1/pets", key, pet, retry)
    assert (status, headers["Idempotent-Replayed"]) == (201, "true")
    _, _, pets = server.request("GET", "/v1/pets", key)
    assert [p for p in pets if p["name"] == "Tom"] == [created]


def test_a_retry_while_the_first_runs_is_409(animal_store):
    server = animal_store(options="latency-ms=500")
    key, pet = server.key("shop"), {"name": "Tom", "categoryId": 3}
    retry = {"Idempotency-Key": "slow-1"}
    first = []
    thread = threading.Thread(
        target=lambda: first.append(server.request("POST", "/v1/pets", key, pet, retry)))
    thread.start()
    time.sleep(0.15)  # the first holds its key while it waits its 500 ms
    status, _, body = server.request("POST", "/v1/pets", key, pet, retry)
    thread.join()
    assert (status, body["code"]) == (409, "idempotency_in_progress")
    assert first[0][0] == 201


def test_a_write_stored_then_answered_503_is_replayed_to_the_retry(animal_store):
    server = animal_store(options="stored-then-unavailable-every=1")
    key, pet = server.key("shop"), {"name": "Tom", "categoryId": 3}
    retry = {"Idempotency-Key": "order-form-18"}
    status, headers, body = server.request("POST", "/v1/pets", key, pet, retry)
    assert (status, headers["Retry-After"], body["code"]) == (503, "1", "service_unavailable")
    status, headers, created = server.request("POST", "/v1/pets", key, pet, retry)
    assert (status, headers["Idempotent-Replayed"]) == (201, "true")
    _, _, pets = server.request("GET", "/v1/pets", key)
    assert [p for p in pets if p["name"] == "Tom"] == [created]


def test_a_slow_answer_after_the_store_is_replayed_to_the_retry(animal_store):
    server = animal_store(options="latency-after-store-ms=1500")
    key, pet = server.key("shop"), {"name": "Tom", "categoryId": 3}
    retry = {"Idempotency-Key": "order-form-19"}
    with pytest.raises(TimeoutError):
        server.request("POST", "/v1/pets", key, pet, retry, timeout=0.3)
    status, headers, created = server.request("POST", "/v1/pets", key, pet, retry)
    assert (status, headers["Idempotent-Replayed"]) == (201, "true")
    assert created["name"] == "Tom"


def test_a_500_and_a_key_that_cannot_be_checked(animal_store):
    broken = animal_store(options="internal-error-every=2")
    statuses = [broken.request("GET", "/v1/pets", broken.key("shop")) for _ in range(2)]
    status, headers, body = statuses[1]
    assert (statuses[0][0], status, body["code"]) == (200, 500, "internal_error")
    assert headers["X-Request-Id"]
    unchecked = animal_store(options="key-store-unavailable-every=2")
    statuses = [unchecked.request("GET", "/v1/pets", unchecked.key("shop"))[0] for _ in range(4)]
    assert statuses == [200, 503, 200, 503]


def test_a_key_expires_and_another_is_revoked_as_the_clock_moves(animal_store):
    fixtures = {"keys": [
        {"name": "leaving", "plan": "free", "expiresAt": START + 60},
        {"name": "fired", "plan": "free", "revokedAt": START + 30},
    ]}
    server = animal_store(fixtures=fixtures, clock=START)
    leaving, fired = server.key("leaving"), server.key("fired")
    assert [server.request("GET", "/v1/pets", k)[0] for k in (leaving, fired)] == [200, 200]
    server.set_clock(START + 30)
    assert [server.request("GET", "/v1/pets", k)[0] for k in (leaving, fired)] == [200, 401]
    server.set_clock(START + 60)
    assert server.request("GET", "/v1/pets", leaving)[0] == 401


def test_a_read_key_reads_one_animal_by_id_after_the_sunset(animal_store):
    sunset = 1_922_659_200  # 5 December 2030, when getPet is gone
    server = animal_store(clock=sunset - 60)
    key = server.key("storefront")
    _, headers, _ = server.request("GET", "/v1/pets", key)
    assert headers["Date"] == "Wed, 04 Dec 2030 23:59:00 GMT"  # the clock file's time
    assert server.request("GET", "/v1/pets/2", key)[0] == 200
    server.set_clock(sunset)
    status, _, body = server.request("GET", "/v1/pets/2", key)
    assert (status, body["code"]) == (410, "gone")
    status, _, pets = server.request("GET", "/v1/pets?id=2&id=99", key)
    assert (status, [pet["name"] for pet in pets]) == (200, ["Mia"])


class _Receiver(http.server.BaseHTTPRequestHandler):
    """A webhook receiver on 127.0.0.1 that fails the first delivery, then accepts."""

    answers = [500]

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(self.answers.pop(0) if self.answers else 204)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_webhook_retry_comes_due_when_the_clock_moves(animal_store):
    receiver = http.server.HTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    server = animal_store(clock=START, args=["--webhooks-allow-private",
                                             "--webhook-retry-unit", "1ms"])
    key = server.key("shop")
    url = f"http://127.0.0.1:{receiver.server_port}/hook"
    _, _, endpoint = server.request("POST", "/v1/webhook_endpoints", key,
                                    {"url": url, "events": ["pet.created"]})
    server.request("POST", "/v1/pets", key, {"name": "Tom", "categoryId": 3})
    deliveries = f"/v1/webhook_endpoints/{endpoint['id']}/deliveries"

    def attempts(count):
        """The attempts the service recorded, once there are `count` (at most 10 s)."""
        for _ in range(100):
            _, _, listed = server.request("GET", deliveries, key)
            if len(listed) >= count:
                return listed
            time.sleep(0.1)
        pytest.fail(f"{count} attempts were not recorded: {listed}")

    assert [a["outcome"] for a in attempts(1)] == ["http_error"]
    server.set_clock(START + 10)  # a frozen clock never brings the retry
    assert [a["outcome"] for a in attempts(2)] == ["delivered", "http_error"]
    receiver.shutdown()
