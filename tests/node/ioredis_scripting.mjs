// ioredis's scripting against a running RESP server: `defineCommand`
// (what Bull/BullMQ, rate limiters and most Node libraries that script
// Redis build on), `eval`/`evalsha`/`evalsha_ro`, `script('LOAD' |
// 'EXISTS' | 'FLUSH')`, defined commands in pipelines and MULTI, and the
// error text ioredis surfaces when a script fails.
//
// ioredis 5 sends a defined command's first call on a connection as EVAL
// (which also caches the script), the later ones as EVALSHA; an EVALSHA
// answered with NOSCRIPT (after SCRIPT FLUSH) is sent again as EVAL. The
// tests watch that through MONITOR.
//
// The server is AMALGAM_TEST_RESP_ADDR=host:port (scripts/test.sh runs
// this with `node --test` against amalgam and against Debian's
// redis-server 7, proving the expectations are Redis's own); the tests
// skip when it is unset. Keys are unique per run (a uuid). Some tests
// flush the script cache: ioredis reloads what it needs, and the tests of
// a file run one at a time.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { addr, connect, skip } from './lib/connect.mjs';

if (!addr) console.log(`skipped: ${skip}`);

const run = randomUUID().slice(0, 12);
/** A key no other test (or run) uses. */
const k = (name) => `ioredis_${run}_${name}_${randomUUID().slice(0, 8)}`;
const sha1 = (text) => createHash('sha1').update(text).digest('hex');

// One line: MONITOR shows a newline escaped, and ioredis does not undo that.
const INCR_TWICE = "redis.call('INCRBY', KEYS[1], ARGV[1] or 1); return redis.call('INCRBY', KEYS[1], ARGV[1] or 1)";
const MOVE_AND_TAG = `
local v = redis.call('GET', KEYS[1])
if not v then return redis.error_reply('NOSOURCE ' .. KEYS[1] .. ' is missing') end
redis.call('SET', KEYS[2], ARGV[1] .. ':' .. v .. ':' .. ARGV[2])
redis.call('DEL', KEYS[1])
return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}`;

let redis;
before(async () => {
  if (skip) return;
  redis = connect();
  redis.defineCommand('incrTwice', { numberOfKeys: 1, lua: INCR_TWICE });
  redis.defineCommand('moveAndTag', { numberOfKeys: 2, lua: MOVE_AND_TAG });
  // No numberOfKeys: the caller passes it first.
  redis.defineCommand('keysAndArgs', { lua: 'return {#KEYS, #ARGV, KEYS[1], ARGV[1]}' });
  redis.defineCommand('shapes', {
    numberOfKeys: 0,
    lua: "return {1, 'two', {3, {'four'}}, true, false, 3.99, -7, ''}",
  });
  redis.defineCommand('echoArg', { numberOfKeys: 0, lua: 'return ARGV[1]' });
  redis.defineCommand('hashPairs', {
    numberOfKeys: 1,
    lua: "redis.call('HSET', KEYS[1], 'f1', 'v1', 'f2', 'v2')\nreturn redis.call('HGETALL', KEYS[1])",
  });
  redis.defineCommand('failReply', { numberOfKeys: 0, lua: "return redis.error_reply('MYERR custom failure')" });
  redis.defineCommand('failStatus', { numberOfKeys: 0, lua: "return {err = 'ERR tabled failure'}" });
  redis.defineCommand('incrCall', { numberOfKeys: 1, lua: "return redis.call('INCR', KEYS[1])" });
  redis.defineCommand('incrPcall', { numberOfKeys: 1, lua: "return redis.pcall('INCR', KEYS[1])" });
  redis.defineCommand('raise', { numberOfKeys: 0, lua: "error('boom')" });
  await redis.ping();
});
after(async () => {
  if (redis) await redis.quit();
});

/**
 * Runs `body`, and returns the EVAL/EVALSHA commands that MONITOR saw it
 * send with `key` among their arguments, in order: [name, arg 1] pairs.
 */
async function monitored(key, body) {
  const mon = await redis.monitor();
  const seen = [];
  const marker = `marker_${randomUUID()}`;
  let markerSeen;
  const markerArrived = new Promise((resolve) => (markerSeen = resolve));
  mon.on('monitor', (_time, args) => {
    const name = String(args[0]).toLowerCase();
    if (name === 'echo' && args[1] === marker) markerSeen();
    if ((name === 'eval' || name === 'evalsha') && args.includes(key)) seen.push([name, args[1]]);
  });
  try {
    await body();
    // MONITOR's stream is in order: once the marker shows, so has
    // everything before it.
    await redis.echo(marker);
    let timer;
    await Promise.race([
      markerArrived,
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('MONITOR never showed the marker')), 5000))),
    ]).finally(() => clearTimeout(timer));
  } finally {
    mon.disconnect();
  }
  return seen;
}

test('defineCommand: EVAL first, then EVALSHA, and EVAL again after NOSCRIPT', { skip }, async () => {
  const key = k('incr_twice');
  const sha = sha1(INCR_TWICE);
  const seen = await monitored(key, async () => {
    assert.equal(await redis.incrTwice(key), 2);
    // The EVAL cached the script: EVALSHA finds it.
    assert.deepEqual(await redis.script('EXISTS', sha), [1]);
    assert.equal(await redis.incrTwice(key, 5), 12);
    assert.equal(await redis.script('FLUSH'), 'OK');
    assert.deepEqual(await redis.script('EXISTS', sha), [0]);
    // EVALSHA answers NOSCRIPT; ioredis sends EVAL and the caller sees
    // only the result.
    assert.equal(await redis.incrTwice(key), 14);
    assert.equal(await redis.incrTwice(key), 16);
  });
  assert.deepEqual(seen, [
    ['eval', INCR_TWICE],
    ['evalsha', sha],
    ['evalsha', sha],
    ['eval', INCR_TWICE],
    ['evalsha', sha],
  ]);
  assert.equal(await redis.get(key), '16');
  assert.deepEqual(await redis.script('EXISTS', sha), [1]);
});

test('defineCommand with two keys and ARGV', { skip }, async () => {
  const src = k('src');
  const dst = k('dst');
  await redis.set(src, 'payload');
  assert.deepEqual(await redis.moveAndTag(src, dst, 'tag', 'ünïcödé'), [src, dst, 'tag', 'ünïcödé', 2, 2]);
  assert.equal(await redis.get(dst), 'tag:payload:ünïcödé');
  assert.equal(await redis.exists(src), 0);
  // Again, by EVALSHA: the source is gone now, and the script says so.
  await assert.rejects(redis.moveAndTag(src, dst, 'tag', 'x'), { name: 'ReplyError', message: `NOSOURCE ${src} is missing` });
  // numberOfKeys given at the call.
  assert.deepEqual(await redis.keysAndArgs(2, 'k1', 'k2', 'a1', 'a2', 'a3'), [2, 3, 'k1', 'a1']);
  // KEYS[1] is nil: a Lua array ends at its first nil.
  assert.deepEqual(await redis.keysAndArgs(0, 'a1'), [0, 1]);
  assert.deepEqual(await redis.keysAndArgs(0), [0, 0]);
});

test('scripts returning arrays, nested arrays and binary strings', { skip }, async () => {
  // true is 1, false nil, a number is truncated to an integer.
  assert.deepEqual(await redis.shapes(), [1, 'two', [3, ['four']], 1, null, 3, -7, '']);
  assert.deepEqual(await redis.shapes(), [1, 'two', [3, ['four']], 1, null, 3, -7, '']);
  const key = k('hash');
  assert.deepEqual(await redis.hashPairs(key), ['f1', 'v1', 'f2', 'v2']);
  const bytes = Buffer.from([0, 1, 2, 0xfe, 0xff, 0x0d, 0x0a, 0x80]);
  assert.deepEqual(await redis.echoArgBuffer(bytes), bytes);
  assert.deepEqual(await redis.echoArgBuffer(bytes), bytes);
  assert.equal(await redis.echoArg('plain'), 'plain');
});

test('script errors carry Redis wording', { skip }, async () => {
  const key = k('not_a_number');
  await redis.set(key, 'abc');
  for (let i = 0; i < 2; i++) {
    // Twice: by EVAL, then by EVALSHA.
    await assert.rejects(redis.failReply(), { name: 'ReplyError', message: 'MYERR custom failure' });
    await assert.rejects(redis.failStatus(), { name: 'ReplyError', message: 'ERR tabled failure' });
    // A failed redis.call() ends the script with the command's error,
    // and where it happened.
    const incr = "return redis.call('INCR', KEYS[1])";
    await assert.rejects(redis.incrCall(key), {
      name: 'ReplyError',
      message: `ERR value is not an integer or out of range script: ${sha1(incr)}, on @user_script:1.`,
    });
    // redis.pcall() hands the error to the script, which returns it.
    await assert.rejects(redis.incrPcall(key), {
      name: 'ReplyError',
      message: 'ERR value is not an integer or out of range',
    });
    await assert.rejects(redis.raise(), {
      name: 'ReplyError',
      message: `ERR user_script:1: boom script: ${sha1("error('boom')")}, on @user_script:1.`,
    });
  }
  // The connection goes on.
  assert.equal(await redis.get(key), 'abc');
  const counter = k('counter');
  assert.equal(await redis.incrCall(counter), 1);
  assert.equal(await redis.incrPcall(counter), 2);
});

test("script('LOAD'), evalsha, evalsha_ro, eval", { skip }, async () => {
  const lua = "return {redis.call('INCRBY', KEYS[1], ARGV[1]), ARGV[2]}";
  const sha = await redis.script('LOAD', lua);
  assert.equal(sha, sha1(lua));
  assert.deepEqual(await redis.script('EXISTS', sha, '0'.repeat(40)), [1, 0]);
  const key = k('loaded');
  assert.deepEqual(await redis.evalsha(sha, 1, key, 5, 'x'), [5, 'x']);
  assert.deepEqual(await redis.evalsha(sha.toUpperCase(), 1, key, 2, 'y'), [7, 'y']);
  await assert.rejects(redis.evalsha('0'.repeat(40), 0), {
    name: 'ReplyError',
    message: 'NOSCRIPT No matching script. Please use EVAL.',
  });
  const read = "return redis.call('GET', KEYS[1])";
  const readSha = await redis.script('LOAD', read);
  assert.equal(await redis.evalsha_ro(readSha, 1, key), '7');
  const write = "return redis.call('SET', KEYS[1], 'x')";
  await assert.rejects(redis.eval_ro(write, 1, key), {
    name: 'ReplyError',
    message: `ERR Write commands are not allowed from read-only scripts. script: ${sha1(write)}, on @user_script:1.`,
  });
  assert.equal(await redis.eval('return redis.call(ARGV[1], KEYS[1])', 1, key, 'GET'), '7');
  // A script that does not compile is refused at LOAD.
  await assert.rejects(redis.script('LOAD', 'return 1 +'), { name: 'ReplyError', message: /^ERR Error compiling script/ });
});

test('defined commands in a pipeline and in MULTI', { skip }, async () => {
  const key = k('pipelined');
  const other = k('pipelined_other');
  const results = await redis.pipeline().incrTwice(key).incrTwice(key, 3).incrTwice(other).get(key).exec();
  assert.deepEqual(results, [
    [null, 2],
    [null, 8],
    [null, 2],
    [null, '8'],
  ]);
  // After a flush the pipeline's EVALSHAs get NOSCRIPT; ioredis sends them
  // again as EVAL.
  await redis.script('FLUSH');
  const again = await redis.pipeline().incrTwice(key).incrTwice(other).exec();
  assert.deepEqual(again, [
    [null, 10],
    [null, 4],
  ]);
  // A failing script fails its own entry only.
  const textKey = k('pipelined_text');
  await redis.set(textKey, 'abc');
  const mixed = await redis.pipeline().incrTwice(key).incrTwice(textKey).shapes().exec();
  assert.deepEqual(mixed[0], [null, 12]);
  assert.ok(mixed[1][0] instanceof Error);
  assert.match(mixed[1][0].message, /^ERR value is not an integer or out of range script: [0-9a-f]{40}, on @user_script:1\.$/);
  assert.deepEqual(mixed[2], [null, [1, 'two', [3, ['four']], 1, null, 3, -7, '']]);
  // MULTI/EXEC, on a connection of its own (its first script call is an
  // EVAL, which is never answered NOSCRIPT inside the transaction).
  const tx = connect();
  try {
    tx.defineCommand('incrTwice', { numberOfKeys: 1, lua: INCR_TWICE });
    const exec = await tx.multi().incrTwice(key).incrTwice(key).get(key).exec();
    assert.deepEqual(exec, [
      [null, 14],
      [null, 16],
      [null, '16'],
    ]);
  } finally {
    await tx.quit();
  }
});
