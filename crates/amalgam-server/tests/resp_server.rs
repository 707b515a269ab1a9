//! Connection and server commands over RESP, black-box: PING ECHO QUIT
//! SELECT HELLO AUTH CLIENT CONFIG COMMAND INFO. Runs against amalgam and,
//! in CI, against redis-server 7 (`AMALGAM_TEST_RESP_ADDR`); what only
//! amalgam does is in tests marked so.
mod common;
use common::resp::*;
use common::*;

#[test]
fn ping_echo_select_quit() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
    assert_eq!(c.call(&["ping", "hi there"]), bulk("hi there"));
    assert_eq!(c.call(&["ECHO", ""]), bulk(""));
    assert_eq!(c.call(&["SELECT", "0"]), OK);
    assert_eq!(c.call(&["SELECT", "16"]), error("ERR DB index is out of range"));
    assert_eq!(c.call(&["SELECT", "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(
        c.call(&["SELECT", "4294967296"]),
        error("ERR value is out of range, value must between -2147483648 and 2147483647")
    );
    assert_eq!(c.call(&["SELECT", "-1"]), error("ERR DB index is out of range"));
    assert_eq!(c.call(&["QUIT"]), OK);
    assert!(c.closed());
}

/// `--databases` (Redis's `databases`) sets how many there are.
#[test]
fn the_number_of_databases_is_set_at_start() {
    let Some(server) = resp_private(&["--databases", "4"]) else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["SELECT", "3"]), OK);
    assert_eq!(c.call(&["SELECT", "4"]), error("ERR DB index is out of range"));
    assert_eq!(c.call(&["SWAPDB", "0", "4"]), error("ERR DB index is out of range"));
    assert_eq!(c.config_get("databases"), "4");
    assert!(c.call(&["CONFIG", "SET", "databases", "8"]).starts_with("-ERR"), "fixed at start");
}

/// The pairs of a HELLO reply (RESP2 flat array or RESP3 map), without
/// the fields that name the server (`server`, `version`, `id`).
fn hello_fields(reply: &str) -> Vec<String> {
    let lines: Vec<&str> = reply.split("\r\n").collect();
    let mut out = Vec::new();
    let mut skip = false;
    for l in &lines[1..] {
        if l.starts_with('$') || l.is_empty() {
            continue;
        }
        if skip {
            skip = false;
            continue;
        }
        if ["server", "version", "id"].contains(l) {
            skip = true;
            continue;
        }
        out.push(l.to_string());
    }
    out
}

#[test]
fn hello() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let r2 = c.call(&["HELLO"]);
    assert!(r2.starts_with("*14\r\n$6\r\nserver\r\n"), "{r2}");
    assert_eq!(hello_fields(&r2), ["proto", ":2", "mode", "standalone", "role", "master", "modules", "*0"]);
    let r3 = c.call(&["HELLO", "3"]);
    assert!(r3.starts_with("%7\r\n$6\r\nserver\r\n"), "{r3}");
    assert_eq!(hello_fields(&r3), ["proto", ":3", "mode", "standalone", "role", "master", "modules", "*0"]);
    let id = c.call(&["CLIENT", "ID"]);
    assert!(r3.contains(&format!("$2\r\nid\r\n{id}")), "HELLO's id is CLIENT ID: {r3} {id}");
    assert_eq!(c.call(&["HELLO", "4"]), error("NOPROTO unsupported protocol version"));
    assert_eq!(c.call(&["HELLO", "1"]), error("NOPROTO unsupported protocol version"));
    assert_eq!(c.call(&["HELLO", "x"]), error("ERR Protocol version is not an integer or out of range"));
    assert_eq!(c.call(&["HELLO", "3", "bogus"]), error("ERR Syntax error in HELLO option 'bogus'"));
    assert_eq!(c.call(&["HELLO", "3", "AUTH", "u"]), error("ERR Syntax error in HELLO option 'AUTH'"));
    assert_eq!(
        c.call(&["HELLO", "3", "AUTH", "nosuchuser", "pw"]),
        error("WRONGPASS invalid username-password pair or user is disabled.")
    );
    assert_eq!(
        c.call(&["HELLO", "2", "SETNAME", "a b"]),
        error("ERR Client names cannot contain spaces, newlines or special characters.")
    );
    // A failed HELLO changes nothing: still RESP3.
    assert_eq!(c.call(&["GET", &key("h")]), NULL3);
    assert!(c.call(&["HELLO", "2", "SETNAME", "named"]).starts_with("*14\r\n"));
    assert_eq!(c.call(&["CLIENT", "GETNAME"]), bulk("named"));
    assert_eq!(c.call(&["GET", &key("h")]), NULL2);
}

#[test]
fn auth_is_refused() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(
        c.call(&["AUTH", "pw"]),
        error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
    );
    assert_eq!(
        c.call(&["AUTH", "nosuchuser", "pw"]),
        error("WRONGPASS invalid username-password pair or user is disabled.")
    );
    assert_eq!(c.call(&["AUTH", "a", "b", "c"]), error("ERR syntax error"));
    assert_eq!(c.call(&["AUTH"]), error("ERR wrong number of arguments for 'auth' command"));
}

#[test]
fn auth_of_the_passwordless_default_user_succeeds() {
    // As in Redis: the `nopass` default user takes any password.
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["AUTH", "default", "pw"]), OK);
    let hello = c.call(&["HELLO", "3", "AUTH", "default", "pw"]);
    assert!(hello.starts_with("%7\r\n"), "{hello:?}");
}

#[test]
fn client_commands() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let mut d = Resp::new(&server);
    let (a, b) = (as_int(&c.call(&["CLIENT", "ID"])), as_int(&d.call(&["client", "id"])));
    assert!(a > 0 && b > 0 && a != b);
    assert_eq!(c.call(&["CLIENT", "GETNAME"]), NULL2);
    assert_eq!(c.call(&["CLIENT", "SETNAME", "worker-1"]), OK);
    assert_eq!(c.call(&["CLIENT", "GETNAME"]), bulk("worker-1"));
    assert_eq!(d.call(&["CLIENT", "GETNAME"]), NULL2, "names are per connection");
    assert_eq!(
        c.call(&["CLIENT", "SETNAME", "a b"]),
        error("ERR Client names cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(
        c.call(&["CLIENT", "SETNAME", "a\nb"]),
        error("ERR Client names cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(c.call(&["CLIENT", "SETNAME", ""]), OK);
    assert_eq!(c.call(&["CLIENT", "GETNAME"]), NULL2);
    assert_eq!(c.call(&["CLIENT", "nosuch"]), error("ERR unknown subcommand 'nosuch'. Try CLIENT HELP."));
    assert_eq!(c.call(&["CLIENT", "SETNAME"]), error("ERR wrong number of arguments for 'client|setname' command"));
    assert_eq!(c.call(&["CLIENT", "ID", "x"]), error("ERR wrong number of arguments for 'client|id' command"));
    assert_eq!(c.call(&["CLIENT"]), error("ERR wrong number of arguments for 'client' command"));
}

#[test]
fn client_setinfo() {
    // Redis 7.2's CLIENT SETINFO (Debian's 7.0 lacks it); redis-py sends it.
    let Some(server) = resp_private(&[]) else { return };
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["CLIENT", "SETINFO", "LIB-NAME", "redis-py"]), OK);
    assert_eq!(c.call(&["CLIENT", "SETINFO", "lib-ver", "5.0.0"]), OK);
    assert_eq!(
        c.call(&["CLIENT", "SETINFO", "lib-name", "a b"]),
        error("ERR lib-name cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(c.call(&["CLIENT", "SETINFO", "color", "x"]), error("ERR Unrecognized option 'color'"));
    assert_eq!(
        c.call(&["CLIENT", "SETINFO", "lib-name"]),
        error("ERR wrong number of arguments for 'client|setinfo' command")
    );
}

#[test]
fn config_get() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    // What redis-benchmark asks for at start.
    assert_eq!(c.call(&["CONFIG", "GET", "save"]), format!("*2\r\n{}{}", bulk("save"), bulk("")));
    assert_eq!(c.call(&["CONFIG", "GET", "appendonly"]), format!("*2\r\n{}{}", bulk("appendonly"), bulk("no")));
    assert_eq!(c.call(&["CONFIG", "GET", "no-such-parameter"]), "*0\r\n");
    let both = c.call(&["config", "get", "save", "appendonly"]);
    assert!(
        both.starts_with("*4\r\n")
            && both.contains("$4\r\nsave\r\n$0\r\n\r\n")
            && both.contains("$10\r\nappendonly\r\n$2\r\nno\r\n"),
        "{both}"
    );
    let glob = c.call(&["CONFIG", "GET", "maxmemory*"]);
    assert!(glob.contains("$9\r\nmaxmemory\r\n") && glob.contains("$16\r\nmaxmemory-policy\r\n"), "{glob}");
    assert!(c.call(&["HELLO", "3"]).starts_with('%'));
    assert_eq!(c.call(&["CONFIG", "GET", "save"]), format!("%1\r\n{}{}", bulk("save"), bulk("")));
    assert_eq!(c.call(&["CONFIG", "GET"]), error("ERR wrong number of arguments for 'config|get' command"));
    assert_eq!(c.call(&["CONFIG", "nosuch"]), error("ERR unknown subcommand 'nosuch'. Try CONFIG HELP."));
    assert_eq!(c.call(&["CONFIG"]), error("ERR wrong number of arguments for 'config' command"));
}

#[test]
fn command_count_docs_info() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let n = as_int(&c.call(&["COMMAND", "COUNT"]));
    assert!(n >= 40, "{n}");
    let docs = c.call(&["COMMAND", "DOCS", "get"]);
    assert!(docs.starts_with("*2\r\n$3\r\nget\r\n"), "{docs}");
    assert!(docs.contains("$7\r\nsummary\r\n$22\r\nGet the value of a key\r\n$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$6\r\nstring\r\n"), "{docs}");
    assert_eq!(c.call(&["COMMAND", "DOCS", "nosuchcommand"]), "*0\r\n");
    let info = c.call(&["COMMAND", "INFO", "get", "nosuchcommand"]);
    assert!(info.starts_with("*2\r\n*10\r\n$3\r\nget\r\n:2\r\n"), "{info}");
    assert!(info.ends_with("*0\r\n$-1\r\n"), "an unknown command is a null: {info}");
    assert!(c.call(&["COMMAND"]).starts_with('*'));
    assert_eq!(c.call(&["COMMAND", "nosuch"]), error("ERR unknown subcommand 'nosuch'. Try COMMAND HELP."));
    assert_eq!(c.call(&["COMMAND", "COUNT", "x"]), error("ERR wrong number of arguments for 'command|count' command"));
}

#[test]
fn info_sections() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("info");
    assert_eq!(c.call(&["SET", &k, "v"]), OK);
    let all = c.call(&["INFO"]);
    for field in [
        "# Server\r\n",
        "\r\nredis_version:",
        "\r\nredis_mode:standalone\r\n",
        "\r\nprocess_id:",
        "\r\nuptime_in_seconds:",
        "# Clients\r\n",
        "\r\nconnected_clients:",
        "\r\nmaxclients:",
        "# Memory\r\n",
        "\r\nused_memory:",
        "\r\nmaxmemory:",
        "# Stats\r\n",
        "\r\ntotal_connections_received:",
        "\r\ntotal_commands_processed:",
        "\r\nkeyspace_hits:",
        "\r\nkeyspace_misses:",
        "# Keyspace\r\n",
    ] {
        assert!(all.contains(field), "INFO lacks {field:?}");
    }
    assert!(all.starts_with('$'), "RESP2: a bulk string");
    let clients = c.call(&["INFO", "clients"]);
    assert!(clients.contains("# Clients\r\nconnected_clients:") && !clients.contains("# Server"), "{clients}");
    assert!(c.call(&["INFO", "keyspace"]).contains("\r\ndb0:keys="));
    assert_eq!(c.call(&["INFO", "nosuchsection"]), bulk(""));
    assert!(c.call(&["HELLO", "3"]).starts_with('%'));
    let r3 = c.call(&["INFO", "server"]);
    assert!(r3.starts_with('=') && r3.contains("\r\ntxt:# Server\r\n"), "RESP3: verbatim text: {r3}");
}

#[test]
fn module_and_cluster_commands_of_a_server_without_them() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    // No modules: an empty list; loading is refused as Redis's default
    // `enable-module-command no` refuses it.
    assert_eq!(c.call(&["MODULE", "LIST"]), "*0\r\n");
    let refused = error(
        "ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
    );
    assert_eq!(c.call(&["MODULE", "LOAD", "/nonexistent.so"]), refused);
    assert_eq!(c.call(&["MODULE", "LOADEX", "/nonexistent.so"]), refused);
    assert_eq!(c.call(&["MODULE", "UNLOAD", "search"]), refused);
    assert_eq!(c.call(&["MODULE", "FOO"]), error("ERR unknown subcommand 'FOO'. Try MODULE HELP."));
    assert_eq!(c.call(&["MODULE"]), error("ERR wrong number of arguments for 'module' command"));
    assert_eq!(c.call(&["MODULE", "LIST", "x"]), error("ERR wrong number of arguments for 'module|list' command"));
    assert!(c.call(&["MODULE", "HELP"]).starts_with("*11\r\n+MODULE <subcommand> [<arg> [value] [opt] ...]."));
    // The (empty) modules section, in plain INFO too.
    assert_eq!(c.call(&["INFO", "modules"]), bulk("# Modules\r\n"));
    let info = c.call(&["INFO"]);
    assert!(info.contains("\r\n# Modules\r\n\r\n"), "{info}");
    // Cluster commands of a server without cluster mode.
    let disabled = error("ERR This instance has cluster support disabled");
    assert_eq!(c.call(&["READONLY"]), disabled);
    assert_eq!(c.call(&["READWRITE"]), disabled);
}
