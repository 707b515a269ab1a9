"""rq 2.x, whose job results live in a stream per job (issue 36 §1, §6):
20 jobs enqueued, a real `rq worker --burst` process runs them, and every
result is fetched (`Job.return_value()`, `Job.results()`), a failing
job's too. Before streams, the worker ran the jobs and every result was
lost (its `XADD … MAXLEN ~` failed).

Read as test_redis_py.py is: the server is AMALGAM_TEST_RESP_ADDR=host:port
(scripts/test.sh runs this against amalgam and against Debian's
redis-server 7, proving the expectations are Redis's own). Skipped when the
variable is unset or rq is not installed (`pip install rq`). No timing is
asserted: the worker's run is bounded by a generous timeout.
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import uuid

import pytest
import redis

rq = pytest.importorskip("rq")

ADDR = os.environ.get("AMALGAM_TEST_RESP_ADDR")
pytestmark = pytest.mark.skipif(not ADDR, reason="AMALGAM_TEST_RESP_ADDR is not set")

JOBS = 20
WORKER_TIMEOUT_S = 120

# The jobs' module: the worker imports it by name.
TASKS = textwrap.dedent(
    """
    def square(n):
        return {"n": n, "square": n * n}

    def fail(n):
        raise ValueError(f"job {n} fails")
    """
)


def test_twenty_jobs_and_every_result():
    host, port = ADDR.rsplit(":", 1)
    url = f"redis://{host}:{port}/0"
    conn = redis.Redis.from_url(url)
    queue_name = f"amalgam-rq-{uuid.uuid4().hex[:8]}"
    folder = tempfile.mkdtemp(prefix="amalgam-rq-")
    with open(os.path.join(folder, "amalgam_rq_tasks.py"), "w") as f:
        f.write(TASKS)
    sys.path.insert(0, folder)
    try:
        import amalgam_rq_tasks as tasks

        q = rq.Queue(queue_name, connection=conn)
        jobs = [q.enqueue(tasks.square, i) for i in range(JOBS)]
        failing = q.enqueue(tasks.fail, 7)
        env = dict(os.environ, PYTHONPATH=folder + os.pathsep + os.environ.get("PYTHONPATH", ""))
        run = subprocess.run([sys.executable, "-m", "rq.cli", "worker", "--burst", "--url", url, queue_name],
                             cwd=folder, env=env, capture_output=True, text=True, timeout=WORKER_TIMEOUT_S)
        assert run.returncode == 0, run.stderr[-2000:]
        for i, job in enumerate(jobs):
            job.refresh()
            assert job.get_status() == "finished", (i, job.get_status(), run.stderr[-2000:])
            assert job.return_value() == {"n": i, "square": i * i}
            results = job.results()
            assert len(results) == 1 and results[0].type == rq.results.Result.Type.SUCCESSFUL
        failing.refresh()
        assert failing.get_status() == "failed"
        latest = failing.latest_result()
        assert latest.type == rq.results.Result.Type.FAILED and "job 7 fails" in latest.exc_string
        # The results are streams.
        assert conn.type(f"rq:results:{jobs[0].id}") == b"stream"
    finally:
        sys.path.remove(folder)
        for key in conn.scan_iter(match=f"rq:*{queue_name}*"):
            conn.delete(key)
        conn.close()
