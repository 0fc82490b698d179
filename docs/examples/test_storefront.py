"""What a storefront's suite checks against Animal Store, with the fixture of conftest.py.
Run with: ANIMAL_STORE_BIN=PATH/TO/animal-store python3 -m pytest docs/examples"""

import http.client
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
