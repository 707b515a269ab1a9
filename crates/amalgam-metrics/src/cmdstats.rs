//! Per-command counts and latency, and the slow log: what Redis 7's `INFO
//! commandstats` and `INFO latencystats`, `SLOWLOG` and `CONFIG RESETSTAT`
//! show, and what `/metrics` exports (`crate::metrics`).
//!
//! ## Where a command is counted
//! Once, at dispatch, keyed by its row of the command table (DESIGN.md §
//! RESP): `resp.rs`'s `run_command` for every command that runs alone, and
//! `run_gets` for a run of batched GETs; both end in [`Recorder`]. A
//! subcommand counts under its own name (`config|get`), as Redis's do; a
//! command Redis would reject before running it (a wrong number of
//! arguments; NOAUTH, NOPERM, OOM, READONLY and the other refusals of
//! Redis's `processCommand`, told by the reply: `resp/account.rs`)
//! counts as `rejected_calls` and not as a call; one that ran and
//! answered an error counts in `calls` and `failed_calls`. A command MULTI
//! queued counts when EXEC runs it, not when it is queued. An unknown
//! command or subcommand counts nowhere (Redis has no row for it either).
//! Every error reply is also counted by its code (`errorstats.rs`).
//!
//! ## One clock read per command
//! A batch (`resp::process`) reads the clock once when it starts, and once
//! after each command it runs; a command's time is the span since the
//! previous read (`amalgam_net::ticks`: the TSC, not `Instant`). So it includes parsing the command's arguments, which
//! Redis's `call()` leaves out, and the sum of all commands' times is the
//! time the worker spent in RESP batches. A run of batched GETs (MICA §5.3:
//! looked up together) is one span, shared equally by its GETs. What the
//! clock costs is measured in docs/bench-log/2026-11-25-metrics-and-authentication.md
//! § Per-command accounting and /metrics and
//! docs/bench-log/2026-11-25-string-path.md § The request path's cost
//! taken back.
//!
//! ## Per worker, merged on read
//! Each worker owns one [`CommandStats`] (in its `WorkerStats`): a cell
//! per command of plain counters that only that worker writes, as DESIGN.md
//! § Observability asks (no shared write on the request path). A worker
//! adds with a relaxed load and store — no locked instruction, no lock:
//! the mutex this replaced cost two atomic exchanges per command — and
//! INFO, CONFIG RESETSTAT and a `/metrics` scrape read the cells from
//! their own threads ([`merged`]). A reset cannot write cells another
//! thread owns, so it records what they hold as a base that later reads
//! subtract. The histograms keep HdrHistogram's layout with Redis's
//! parameters (1 ns to 1 s, two significant digits: [`HISTOGRAM_LOW_NS`])
//! as plain counts, and become real `hdrhistogram::Histogram`s when read,
//! so the percentiles INFO prints are the values Redis would print for the
//! same samples. A histogram (24 KiB) is allocated the first time its
//! command runs on a worker, as Redis allocates its own lazily.
//!
//! ## The slow log
//! One list for the server ([`SlowLog`], in `Shared`): a command whose time
//! reaches `slowlog-log-slower-than` microseconds (CONFIG SET; default
//! 10 000; -1 off; 0 logs every command) is pushed at the head, and the
//! tail is trimmed to `slowlog-max-len` (default 128), both at push time as
//! Redis does. The test on the request path is one relaxed load and a
//! compare; the list's mutex is taken only by a slow command or SLOWLOG.
//! Entries are Redis 7's: id (never reused, RESET included), unix time,
//! microseconds, the arguments (at most 32, the last of them then `... (N
//! more arguments)`; each at most 128 bytes, then `... (N more bytes)`;
//! AUTH's and HELLO AUTH's secrets as `(redacted)`), the client's address
//! and its name.

use amalgam_commands::table::{self, Spec, COMMANDS};
use amalgam_commands::{arity_ok, is, Arg};
use amalgam_net::clients::Client;
use hdrhistogram::Histogram;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// Redis's `LATENCY_HISTOGRAM_MIN_VALUE`: the smallest time a histogram
/// tells apart, in nanoseconds (a shorter one is recorded as this).
pub const HISTOGRAM_LOW_NS: u64 = 1;
/// Redis's `LATENCY_HISTOGRAM_MAX_VALUE`: one second; longer is recorded
/// as one second.
pub const HISTOGRAM_HIGH_NS: u64 = 1_000_000_000;
/// Redis's `LATENCY_HISTOGRAM_PRECISION`: significant decimal digits.
const HISTOGRAM_SIGFIGS: u8 = 2;
/// Redis's `SLOWLOG_ENTRY_MAX_ARGC`: arguments kept per slow-log entry.
pub const SLOWLOG_ARGS_MAX: usize = 32;
/// Redis's `SLOWLOG_ENTRY_MAX_STRING`: bytes kept per argument.
pub const SLOWLOG_ARG_BYTES_MAX: usize = 128;
/// `slowlog-log-slower-than`'s default, in microseconds (Redis's).
pub const SLOWLOG_SLOWER_THAN_US_DEFAULT: i64 = 10_000;
/// `slowlog-max-len`'s default (Redis's).
pub const SLOWLOG_LEN_DEFAULT: u64 = 128;
/// The percentiles INFO latencystats prints (Redis's default
/// `latency-tracking-info-percentiles`).
pub const INFO_PERCENTILES: [f64; 3] = [50.0, 99.0, 99.9];

const _: () = assert!(HISTOGRAM_LOW_NS >= 1 && HISTOGRAM_HIGH_NS > HISTOGRAM_LOW_NS * 2);

/// Every command and subcommand numbered: a command's slot, then one per
/// subcommand, in table order.
struct Slots {
    /// The slot of `COMMANDS[i]`.
    first: Vec<usize>,
    /// Each slot's row.
    specs: Vec<&'static Spec>,
}

fn slots() -> &'static Slots {
    static SLOTS: OnceLock<Slots> = OnceLock::new();
    SLOTS.get_or_init(|| {
        let mut s = Slots { first: Vec::with_capacity(COMMANDS.len()), specs: Vec::new() };
        for spec in COMMANDS.iter() {
            s.first.push(s.specs.len());
            s.specs.push(spec);
            s.specs.extend(spec.subcommands.iter());
        }
        s
    })
}

/// How many slots there are.
pub fn slot_count() -> usize {
    slots().specs.len()
}

/// A slot's full name (`get`, `config|get`).
pub fn slot_name(slot: usize) -> &'static str {
    slots().specs[slot].name
}

/// The slot a command counts under, and whether Redis would reject it for
/// its number of arguments; None for a container's unknown subcommand.
/// Inlined: it is on every command's path (`account`), and called from a
/// script's commands too, which made the compiler stop inlining it (+15
/// instructions per SET, callgrind).
#[inline(always)]
pub fn classify(spec: &'static Spec, args: &[Arg<'_>]) -> Option<(usize, bool)> {
    let base = slots().first[table::index_of(spec)];
    if spec.subcommands.is_empty() || args.len() < 2 {
        return Some((base, !arity_ok(spec.arity, args.len())));
    }
    let i = spec.subcommands.iter().position(|s| is(&args[1], table::short_name(s)))?;
    Some((base + 1 + i, !arity_ok(spec.subcommands[i].arity, args.len())))
}

/// The slot of GET (the batched run's command).
pub fn get_slot() -> usize {
    static GET: OnceLock<usize> = OnceLock::new();
    *GET.get_or_init(|| {
        let spec = table::lookup(b"get").expect("GET is in the table");
        slots().first[table::index_of(spec)]
    })
}

/// One command's figures, on one worker or merged.
#[derive(Debug, Default, Clone)]
pub struct Row {
    pub calls: u64,
    /// Time spent in its calls, in nanoseconds.
    pub nanos: u64,
    pub rejected: u64,
    pub failed: u64,
    /// Its calls' times in nanoseconds (None until its first call).
    pub hist: Option<Box<Histogram<u64>>>,
}

impl Row {
    fn is_empty(&self) -> bool {
        self.calls == 0 && self.rejected == 0 && self.failed == 0
    }

    /// The time at percentile `p` (0..=100) in nanoseconds, as Redis's
    /// `hdr_value_at_percentile` answers (the highest value equivalent to
    /// the sample there).
    pub fn percentile_ns(&self, p: f64) -> u64 {
        self.hist.as_ref().map_or(0, |h| h.value_at_quantile(p / 100.0))
    }
}

fn new_histogram() -> Box<Histogram<u64>> {
    Box::new(
        Histogram::new_with_bounds(HISTOGRAM_LOW_NS, HISTOGRAM_HIGH_NS, HISTOGRAM_SIGFIGS)
            .expect("constant bounds are valid"),
    )
}

/// HdrHistogram's layout for [`HISTOGRAM_LOW_NS`]..[`HISTOGRAM_HIGH_NS`]
/// at two significant digits, computed as its `Histogram::new_with_bounds`
/// computes it: values below 256 (2 × 10² rounded up to a power of two)
/// each have a count; above that, each doubling of the value has 128.
/// [`bucket_of`] is its `index_for` and [`value_of`] its
/// `value_from_index`, so a count kept here reads back into a real
/// `Histogram` ([`CommandStats::add_to`]) in the very bucket `record`
/// would have put it (unit-tested against the crate).
const SUB_BUCKET_HALF_MAGNITUDE: u32 = 7;
const SUB_BUCKET_HALF: u64 = 1 << SUB_BUCKET_HALF_MAGNITUDE;
const SUB_BUCKET_MASK: u64 = (SUB_BUCKET_HALF << 1) - 1;
/// Buckets until 256 << (n - 1) passes [`HISTOGRAM_HIGH_NS`]: 23.
const BUCKETS: usize = {
    let mut n = 1;
    let mut top = (SUB_BUCKET_HALF << 1) - 1;
    while top < HISTOGRAM_HIGH_NS {
        top = (top << 1) | 1;
        n += 1;
    }
    n
};
/// Counts per histogram: 3,072 (24 KiB).
const HISTOGRAM_COUNTS: usize = (BUCKETS + 1) << SUB_BUCKET_HALF_MAGNITUDE;

const _: () = assert!(HISTOGRAM_LOW_NS == 1 && HISTOGRAM_SIGFIGS == 2, "the layout above is for these");

/// The count that `ns` (already clamped to the range) goes in.
#[inline]
fn bucket_of(ns: u64) -> usize {
    let bucket = (64 - (ns | SUB_BUCKET_MASK).leading_zeros()) - (SUB_BUCKET_HALF_MAGNITUDE + 1);
    let sub = ns >> bucket;
    (((bucket as u64 + 1) << SUB_BUCKET_HALF_MAGNITUDE) + sub - SUB_BUCKET_HALF) as usize
}

/// The lowest value that count `i` holds.
fn value_of(i: usize) -> u64 {
    let bucket = (i >> SUB_BUCKET_HALF_MAGNITUDE) as i64 - 1;
    let sub = (i as u64 & (SUB_BUCKET_HALF - 1)) + SUB_BUCKET_HALF;
    if bucket < 0 {
        sub - SUB_BUCKET_HALF
    } else {
        sub << bucket
    }
}

/// One command's figures on one worker: written by that worker alone.
#[derive(Debug, Default)]
struct Cell {
    calls: AtomicU64,
    nanos: AtomicU64,
    rejected: AtomicU64,
    failed: AtomicU64,
    /// [`HISTOGRAM_COUNTS`] counts, made at the command's first call.
    hist: OnceLock<Box<[AtomicU64]>>,
}

/// Adds `n` to a counter only its worker writes: a load and a store, no
/// locked instruction (module notes).
#[inline]
fn add(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// One worker's per-command figures (module notes).
#[derive(Debug)]
pub struct CommandStats {
    /// One cell per slot, always [`slot_count`] of them.
    cells: Box<[Cell]>,
    /// What the cells held at the last CONFIG RESETSTAT (a reset cannot
    /// write the cells: their worker alone does); read as the difference.
    base: Mutex<Vec<Row>>,
}

impl Default for CommandStats {
    fn default() -> CommandStats {
        CommandStats {
            cells: (0..slot_count()).map(|_| Cell::default()).collect(),
            base: Mutex::new(vec![Row::default(); slot_count()]),
        }
    }
}

impl CommandStats {
    /// Counts `calls` calls of `slot` that took `nanos_each` each, `failed`
    /// of them answering an error. Only the owning worker calls this.
    pub fn record(&self, slot: usize, calls: u64, nanos_each: u64, failed: u64) {
        let cell = &self.cells[slot];
        add(&cell.calls, calls);
        add(&cell.nanos, nanos_each.saturating_mul(calls));
        if failed > 0 {
            add(&cell.failed, failed);
        }
        let hist = cell.hist.get_or_init(|| (0..HISTOGRAM_COUNTS).map(|_| AtomicU64::new(0)).collect());
        add(&hist[bucket_of(nanos_each.clamp(HISTOGRAM_LOW_NS, HISTOGRAM_HIGH_NS))], calls);
    }

    /// Counts a call of `slot` refused before it ran (owning worker only).
    pub fn reject(&self, slot: usize) {
        add(&self.cells[slot].rejected, 1);
    }

    /// The cells as they are now, less nothing.
    fn read(&self) -> Vec<Row> {
        self.cells
            .iter()
            .map(|c| Row {
                calls: c.calls.load(Ordering::Relaxed),
                nanos: c.nanos.load(Ordering::Relaxed),
                rejected: c.rejected.load(Ordering::Relaxed),
                failed: c.failed.load(Ordering::Relaxed),
                hist: c.hist.get().map(|h| {
                    let mut out = new_histogram();
                    for (i, n) in h.iter().enumerate() {
                        let n = n.load(Ordering::Relaxed);
                        if n > 0 {
                            out.saturating_record_n(value_of(i), n);
                        }
                    }
                    out
                }),
            })
            .collect()
    }

    /// CONFIG RESETSTAT: forgets everything (what the cells hold now
    /// becomes the base that reads subtract).
    pub fn reset(&self) {
        let now = self.read();
        *self.base.lock().unwrap_or_else(|e| e.into_inner()) = now;
    }

    /// Adds this worker's rows since the last reset into `into` (one per
    /// slot).
    fn add_to(&self, into: &mut [Row]) {
        let now = self.read();
        let base = self.base.lock().unwrap_or_else(|e| e.into_inner());
        for ((sum, r), b) in into.iter_mut().zip(now).zip(base.iter()) {
            sum.calls += r.calls.wrapping_sub(b.calls);
            sum.nanos = sum.nanos.wrapping_add(r.nanos.wrapping_sub(b.nanos));
            sum.rejected += r.rejected.wrapping_sub(b.rejected);
            sum.failed += r.failed.wrapping_sub(b.failed);
            if let Some(mut h) = r.hist {
                if let Some(bh) = &b.hist {
                    let _ = h.subtract(&**bh);
                }
                if !h.is_empty() {
                    let _ = sum.hist.get_or_insert_with(new_histogram).add(&*h);
                }
            }
        }
    }
}

/// Every worker's rows summed, one per slot.
pub fn merged(workers: &[crate::workers::WorkerStats]) -> Vec<Row> {
    let mut rows = vec![Row::default(); slot_count()];
    for w in workers {
        w.commands.add_to(&mut rows);
    }
    rows
}

/// What a batch uses to time and count its commands (module notes): the
/// clock's last reading (`amalgam_net::ticks`).
#[derive(Debug)]
pub struct Recorder {
    last: u64,
}

impl Recorder {
    /// A batch starting at tick `now`.
    pub fn new(now: u64) -> Recorder {
        Recorder { last: now }
    }

    /// Reads the clock: the nanoseconds since the last reading.
    #[inline]
    pub fn lap(&mut self) -> u64 {
        let now = amalgam_net::ticks::now();
        let ns = amalgam_net::ticks::nanos_between(self.last, now);
        self.last = now;
        ns
    }
}

/// The slot of MGET.
pub fn mget_slot() -> usize {
    static MGET: OnceLock<usize> = OnceLock::new();
    *MGET.get_or_init(|| {
        let spec = table::lookup(b"mget").expect("MGET is in the table");
        slots().first[table::index_of(spec)]
    })
}

/// The server's slow log (module notes).
#[derive(Debug)]
pub struct SlowLog {
    /// Newest first.
    entries: Mutex<VecDeque<Entry>>,
    /// The next entry's id.
    next_id: AtomicU64,
    /// `slowlog-log-slower-than`: -1 off.
    pub slower_than_us: AtomicI64,
    /// `slowlog-max-len`.
    pub max_len: AtomicU64,
}

impl Default for SlowLog {
    fn default() -> SlowLog {
        SlowLog {
            entries: Mutex::new(VecDeque::new()),
            next_id: AtomicU64::new(0),
            slower_than_us: AtomicI64::new(SLOWLOG_SLOWER_THAN_US_DEFAULT),
            max_len: AtomicU64::new(SLOWLOG_LEN_DEFAULT),
        }
    }
}

/// One slow-log entry.
#[derive(Debug, Clone)]
pub struct Entry {
    pub id: u64,
    pub unix_secs: u64,
    pub micros: u64,
    pub args: Vec<Vec<u8>>,
    pub addr: String,
    pub name: Vec<u8>,
}

impl SlowLog {
    /// True if a command that took `micros` goes in the log (Redis's
    /// `slowlogPushEntryIfNeeded` test).
    #[inline]
    pub fn wants(&self, micros: u64) -> bool {
        let t = self.slower_than_us.load(Ordering::Relaxed);
        t >= 0 && micros >= t as u64 && self.max_len.load(Ordering::Relaxed) > 0
    }

    /// Pushes an entry for `args` that took `micros`, run by `client`.
    pub fn push(&self, args: &[Arg<'_>], micros: u64, client: &Client) {
        let entry = Entry {
            id: 0,
            unix_secs: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            micros,
            args: logged_args(args),
            addr: client.addr.clone(),
            name: client.attrs().name.clone().unwrap_or_default(),
        };
        let max = self.max_len.load(Ordering::Relaxed) as usize;
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        entries.push_front(Entry { id, ..entry });
        // Bounded by the one entry pushed: at most max_len + 1 remain
        // before, unless slowlog-max-len was lowered since (Redis trims
        // only here too).
        while entries.len() > max {
            entries.pop_back();
        }
    }

    /// The newest `count` entries (all with None).
    pub fn newest(&self, count: Option<usize>) -> Vec<Entry> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.iter().take(count.unwrap_or(usize::MAX)).cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// SLOWLOG RESET: the entries go, the ids go on.
    pub fn reset(&self) {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// The id the next entry will get (ids so far).
    pub fn ids(&self) -> u64 {
        self.next_id.load(Ordering::Relaxed)
    }
}

/// The settings whose values CONFIG SET's logged arguments hide (Redis's
/// `SENSITIVE_CONFIG` flag).
const SENSITIVE_SETTINGS: [&str; 3] = ["requirepass", "masterauth", "masteruser"];

/// True if argument `j` of `args` is a secret that SLOWLOG and MONITOR
/// show as `(redacted)`, as Redis 7's `redactClientCommandArgument` marks
/// them: AUTH's arguments, HELLO AUTH's user and password, and the values
/// CONFIG SET gives sensitive settings.
pub fn is_secret(args: &[Arg<'_>], j: usize) -> bool {
    if is(&args[0], "auth") {
        return j >= 1;
    }
    // CONFIG SET name value [name value …].
    if is(&args[0], "config") && args.len() > 1 && is(&args[1], "set") {
        return j >= 3 && j % 2 == 1 && SENSITIVE_SETTINGS.iter().any(|n| is(&args[j - 1], n));
    }
    // HELLO [protover [AUTH username password] [SETNAME name]].
    is(&args[0], "hello") && j >= 3 && is(&args[j - 1], "auth")
        || is(&args[0], "hello") && j >= 4 && is(&args[j - 2], "auth")
}

/// The text a secret argument is logged as.
pub const REDACTED: &[u8] = b"(redacted)";

/// The arguments as Redis 7 logs them (`slowlogCreateEntry`, module
/// notes): secrets redacted ([`is_secret`]); at most [`SLOWLOG_ARGS_MAX`]
/// kept, each cut at [`SLOWLOG_ARG_BYTES_MAX`] bytes.
fn logged_args(args: &[Arg<'_>]) -> Vec<Vec<u8>> {
    let kept = args.len().min(SLOWLOG_ARGS_MAX);
    (0..kept)
        .map(|j| {
            if kept != args.len() && j == kept - 1 {
                format!("... ({} more arguments)", args.len() - kept + 1).into_bytes()
            } else if is_secret(args, j) {
                REDACTED.to_vec()
            } else if args[j].len() > SLOWLOG_ARG_BYTES_MAX {
                let mut a = args[j][..SLOWLOG_ARG_BYTES_MAX].to_vec();
                a.extend_from_slice(format!("... ({} more bytes)", args[j].len() - SLOWLOG_ARG_BYTES_MAX).as_bytes());
                a
            } else {
                args[j].to_vec()
            }
        })
        .collect()
}

/// `%f` then Redis's `trimDoubleString`: `50`, `99.9`.
fn percentile_label(p: f64) -> String {
    let s = format!("{p:.6}");
    let s = s.trim_end_matches('0');
    s.trim_end_matches('.').to_string()
}

/// INFO commandstats' lines (without the title), in table order.
pub fn info_commandstats(rows: &[Row], text: &mut String) {
    use std::fmt::Write as _;
    for (slot, r) in rows.iter().enumerate().filter(|(_, r)| !r.is_empty()) {
        // Redis's arithmetic: whole microseconds, divided by the calls.
        let usec = r.nanos / 1000;
        let per_call = if r.calls == 0 { 0.0 } else { usec as f64 / r.calls as f64 };
        let _ = write!(
            text,
            "cmdstat_{}:calls={},usec={},usec_per_call={:.2},rejected_calls={},failed_calls={}\r\n",
            slot_name(slot),
            r.calls,
            usec,
            per_call,
            r.rejected,
            r.failed
        );
    }
}

/// INFO latencystats' lines (without the title): the commands that ran.
pub fn info_latencystats(rows: &[Row], text: &mut String) {
    use std::fmt::Write as _;
    for (slot, r) in rows.iter().enumerate().filter(|(_, r)| r.hist.is_some()) {
        let _ = write!(text, "latency_percentiles_usec_{}:", slot_name(slot));
        for (i, p) in INFO_PERCENTILES.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            let _ = write!(text, "p{}={:.3}", percentile_label(*p), r.percentile_ns(*p) as f64 / 1000.0);
        }
        text.push_str("\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn args(v: &[&str]) -> Vec<Arg<'static>> {
        v.iter().map(|s| Cow::Owned(s.as_bytes().to_vec())).collect()
    }

    #[test]
    fn the_layout_is_hdrhistograms() {
        let h = new_histogram();
        assert_eq!(h.distinct_values(), HISTOGRAM_COUNTS, "as many counts as the crate keeps");
        let mut v = HISTOGRAM_LOW_NS;
        // Bounded: v grows by at least 1/64 each step up to 1 s.
        while v <= HISTOGRAM_HIGH_NS {
            assert_eq!(value_of(bucket_of(v)), h.lowest_equivalent(v), "{v} ns");
            assert_eq!(value_of(bucket_of(v) + 1), h.next_non_equivalent(v), "{v} ns");
            v += 1 + v / 64;
        }
        assert!(bucket_of(HISTOGRAM_HIGH_NS) < HISTOGRAM_COUNTS);
    }

    #[test]
    fn a_reset_is_seen_by_reads_and_counting_goes_on() {
        let c = CommandStats::default();
        c.record(get_slot(), 3, 5_000, 1);
        c.reject(get_slot());
        assert_eq!(merged_one(&c)[get_slot()].calls, 3);
        c.reset();
        let r = &merged_one(&c)[get_slot()];
        assert_eq!((r.calls, r.nanos, r.failed, r.rejected), (0, 0, 0, 0));
        assert!(r.hist.is_none(), "an emptied histogram is not shown");
        c.record(get_slot(), 2, 7_000, 0);
        let r = &merged_one(&c)[get_slot()];
        assert_eq!((r.calls, r.nanos, r.failed), (2, 14_000, 0));
        assert_eq!(r.hist.as_ref().unwrap().len(), 2);
        assert_eq!(r.percentile_ns(50.0), new_histogram().highest_equivalent(7_000));
    }

    #[test]
    fn percentile_labels_are_redis_trimmed() {
        assert_eq!(percentile_label(50.0), "50");
        assert_eq!(percentile_label(99.9), "99.9");
        assert_eq!(percentile_label(99.99), "99.99");
    }

    #[test]
    fn percentiles_match_redis_for_its_samples() {
        // Redis records microseconds × 1000; a lone 1 µs sample reads back
        // as 1.003 µs, 6 µs as 6.015 µs (INFO latencystats of redis 7.0.15).
        let c = CommandStats::default();
        c.record(get_slot(), 1, 1000, 0);
        let rows = merged_one(&c);
        assert_eq!(rows[get_slot()].percentile_ns(50.0), 1003);
        let c = CommandStats::default();
        c.record(get_slot(), 1, 6000, 0);
        assert_eq!(merged_one(&c)[get_slot()].percentile_ns(99.9), 6015);
    }

    fn merged_one(c: &CommandStats) -> Vec<Row> {
        let mut rows = vec![Row::default(); slot_count()];
        c.add_to(&mut rows);
        rows
    }

    #[test]
    fn long_and_many_arguments_are_cut_as_redis_cuts_them() {
        let long = "a".repeat(200);
        let logged = logged_args(&args(&["set", &long, "v"]));
        assert_eq!(logged[1], format!("{}... (72 more bytes)", "a".repeat(128)).into_bytes());
        let many: Vec<String> = std::iter::once("del".to_string()).chain((1..=40).map(|i| i.to_string())).collect();
        let many: Vec<&str> = many.iter().map(|s| s.as_str()).collect();
        let logged = logged_args(&args(&many));
        assert_eq!(logged.len(), 32);
        assert_eq!(logged[30], b"30");
        assert_eq!(logged[31], b"... (10 more arguments)");
    }

    #[test]
    fn secrets_are_redacted() {
        assert_eq!(logged_args(&args(&["auth", "pw"])), [&b"auth"[..], b"(redacted)"]);
        let config = logged_args(&args(&[
            "CONFIG",
            "SET",
            "masterauth",
            "a",
            "maxmemory-policy",
            "noeviction",
            "REQUIREPASS",
            "b",
        ]));
        assert_eq!(
            config,
            [
                &b"CONFIG"[..],
                b"SET",
                b"masterauth",
                b"(redacted)",
                b"maxmemory-policy",
                b"noeviction",
                b"REQUIREPASS",
                b"(redacted)"
            ]
        );
        let hello = logged_args(&args(&["hello", "3", "auth", "u", "p", "setname", "n"]));
        assert_eq!(hello, [&b"hello"[..], b"3", b"auth", b"(redacted)", b"(redacted)", b"setname", b"n"]);
    }

    #[test]
    fn slots_name_commands_and_subcommands() {
        assert_eq!(slot_name(get_slot()), "get");
        let config = table::lookup(b"config").unwrap();
        let (slot, rejected) = classify(config, &args(&["config", "get", "x"])).unwrap();
        assert_eq!((slot_name(slot), rejected), ("config|get", false));
        assert_eq!(classify(config, &args(&["config", "nosuch"])), None);
        let (slot, rejected) = classify(config, &args(&["config"])).unwrap();
        assert_eq!((slot_name(slot), rejected), ("config", true));
    }
}
