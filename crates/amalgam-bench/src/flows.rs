//! `amalgam-bench flows`: RESP flows whose next request depends on a
//! reply, or whose server sends what nobody asked for (issues 35 §7 and
//! 36 §7), which the request/reply driver of `net` cannot send.
//!
//! * **groups**: consumer-group workers. Each of `--conns` connections
//!   owns the streams `s ≡ conn (mod conns)` of `--streams` and loops
//!   `XREADGROUP GROUP g c<conn> COUNT 1 STREAMS x<s> >`, answering each
//!   reply with `XACK x<s> g <id>` of the id it parsed from that reply,
//!   `--pipeline` requests outstanding (reads and acks mixed;
//!   `flows/conn.rs`). The preload (unless `--no-preload`) adds
//!   `--entries` entries `1-1`, `2-1`, … (one field `f`, a value of
//!   `--value-bytes`) to each stream and creates group `g` at `0`; the run
//!   must not drain them (a null read counts as dry, an error). After the
//!   run every XACK must have answered `:1`, as many as entries were read,
//!   and `XPENDING x<s> g` must count 0 on every stream.
//! * **tracking**: `--conns` readers speak RESP3 (`HELLO 3`), turn `CLIENT
//!   TRACKING ON` (not with `--no-tracking`) and GET uniform random keys
//!   of `--keys` at `--pipeline`, while `--writers` connections SET random
//!   keys of the same keyspace at `--writer-pipeline`: readers count the
//!   `invalidate` pushes mixed into their replies apart from the replies.
//!   The preload SETs every key.
//! * **notify**: `CONFIG SET notify-keyspace-events --notify-events`
//!   (`KEA`; `""` turns them off), `--subscribers` connections
//!   `PSUBSCRIBE __key*__:*` and drain their `pmessage`s, `--conns`
//!   writers SET random keys at `--pipeline`.
//!
//! Connections are set up with blocking I/O, then spread round-robin
//! (subscribers first) over `--threads` mio event loops. Counted: what is
//! read within `[warm-up end, run end)`, per second of the window. Server
//! CPU (`--server-pid`) and the client's own, over the window, show which
//! side saturated.

pub mod conn;
pub mod frame;

use crate::net::{cpu_ticks, resolve, write_json, IO_TIMEOUT, USER_HZ};
use crate::workload::key_into;
use conn::{push_command, stream_key_into, Role, Shared, Tally, GROUP};
use frame::Frame;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Requests per round trip of the preload and the verification.
pub const PRELOAD_BATCH: usize = 512;
/// Preload connections (one thread each).
pub const PRELOAD_CONNS: usize = 2;
/// Most connections of a run.
pub const CONNS_MAX: usize = 1024;
/// Most entries per stream in the preload.
pub const ENTRIES_MAX: u64 = 1 << 20;
/// Most client threads.
pub const THREADS_MAX: usize = 64;
/// Largest reply buffer of a set-up, preload or verification connection
/// (a batch's replies are a few KiB; HELLO's map less).
const BLOCKING_BUF_BYTES_MAX: usize = 16 << 20;
/// The pattern subscribers listen to: every keyspace and keyevent channel.
pub const PATTERN: &[u8] = b"__key*__:*";

/// Which flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Flow {
    /// XREADGROUP + XACK of the id read.
    Groups,
    /// Tracked GETs while writers invalidate.
    Tracking,
    /// SETs with keyspace notifications and pattern subscribers.
    Notify,
}

/// Flags of `amalgam-bench flows`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Which flow.
    #[arg(long, value_enum)]
    pub flow: Flow,
    /// Server address (RESP).
    #[arg(long, default_value = "127.0.0.1:6379")]
    pub server: String,
    /// Client threads (one event loop each).
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Workers (groups), readers (tracking) or writers (notify).
    #[arg(long, default_value_t = 50)]
    pub conns: usize,
    /// Requests outstanding per worker, reader or notify writer.
    #[arg(long, default_value_t = 16)]
    pub pipeline: usize,
    /// Tracking: writer connections.
    #[arg(long, default_value_t = 1)]
    pub writers: usize,
    /// Tracking: requests outstanding per writer.
    #[arg(long, default_value_t = 16)]
    pub writer_pipeline: usize,
    /// Tracking: readers do not turn tracking on (the reference).
    #[arg(long)]
    pub no_tracking: bool,
    /// Notify: subscriber connections.
    #[arg(long, default_value_t = 1)]
    pub subscribers: usize,
    /// Notify: the `notify-keyspace-events` flags set before the run.
    #[arg(long, default_value = "KEA")]
    pub notify_events: String,
    /// Groups: streams.
    #[arg(long, default_value_t = 10_000)]
    pub streams: u64,
    /// Groups: entries preloaded per stream.
    #[arg(long, default_value_t = 200)]
    pub entries: u64,
    /// Tracking and notify: keys of the keyspace.
    #[arg(long, default_value_t = 100_000)]
    pub keys: u64,
    /// Key bytes.
    #[arg(long, default_value_t = 16)]
    pub key_bytes: usize,
    /// Value bytes (SET values, stream entries' field value).
    #[arg(long, default_value_t = 32)]
    pub value_bytes: usize,
    /// Measured seconds.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Seconds run before the measured window.
    #[arg(long, default_value_t = 2.0)]
    pub warmup: f64,
    /// Do not preload (the server already holds the data).
    #[arg(long)]
    pub no_preload: bool,
    /// Server process whose CPU time is reported.
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Also write the result as one line of JSON to this file ("-": stdout).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Label carried into the JSON (e.g. the server's name).
    #[arg(long)]
    pub label: Option<String>,
    /// Seed of the key choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Runs a flow, prints one line, writes the JSON.
pub fn run(args: &Args) -> Result<(), String> {
    check(args)?;
    let addr = resolve(&args.server)?;
    if !args.no_preload {
        let t = Instant::now();
        let n = match args.flow {
            Flow::Groups => preload_streams(addr, args)?,
            Flow::Tracking => preload_keys(addr, args)?,
            Flow::Notify => 0,
        };
        if n > 0 {
            eprintln!("amalgam-bench flows: preloaded {n} in {:.1} s", t.elapsed().as_secs_f64());
        }
    }
    let mut conns = Vec::new();
    if args.flow == Flow::Notify {
        let mut c = Blocking::connect(addr)?;
        let events = args.notify_events.as_bytes();
        c.expect(&[b"CONFIG", b"SET", b"notify-keyspace-events", events], |f| f == Frame::Simple(b"OK"))?;
        for _ in 0..args.subscribers {
            let mut s = Blocking::connect(addr)?;
            s.expect(&[b"PSUBSCRIBE", PATTERN], |f| matches!(f, Frame::Aggregate { len: 3, .. }))?;
            conns.push((s.into_nonblocking()?, Role::Subscriber));
        }
    }
    for i in 0..args.conns {
        let mut c = Blocking::connect(addr)?;
        let role = match args.flow {
            Flow::Groups => Role::Group {
                streams: (i as u64..args.streams).step_by(args.conns).collect(),
                next: 0,
                consumer: format!("c{i}").into_bytes(),
            },
            Flow::Tracking => {
                c.expect(&[b"HELLO", b"3"], |f| matches!(f, Frame::Aggregate { .. }))?;
                if !args.no_tracking {
                    c.expect(&[b"CLIENT", b"TRACKING", b"ON"], |f| f == Frame::Simple(b"OK"))?;
                }
                Role::Reader
            }
            Flow::Notify => Role::Writer,
        };
        conns.push((c.into_nonblocking()?, role));
    }
    if args.flow == Flow::Tracking {
        for _ in 0..args.writers {
            conns.push((Blocking::connect(addr)?.into_nonblocking()?, Role::Writer));
        }
    }
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(args.warmup);
    let shared = Shared {
        depth: args.pipeline,
        writer_depth: if args.flow == Flow::Tracking { args.writer_pipeline } else { args.pipeline },
        keys: args.keys,
        key_bytes: args.key_bytes,
        value: vec![b'v'; args.value_bytes],
        measure_from,
        end: measure_from + Duration::from_secs_f64(args.duration),
    };
    let mut per_thread: Vec<Vec<_>> = (0..args.threads).map(|_| Vec::new()).collect();
    for (i, c) in conns.into_iter().enumerate() {
        per_thread[i % args.threads].push(c);
    }
    let server = args.server_pid.map(|p| p.to_string());
    let (tally, cpu) = std::thread::scope(|scope| {
        let handles: Vec<_> = per_thread
            .into_iter()
            .enumerate()
            .map(|(t, cs)| {
                let shared = &shared;
                let seed = args.seed.wrapping_mul(1000).wrapping_add(t as u64);
                scope.spawn(move || conn::run_thread(shared, cs, seed))
            })
            .collect();
        std::thread::sleep(measure_from.saturating_duration_since(Instant::now()));
        let cpu_from = (cpu_ticks("self"), server.as_deref().and_then(cpu_ticks), Instant::now());
        std::thread::sleep(shared.end.saturating_duration_since(Instant::now()));
        let cpu_to = (cpu_ticks("self"), server.as_deref().and_then(cpu_ticks), Instant::now());
        let mut tally = Tally::default();
        for h in handles {
            tally.merge(&h.join().expect("a flow thread panicked"));
        }
        (tally, (cpu_from, cpu_to))
    });
    let window = (cpu.1 .2 - cpu.0 .2).as_secs_f64();
    let cores = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => json!((b - a) as f64 / USER_HZ / window),
        _ => Value::Null,
    };
    let pending_after = if args.flow == Flow::Groups { Some(pending_total(addr, args)?) } else { None };
    let rate = |n: u64| n as f64 / window;
    let result = json!({
        "flow": format!("{:?}", args.flow).to_lowercase(),
        "label": args.label,
        "server": args.server,
        "threads": args.threads,
        "conns": args.conns,
        "pipeline": args.pipeline,
        "writers": args.writers,
        "writer_pipeline": args.writer_pipeline,
        "tracking": !args.no_tracking,
        "subscribers": args.subscribers,
        "notify_events": args.notify_events,
        "streams": args.streams,
        "entries": args.entries,
        "keys": args.keys,
        "window_s": window,
        "requests_per_s": rate(tally.reads + tally.acks + tally.gets + tally.sets),
        "reads_per_s": rate(tally.reads),
        "acks_per_s": rate(tally.acks),
        "gets_per_s": rate(tally.gets),
        "hit_ratio": if tally.gets > 0 { json!(tally.hits as f64 / tally.gets as f64) } else { Value::Null },
        "sets_per_s": rate(tally.sets),
        "invalidations_per_s": rate(tally.invalidations),
        "invalidated_keys_per_s": rate(tally.invalidated_keys),
        "messages_per_s": rate(tally.messages),
        "reads_total": tally.reads_total,
        "acks_total": tally.acks_total,
        "acks_zero": tally.acks_zero,
        "dry_reads": tally.dry_reads,
        "pending_after": pending_after,
        "errors": tally.errors,
        "first_error": tally.first_error,
        "client_cores": cores(cpu.0 .0, cpu.1 .0),
        "server_cores": cores(cpu.0 .1, cpu.1 .1),
    });
    println!("{}", human(&result));
    if let Some(path) = &args.json {
        write_json(path, &result)?;
    }
    let verified = tally.errors == 0
        && tally.dry_reads == 0
        && tally.acks_zero == 0
        && tally.reads_total == tally.acks_total
        && pending_after.unwrap_or(0) == 0;
    if !verified {
        return Err(format!(
            "the run is not clean: {} errors (first: {:?}), {} dry reads, {} acks of nothing, {} entries read, {} acked, \
             {pending_after:?} pending after",
            tally.errors, tally.first_error, tally.dry_reads, tally.acks_zero, tally.reads_total, tally.acks_total
        ));
    }
    Ok(())
}

fn check(args: &Args) -> Result<(), String> {
    let all = args.conns + args.writers + args.subscribers;
    if args.threads == 0 || args.threads > THREADS_MAX || args.conns == 0 || all > CONNS_MAX {
        return Err(format!(
            "--threads must be 1..={THREADS_MAX}, --conns positive, all connections at most {CONNS_MAX}"
        ));
    }
    if args.pipeline == 0 || args.writer_pipeline == 0 || args.keys == 0 || args.key_bytes < 2 {
        return Err("--pipeline, --writer-pipeline and --keys must be positive, --key-bytes at least 2".to_string());
    }
    if args.flow == Flow::Groups {
        if args.streams < args.conns as u64 {
            return Err("--streams must be at least --conns (each worker owns its streams)".to_string());
        }
        if args.entries == 0 || args.entries > ENTRIES_MAX {
            return Err(format!("--entries must be 1..={ENTRIES_MAX}"));
        }
        // The stream number must fit the key after its letter.
        if (args.key_bytes - 1) < 16 && args.streams > 1u64 << (4 * (args.key_bytes - 1)) {
            return Err("--key-bytes too short for --streams".to_string());
        }
    }
    if args.key_bytes < 16 && args.keys > 1u64 << (4 * args.key_bytes) {
        return Err("--key-bytes too short for --keys".to_string());
    }
    Ok(())
}

/// One line: the flow's rates.
pub fn human(r: &Value) -> String {
    let f = |k: &str| r[k].as_f64().unwrap_or(0.0);
    let label = r["label"].as_str().unwrap_or("");
    let cpu = format!(
        "client {:.2} cores, server {}",
        f("client_cores"),
        r["server_cores"].as_f64().map_or("?".to_string(), |c| format!("{c:.2} cores"))
    );
    match r["flow"].as_str() {
        Some("groups") => format!(
            "{label} groups p{}: {:.0} req/s ({:.0} XREADGROUP + {:.0} XACK per s); pending after {}; {cpu}",
            r["pipeline"],
            f("requests_per_s"),
            f("reads_per_s"),
            f("acks_per_s"),
            r["pending_after"]
        ),
        Some("tracking") => format!(
            "{label} tracking {}: {:.0} GET/s (hits {:.3}), {:.0} SET/s, {:.0} invalidations/s ({:.0} keys/s); {cpu}",
            if r["tracking"].as_bool() == Some(true) { "on" } else { "off" },
            f("gets_per_s"),
            f("hit_ratio"),
            f("sets_per_s"),
            f("invalidations_per_s"),
            f("invalidated_keys_per_s")
        ),
        _ => format!(
            "{label} notify '{}': {:.0} SET/s, {:.0} messages/s to {} subscribers; {cpu}",
            r["notify_events"].as_str().unwrap_or(""),
            f("sets_per_s"),
            f("messages_per_s"),
            r["subscribers"]
        ),
    }
}

/// A blocking connection for set-up, preload and verification.
struct Blocking {
    sock: TcpStream,
    buf: Vec<u8>,
    len: usize,
}

impl Blocking {
    fn connect(addr: std::net::SocketAddr) -> Result<Blocking, String> {
        let sock = TcpStream::connect_timeout(&addr, IO_TIMEOUT).map_err(|e| format!("connect {addr}: {e}"))?;
        sock.set_read_timeout(Some(IO_TIMEOUT)).map_err(|e| e.to_string())?;
        sock.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Blocking { sock, buf: vec![0; 64 << 10], len: 0 })
    }

    fn into_nonblocking(self) -> Result<TcpStream, String> {
        if self.len > 0 {
            return Err("a frame nobody asked for during set-up".to_string());
        }
        self.sock.set_nonblocking(true).map_err(|e| e.to_string())?;
        Ok(self.sock)
    }

    /// Writes `requests` (`n` commands) and hands each of the `n` frames
    /// that answer them to `check`, in order. Bounded by `n` frames, each
    /// read within `IO_TIMEOUT`.
    fn exchange(&mut self, requests: &[u8], n: usize, mut check: impl FnMut(Frame<'_>) -> bool) -> Result<(), String> {
        self.sock.write_all(requests).map_err(|e| format!("write: {e}"))?;
        let mut got = 0;
        while got < n {
            match frame::parse(&self.buf[..self.len]).map_err(|e| e.0)? {
                Some((f, used)) => {
                    if !check(f) {
                        return Err(format!("unexpected reply {f:?}"));
                    }
                    self.buf.copy_within(used..self.len, 0);
                    self.len -= used;
                    got += 1;
                }
                None => {
                    if self.len == self.buf.len() {
                        if self.buf.len() >= BLOCKING_BUF_BYTES_MAX {
                            return Err("a reply longer than BLOCKING_BUF_BYTES_MAX".to_string());
                        }
                        self.buf.resize(self.buf.len() * 2, 0);
                    }
                    let r = self.sock.read(&mut self.buf[self.len..]).map_err(|e| format!("read: {e}"))?;
                    if r == 0 {
                        return Err("the server closed the connection".to_string());
                    }
                    self.len += r;
                }
            }
        }
        Ok(())
    }

    fn expect(&mut self, args: &[&[u8]], ok: impl FnMut(Frame<'_>) -> bool) -> Result<(), String> {
        let mut out = Vec::new();
        push_command(&mut out, args);
        self.exchange(&out, 1, ok).map_err(|e| format!("{}: {e}", String::from_utf8_lossy(args[0])))
    }
}

/// Runs `batches(conn)` on [`PRELOAD_CONNS`] connections at once; each
/// returns how many requests it sent.
fn on_preload_conns(
    addr: std::net::SocketAddr,
    work: impl Fn(usize, &mut Blocking) -> Result<u64, String> + Sync,
) -> Result<u64, String> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..PRELOAD_CONNS)
            .map(|i| {
                let work = &work;
                scope.spawn(move || work(i, &mut Blocking::connect(addr)?))
            })
            .collect();
        let mut n = 0;
        for h in handles {
            n += h.join().expect("a preload thread panicked")?;
        }
        Ok(n)
    })
}

/// Every stream gets `entries` entries `1-1`, `2-1`, … and group `g` at
/// 0; every XADD must answer its own id, every XGROUP `+OK`.
fn preload_streams(addr: std::net::SocketAddr, args: &Args) -> Result<u64, String> {
    let value = vec![b'v'; args.value_bytes];
    on_preload_conns(addr, |part, c| {
        let mut key = Vec::new();
        let mut out = Vec::new();
        let mut ids = Vec::new();
        let mut sent = 0;
        for s in (part as u64..args.streams).step_by(PRELOAD_CONNS) {
            stream_key_into(s, args.key_bytes, &mut key);
            for e in 1..=args.entries {
                let id = format!("{e}-1").into_bytes();
                push_command(&mut out, &[b"XADD", &key, &id, b"f", &value]);
                ids.push(Some(id));
                if ids.len() == PRELOAD_BATCH {
                    sent += send_checked(c, &mut out, &mut ids)?;
                }
            }
            push_command(&mut out, &[b"XGROUP", b"CREATE", &key, GROUP, b"0"]);
            ids.push(None);
            if ids.len() >= PRELOAD_BATCH {
                sent += send_checked(c, &mut out, &mut ids)?;
            }
        }
        sent += send_checked(c, &mut out, &mut ids)?;
        Ok(sent)
    })
}

/// Sends the batch `out`, whose replies must be the `ids` (None: `+OK`).
fn send_checked(c: &mut Blocking, out: &mut Vec<u8>, ids: &mut Vec<Option<Vec<u8>>>) -> Result<u64, String> {
    let mut want = ids.iter();
    c.exchange(out, ids.len(), |f| match (want.next(), f) {
        (Some(Some(id)), Frame::Bulk(got)) => got == id.as_slice(),
        (Some(None), Frame::Simple(b"OK")) => true,
        _ => false,
    })
    .map_err(|e| format!("preload: {e}"))?;
    let n = ids.len() as u64;
    out.clear();
    ids.clear();
    Ok(n)
}

/// SETs every key once; every reply must be `+OK`.
fn preload_keys(addr: std::net::SocketAddr, args: &Args) -> Result<u64, String> {
    let value = vec![b'v'; args.value_bytes];
    on_preload_conns(addr, |part, c| {
        let mut key = Vec::new();
        let mut out = Vec::new();
        let mut n = 0;
        let mut sent = 0;
        for k in (part as u64..args.keys).step_by(PRELOAD_CONNS) {
            key_into(k, args.key_bytes, &mut key);
            push_command(&mut out, &[b"SET", &key, &value]);
            n += 1;
            if n == PRELOAD_BATCH || k + PRELOAD_CONNS as u64 >= args.keys {
                c.exchange(&out, n, |f| f == Frame::Simple(b"OK")).map_err(|e| format!("preload: {e}"))?;
                sent += n as u64;
                out.clear();
                n = 0;
            }
        }
        Ok(sent)
    })
}

/// The sum of `XPENDING x<s> g`'s counts over every stream.
fn pending_total(addr: std::net::SocketAddr, args: &Args) -> Result<u64, String> {
    let mut c = Blocking::connect(addr)?;
    let mut key = Vec::new();
    let mut out = Vec::new();
    let mut total = 0u64;
    let mut n = 0;
    for s in 0..args.streams {
        stream_key_into(s, args.key_bytes, &mut key);
        push_command(&mut out, &[b"XPENDING", &key, GROUP]);
        n += 1;
        if n == PRELOAD_BATCH || s + 1 == args.streams {
            c.exchange(&out, n, |f| match f {
                Frame::Aggregate { len: 4, push: false, body } => match frame::elements(4, body).next() {
                    Some(Frame::Integer(k)) if k >= 0 => {
                        total += k as u64;
                        true
                    }
                    _ => false,
                },
                _ => false,
            })
            .map_err(|e| format!("XPENDING: {e}"))?;
            out.clear();
            n = 0;
        }
    }
    Ok(total)
}
