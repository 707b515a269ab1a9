// ioredis with a database (issue 35 §1): `db: N` in the options, and a
// `redis://host:port/N` URL, select that database on connect (ioredis
// sends SELECT first, and again after a reconnect); its writes are not
// visible from database 0, a second client on the same database sees
// them, and `select` on a live connection moves it. Before databases
// existed, ioredis with `db: 1` wrote into database 0 silently (its
// SELECT's error went unreported), mixing two applications' data.
//
// The server is AMALGAM_TEST_RESP_ADDR=host:port (scripts/test.sh runs
// this with `node --test` against amalgam and against Debian's
// redis-server 7); the tests skip when it is unset. Keys are unique per
// run (a uuid); the databases used here (4 to 6) are not flushed.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { addr, connect, skip } from './lib/connect.mjs';

if (!addr) console.log(`skipped: ${skip}`);

const run = randomUUID().slice(0, 12);
/** A key no other test (or run) uses. */
const k = (name) => `ioredis_db_${run}_${name}_${randomUUID().slice(0, 8)}`;

test('db in the options selects that database', { skip }, async () => {
  const key = k('opt');
  const four = connect({ db: 4 });
  const zero = connect();
  const alsoFour = connect({ db: 4 });
  try {
    assert.equal(await four.set(key, 'in four'), 'OK');
    assert.equal(await zero.get(key), null, 'not in database 0');
    assert.equal(await alsoFour.get(key), 'in four');
    const info = await four.client('INFO');
    assert.match(info, / db=4 /);
    assert.equal(await four.del(key), 1);
  } finally {
    four.disconnect();
    zero.disconnect();
    alsoFour.disconnect();
  }
});

test('a redis:// URL with a database selects it', { skip }, async () => {
  const key = k('url');
  const five = new Redis(`redis://${addr}/5`, { maxRetriesPerRequest: 0, retryStrategy: () => null });
  const zero = connect();
  const viaOptions = connect({ db: 5 });
  try {
    assert.equal(await five.set(key, 'in five'), 'OK');
    assert.equal(await zero.exists(key), 0);
    assert.equal(await viaOptions.get(key), 'in five');
    assert.equal(await five.dbsize(), await viaOptions.dbsize());
    assert.equal(await five.del(key), 1);
  } finally {
    five.disconnect();
    zero.disconnect();
    viaOptions.disconnect();
  }
});

test('select moves a live connection; a pipeline spans it', { skip }, async () => {
  const key = k('select');
  const c = connect();
  const six = connect({ db: 6 });
  try {
    const replies = await c.pipeline().set(key, 'zero').select(6).set(key, 'six').get(key).exec();
    assert.deepEqual(
      replies.map(([e, v]) => [e, v]),
      [
        [null, 'OK'],
        [null, 'OK'],
        [null, 'OK'],
        [null, 'six'],
      ],
    );
    assert.equal(await six.get(key), 'six');
    assert.equal(await c.select(0), 'OK');
    assert.equal(await c.get(key), 'zero');
    assert.equal(await c.move(key, 6), 0, 'database 6 has the name already');
    assert.equal(await six.del(key), 1);
    assert.equal(await c.move(key, 6), 1);
    assert.equal(await six.get(key), 'zero');
    assert.equal(await six.del(key), 1);
  } finally {
    c.disconnect();
    six.disconnect();
  }
});
