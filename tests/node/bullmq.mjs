// BullMQ, the job queue most Node applications put on Redis, against a
// running RESP server: jobs added (plain, delayed, prioritized, in bulk),
// processed by a Worker with concurrency, a failing job retried and then
// failed, the counts and return values read back, and the queue
// obliterated. BullMQ runs almost everything as Lua scripts that name
// keys they learn as they go (a job's keys named by the id its script
// just INCRed: issue 34 §3), over lists, sorted sets, hashes and a stream
// of events (XADD/XTRIM), so this is the application-level proof that
// scripting and streams are Redis's.
//
// The server is AMALGAM_TEST_RESP_ADDR=host:port (scripts/test.sh runs
// this with `node --test` against amalgam and against Debian's
// redis-server 7, proving the expectations are Redis's own); the tests
// skip when it is unset. The queue's name is unique per run.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Queue, Worker, QueueEvents } from 'bullmq';
import { addr, connect, skip } from './lib/connect.mjs';

if (!addr) console.log(`skipped: ${skip}`);

/** BullMQ's connection options for the server under test: its workers
 * block (BZPOPMIN, XREAD BLOCK), so no per-request retry limit. */
function connection() {
  const colon = addr.lastIndexOf(':');
  return { host: addr.slice(0, colon), port: Number(addr.slice(colon + 1)), maxRetriesPerRequest: null };
}

// Generous bounds: a hung server fails the test rather than CI.
const DONE_TIMEOUT_MS = 30_000;
const JOBS = 40;

/** Resolves once `pred()` is true, polling; rejects after the bound. */
async function until(pred, what) {
  const end = Date.now() + DONE_TIMEOUT_MS;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('BullMQ adds, processes, retries and completes jobs', { skip }, async () => {
  const name = `bullmq_${randomUUID().slice(0, 12)}`;
  const queue = new Queue(name, { connection: connection() });
  const events = new QueueEvents(name, { connection: connection() });
  await events.waitUntilReady();
  let attempts = 0;
  const worker = new Worker(
    name,
    async (job) => {
      if (job.name === 'flaky') {
        attempts += 1;
        throw new Error(`attempt ${job.attemptsMade + 1} failed`);
      }
      return { doubled: job.data.n * 2 };
    },
    { connection: connection(), concurrency: 4 },
  );
  try {
    const completed = [];
    events.on('completed', ({ jobId }) => completed.push(jobId));
    // Plain jobs, one by one and in bulk, a delayed one and a prioritized one.
    const added = [];
    for (let n = 0; n < JOBS / 2; n++) added.push(await queue.add('double', { n }));
    added.push(
      ...(await queue.addBulk(Array.from({ length: JOBS / 2 - 2 }, (_, i) => ({ name: 'double', data: { n: 1000 + i } })))),
    );
    added.push(await queue.add('double', { n: 7 }, { delay: 200 }));
    added.push(await queue.add('double', { n: 9 }, { priority: 1 }));
    const ids = new Set(added.map((j) => j.id));
    assert.equal(ids.size, JOBS, 'every job got its own id');
    const flaky = await queue.add('flaky', {}, { attempts: 2, backoff: { type: 'fixed', delay: 50 } });
    await until(async () => (await queue.getJobCounts('completed')).completed === JOBS, 'every job completed');
    await until(async () => (await queue.getJobCounts('failed')).failed === 1, 'the flaky job failed');
    for (const j of added) {
      const done = await queue.getJob(j.id);
      assert.deepEqual(done.returnvalue, { doubled: j.data.n * 2 }, `job ${j.id}`);
      assert.ok(done.finishedOn >= done.processedOn, `job ${j.id} has its times`);
    }
    const failed = await queue.getJob(flaky.id);
    assert.equal(failed.attemptsMade, 2);
    assert.equal(failed.failedReason, 'attempt 2 failed');
    assert.equal(attempts, 2);
    // The events stream carried the completions.
    await until(async () => completed.length === JOBS, 'a completed event per job');
    assert.deepEqual(new Set(completed), ids);
    const counts = await queue.getJobCounts('wait', 'active', 'delayed', 'completed', 'failed');
    assert.deepEqual(counts, { wait: 0, active: 0, delayed: 0, completed: JOBS, failed: 1 });
  } finally {
    await worker.close();
    await events.close();
    await queue.obliterate({ force: true });
    await queue.close();
  }
  // Obliterated: none of the queue's keys is left.
  const probe = connect();
  const left = await probe.keys(`bull:${name}:*`);
  probe.disconnect();
  assert.deepEqual(left, []);
});
