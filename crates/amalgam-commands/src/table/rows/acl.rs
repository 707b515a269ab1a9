//! The command table's rows of the RESP front end's `resp/acl.rs` (amalgam-server) (`table.rs` says what a row holds).

use super::super::{Cmd, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[Spec {
    subcommands: &[
        spec!(
            Acl,
            "acl|deluser",
            -3,
            &["admin", "noscript", "loading", "stale"],
            (0, 0, 0),
            "server",
            "6.0.0",
            "Remove the specified ACL users and the associated rules"
        ),
        spec!(
            Acl,
            "acl|load",
            2,
            &["admin", "noscript", "loading", "stale"],
            (0, 0, 0),
            "server",
            "6.0.0",
            "Reload the ACLs from the configured ACL file"
        ),
        spec!(
            Acl,
            "acl|getuser",
            3,
            &["admin", "noscript", "loading", "stale"],
            (0, 0, 0),
            "server",
            "6.0.0",
            "Get the rules for a specific ACL user"
        ),
        spec!(
            Acl,
            "acl|save",
            2,
            &["admin", "noscript", "loading", "stale"],
            (0, 0, 0),
            "server",
            "6.0.0",
            "Save the current ACL rules in the configured ACL file"
        ),
        spec!(
            Acl,
            "acl|whoami",
            2,
            &["noscript", "loading", "stale"],
            (0, 0, 0),
            "server",
            "6.0.0",
            "Return the name of the user associated to the current connection"
        ),
        spec!(
            Acl,
            "acl|users",
            2,
            &["admin", "noscript", "loading", "stale"],
            (0, 0, 0),
            "server",
            "6.0.0",
            "List the username of all the configured ACL rules"
        ),
        spec!(
            Acl,
            "acl|setuser",
            -3,
            &["admin", "noscript", "loading", "stale"],
            (0, 0, 0),
            "server",
            "6.0.0",
            "Modify or create the rules for a specific ACL user"
        ),
        spec!(
            Acl,
            "acl|help",
            2,
            &["loading", "stale"],
            (0, 0, 0),
            "server",
            "6.0.0",
            "Show helpful text about the different subcommands"
        ),
        spec!(
            Acl,
            "acl|list",
            2,
            &["admin", "noscript", "loading", "stale"],
            (0, 0, 0),
            "server",
            "6.0.0",
            "List the current ACL rules in ACL config file format"
        ),
        spec!(
            Acl,
            "acl|cat",
            -2,
            &["noscript", "loading", "stale"],
            (0, 0, 0),
            "server",
            "6.0.0",
            "List the ACL categories or the commands inside a category"
        ),
        spec!(
            Acl,
            "acl|genpass",
            -2,
            &["noscript", "loading", "stale"],
            (0, 0, 0),
            "server",
            "6.0.0",
            "Generate a pseudorandom secure password to use for ACL users"
        ),
        spec!(
            Acl,
            "acl|log",
            -2,
            &["admin", "noscript", "loading", "stale"],
            (0, 0, 0),
            "server",
            "6.0.0",
            "List latest events denied because of ACLs in place"
        ),
        spec!(
            Acl,
            "acl|dryrun",
            -4,
            &["admin", "noscript", "loading", "stale"],
            (0, 0, 0),
            "server",
            "7.0.0",
            "Returns whether the user can execute the given command without executing the command."
        ),
    ],
    ..spec!(Acl, "acl", -2, &[], (0, 0, 0), "server", "6.0.0", "A container for Access List Control commands ")
}];
