//! # amalgam-acl
//!
//! RESP's users and their rules, as Redis 7.0 has them: the permission
//! bitmap over the command table (`users.rs`, `Catalog`: one bit per
//! command and subcommand, so a request's check is a bit test), key
//! patterns with their read/write flags (`%R~`, `%W~`), channel patterns,
//! selectors, passwords (SHA-256, as Redis stores and shows them), the
//! parsing of ACL SETUSER's words and of ACL files, the server's set of
//! users ([`Acl`]), and the ACL LOG (`log.rs`). Below the RESP front end,
//! above the command table (`amalgam-commands`): the front end's
//! `resp/acl.rs` runs the check on each request, AUTH, HELLO AUTH and the
//! ACL command over what is here, and its notes describe the design.

#![forbid(unsafe_code)]

pub mod log;
mod users;

pub use users::*;

use amalgam_commands::glob::matches;
use amalgam_commands::table::Cmd;
use amalgam_commands::Arg;

/// The first channel `cmd` names that is not within `allowed` (Redis's
/// `ACLCheckChannelAgainstList`): a channel must match a pattern of the
/// user's; a PSUBSCRIBE pattern must equal one. None: every one is.
pub fn channel_refused(allowed: &[Vec<u8>], cmd: Cmd, args: &[Arg<'_>]) -> Option<usize> {
    let names = match cmd {
        Cmd::Publish | Cmd::Spublish => 1..2,
        Cmd::Subscribe | Cmd::Psubscribe | Cmd::Ssubscribe => 1..args.len(),
        _ => return None,
    };
    let literal = cmd == Cmd::Psubscribe;
    names.into_iter().find(|&i| {
        let n = &args[i];
        !allowed.iter().any(|p| if literal { p[..] == n[..] } else { matches(p, n, false) })
    })
}

/// Why a user may not run a command (Redis's `ACL_DENIED_*`), with the
/// argument refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    Command,
    /// The index of the first key refused.
    Key(usize),
    /// The index of the first channel refused.
    Channel(usize),
}

impl Denied {
    /// Which refusal of several selectors' is reported (Redis's
    /// `ACL_DENIED_*` values, then the argument's index): the largest.
    pub fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (1, 0),
            Denied::Key(i) => (2, i),
            Denied::Channel(i) => (4, i),
        }
    }
}
