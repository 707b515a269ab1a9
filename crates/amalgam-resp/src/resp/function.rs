//! FUNCTION LOAD | DELETE | FLUSH | LIST | STATS | KILL | HELP, Redis
//! 7.0's replies (the libraries: amalgam-script `functions.rs`; FCALL:
//! `resp/script.rs`). DUMP and RESTORE move the libraries in Redis 7.0's
//! payload. With `--dir` every change of the libraries is logged whole
//! (amalgam-persist's FUNCTIONS record) and a restart loads them
//! (`restore_recovered`); replicas get them in the replication stream
//! (the same record: at every change and after each full sync) and
//! install them (`install_replicated`).

use super::script::{is_any, kill};
use super::table::Cmd;
use super::{help, sub, Arg, Ctx};
use crate::scripting::{libraries_changed as persist, with_vm};
use amalgam_protocol::resp::{push_array, push_bulk, push_error, push_int, push_map, push_null, push_simple, Proto};
use amalgam_script::functions::{library_name, Library};
use std::sync::Arc;

pub(crate) fn run(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) -> super::After {
    let Some(name) = sub(Cmd::Function, args, out) else { return super::After::Continue };
    let scripts = &ctx.shared.scripts;
    let proto = ctx.session.proto;
    match name {
        "load" => load(ctx, args, out),
        "delete" => match scripts.functions.delete(&String::from_utf8_lossy(&args[2])) {
            Ok(()) => {
                persist(ctx.shared);
                push_simple(out, "OK")
            }
            Err(e) => push_error(out, e.as_bytes()),
        },
        "flush" => {
            if args.len() > 3 || (args.len() == 3 && !is_any(&args[2], &["sync", "async"])) {
                push_error(out, b"ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
            } else {
                scripts.functions.flush();
                persist(ctx.shared);
                push_simple(out, "OK");
            }
        }
        "list" => list(ctx, args, proto, out),
        "stats" => {
            let (libs, fns) = scripts.functions.counts();
            push_map(out, 2, proto);
            push_bulk(out, b"running_script");
            push_null(out, proto);
            push_bulk(out, b"engines");
            push_map(out, 1, proto);
            push_bulk(out, b"LUA");
            push_map(out, 2, proto);
            push_bulk(out, b"libraries_count");
            push_int(out, libs as i64);
            push_bulk(out, b"functions_count");
            push_int(out, fns as i64);
        }
        "kill" => kill(scripts, out),
        "dump" => {
            let libs = scripts.functions.list();
            push_bulk(out, &amalgam_persist::rdb::encode_functions(libs.iter().map(|l| &l.code[..])));
        }
        "restore" => restore(ctx, args, out),
        _ => help(
            &[
                "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "LOAD [REPLACE] <FUNCTION CODE>",
                "    Create a new library with the given library name and code.",
                "DELETE <LIBRARY NAME>",
                "    Delete the given library.",
                "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
                "    Return general information on all the libraries:",
                "    * Library name",
                "    * The engine used to run the Library",
                "    * Library description",
                "    * Functions list",
                "    * Library code (if WITHCODE is given)",
                "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
                "STATS",
                "    Return information about the current function running:",
                "    * Function name",
                "    * Command used to run the function",
                "    * Duration in MS that the function is running",
                "    If no function is running, return nil",
                "    In addition, returns a list of available engines.",
                "KILL",
                "    Kill the current running function.",
                "FLUSH [ASYNC|SYNC]",
                "    Delete all the libraries.",
                "    When called without the optional mode argument, the behavior is determined by the",
                "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
                "    * ASYNC: Asynchronously flush the libraries.",
                "    * SYNC: Synchronously flush the libraries.",
                "DUMP",
                "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
                "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
                "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
                "    control how to handle existing libraries (default APPEND):",
                "    * FLUSH: delete all existing libraries.",
                "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
                "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
                "      libraries with the new libraries (notice that even on this option there is a chance of failure",
                "      in case of functions name collision with another library).",
                "HELP",
                "    Prints this help.",
            ],
            out,
        ),
    }
    super::After::Continue
}

/// FUNCTION LOAD [REPLACE] code: run on this worker's state (which checks
/// the code and collects what it registers), then shared.
fn load(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let (replace, code) = match args.len() {
        3 => (false, &args[2]),
        4 if is_any(&args[2], &["replace"]) => (true, &args[3]),
        4 => {
            return push_error(
                out,
                format!("ERR Unknown option given: {}", String::from_utf8_lossy(&args[2])).as_bytes(),
            )
        }
        _ => return push_error(out, b"ERR wrong number of arguments for 'function|load' command"),
    };
    let name = match library_name(code) {
        Ok(n) => n,
        Err(e) => return push_error(out, e.as_bytes()),
    };
    let scripts = &ctx.shared.scripts;
    let loaded = with_vm(scripts.generation(), |vm| vm.load_library(code));
    let functions = match loaded {
        Ok(Ok(f)) => f,
        Ok(Err(e)) => return push_error(out, e.as_bytes()),
        Err(e) => return push_error(out, format!("ERR Lua could not start: {e}").as_bytes()),
    };
    let lib = Library { name: name.clone(), code: Arc::from(&code[..]), functions };
    match scripts.functions.add(lib, replace) {
        Ok(()) => {
            persist(ctx.shared);
            push_bulk(out, name.as_bytes())
        }
        Err(e) => push_error(out, e.as_bytes()),
    }
}

/// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]: every library in the
/// payload loaded on this worker's state (checked as FUNCTION LOAD checks
/// it), then applied all or none.
fn restore(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    use amalgam_persist::rdb::{decode_functions, FunctionsError};
    use amalgam_script::functions::Policy;
    let policy = match args.get(3) {
        None => Policy::Append,
        Some(p) if is_any(p, &["append"]) => Policy::Append,
        Some(p) if is_any(p, &["replace"]) => Policy::Replace,
        Some(p) if is_any(p, &["flush"]) => Policy::Flush,
        Some(_) => {
            return push_error(out, b"ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
        }
    };
    if args.len() > 4 {
        return push_error(out, b"ERR wrong number of arguments for 'function|restore' command");
    }
    let codes = match decode_functions(&args[2]) {
        Ok(c) => c,
        Err(FunctionsError::VersionOrChecksum) => {
            return push_error(out, b"ERR DUMP payload version or checksum are wrong")
        }
        Err(FunctionsError::PreGa) => return push_error(out, b"ERR Pre-GA function format not supported"),
        Err(FunctionsError::NotAFunction) => return push_error(out, b"ERR given type is not a function"),
        Err(FunctionsError::BadFormat) => return push_error(out, b"ERR Bad data format"),
    };
    let scripts = &ctx.shared.scripts;
    let mut libs = Vec::with_capacity(codes.len());
    for code in codes {
        let name = match library_name(&code) {
            Ok(n) => n,
            Err(e) => return push_error(out, e.as_bytes()),
        };
        let functions = match with_vm(scripts.generation(), |vm| vm.load_library(&code)) {
            Ok(Ok(f)) => f,
            Ok(Err(e)) => return push_error(out, e.as_bytes()),
            Err(e) => return push_error(out, format!("ERR Lua could not start: {e}").as_bytes()),
        };
        libs.push(Library { name, code: Arc::from(code), functions });
    }
    match scripts.functions.restore(libs, policy) {
        Ok(()) => {
            persist(ctx.shared);
            push_simple(out, "OK")
        }
        Err(e) => push_error(out, e.as_bytes()),
    }
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
fn list(ctx: &Ctx<'_>, args: &[Arg<'_>], proto: Proto, out: &mut Vec<u8>) {
    let mut pattern: Option<&[u8]> = None;
    let mut with_code = false;
    let mut i = 2;
    // Bounded: each step consumes one or two arguments.
    while i < args.len() {
        if is_any(&args[i], &["withcode"]) && !with_code {
            with_code = true;
            i += 1;
        } else if is_any(&args[i], &["libraryname"]) && pattern.is_none() && i + 1 < args.len() {
            pattern = Some(&args[i + 1]);
            i += 2;
        } else {
            let e = format!("ERR Unknown argument {}", String::from_utf8_lossy(&args[i]));
            return push_error(out, e.as_bytes());
        }
    }
    let libs: Vec<_> = ctx
        .shared
        .scripts
        .functions
        .list()
        .into_iter()
        .filter(|l| pattern.is_none_or(|p| amalgam_commands::glob::matches(p, l.name.as_bytes(), false)))
        .collect();
    push_array(out, libs.len());
    for lib in &libs {
        push_map(out, if with_code { 4 } else { 3 }, proto);
        push_bulk(out, b"library_name");
        push_bulk(out, lib.name.as_bytes());
        push_bulk(out, b"engine");
        push_bulk(out, b"LUA");
        push_bulk(out, b"functions");
        push_array(out, lib.functions.len());
        for f in &lib.functions {
            push_map(out, 3, proto);
            push_bulk(out, b"name");
            push_bulk(out, f.name.as_bytes());
            push_bulk(out, b"description");
            match &f.description {
                Some(d) => push_bulk(out, d.as_bytes()),
                None => push_null(out, proto),
            }
            push_bulk(out, b"flags");
            amalgam_protocol::resp::push_set(out, f.flags.len(), proto);
            for flag in &f.flags {
                push_simple(out, flag);
            }
        }
        if with_code {
            push_bulk(out, b"library_code");
            push_bulk(out, &lib.code);
        }
    }
}
