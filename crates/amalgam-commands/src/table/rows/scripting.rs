//! The command table's rows of Lua scripting: EVAL, EVALSHA, EVAL_RO,
//! EVALSHA_RO, SCRIPT, FCALL, FCALL_RO and FUNCTION (the RESP front end's `resp/script.rs`,
//! amalgam-server, over crate amalgam-script), Redis 7.0.15's (written by
//! `scripts/command-rows.py`; `table.rs` says what a row holds).

use super::super::{Begin, Cmd, Find, KeySpec, Spec};

/// In the order `COMMANDS` lists them.
pub(super) const ROWS: &[Spec] = &[
    Spec {
        acl: &["@scripting"],
        keys: &[KeySpec {
            notes: "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
            flags: &["RW", "access", "update"],
            begin: Begin::Index(2),
            find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
        }],
        ..spec!(
            Eval,
            "eval",
            -3,
            &["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"],
            (0, 0, 0),
            "scripting",
            "2.6.0",
            "Execute a Lua script server side"
        )
    },
    Spec {
        acl: &["@scripting"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RW", "access", "update"],
            begin: Begin::Index(2),
            find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
        }],
        ..spec!(
            Evalsha,
            "evalsha",
            -3,
            &["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"],
            (0, 0, 0),
            "scripting",
            "2.6.0",
            "Execute a Lua script server side"
        )
    },
    Spec {
        acl: &["@scripting"],
        keys: &[KeySpec {
            notes: "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
            flags: &["RO", "access"],
            begin: Begin::Index(2),
            find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
        }],
        ..spec!(
            EvalRo,
            "eval_ro",
            -3,
            &["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"],
            (0, 0, 0),
            "scripting",
            "7.0.0",
            "Execute a read-only Lua script server side"
        )
    },
    Spec {
        acl: &["@scripting"],
        keys: &[KeySpec {
            notes: "",
            flags: &["RO", "access"],
            begin: Begin::Index(2),
            find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
        }],
        ..spec!(
            EvalshaRo,
            "evalsha_ro",
            -3,
            &["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"],
            (0, 0, 0),
            "scripting",
            "7.0.0",
            "Execute a read-only Lua script server side"
        )
    },
    Spec {
        subcommands: &[
            Spec {
                acl: &["@scripting"],
                ..spec!(
                    Script,
                    "script|debug",
                    3,
                    &["noscript"],
                    (0, 0, 0),
                    "scripting",
                    "3.2.0",
                    "Set the debug mode for executed scripts."
                )
            },
            Spec {
                acl: &["@scripting"],
                tips: &["request_policy:all_shards", "response_policy:agg_logical_and"],
                ..spec!(
                    Script,
                    "script|exists",
                    -3,
                    &["noscript"],
                    (0, 0, 0),
                    "scripting",
                    "2.6.0",
                    "Check existence of scripts in the script cache."
                )
            },
            Spec {
                acl: &["@scripting"],
                tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
                ..spec!(
                    Script,
                    "script|flush",
                    -2,
                    &["noscript"],
                    (0, 0, 0),
                    "scripting",
                    "2.6.0",
                    "Remove all the scripts from the script cache."
                )
            },
            Spec {
                acl: &["@scripting"],
                ..spec!(
                    Script,
                    "script|help",
                    2,
                    &["loading", "stale"],
                    (0, 0, 0),
                    "scripting",
                    "5.0.0",
                    "Show helpful text about the different subcommands"
                )
            },
            Spec {
                acl: &["@scripting"],
                tips: &["request_policy:all_shards", "response_policy:one_succeeded"],
                ..spec!(
                    Script,
                    "script|kill",
                    2,
                    &["noscript", "allow_busy"],
                    (0, 0, 0),
                    "scripting",
                    "2.6.0",
                    "Kill the script currently in execution."
                )
            },
            Spec {
                acl: &["@scripting"],
                tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
                ..spec!(
                    Script,
                    "script|load",
                    3,
                    &["noscript", "stale"],
                    (0, 0, 0),
                    "scripting",
                    "2.6.0",
                    "Load the specified Lua script into the script cache."
                )
            },
        ],
        ..spec!(
            Script,
            "script",
            -2,
            &[],
            (0, 0, 0),
            "scripting",
            "2.6.0",
            "A container for Lua scripts management commands"
        )
    },
    Spec {
        acl: &["@scripting"],
        keys: &[KeySpec {
            notes: "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
            flags: &["RW", "access", "update"],
            begin: Begin::Index(2),
            find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
        }],
        ..spec!(
            Fcall,
            "fcall",
            -3,
            &["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"],
            (0, 0, 0),
            "scripting",
            "7.0.0",
            "Invoke a function"
        )
    },
    Spec {
        acl: &["@scripting"],
        keys: &[KeySpec {
            notes: "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
            flags: &["RO", "access"],
            begin: Begin::Index(2),
            find: Find::Keynum { keynumidx: 0, firstkey: 1, keystep: 1 },
        }],
        ..spec!(
            FcallRo,
            "fcall_ro",
            -3,
            &["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"],
            (0, 0, 0),
            "scripting",
            "7.0.0",
            "Invoke a read-only function"
        )
    },
    Spec {
        subcommands: &[
            Spec {
                acl: &["@scripting"],
                tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
                ..spec!(
                    Function,
                    "function|delete",
                    3,
                    &["write", "noscript"],
                    (0, 0, 0),
                    "scripting",
                    "7.0.0",
                    "Delete a function by name"
                )
            },
            Spec {
                acl: &["@scripting"],
                tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
                ..spec!(
                    Function,
                    "function|flush",
                    -2,
                    &["write", "noscript"],
                    (0, 0, 0),
                    "scripting",
                    "7.0.0",
                    "Deleting all functions"
                )
            },
            Spec {
                acl: &["@scripting"],
                ..spec!(
                    Function,
                    "function|help",
                    2,
                    &["loading", "stale"],
                    (0, 0, 0),
                    "scripting",
                    "7.0.0",
                    "Show helpful text about the different subcommands"
                )
            },
            Spec {
                acl: &["@scripting"],
                tips: &["request_policy:all_shards", "response_policy:one_succeeded"],
                ..spec!(
                    Function,
                    "function|kill",
                    2,
                    &["noscript", "allow_busy"],
                    (0, 0, 0),
                    "scripting",
                    "7.0.0",
                    "Kill the function currently in execution."
                )
            },
            Spec {
                acl: &["@scripting"],
                tips: &["nondeterministic_output_order"],
                ..spec!(
                    Function,
                    "function|list",
                    -2,
                    &["noscript"],
                    (0, 0, 0),
                    "scripting",
                    "7.0.0",
                    "List information about all the functions"
                )
            },
            Spec {
                acl: &["@scripting"],
                tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
                ..spec!(
                    Function,
                    "function|load",
                    -3,
                    &["write", "denyoom", "noscript"],
                    (0, 0, 0),
                    "scripting",
                    "7.0.0",
                    "Create a function with the given arguments (name, code, description)"
                )
            },
            Spec {
                acl: &["@scripting"],
                tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"],
                ..spec!(
                    Function,
                    "function|stats",
                    2,
                    &["noscript", "allow_busy"],
                    (0, 0, 0),
                    "scripting",
                    "7.0.0",
                    "Return information about the function currently running (name, description, duration)"
                )
            },
            Spec {
                acl: &["@scripting"],
                ..spec!(
                    Function,
                    "function|dump",
                    2,
                    &["noscript"],
                    (0, 0, 0),
                    "scripting",
                    "7.0.0",
                    "Dump all functions into a serialized binary payload"
                )
            },
            Spec {
                acl: &["@scripting"],
                tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
                ..spec!(
                    Function,
                    "function|restore",
                    -3,
                    &["write", "denyoom", "noscript"],
                    (0, 0, 0),
                    "scripting",
                    "7.0.0",
                    "Restore all the functions on the given payload"
                )
            },
        ],
        ..spec!(Function, "function", -2, &[], (0, 0, 0), "scripting", "7.0.0", "A container for function commands")
    },
];
