// ioredis's `Redis.Cluster` against a running Redis Cluster of three
// primaries (issue 38). Not a `node --test` file: tests/python/test_cluster.py
// (test_ioredis_cluster_client) creates the cluster, of amalgam nodes or of
// redis-server nodes in CI's Redis pass, and runs this with `node FILE`,
// the startup nodes in AMALGAM_TEST_CLUSTER_NODES=host:port,host:port,...
// It lives outside tests/node/*.mjs so scripts/test.sh's single-server
// step does not run it.
//
// What it does: SET/GET of many keys across slots; MSET/MGET of
// hash-tagged keys; a pipeline across many slots of one node (ioredis
// sends a pipeline to one node: it refuses, itself, one whose keys span
// nodes, and does not split it); MULTI/EXEC on one slot; a slot moved
// with its keys (SETSLOT IMPORTING/MIGRATING, MIGRATE … KEYS, SETSLOT
// NODE) behind the client's back, the client redirected by MOVED and its
// slot map updated; `cluster.nodes('master')` counting three.
//
// Exits 0 when all holds; otherwise prints what failed and exits 1.

import Redis from 'ioredis';
import calculateSlot from 'cluster-key-slot';
import assert from 'node:assert/strict';

const startup = (process.env.AMALGAM_TEST_CLUSTER_NODES || '')
  .split(',')
  .filter(Boolean)
  .map((a) => {
    const colon = a.lastIndexOf(':');
    return { host: a.slice(0, colon), port: Number(a.slice(colon + 1)) };
  });
if (startup.length === 0) {
  console.error('AMALGAM_TEST_CLUSTER_NODES is not set (tests/python/test_cluster.py sets it)');
  process.exit(2);
}

// A bound on the whole run: a hung client fails rather than hangs.
const watchdog = setTimeout(() => {
  console.error('FAILED: timed out after 120 s');
  process.exit(1);
}, 120_000);

const KEYS = 1000;
const log = (...a) => console.log(...a);
const clients = [];

/** A plain client of one node (no cluster routing), never retrying. */
function direct(hostPort) {
  const colon = hostPort.lastIndexOf(':');
  const c = new Redis({
    host: hostPort.slice(0, colon),
    port: Number(hostPort.slice(colon + 1)),
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  clients.push(c);
  return c;
}

async function main() {
  // No periodic refresh of the slot map (ioredis's default): the map goes
  // stale when a slot moves, until a MOVED tells the client.
  const cluster = new Redis.Cluster(startup, {
    slotsRefreshTimeout: 5000,
    redisOptions: { connectTimeout: 5000 },
  });
  clients.push(cluster);
  await new Promise((resolve, reject) => {
    cluster.once('ready', resolve);
    cluster.once('error', reject);
  });
  log('ready');

  // The three primaries.
  const masters = cluster.nodes('master');
  assert.equal(masters.length, 3, `cluster.nodes('master') has ${masters.length} nodes`);
  log(`nodes('master'): ${masters.length}`);

  // SET/GET across slots: every key reaches the node of its slot.
  await Promise.all(Array.from({ length: KEYS }, (_, i) => cluster.set(`io:${i}`, String(i))));
  const got = await Promise.all(Array.from({ length: KEYS }, (_, i) => cluster.get(`io:${i}`)));
  assert.deepEqual(got, Array.from({ length: KEYS }, (_, i) => String(i)));
  const sizes = await Promise.all(masters.map((m) => m.dbsize()));
  assert.equal(sizes.reduce((a, b) => a + b, 0), KEYS, `dbsize per primary: ${sizes}`);
  assert.ok(Math.min(...sizes) > 0, `a primary holds none of the keys: ${sizes}`);
  log(`set/get of ${KEYS} keys: per primary ${sizes}`);

  // Hash-tagged keys: one slot, so one MSET and one MGET.
  await cluster.mset('{user:7}:name', 'ada', '{user:7}:mail', 'ada@example', '{user:7}:age', '36');
  assert.deepEqual(await cluster.mget('{user:7}:name', '{user:7}:mail', '{user:7}:age', '{user:7}:none'),
    ['ada', 'ada@example', '36', null]);
  log('mset/mget of hash-tagged keys');

  // A pipeline across many slots, all of one node's: ioredis sends it to
  // that node as one.
  const mine = masters[0];
  const mineKey = `${mine.options.host}:${mine.options.port}`;
  const own = [];
  for (let i = 0; own.length < 50 && i < 100000; i++) {
    const k = `pipe:${i}`;
    if (cluster.slots[calculateSlot(k)]?.[0] === mineKey) own.push(k);
  }
  assert.equal(own.length, 50);
  const slotsSpanned = new Set(own.map((k) => calculateSlot(k))).size;
  assert.ok(slotsSpanned > 1, 'the pipeline spans one slot only');
  const p = cluster.pipeline();
  own.forEach((k, i) => p.set(k, String(i)).incr(k));
  const replies = await p.exec();
  assert.equal(replies.length, 100);
  for (const [i, [err, v]] of replies.entries()) {
    assert.equal(err, null);
    assert.equal(v, i % 2 === 0 ? 'OK' : Math.floor(i / 2) + 1);
  }
  assert.deepEqual(await Promise.all(own.map((k) => cluster.get(k))), own.map((_, i) => String(i + 1)));
  // One whose keys span nodes: ioredis refuses it without sending it.
  const other = Array.from({ length: 10000 }, (_, i) => `pipe:${i}`).find(
    (k) => cluster.slots[calculateSlot(k)]?.[0] !== mineKey,
  );
  await assert.rejects(cluster.pipeline().get(own[0]).get(other).exec(), /same slots allocation group/);
  log(`pipeline of 100 commands over ${slotsSpanned} slots of one node`);

  // MULTI/EXEC on one slot.
  const tx = await cluster.multi().set('{tx}:a', '1').incr('{tx}:a').rpush('{tx}:l', 'x', 'y').lrange('{tx}:l', 0, -1).exec();
  assert.deepEqual(tx, [[null, 'OK'], [null, 2], [null, 2], [null, ['x', 'y']]]);
  log('multi/exec on one slot');

  // A slot moved with its keys behind the client's back: the client's map
  // still names the old owner, whose MOVED sends it to the new one.
  const ids = new Map();
  for (const m of masters) ids.set(`${m.options.host}:${m.options.port}`, await m.cluster('MYID'));
  let tag;
  for (let i = 0; i < 100000 && !tag; i++) {
    const t = `mv${i}`;
    const owner = cluster.slots[calculateSlot(`{${t}}`)]?.[0];
    // A slot of the first primary that holds no key yet.
    if (owner === mineKey && (await mine.cluster('COUNTKEYSINSLOT', calculateSlot(`{${t}}`))) === 0) tag = t;
  }
  assert.ok(tag, 'no empty slot found on the first primary');
  const slot = calculateSlot(`{${tag}}`);
  const moved = Array.from({ length: 10 }, (_, i) => `{${tag}}:${i}`);
  for (const [i, k] of moved.entries()) await cluster.set(k, `m${i}`);
  const fromKey = mineKey;
  const toKey = [...ids.keys()].find((k) => k !== fromKey);
  const src = direct(fromKey);
  const dst = direct(toKey);
  assert.equal(await src.cluster('COUNTKEYSINSLOT', slot), 10);
  assert.equal(await dst.cluster('SETSLOT', slot, 'IMPORTING', ids.get(fromKey)), 'OK');
  assert.equal(await src.cluster('SETSLOT', slot, 'MIGRATING', ids.get(toKey)), 'OK');
  const [toHost, toPort] = [toKey.slice(0, toKey.lastIndexOf(':')), Number(toKey.slice(toKey.lastIndexOf(':') + 1))];
  assert.equal(await src.call('MIGRATE', toHost, toPort, '', 0, 5000, 'KEYS', ...moved), 'OK');
  // As redis-cli's reshard: the new owner first, then the old, then the rest.
  assert.equal(await dst.cluster('SETSLOT', slot, 'NODE', ids.get(toKey)), 'OK');
  assert.equal(await src.cluster('SETSLOT', slot, 'NODE', ids.get(toKey)), 'OK');
  for (const k of ids.keys()) {
    if (k !== fromKey && k !== toKey) assert.equal(await direct(k).cluster('SETSLOT', slot, 'NODE', ids.get(toKey)), 'OK');
  }
  assert.equal(await src.cluster('COUNTKEYSINSLOT', slot), 0);
  assert.equal(await dst.cluster('COUNTKEYSINSLOT', slot), 10);
  await assert.rejects(src.get(moved[0]), (e) => e.message === `MOVED ${slot} ${toKey}`);
  // The client has not been told.
  assert.equal(cluster.slots[slot][0], fromKey, 'the client already knew of the move');
  assert.deepEqual(await Promise.all(moved.map((k) => cluster.get(k))), moved.map((_, i) => `m${i}`));
  assert.equal(cluster.slots[slot][0], toKey, 'MOVED did not update the client\'s slot map');
  // Written after the move: to the new owner.
  await cluster.set(`{${tag}}:after`, 'new');
  assert.equal(await dst.get(`{${tag}}:after`), 'new');
  assert.equal(await dst.cluster('COUNTKEYSINSLOT', slot), 11);
  log(`slot ${slot} moved from ${fromKey} to ${toKey}: MOVED followed`);

  // Every key of the first step is still readable.
  const again = await Promise.all(Array.from({ length: KEYS }, (_, i) => cluster.get(`io:${i}`)));
  assert.deepEqual(again, Array.from({ length: KEYS }, (_, i) => String(i)));
  assert.equal(cluster.nodes('master').length, 3);
  log('ok');
}

try {
  await main();
  clearTimeout(watchdog);
  for (const c of clients) c.disconnect();
  process.exit(0);
} catch (e) {
  console.error(`FAILED: ${e && e.stack ? e.stack : e}`);
  for (const c of clients) c.disconnect();
  process.exit(1);
}
