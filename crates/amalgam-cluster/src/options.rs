//! The cluster options CONFIG SET changes while the node runs (Redis
//! 7.0's `MODIFIABLE_CONFIG` cluster options that Amalgam follows):
//! `cluster-replica-validity-factor`, `cluster-migration-barrier`,
//! `cluster-allow-replica-migration` and `cluster-replica-no-failover`.
//! [`Config`](crate::Config) carries their values at start; [`Live`]
//! holds them afterwards, one atomic each, read by the bus's cron
//! (`failover.rs`, `migration.rs`) and written by CONFIG SET from any
//! worker: each is read once per decision, so a change takes effect at
//! the next cron round (Redis's cron reads `server.*` the same way).

use crate::node::flags;
use crate::{Cluster, State};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Redis's default `cluster-replica-validity-factor`: a replica whose
/// data is older than ten node timeouts (plus the replication ping
/// period) does not stand for election. 0: it always stands.
pub const VALIDITY_FACTOR_DEFAULT: u64 = 10;
/// Redis's default `cluster-migration-barrier`: a replica migrates to an
/// orphaned primary only if its own primary keeps more working replicas
/// than this.
pub const MIGRATION_BARRIER_DEFAULT: u64 = 1;
/// Redis's default `cluster-allow-replica-migration` (yes).
pub const ALLOW_REPLICA_MIGRATION_DEFAULT: bool = true;
/// Redis's default `cluster-replica-no-failover` (no).
pub const REPLICA_NO_FAILOVER_DEFAULT: bool = false;
/// The greatest value of the two integer options (Redis's `INT_MAX`:
/// CONFIG SET refuses more with "argument must be between 0 and
/// 2147483647 inclusive").
pub const INT_OPTION_MAX: u64 = i32::MAX as u64;

/// The options' values now.
#[derive(Debug)]
pub struct Live {
    validity_factor: AtomicU64,
    migration_barrier: AtomicU64,
    allow_replica_migration: AtomicBool,
    replica_no_failover: AtomicBool,
}

impl Live {
    /// The values the node starts with.
    pub fn new(cfg: &crate::Config) -> Live {
        Live {
            validity_factor: AtomicU64::new(cfg.replica_validity_factor.min(INT_OPTION_MAX)),
            migration_barrier: AtomicU64::new(cfg.migration_barrier.min(INT_OPTION_MAX)),
            allow_replica_migration: AtomicBool::new(cfg.allow_replica_migration),
            replica_no_failover: AtomicBool::new(cfg.replica_no_failover),
        }
    }
}

// Relaxed throughout: each option is one independent value, read whole;
// nothing else is published through it.
impl Cluster {
    /// `cluster-replica-validity-factor`.
    pub fn validity_factor(&self) -> u64 {
        self.live.validity_factor.load(Ordering::Relaxed)
    }

    pub fn set_validity_factor(&self, v: u64) {
        self.live.validity_factor.store(v.min(INT_OPTION_MAX), Ordering::Relaxed);
    }

    /// `cluster-migration-barrier`.
    pub fn migration_barrier(&self) -> u64 {
        self.live.migration_barrier.load(Ordering::Relaxed)
    }

    pub fn set_migration_barrier(&self, v: u64) {
        self.live.migration_barrier.store(v.min(INT_OPTION_MAX), Ordering::Relaxed);
    }

    /// `cluster-allow-replica-migration`.
    pub fn allow_replica_migration(&self) -> bool {
        self.live.allow_replica_migration.load(Ordering::Relaxed)
    }

    pub fn set_allow_replica_migration(&self, on: bool) {
        self.live.allow_replica_migration.store(on, Ordering::Relaxed);
    }

    /// `cluster-replica-no-failover`.
    pub fn replica_no_failover(&self) -> bool {
        self.live.replica_no_failover.load(Ordering::Relaxed)
    }

    /// CONFIG SET cluster-replica-no-failover: the option, then this
    /// node's NOFAILOVER flag, which its next header carries to every
    /// node (Redis's `updateClusterFlags`); the flag is in nodes.conf,
    /// saved now. Nothing is saved when cluster mode is off.
    pub fn set_replica_no_failover(&self, on: bool) {
        self.live.replica_no_failover.store(on, Ordering::Relaxed);
        if !self.enabled() {
            return;
        }
        let mut s = self.lock();
        if sync_myself_flags(self, &mut s) {
            self.commit(&mut s);
        }
    }
}

/// Sets or clears this node's NOFAILOVER flag as the option says
/// (Redis's `clusterUpdateMyselfFlags`, whatever the node's role, as
/// Redis shows `nofailover` on a primary too); true if it changed.
pub fn sync_myself_flags(c: &Cluster, s: &mut State) -> bool {
    let want = if c.replica_no_failover() { flags::NOFAILOVER } else { 0 };
    let me = s.me_mut();
    if me.flags & flags::NOFAILOVER == want {
        return false;
    }
    me.flags = (me.flags & !flags::NOFAILOVER) | want;
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    #[test]
    fn the_options_start_as_given_and_change_at_run_time() {
        let c = Cluster::in_memory(Config { enabled: true, replica_validity_factor: 0, ..Config::default() });
        assert_eq!(c.validity_factor(), 0);
        assert_eq!(c.migration_barrier(), MIGRATION_BARRIER_DEFAULT);
        assert!(c.allow_replica_migration());
        assert!(!c.replica_no_failover());
        assert!(!c.lock().me().is(flags::NOFAILOVER));
        c.set_replica_no_failover(true);
        assert!(c.lock().me().is(flags::NOFAILOVER));
        assert!(c.lock().me().flags_text().contains("nofailover"));
        c.set_replica_no_failover(false);
        assert!(!c.lock().me().is(flags::NOFAILOVER));
        c.set_validity_factor(u64::MAX);
        assert_eq!(c.validity_factor(), INT_OPTION_MAX);
    }
}
