//! libFuzzer target for what a hostile primary sends a replica after
//! PSYNC (issue 37 §4): PSYNC's reply (`+FULLRESYNC <id> <offset>`,
//! `+CONTINUE [<id>]`, the keep-alive newlines), the full sync's framing
//! (`$<len>` or `$EOF:<mark>`, the RDB, the mark; or an Amalgam primary's
//! header and records) and the stream after it (Redis's RESP commands, or
//! Amalgam's records). The input runs through `amalgam_repl::sync_in::
//! replay`, the link's own reading code in the link's order, into the
//! server's store side: a redis-server's RDB is loaded by
//! `amalgam_commands::rdbfile::load` into a real store, as the server's
//! `Host::load_rdb` does (flushed first, the same rules), Amalgam's
//! records by `repl::Applier` as the link applies them, and Redis's
//! commands are framed by the RESP parser the server's command feed uses
//! (they are not run: the RESP front end lives in amalgam-server, whose
//! own targets and `tests/fuzz_smoke.rs` cover it).
//!
//! Invariants: no panic; `replay` ends (it is bounded by the input); the
//! store never holds more than its budget (8 MiB) in either mode: store
//! mode (`--eviction none`) refuses what does not fit, cache mode evicts.
//! Input layout: the first byte chooses the store (bit 0: cache mode) and
//! what a `+CONTINUE` continues (bit 1: a redis-server's stream); the
//! rest is the primary's bytes. Seeds in `corpus/repl_sync_in/`: both of
//! Redis's sync forms around redis-server 7.0.15's and valkey-server
//! 8.0.1's files with a command stream, a `+CONTINUE`, and an Amalgam
//! primary's full sync and stream captured from a real one.
#![no_main]

use amalgam_commands::db::Databases;
use amalgam_commands::rdbfile::{self, Unloadable};
use amalgam_engine::evict::Eviction;
use amalgam_engine::{Config, Store};
use amalgam_persist::format::Record;
use amalgam_persist::rdb::file::Limits;
use amalgam_persist::repl::Applier;
use amalgam_protocol::resp::{Limits as RespLimits, Parse, Parser};
use amalgam_repl::sync_in::{replay, SyncSink};
use amalgam_repl::CommandFeed;
use amalgam_types::Thresholds;
use libfuzzer_sys::fuzz_target;
use std::io::Read;
use std::sync::{Arc, OnceLock};

/// Each store's budget.
const MEMORY_LIMIT_BYTES: usize = 8 << 20;
/// `-I`.
const ITEM_SIZE_MAX_BYTES: usize = 1 << 20;
/// The RDB reader's bounds: a value as `proto-max-bulk-len` would (here
/// 1 MiB, so libFuzzer's `-rss_limit_mb` catches a claim taken on
/// trust), the file unbounded as the server leaves it (the store's
/// budget bounds what is kept).
const RDB_LIMITS: Limits = Limits { value_bytes_max: 1 << 20, file_bytes_max: u64::MAX };
/// Redis's 16 databases.
const DATABASES: usize = 16;

fn store(cache: bool) -> Arc<Store> {
    static STORES: OnceLock<[Arc<Store>; 2]> = OnceLock::new();
    let stores = STORES.get_or_init(|| {
        let make = |eviction| {
            Arc::new(
                Store::new(Config {
                    memory_limit_bytes: MEMORY_LIMIT_BYTES,
                    item_size_max_bytes: ITEM_SIZE_MAX_BYTES,
                    eviction,
                    hash_seed: Some(1),
                    background_eviction: false,
                    ..Config::default()
                })
                .expect("a store"),
            )
        };
        [make(Eviction::None), make(Eviction::S3Fifo)]
    });
    Arc::clone(&stores[usize::from(cache)])
}

/// Frames the command stream as the server's feed does (RESP requests,
/// a protocol error drops the link) without running the commands.
struct Framing {
    parser: Parser,
}

impl CommandFeed for Framing {
    fn feed(&mut self, buf: &[u8]) -> Result<(usize, bool), String> {
        let mut args = Vec::new();
        match self.parser.parse(buf, RespLimits::for_bulk_len(512 << 20), &mut args) {
            Parse::Command { consumed } => {
                let getack = args.len() == 3
                    && args[0].eq_ignore_ascii_case(b"REPLCONF")
                    && args[1].eq_ignore_ascii_case(b"GETACK");
                Ok((consumed, getack))
            }
            Parse::Empty { consumed } => Ok((consumed, false)),
            Parse::Incomplete => Ok((0, false)),
            Parse::Error(e) => Err(format!("the primary's stream: {e:?}")),
        }
    }
}

struct Sink {
    store: Arc<Store>,
    dbs: Databases,
    applier: Option<Applier>,
    feed: Framing,
}

impl SyncSink for Sink {
    fn load_rdb(&mut self, r: &mut dyn Read) -> Result<u64, String> {
        self.store.flush_all();
        let t = Thresholds::default();
        let loaded = rdbfile::load(
            r,
            &self.store,
            &self.dbs,
            &t,
            ITEM_SIZE_MAX_BYTES,
            RDB_LIMITS,
            Unloadable::Skip,
            &mut |_| {},
        )?;
        Ok(loaded.keys)
    }

    fn record(&mut self, rec: Record<'_>, sync: bool) -> bool {
        let store = &self.store;
        let a = self.applier.get_or_insert_with(|| {
            if sync {
                Applier::begin_full_sync(Arc::clone(store), Thresholds::default())
            } else {
                Applier::continuing(Arc::clone(store), Thresholds::default(), 0)
            }
        });
        if matches!(rec, Record::Functions { .. }) {
            return false;
        }
        a.apply(rec)
    }

    fn feed(&mut self) -> &mut dyn CommandFeed {
        &mut self.feed
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, bytes)) = data.split_first() else { return };
    let store = store(mode & 1 != 0);
    store.flush_all();
    let mut sink =
        Sink { store, dbs: Databases::new(DATABASES), applier: None, feed: Framing { parser: Parser::new() } };
    let _ = replay(bytes, mode & 2 != 0, &mut sink);
    let st = sink.store.stats();
    assert!(
        st.reserved_bytes + st.outsized_bytes <= st.memory_limit_bytes,
        "the store holds {} + {} bytes past its budget of {}",
        st.reserved_bytes,
        st.outsized_bytes,
        st.memory_limit_bytes
    );
});
