"""Celery with its broker on database 0 and its result backend on database 1
(issue 35 §1, §6), as a Celery project configures Redis: a real worker
process (`celery worker`, the solo pool) takes tasks from the broker's
list in database 0 and stores results in database 1, where the client
reads them (`AsyncResult.get`), a failing task's exception included; the
results are keys in database 1 only. Before databases existed, the result
backend's SELECT 1 failed and every result was lost.

Read as test_redis_py.py is: the server is AMALGAM_TEST_RESP_ADDR=host:port
(scripts/test.sh runs this against amalgam and against Debian's
redis-server 7, proving the expectations are Redis's own). Skipped when
the variable is unset or Celery is not installed. The worker is started
per module and killed after it; no timing is asserted (each wait is a
generous bound that fails the test rather than hanging it).
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import uuid

import pytest
import redis

celery = pytest.importorskip("celery")

ADDR = os.environ.get("AMALGAM_TEST_RESP_ADDR")
pytestmark = pytest.mark.skipif(not ADDR, reason="AMALGAM_TEST_RESP_ADDR is not set")

# Seconds a result may take to arrive (the worker's start included).
RESULT_TIMEOUT_S = 60
# The queue of this run: another run's worker never takes its tasks.
QUEUE = f"amalgam-test-{uuid.uuid4().hex[:8]}"

APP = textwrap.dedent(
    """
    import os
    from celery import Celery

    addr = os.environ["AMALGAM_TEST_RESP_ADDR"]
    app = Celery("amalgam_celery_test", broker=f"redis://{addr}/0", backend=f"redis://{addr}/1")
    app.conf.task_default_queue = os.environ["AMALGAM_TEST_QUEUE"]
    app.conf.result_expires = 600
    app.conf.broker_connection_retry_on_startup = True

    @app.task
    def add(x, y):
        return x + y

    @app.task
    def fail(message):
        raise ValueError(message)
    """
)


@pytest.fixture(scope="module")
def app():
    folder = tempfile.mkdtemp(prefix="amalgam-celery-")
    with open(os.path.join(folder, "amalgam_celery_test.py"), "w") as f:
        f.write(APP)
    env = dict(os.environ, AMALGAM_TEST_QUEUE=QUEUE, PYTHONPATH=folder)
    log = open(os.path.join(folder, "worker.log"), "wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "amalgam_celery_test", "worker", "--pool", "solo",
         "--concurrency", "1", "--loglevel", "warning", "--without-gossip", "--without-mingle",
         "--without-heartbeat"],
        cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    os.environ["AMALGAM_TEST_QUEUE"] = QUEUE
    sys.path.insert(0, folder)
    try:
        import amalgam_celery_test

        yield amalgam_celery_test
    finally:
        sys.path.remove(folder)
        worker.kill()
        worker.wait()
        log.close()
        with open(os.path.join(folder, "worker.log"), "rb") as f:
            tail = f.read()[-3000:].decode(errors="replace")
        if tail.strip():
            print(f"celery worker's log:\n{tail}")


def client(db):
    host, port = ADDR.rsplit(":", 1)
    return redis.Redis(host=host, port=int(port), db=db)


def test_a_task_result_comes_back_through_database_1(app):
    r = app.add.delay(20, 22)
    assert r.get(timeout=RESULT_TIMEOUT_S) == 42
    assert r.successful()
    one, zero = client(1), client(0)
    try:
        key = f"celery-task-meta-{r.id}"
        assert one.exists(key) == 1, "the result is in database 1"
        assert zero.exists(key) == 0, "not in database 0"
    finally:
        one.close()
        zero.close()


def test_a_failing_task_raises_its_exception(app):
    r = app.fail.delay("as planned")
    with pytest.raises(ValueError, match="as planned"):
        r.get(timeout=RESULT_TIMEOUT_S)
    assert r.failed()


def test_many_results(app):
    results = [app.add.delay(i, i) for i in range(20)]
    assert [r.get(timeout=RESULT_TIMEOUT_S) for r in results] == [2 * i for i in range(20)]
