"""The conformance suite's independent Kafka producer: confluent-kafka (librdkafka), not Shoal's client.

Reads one JSON object from stdin:
  {"bootstrap": "host:port,…", "topic": "t", "transactionalId": null | "id", "intervalMs": 0,
   "config": {librdkafka setting: value, e.g. security.protocol, sasl.*, ssl.ca.pem},
   "records": [{"partition": 0 | null, "key": "k" | null, "keyBase64": "AAAAKg==" | null, "value": "text",
                "headers": {"name": "value"}}],
   "aborted": [same shape: produced in a second transaction that is aborted; needs transactionalId]}
A record's key is `key` as UTF-8, or the bytes `keyBase64` decodes to (for keys that are not text).
Produces `records` in order (in one committed transaction when transactionalId is set), waiting intervalMs between
records, then `aborted`. Prints one line per committed record, `<partition>\t<offset>`, in the order given.
"""
import base64
import json
import sys
import time

from confluent_kafka import Producer

spec = json.load(sys.stdin)
config = {"bootstrap.servers": spec["bootstrap"], "enable.idempotence": True, "acks": "all", "linger.ms": 0}
config.update(spec.get("config") or {})
if spec.get("transactionalId"):
    config["transactional.id"] = spec["transactionalId"]
producer = Producer(config)
transactional = bool(spec.get("transactionalId"))
if transactional:
    producer.init_transactions(30)

results = [None] * len(spec["records"])


def reporter(index):
    def report(error, message):
        if error is not None:
            raise RuntimeError(f"record {index}: {error}")
        results[index] = (message.partition(), message.offset())

    return report


def send(records, report):
    for i, r in enumerate(records):
        kwargs = {"value": r["value"].encode()}
        if r.get("partition") is not None:
            kwargs["partition"] = r["partition"]
        if r.get("keyBase64") is not None:
            kwargs["key"] = base64.b64decode(r["keyBase64"])
        elif r.get("key") is not None:
            kwargs["key"] = r["key"].encode()
        if r.get("headers"):
            kwargs["headers"] = [(k, v.encode()) for k, v in r["headers"].items()]
        producer.produce(spec["topic"], on_delivery=report(i) if report else None, **kwargs)
        if spec.get("intervalMs"):
            producer.flush(30)
            time.sleep(spec["intervalMs"] / 1000)


if transactional:
    producer.begin_transaction()
send(spec["records"], reporter)
if transactional:
    producer.commit_transaction(30)
producer.flush(30)
if spec.get("aborted"):
    producer.begin_transaction()
    send(spec["aborted"], None)
    producer.flush(30)
    producer.abort_transaction(30)
for partition, offset in results:
    print(f"{partition}\t{offset}")
