//! The bounds of a connection's turn: how much one read asks for, how many
//! requests a round parses, where pending output stops the parsing, and
//! where a round stops for a client past its output limit
//! ([`RoundStop`]). The event loop (the server's `worker.rs`) and both
//! front ends' batch loops read them, so every loop stops alike.

/// A connection's read buffer starts at (and shrinks back to) this size;
/// memcached's read buffer is 16 KiB too.
pub const READ_BUFFER_BYTES_INITIAL: usize = 16 * 1024;
/// Pending output above which a connection's input is not parsed further
/// until the client reads (backpressure on clients that do not read).
pub const WRITE_BUFFER_HIGH_BYTES: usize = 1 << 20;
/// Read/parse/write rounds one connection gets per turn before the worker
/// serves the others (fairness bound).
pub const ROUNDS_PER_TURN_MAX: usize = 16;
/// Most bytes one read asks for: a connection sending a large value gets
/// this much per round, [`ROUNDS_PER_TURN_MAX`] rounds per turn (16 MiB,
/// a few milliseconds of copying from the socket), and then the worker
/// serves its other connections (the value's read goes on at its next
/// turn), so one large value does not hold up a worker for the whole of
/// its arrival. At 256 KiB a 512 MB SET took 128 turns, and each turn's
/// yield on a loaded machine cost a scheduler slice: 5.5 s against Redis's
/// 1.2 s (docs/bench-log/2026-11-25-small-cache-and-large-values.md § Large
/// values).
pub const READ_BYTES_PER_ROUND_MAX: usize = 1 << 20;

/// Values at least this long are received straight into their item (the
/// server's `inplace.rs`): past it the copy into the item held the worker
/// for a millisecond or more.
pub const IN_PLACE_VALUE_BYTES_MIN: usize = READ_BYTES_PER_ROUND_MAX;

/// Bytes a value received in place takes per turn of its connection, at
/// most (four reads): the worker then serves its other connections. At
/// the 16 MiB a turn of reads into the read buffer may take
/// (`ROUNDS_PER_TURN_MAX` reads of [`READ_BYTES_PER_ROUND_MAX`]) another
/// connection's PING waited 25-28 ms (median) for the turn to end during
/// a 512 MB SET on a loaded machine (docs/bench-log/2026-11-26-large-values.md
/// § Received in place).
pub const IN_PLACE_BYTES_PER_TURN_MAX: usize = 4 * READ_BYTES_PER_ROUND_MAX;
/// Requests parsed per round (bounds the batch and its key list).
pub const REQUESTS_PER_ROUND_MAX: usize = 1024;
/// Pipelined GETs run as one engine batch at most this many at a time
/// (the engine's prefetch window), so that the high-water check between
/// requests sees their replies: a round's output then passes
/// [`WRITE_BUFFER_HIGH_BYTES`] by at most this many values (or one
/// command's reply), which bounds what a client that does not read can
/// make the server hold (`obuf.rs`). A run of all the round's GETs at
/// once (up to [`REQUESTS_PER_ROUND_MAX`]) held 1024 values per client.
pub const GETS_RUN_REQUESTS_MAX: usize = amalgam_engine::BATCH_WINDOW_KEYS;

/// Where one round of a connection's batch stops, from the hard limit
/// read once per round (the server's `obuf.rs`, `OutputLimits::round_stop`):
/// shared by the loops of both ports (RESP's `resp::process`, memcached's
/// text and binary protocols), so that they stop alike.
///
/// * Parsing stops at the write buffer's high-water mark
///   (`WRITE_BUFFER_HIGH_BYTES`, backpressure) or at the hard limit if it
///   is lower ([`RoundStop::parses`]).
/// * Once the output has reached the hard limit the client is closed
///   after the round and nothing more of its batch runs — not a request
///   already parsed and waiting in a run (a storage command after a run
///   of GETs that crossed it), nor the rest of a run of SETs
///   ([`RoundStop::crossed`]) — as Redis runs nothing more for a client
///   it is closing (`processInputBuffer` stops at `CLIENT_CLOSE_ASAP`).
///   Without it, a memcached pipeline of GETs and then a `set` under a
///   hard limit below 1 MiB ran the `set` in the round that closed the
///   client (issue 20 §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoundStop {
    /// The hard limit in bytes (`usize::MAX`: none).
    pub hard: usize,
    /// Where parsing stops: the lower of the high-water mark and `hard`.
    parse: usize,
}

impl RoundStop {
    /// The stops for a hard limit of `hard` bytes (`usize::MAX`: none).
    #[inline]
    pub fn new(hard: usize) -> RoundStop {
        RoundStop { hard, parse: WRITE_BUFFER_HIGH_BYTES.min(hard) }
    }

    /// True while the round may parse another request after `out` bytes
    /// of output.
    #[inline]
    pub fn parses(self, out: usize) -> bool {
        out < self.parse
    }

    /// True once `out` bytes of output reach the hard limit: nothing more
    /// of the batch runs, and the client is closed.
    #[inline]
    pub fn crossed(self, out: usize) -> bool {
        out >= self.hard
    }
}
