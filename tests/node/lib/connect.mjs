// What every file in tests/node shares: the server's address
// (AMALGAM_TEST_RESP_ADDR=host:port, set by scripts/test.sh; the tests skip
// when it is unset) and a client of it that never retries, so a server
// that goes away fails the test rather than hanging it.

import Redis from 'ioredis';

export const addr = process.env.AMALGAM_TEST_RESP_ADDR;
export const skip = addr ? false : 'AMALGAM_TEST_RESP_ADDR is not set (scripts/test.sh sets it)';

/** An ioredis client of the server under test, with `options` on top. */
export function connect(options = {}) {
  const colon = addr.lastIndexOf(':');
  return new Redis({
    host: addr.slice(0, colon),
    port: Number(addr.slice(colon + 1)),
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    ...options,
  });
}
