//! A command's family, by its row: what `dispatch` runs once a command
//! passed its checks (the name, the arity, ACL, cluster routing, the
//! replication guards, MULTI's queue). The data families are crate
//! `amalgam-commands`' (and `amalgam-derived`'s) over the worker's
//! `Keyspace`; the server's own commands are this crate's `resp/` files.

use super::*;

/// Runs a command whose name and arity `dispatch` checked. While
/// `keymiss` notifications are on or a client tracks keys, through
/// [`execute_noted`] (one test of the notification word otherwise).
#[inline]
pub(super) fn execute(ctx: &mut Ctx<'_>, spec: &'static Spec, args: &[Arg<'_>], out: &mut Vec<u8>) -> After {
    use amalgam_commands::notify::{KEY_MISS, TRACKING};
    if ctx.cx.notifying(KEY_MISS | TRACKING) {
        return execute_noted(ctx, spec, args, out);
    }
    run(ctx, spec, args, out)
}

/// [`execute`] with its `keymiss` events told first and, while a client
/// tracks keys, CLIENT TRACKING's work around it (`tracking::around`).
#[cold]
#[inline(never)]
fn execute_noted(ctx: &mut Ctx<'_>, spec: &'static Spec, args: &[Arg<'_>], out: &mut Vec<u8>) -> After {
    use amalgam_commands::notify::{KEY_MISS, TRACKING};
    if ctx.cx.notifying(KEY_MISS) {
        amalgam_commands::notify::key_misses(&ctx.cx, spec, args);
    }
    if !ctx.cx.notifying(TRACKING) {
        return run(ctx, spec, args, out);
    }
    tracking::around(ctx, spec, args, out, |ctx, out| run(ctx, spec, args, out))
}

/// The command's family, by its row.
#[inline(always)]
fn run(ctx: &mut Ctx<'_>, spec: &'static Spec, args: &[Arg<'_>], out: &mut Vec<u8>) -> After {
    match spec.cmd {
        Cmd::Get | Cmd::Mget => {
            // Only reached with a wrong arity, answered above; kept total.
            let gets = [PendingGet { first: 1, mget: (spec.cmd == Cmd::Mget).then(|| args.len() - 1) }];
            lookup_gets(ctx, args, &gets, out);
        }
        Cmd::Set
        | Cmd::Setnx
        | Cmd::Setex
        | Cmd::Psetex
        | Cmd::Getset
        | Cmd::Getdel
        | Cmd::Getex
        | Cmd::Mset
        | Cmd::Msetnx
        | Cmd::Incr
        | Cmd::Decr
        | Cmd::Incrby
        | Cmd::Decrby
        | Cmd::Incrbyfloat
        | Cmd::Append
        | Cmd::Strlen
        | Cmd::Getrange
        | Cmd::Substr
        | Cmd::Setrange => strings::run(&mut ctx.cx, spec.cmd, args, &mut ctx.session.prepared, out),
        Cmd::Del
        | Cmd::Unlink
        | Cmd::Exists
        | Cmd::Expire
        | Cmd::Pexpire
        | Cmd::Expireat
        | Cmd::Pexpireat
        | Cmd::Ttl
        | Cmd::Pttl
        | Cmd::Expiretime
        | Cmd::Pexpiretime
        | Cmd::Persist
        | Cmd::Type
        | Cmd::Scan
        | Cmd::Keys
        | Cmd::Dbsize
        | Cmd::Flushdb
        | Cmd::Flushall => keys::run(&mut ctx.cx, spec.cmd, args, out),
        Cmd::Ping
        | Cmd::Echo
        | Cmd::Quit
        | Cmd::Reset
        | Cmd::Select
        | Cmd::Info
        | Cmd::Config
        | Cmd::Slowlog
        | Cmd::Latency
        | Cmd::Debug
        | Cmd::Module
        | Cmd::Command
        | Cmd::Client
        | Cmd::Hello
        | Cmd::Auth
        | Cmd::Save
        | Cmd::Bgsave
        | Cmd::Lastsave
        | Cmd::Shutdown => return server::run(ctx, spec.cmd, args, out),
        Cmd::Monitor => monitor::monitor(ctx, out),
        Cmd::Cluster | Cmd::Asking | Cmd::Readonly | Cmd::Readwrite => cluster::run(ctx, spec.cmd, args, out),
        Cmd::Setbit | Cmd::Getbit | Cmd::Bitcount | Cmd::Bitpos | Cmd::Bitop | Cmd::Bitfield | Cmd::BitfieldRo => {
            bits::run(&mut ctx.cx, spec.cmd, args, out)
        }
        Cmd::Pfadd | Cmd::Pfcount | Cmd::Pfmerge | Cmd::Pfdebug | Cmd::Pfselftest => {
            amalgam_derived::hll::run(&mut ctx.cx, spec.cmd, args, out)
        }
        Cmd::Xadd
        | Cmd::Xrange
        | Cmd::Xrevrange
        | Cmd::Xlen
        | Cmd::Xdel
        | Cmd::Xtrim
        | Cmd::Xsetid
        | Cmd::Xgroup
        | Cmd::Xack
        | Cmd::Xpending
        | Cmd::Xclaim
        | Cmd::Xautoclaim
        | Cmd::Xinfo => amalgam_commands::stream::run(&mut ctx.cx, spec.cmd, args, out),
        Cmd::Xread | Cmd::Xreadgroup => blocking::xread(ctx, spec.cmd, args, out),
        Cmd::Time | Cmd::Touch | Cmd::Object => object::run(&mut ctx.cx, spec.cmd, args, out),
        Cmd::Lcs => lcs::lcs(&mut ctx.cx, args, out),
        Cmd::Move | Cmd::Swapdb if ctx.shared.cluster.enabled() => {
            // Redis's texts: one database in cluster mode.
            let name = if spec.cmd == Cmd::Move { "MOVE" } else { "SWAPDB" };
            push_error(out, format!("ERR {name} is not allowed in cluster mode").as_bytes())
        }
        Cmd::Randomkey | Cmd::Copy | Cmd::Move | Cmd::Swapdb => keyspace::run(&mut ctx.cx, spec.cmd, args, out),
        Cmd::Dump | Cmd::Restore | Cmd::RestoreAsking => dump::run(&mut ctx.cx, spec.cmd, args, out),
        Cmd::Migrate => migrate::migrate(ctx, args, out),
        Cmd::Memory => memory::run(&mut ctx.cx, spec.cmd, args, out),
        Cmd::Hset
        | Cmd::Hsetnx
        | Cmd::Hget
        | Cmd::Hmget
        | Cmd::Hmset
        | Cmd::Hdel
        | Cmd::Hlen
        | Cmd::Hstrlen
        | Cmd::Hexists
        | Cmd::Hkeys
        | Cmd::Hvals
        | Cmd::Hgetall
        | Cmd::Hincrby
        | Cmd::Hincrbyfloat
        | Cmd::Hrandfield
        | Cmd::Hscan => hash::run(&mut ctx.cx, spec.cmd, args, out),
        Cmd::Lpush
        | Cmd::Rpush
        | Cmd::Lpushx
        | Cmd::Rpushx
        | Cmd::Lpop
        | Cmd::Rpop
        | Cmd::Llen
        | Cmd::Lrange
        | Cmd::Lindex
        | Cmd::Lset
        | Cmd::Linsert
        | Cmd::Lrem
        | Cmd::Ltrim
        | Cmd::Lpos
        | Cmd::Lmove
        | Cmd::Rpoplpush
        | Cmd::Lmpop => list::run(&mut ctx.cx, spec.cmd, args, out),
        Cmd::Sadd
        | Cmd::Srem
        | Cmd::Smembers
        | Cmd::Sismember
        | Cmd::Smismember
        | Cmd::Scard
        | Cmd::Spop
        | Cmd::Srandmember
        | Cmd::Smove
        | Cmd::Sinter
        | Cmd::Sintercard
        | Cmd::Sunion
        | Cmd::Sdiff
        | Cmd::Sinterstore
        | Cmd::Sunionstore
        | Cmd::Sdiffstore
        | Cmd::Sscan => set::run(&mut ctx.cx, spec.cmd, args, out),
        Cmd::Zadd
        | Cmd::Zincrby
        | Cmd::Zrem
        | Cmd::Zcard
        | Cmd::Zscore
        | Cmd::Zmscore
        | Cmd::Zrank
        | Cmd::Zrevrank
        | Cmd::Zcount
        | Cmd::Zlexcount
        | Cmd::Zrange
        | Cmd::Zrangebyscore
        | Cmd::Zrevrangebyscore
        | Cmd::Zrangebylex
        | Cmd::Zrevrangebylex
        | Cmd::Zrevrange
        | Cmd::Zrangestore
        | Cmd::Zpopmin
        | Cmd::Zpopmax
        | Cmd::Zmpop
        | Cmd::Zrandmember
        | Cmd::Zremrangebyrank
        | Cmd::Zremrangebyscore
        | Cmd::Zremrangebylex
        | Cmd::Zunion
        | Cmd::Zinter
        | Cmd::Zdiff
        | Cmd::Zunionstore
        | Cmd::Zinterstore
        | Cmd::Zdiffstore
        | Cmd::Zintercard
        | Cmd::Zscan => zset::run(&mut ctx.cx, spec.cmd, args, out),
        Cmd::Sort | Cmd::SortRo => {
            let every_key = acl::reads_every_key(ctx, spec, args);
            sort::run(&mut ctx.cx, spec.cmd, args, every_key, out)
        }
        Cmd::Geoadd
        | Cmd::Geodist
        | Cmd::Geohash
        | Cmd::Geopos
        | Cmd::Georadius
        | Cmd::GeoradiusRo
        | Cmd::Georadiusbymember
        | Cmd::GeoradiusbymemberRo
        | Cmd::Geosearch
        | Cmd::Geosearchstore => geo::run(&mut ctx.cx, spec.cmd, args, out),
        Cmd::Blpop
        | Cmd::Brpop
        | Cmd::Blmove
        | Cmd::Brpoplpush
        | Cmd::Blmpop
        | Cmd::Bzpopmin
        | Cmd::Bzpopmax
        | Cmd::Bzmpop => blocking::run(ctx, spec.cmd, args, out),
        Cmd::Replicaof
        | Cmd::Slaveof
        | Cmd::Role
        | Cmd::Replconf
        | Cmd::Psync
        | Cmd::Sync
        | Cmd::Wait
        | Cmd::Failover => {
            return crate::repl::run(ctx, spec.cmd, args, out);
        }
        Cmd::Multi | Cmd::Exec | Cmd::Discard | Cmd::Watch | Cmd::Unwatch => {
            return multi::run(ctx, spec.cmd, args, out)
        }
        Cmd::Rename | Cmd::Renamenx => keys::run(&mut ctx.cx, spec.cmd, args, out),
        Cmd::Acl => return acl::run(ctx, args, out),
        Cmd::Subscribe
        | Cmd::Unsubscribe
        | Cmd::Psubscribe
        | Cmd::Punsubscribe
        | Cmd::Publish
        | Cmd::Pubsub
        | Cmd::Ssubscribe
        | Cmd::Sunsubscribe
        | Cmd::Spublish => pubsub::run(ctx, spec.cmd, args, out),
        Cmd::Eval
        | Cmd::Evalsha
        | Cmd::EvalRo
        | Cmd::EvalshaRo
        | Cmd::Script
        | Cmd::Fcall
        | Cmd::FcallRo
        | Cmd::Function => return script::run(ctx, spec.cmd, args, out),
    }
    After::Continue
}
