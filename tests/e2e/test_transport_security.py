"""Authenticated and encrypted connections end to end, against the TLS and SASL listeners that
scripts/test-servers.sh runs beside the plain ones (its throw-away CA, BIZON_TLS_*): for the kafka
source, the kafka queue, the rabbitmq queue and PostgreSQL as backend and destination, a good
credential connects and records move, a wrong password or certificate is a clear error that never
shows the secret, and a plaintext client is refused by a TLS-only listener.

The secure settings come from the environment (source the script's env output), else from
`scripts/test-servers.sh start <server>`; a server without them skips its tests, or fails them
under CI.
"""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest

from conftest_kafka import AdminClient, kafka  # noqa: F401 (fixture)
from conftest_postgres import _psql
from support.pipelines import file_destination, generator, pipeline
from support.results import ids_in
from support.servers import run_servers, skip_or_fail

TLS_FILES = ["BIZON_TLS_CA", "BIZON_TLS_CLIENT_CERT", "BIZON_TLS_CLIENT_KEY", "BIZON_TLS_OTHER_CA",
             "BIZON_TLS_OTHER_CLIENT_CERT", "BIZON_TLS_OTHER_CLIENT_KEY"]
NEEDS = {
    "kafka": ["BIZON_KAFKA_BOOTSTRAP", "BIZON_KAFKA_SASL_SSL_BOOTSTRAP",
              "BIZON_KAFKA_SASL_PLAINTEXT_BOOTSTRAP", "BIZON_KAFKA_SSL_BOOTSTRAP",
              "BIZON_KAFKA_SASL_USER", "BIZON_KAFKA_SASL_PASSWORD"],
    "rabbitmq": ["BIZON_RABBITMQ_HOST", "BIZON_RABBITMQ_TLS_PORT", "BIZON_RABBITMQ_USER",
                 "BIZON_RABBITMQ_PASSWORD"],
    "postgres": ["BIZON_PG_HOST", "BIZON_PG_PORT", "BIZON_PG_USER", "BIZON_PG_PASSWORD",
                 "BIZON_PG_TLS_DATABASE", "BIZON_PG_TLS_USER", "BIZON_PG_TLS_PASSWORD",
                 "BIZON_PG_CERT_USER"],
}
WRONG_PASSWORD = "wrong-secret-7731"


def secure(server: str) -> dict[str, str]:
    """The secure settings of `server`: from the environment, else from starting it."""
    names = NEEDS[server] + TLS_FILES
    if not all(os.environ.get(name) for name in names):
        os.environ.update(run_servers("start", server))
    missing = [name for name in names if not os.environ.get(name)]
    if missing:
        skip_or_fail(f"{server}: no TLS/SASL listener ({', '.join(missing)} not set; "
                     "scripts/test-servers.sh says why on stderr)")
    return {name: os.environ[name] for name in names}


@pytest.fixture(scope="module")
def kafka_tls() -> dict[str, str]:
    return secure("kafka")


@pytest.fixture(scope="module")
def rabbitmq_tls() -> dict[str, str]:
    return secure("rabbitmq")


@pytest.fixture(scope="module")
def postgres_tls() -> dict[str, str]:
    return secure("postgres")


def run(bizon, text: str, check: int | None = 0, timeout: float = 180):
    config = bizon.write(f"p-{uuid.uuid4().hex[:6]}.yml", text)
    return bizon.run("run", config, check=check, timeout=timeout)


def assert_failed_clearly(result, *expected: str, secret: str = WRONG_PASSWORD) -> None:
    assert result.returncode != 0, result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr[-3000:]
    assert secret not in result.stderr and secret not in result.stdout


# ------------------------------------------------------------------------------------------------
# The kafka source.

def kafka_source(topic: str, bootstrap: str, consumer_config: dict, **options) -> dict:
    config = {"auto.offset.reset": "earliest", "enable.auto.commit": False, **consumer_config}
    return {
        "name": "kafka",
        "stream": "topic",
        "sync_mode": "full_refresh",
        "bootstrap_servers": bootstrap,
        "group_id": f"bizon-tls-{uuid.uuid4().hex[:8]}",
        "message_encoding": "utf-8",
        "consumer_timeout": 5,
        "topics": [{"name": topic, "destination_id": "out"}],
        "consumer_config": config,
        **options,
    }


def sasl(env: dict, mechanism: str = "PLAIN", password: str | None = None) -> dict:
    return {"type": "basic", "params": {"username": env["BIZON_KAFKA_SASL_USER"],
                                        "password": password or env["BIZON_KAFKA_SASL_PASSWORD"]}}


def filled_topic(kafka, count: int = 25) -> str:  # noqa: F811
    topic = kafka.create_topic()
    kafka.produce(topic, [{"id": i} for i in range(count)])
    return topic


def test_kafka_source_reads_over_sasl_ssl_with_plain(bizon, kafka, kafka_tls):  # noqa: F811
    topic = filled_topic(kafka)
    source = kafka_source(topic, kafka_tls["BIZON_KAFKA_SASL_SSL_BOOTSTRAP"],
                          {"security.protocol": "SASL_SSL",
                           "ssl.ca.location": kafka_tls["BIZON_TLS_CA"]},
                          authentication=sasl(kafka_tls))
    run(bizon, pipeline("kafka-sasl-ssl", source, file_destination()))
    assert len(bizon.read_ndjson("out.json")) == 25


def test_kafka_source_reads_over_ssl_with_a_client_certificate(bizon, kafka, kafka_tls):  # noqa: F811
    topic = filled_topic(kafka)
    source = kafka_source(topic, kafka_tls["BIZON_KAFKA_SSL_BOOTSTRAP"],
                          {"security.protocol": "SSL",
                           "ssl.ca.location": kafka_tls["BIZON_TLS_CA"],
                           "ssl.certificate.location": kafka_tls["BIZON_TLS_CLIENT_CERT"],
                           "ssl.key.location": kafka_tls["BIZON_TLS_CLIENT_KEY"]})
    run(bizon, pipeline("kafka-ssl", source, file_destination()))
    assert len(bizon.read_ndjson("out.json")) == 25


def test_kafka_source_wrong_password_is_a_clear_error(bizon, kafka, kafka_tls):  # noqa: F811
    topic = filled_topic(kafka, 1)
    source = kafka_source(topic, kafka_tls["BIZON_KAFKA_SASL_PLAINTEXT_BOOTSTRAP"],
                          {"security.protocol": "SASL_PLAINTEXT"},
                          authentication=sasl(kafka_tls, password=WRONG_PASSWORD))
    result = run(bizon, pipeline("kafka-wrong", source, file_destination()), check=None)
    assert_failed_clearly(result, "Kafka connection failed", "SASL authentication error")


def test_kafka_source_without_a_client_certificate_is_refused(bizon, kafka, kafka_tls):  # noqa: F811
    topic = filled_topic(kafka, 1)
    source = kafka_source(topic, kafka_tls["BIZON_KAFKA_SSL_BOOTSTRAP"],
                          {"security.protocol": "SSL",
                           "ssl.ca.location": kafka_tls["BIZON_TLS_CA"]})
    result = run(bizon, pipeline("kafka-nocert", source, file_destination()), check=None)
    assert_failed_clearly(result, "Kafka connection failed", "last client error")


def test_kafka_source_plaintext_client_is_refused_by_the_tls_listener(bizon, kafka, kafka_tls):  # noqa: F811
    topic = filled_topic(kafka, 1)
    source = kafka_source(topic, kafka_tls["BIZON_KAFKA_SASL_SSL_BOOTSTRAP"],
                          {"security.protocol": "SASL_PLAINTEXT"},
                          authentication=sasl(kafka_tls))
    result = run(bizon, pipeline("kafka-plain", source, file_destination()), check=None)
    assert_failed_clearly(result, "Kafka connection failed", "security.protocol",
                          secret=kafka_tls["BIZON_KAFKA_SASL_PASSWORD"])


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_source_scram(bizon, kafka, kafka_tls, mechanism):  # noqa: F811
    """SCRAM with the right password reads (bizon links librdkafka >= 2.6.1, whose SCRAM proofs
    Kafka 4 brokers accept); a wrong password is a clear error without the secret."""
    # The broker takes these credentials (the test client's librdkafka is recent enough).
    admin = AdminClient({"bootstrap.servers": kafka_tls["BIZON_KAFKA_SASL_SSL_BOOTSTRAP"],
                         "security.protocol": "SASL_SSL", "sasl.mechanisms": mechanism,
                         "sasl.username": kafka_tls["BIZON_KAFKA_SASL_USER"],
                         "sasl.password": kafka_tls["BIZON_KAFKA_SASL_PASSWORD"],
                         "ssl.ca.location": kafka_tls["BIZON_TLS_CA"]})
    assert admin.list_topics(timeout=15).brokers
    topic = filled_topic(kafka, 5)
    client = {"security.protocol": "SASL_SSL", "sasl.mechanisms": mechanism,
              "ssl.ca.location": kafka_tls["BIZON_TLS_CA"]}
    source = kafka_source(topic, kafka_tls["BIZON_KAFKA_SASL_SSL_BOOTSTRAP"], client,
                          authentication=sasl(kafka_tls))
    result = run(bizon, pipeline("kafka-scram", source, file_destination()), check=None)
    password = kafka_tls["BIZON_KAFKA_SASL_PASSWORD"]
    assert password not in result.stderr
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(bizon.read_ndjson("out.json")) == 5

    wrong = kafka_source(topic, kafka_tls["BIZON_KAFKA_SASL_SSL_BOOTSTRAP"], client,
                         authentication=sasl(kafka_tls, password=WRONG_PASSWORD))
    result = run(bizon, pipeline("kafka-scram-wrong", wrong, file_destination()), check=None)
    assert_failed_clearly(result, "Kafka connection failed",
                          f"invalid credentials with SASL mechanism {mechanism}")
    assert "fixed in librdkafka 2.6.1" not in result.stderr


# ------------------------------------------------------------------------------------------------
# The kafka queue.

def kafka_queue(bootstrap: str, client_config: dict, authentication: dict | None = None) -> dict:
    queue = {"bootstrap_server": bootstrap, "topic": f"bizon_tls_{uuid.uuid4().hex[:10]}",
             "client_config": client_config}
    if authentication:
        queue["authentication"] = authentication
    return {"queue": {"type": "kafka", "config": {"queue": queue}}}


def test_kafka_queue_over_sasl_ssl_moves_every_record(bizon, kafka_tls):
    engine = kafka_queue(kafka_tls["BIZON_KAFKA_SASL_SSL_BOOTSTRAP"],
                         {"security.protocol": "SASL_SSL",
                          "ssl.ca.location": kafka_tls["BIZON_TLS_CA"]}, sasl(kafka_tls))
    run(bizon, pipeline("queue-sasl", generator(count=300, page_size=50), file_destination(),
                        engine=engine))
    assert sorted(ids_in(bizon.read_ndjson("out.json"))) == list(range(300))


def test_kafka_queue_over_ssl_with_a_client_certificate(bizon, kafka_tls):
    engine = kafka_queue(kafka_tls["BIZON_KAFKA_SSL_BOOTSTRAP"],
                         {"security.protocol": "SSL",
                          "ssl.ca.location": kafka_tls["BIZON_TLS_CA"],
                          "ssl.certificate.location": kafka_tls["BIZON_TLS_CLIENT_CERT"],
                          "ssl.key.location": kafka_tls["BIZON_TLS_CLIENT_KEY"]})
    run(bizon, pipeline("queue-ssl", generator(count=100, page_size=50), file_destination(),
                        engine=engine))
    assert sorted(ids_in(bizon.read_ndjson("out.json"))) == list(range(100))


def test_kafka_queue_wrong_password_is_a_clear_error(bizon, kafka_tls):
    engine = kafka_queue(kafka_tls["BIZON_KAFKA_SASL_PLAINTEXT_BOOTSTRAP"],
                         {"security.protocol": "SASL_PLAINTEXT"},
                         sasl(kafka_tls, password=WRONG_PASSWORD))
    result = run(bizon, pipeline("queue-wrong", generator(count=10), file_destination(),
                                 engine=engine), check=None)
    assert_failed_clearly(result, "kafka queue: cannot reach the brokers",
                          "SASL authentication error")


def test_kafka_queue_plaintext_client_is_refused_by_the_tls_listener(bizon, kafka_tls):
    engine = kafka_queue(kafka_tls["BIZON_KAFKA_SSL_BOOTSTRAP"], {})
    result = run(bizon, pipeline("queue-plain", generator(count=10), file_destination(),
                                 engine=engine), check=None)
    assert_failed_clearly(result, "kafka queue: cannot reach the brokers", "security.protocol")


def test_kafka_queue_refuses_settings_it_makes_itself(bizon, kafka_tls):
    engine = kafka_queue(kafka_tls["BIZON_KAFKA_BOOTSTRAP"], {"acks": "1"})
    result = run(bizon, pipeline("queue-acks", generator(count=10), file_destination(),
                                 engine=engine), check=None)
    assert_failed_clearly(result, "queue.client_config.acks: bizon sets this itself")


# ------------------------------------------------------------------------------------------------
# The rabbitmq queue.

def rabbitmq_queue(env: dict, tls: dict | None, port: str | None = None) -> dict:
    # localhost: the name the server's certificate carries (librabbitmq checks names, not IPs).
    queue = {"host": "localhost", "port": int(port or env["BIZON_RABBITMQ_TLS_PORT"]),
             "queue_name": f"bizon_tls_{uuid.uuid4().hex[:10]}",
             "username": env["BIZON_RABBITMQ_USER"], "password": env["BIZON_RABBITMQ_PASSWORD"]}
    if tls is not None:
        queue["tls"] = tls
    return {"queue": {"type": "rabbitmq", "config": {"queue": queue}}}


def client_tls(env: dict, **overrides) -> dict:
    tls = {"ca_certificate": env["BIZON_TLS_CA"], "client_certificate": env["BIZON_TLS_CLIENT_CERT"],
           "client_key": env["BIZON_TLS_CLIENT_KEY"]}
    tls.update(overrides)
    return {key: value for key, value in tls.items() if value is not None}


def test_rabbitmq_queue_over_tls_moves_every_record(bizon, rabbitmq_tls):
    engine = rabbitmq_queue(rabbitmq_tls, client_tls(rabbitmq_tls))
    run(bizon, pipeline("amqps", generator(count=300, page_size=50), file_destination(),
                        engine=engine))
    assert sorted(ids_in(bizon.read_ndjson("out.json"))) == list(range(300))


def test_rabbitmq_queue_without_a_client_certificate_is_refused(bizon, rabbitmq_tls):
    engine = rabbitmq_queue(rabbitmq_tls, client_tls(rabbitmq_tls, client_certificate=None,
                                                     client_key=None))
    result = run(bizon, pipeline("amqps-nocert", generator(count=10), file_destination(),
                                 engine=engine), check=None)
    assert_failed_clearly(result, "rabbitmq queue:", "over TLS",
                          secret=rabbitmq_tls["BIZON_RABBITMQ_PASSWORD"] + "-never")


def test_rabbitmq_queue_untrusted_server_certificate_is_refused(bizon, rabbitmq_tls):
    engine = rabbitmq_queue(rabbitmq_tls,
                            client_tls(rabbitmq_tls, ca_certificate=rabbitmq_tls["BIZON_TLS_OTHER_CA"]))
    result = run(bizon, pipeline("amqps-ca", generator(count=10), file_destination(),
                                 engine=engine), check=None)
    assert_failed_clearly(result, "rabbitmq queue: cannot connect to", "over TLS")


def test_rabbitmq_queue_plaintext_client_is_refused_by_the_tls_listener(bizon, rabbitmq_tls):
    engine = rabbitmq_queue(rabbitmq_tls, None)
    result = run(bizon, pipeline("amqps-plain", generator(count=10), file_destination(),
                                 engine=engine), check=None)
    assert_failed_clearly(result, "rabbitmq queue:", "cannot log in")


# ------------------------------------------------------------------------------------------------
# PostgreSQL: backend and destination.

def pg_block(env: dict, schema: str, user: str | None = None, password: str | None = None,
             **tls) -> dict:
    block = {"host": env["BIZON_PG_HOST"], "port": int(env["BIZON_PG_PORT"]),
             "database": env["BIZON_PG_TLS_DATABASE"],
             "username": user or env["BIZON_PG_TLS_USER"],
             "password": password if password is not None else env["BIZON_PG_TLS_PASSWORD"],
             "schema": schema, **tls}
    return {key: value for key, value in block.items() if value is not None}


def pg_tls_rows(env: dict, table: str) -> int:
    query = f'SELECT count(*) FROM {table}'
    done = subprocess.run(
        [_psql(), "-X", "-A", "-t", "-c", query,
         f"host={env['BIZON_PG_HOST']} port={env['BIZON_PG_PORT']} "
         f"dbname={env['BIZON_PG_TLS_DATABASE']} user={env['BIZON_PG_USER']} sslmode=require"],
        capture_output=True, text=True, env={**os.environ, "PGPASSWORD": env["BIZON_PG_PASSWORD"]},
        timeout=60)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip())


def test_postgres_backend_and_destination_over_tls(bizon, postgres_tls):
    """Backend by password over verify-full, destination by client certificate."""
    tag = uuid.uuid4().hex[:8]
    verify = {"sslmode": "verify-full", "sslrootcert": postgres_tls["BIZON_TLS_CA"]}
    backend = pg_block(postgres_tls, f"state_{tag}", **verify)
    destination = pg_block(postgres_tls, f"dest_{tag}", user=postgres_tls["BIZON_PG_CERT_USER"],
                           password="", sslcert=postgres_tls["BIZON_TLS_CLIENT_CERT"],
                           sslkey=postgres_tls["BIZON_TLS_CLIENT_KEY"], **verify)
    destination["destination_id"] = "out"
    text = pipeline("pg-tls", generator(count=120, page_size=40),
                    {"name": "postgres", "config": destination},
                    engine={"backend": {"type": "postgres",
                                        "config": {**backend, "syncCursorInDBEvery": 1}}})
    run(bizon, text)
    assert pg_tls_rows(postgres_tls, f'"dest_{tag}"."out"') == 120
    assert pg_tls_rows(postgres_tls, f'"state_{tag}".stream_jobs') == 1


def backend_only(env: dict, **block) -> str:
    backend = pg_block(env, f"state_{uuid.uuid4().hex[:8]}", **block)
    return pipeline("pg-tls-fail", generator(count=5), file_destination(),
                    engine={"backend": {"type": "postgres", "config": backend}})


def test_postgres_wrong_password_is_a_clear_error(bizon, postgres_tls):
    result = run(bizon, backend_only(postgres_tls, password=WRONG_PASSWORD, sslmode="require"),
                 check=None)
    assert_failed_clearly(result, "could not connect to PostgreSQL", "password authentication failed")


def test_postgres_untrusted_server_certificate_is_refused(bizon, postgres_tls):
    result = run(bizon, backend_only(postgres_tls, sslmode="verify-full",
                                     sslrootcert=postgres_tls["BIZON_TLS_OTHER_CA"]), check=None)
    assert_failed_clearly(result, "could not connect to PostgreSQL", "certificate verify failed",
                          secret=postgres_tls["BIZON_PG_TLS_PASSWORD"])


def test_postgres_client_certificate_from_another_ca_is_refused(bizon, postgres_tls):
    result = run(bizon, backend_only(
        postgres_tls, user=postgres_tls["BIZON_PG_CERT_USER"], password="", sslmode="verify-full",
        sslrootcert=postgres_tls["BIZON_TLS_CA"], sslcert=postgres_tls["BIZON_TLS_OTHER_CLIENT_CERT"],
        sslkey=postgres_tls["BIZON_TLS_OTHER_CLIENT_KEY"]), check=None)
    assert_failed_clearly(result, "could not connect to PostgreSQL", "unknown ca")


def test_postgres_plaintext_client_is_refused(bizon, postgres_tls):
    result = run(bizon, backend_only(postgres_tls, sslmode="disable"), check=None)
    assert_failed_clearly(result, "could not connect to PostgreSQL", "no encryption",
                          secret=postgres_tls["BIZON_PG_TLS_PASSWORD"])


def test_sslmode_is_checked_against_its_values(bizon, postgres_tls):
    result = run(bizon, backend_only(postgres_tls, sslmode="verify_full"), check=None)
    assert result.returncode != 0
    assert "sslmode" in result.stderr and "verify-full" in result.stderr, result.stderr[-2000:]
