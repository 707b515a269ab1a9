//! ACL users on the RESP port, black-box: ACL SETUSER GETUSER DELUSER
//! LIST USERS WHOAMI CAT GENPASS, AUTH and HELLO AUTH as a user, NOPERM
//! for commands, subcommands and keys (batched GET/MGET pipelines and
//! MULTI included), and Redis 7.0's error texts. Runs against amalgam and,
//! in CI, against redis-server 7 (`AMALGAM_TEST_RESP_ADDR`): every user is
//! named by [`key`], so tests sharing a server never meet.
mod common;
use common::resp::*;
use common::*;

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
const NOPERM_KEYS: &str = "NOPERM this user has no permissions to access one of the keys used as arguments";

fn noperm(cmd: &str) -> String {
    error(&format!("NOPERM this user has no permissions to run the '{cmd}' command"))
}

/// The ACL LIST line of `user`.
fn list_line(c: &mut Resp, user: &str) -> String {
    let list = c.call(&["ACL", "LIST"]);
    let prefix = format!("user {user} ");
    list.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no {user} in {list}")).to_string()
}

#[test]
fn setuser_list_and_getuser_show_redis_rules() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let u = key("acl-u");
    assert_eq!(c.call(&["ACL", "SETUSER", &u, "on", ">pw1", "~k*", "+get", "+@string", "-set"]), OK);
    // SHA-256("pw1"), as Redis stores and shows it.
    let hash = "c592df4a86933b92addc9842402ddf198c638ea9be58916ee6e3734e1e3152f8";
    assert_eq!(list_line(&mut c, &u), format!("user {u} on #{hash} ~k* resetchannels -@all +@string -set"));
    assert_eq!(
        c.call(&["ACL", "GETUSER", &u]),
        format!(
            "*12\r\n$5\r\nflags\r\n*1\r\n$2\r\non\r\n$9\r\npasswords\r\n*1\r\n{}$8\r\ncommands\r\n{}$4\r\nkeys\r\n{}$8\r\nchannels\r\n$0\r\n\r\n$9\r\nselectors\r\n*0\r\n",
            bulk(hash),
            bulk("-@all +@string -set"),
            bulk("~k*")
        )
    );
    // A new user is off, has no password, commands or keys.
    let v = key("acl-v");
    assert_eq!(c.call(&["ACL", "SETUSER", &v]), OK);
    assert_eq!(list_line(&mut c, &v), format!("user {v} off resetchannels -@all"));
    // Rules as Redis folds them.
    for (rules, want) in [
        (&["reset", "+get", "-get"][..], "-@all"),
        (&["reset", "+@string", "+get"][..], "-@all +@string"),
        (&["reset", "+@all", "-get", "+@read"][..], "+@all"),
        (&["reset", "allcommands", "-@dangerous"][..], "+@all -@dangerous"),
        (&["reset", "+@all", "-config|set"][..], "+@all -config|set"),
        (&["reset", "-@all", "+get", "+set", "-get"][..], "-@all +set"),
    ] {
        let mut args = vec!["ACL", "SETUSER", &v];
        args.extend_from_slice(rules);
        assert_eq!(c.call(&args), OK);
        assert!(
            list_line(&mut c, &v).ends_with(&format!("resetchannels {want}")),
            "{rules:?}: {}",
            list_line(&mut c, &v)
        );
    }
    assert_eq!(c.call(&["ACL", "SETUSER", &v, "reset", "~a", "allkeys", "nopass", "on"]), OK);
    assert_eq!(list_line(&mut c, &v), format!("user {v} on nopass sanitize-payload ~* resetchannels -@all"));
    let users = c.call(&["ACL", "USERS"]);
    assert!(users.contains(&bulk(&u)) && users.contains(&bulk(&v)) && users.contains(&bulk("default")), "{users}");
    assert_eq!(c.call(&["ACL", "DELUSER", &u, &v, &key("acl-nosuch")]), int(2));
    assert_eq!(c.call(&["ACL", "GETUSER", &u]), NULL2);
}

#[test]
fn setuser_errors_change_nothing() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let u = key("acl-err");
    let modifier = |op: &str, why: &str| error(&format!("ERR Error in ACL SETUSER modifier '{op}': {why}"));
    let unknown = "Unknown command or category name in ACL";
    assert_eq!(c.call(&["ACL", "SETUSER", &u, "on", "+nosuchcmd"]), modifier("+nosuchcmd", unknown));
    assert_eq!(c.call(&["ACL", "GETUSER", &u]), NULL2, "nothing was created");
    assert_eq!(c.call(&["ACL", "SETUSER", &u, "+@nosuch"]), modifier("+@nosuch", unknown));
    assert_eq!(c.call(&["ACL", "SETUSER", &u, "bogus"]), modifier("bogus", "Syntax error"));
    assert_eq!(
        c.call(&["ACL", "SETUSER", &u, "<nope"]),
        modifier("<nope", "The password you are trying to remove from the user does not exist")
    );
    assert_eq!(
        c.call(&["ACL", "SETUSER", &u, "#abc"]),
        modifier(
            "#abc",
            "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
        )
    );
    assert_eq!(
        c.call(&["ACL", "SETUSER", &u, "allkeys", "~d"]),
        modifier("~d", "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
    );
    assert_eq!(c.call(&["ACL", "SETUSER", "a b"]), error("ERR Usernames can't contain spaces or null characters"));
    assert_eq!(c.call(&["ACL", "DELUSER", "default"]), error("ERR The 'default' user cannot be removed"));
    assert_eq!(c.call(&["ACL", "CAT", "nosuch"]), error("ERR Unknown category 'nosuch'"));
    assert_eq!(c.call(&["ACL", "NOSUCH"]), error("ERR unknown subcommand 'NOSUCH'. Try ACL HELP."));
    assert_eq!(c.call(&["ACL", "WHOAMI", "x"]), error("ERR wrong number of arguments for 'acl|whoami' command"));
    assert_eq!(
        c.call(&["ACL", "GENPASS", "0"]),
        error(
            "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"
        )
    );
    assert_eq!(c.call(&["ACL", "GENPASS", "5"]).len(), "$2\r\nxx\r\n".len());
    assert_eq!(c.call(&["ACL", "GENPASS"]).len(), "$64\r\n\r\n".len() + 64);
}

#[test]
fn acl_cat_lists_categories_and_their_commands() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let cats = c.call(&["ACL", "CAT"]);
    for cat in [
        "read",
        "write",
        "keyspace",
        "string",
        "hash",
        "list",
        "set",
        "sortedset",
        "admin",
        "dangerous",
        "fast",
        "slow",
    ] {
        assert!(cats.contains(&bulk(cat)), "{cat} in {cats}");
    }
    let string = c.call(&["ACL", "CAT", "string"]);
    assert!(string.contains(&bulk("get")) && string.contains(&bulk("mset")) && !string.contains(&bulk("hget")));
    let admin = c.call(&["ACL", "CAT", "admin"]);
    assert!(
        admin.contains(&bulk("config|set")) && admin.contains(&bulk("acl|setuser")) && !admin.contains(&bulk("get"))
    );
}

#[test]
fn a_user_runs_only_its_commands_on_its_keys() {
    let Some(server) = resp_server() else { return };
    let mut admin = Resp::new(&server);
    let u = key("acl-runner");
    let (mine, other) = (format!("{u}:k"), key("acl-other"));
    assert_eq!(admin.call(&["SET", &mine, "1"]), OK);
    assert_eq!(admin.call(&["SET", &other, "2"]), OK);
    let pattern = format!("~{u}:*");
    assert_eq!(
        admin.call(&["ACL", "SETUSER", &u, "on", ">pw", &pattern, "+@read", "+multi", "+exec", "+acl|whoami"]),
        OK
    );
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["AUTH", &u, "wrong"]), error(WRONGPASS));
    assert_eq!(c.call(&["AUTH", &u, "pw"]), OK);
    assert_eq!(c.call(&["ACL", "WHOAMI"]), bulk(&u));
    let me = admin.call(&["CLIENT", "LIST"]);
    assert!(me.contains(&format!(" user={u} ")), "CLIENT LIST shows the user: {me}");
    assert_eq!(c.call(&["GET", &mine]), bulk("1"));
    assert_eq!(c.call(&["GET", &other]), error(NOPERM_KEYS));
    assert_eq!(c.call(&["SET", &mine, "x"]), noperm("set"));
    assert_eq!(c.call(&["ACL", "LIST"]), noperm("acl|list"));
    assert_eq!(c.call(&["CONFIG", "GET", "maxmemory"]), noperm("config|get"));
    // A pipeline of GETs and MGETs: each checked, in order.
    c.send(&["GET", &mine]);
    c.send(&["GET", &other]);
    c.send(&["MGET", &mine, &other]);
    c.send(&["MGET", &mine, &mine]);
    c.send(&["SET", &mine, "y"]);
    assert_eq!(c.reply(), bulk("1"));
    assert_eq!(c.reply(), error(NOPERM_KEYS));
    assert_eq!(c.reply(), error(NOPERM_KEYS));
    assert_eq!(c.reply(), format!("*2\r\n{}{}", bulk("1"), bulk("1")));
    assert_eq!(c.reply(), noperm("set"));
    // Inside MULTI a refused command makes EXEC abort.
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["GET", &mine]), "+QUEUED\r\n");
    assert_eq!(c.call(&["GET", &other]), error(NOPERM_KEYS));
    assert_eq!(c.call(&["EXEC"]), error("EXECABORT Transaction discarded because of previous errors."));
    // Rules changed by another connection apply to the next request.
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "+set"]), OK);
    assert_eq!(c.call(&["SET", &mine, "z"]), OK);
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "allkeys"]), OK);
    assert_eq!(c.call(&["GET", &other]), bulk("2"));
    // A disabled user cannot authenticate; its open connections go on.
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "off"]), OK);
    let mut d = Resp::new(&server);
    assert_eq!(d.call(&["AUTH", &u, "pw"]), error(WRONGPASS));
    assert_eq!(c.call(&["GET", &mine]), bulk("z"));
    // Deleting the user closes its connections.
    assert_eq!(admin.call(&["ACL", "DELUSER", &u]), int(1));
    c.send(&["PING"]);
    assert!(c.closed(), "a deleted user's connection is closed");
}

#[test]
fn subcommand_rules_and_hello_auth_as_a_user() {
    let Some(server) = resp_server() else { return };
    let mut admin = Resp::new(&server);
    let u = key("acl-sub");
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "on", "nopass", "allkeys", "+@all", "-config|set"]), OK);
    let mut c = Resp::new(&server);
    let hello = c.call(&["HELLO", "3", "AUTH", &u, "anything"]);
    assert!(hello.starts_with("%7\r\n"), "{hello:?}");
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "1"]), noperm("config|set"));
    assert!(c.call(&["CONFIG", "GET", "maxmemory"]).starts_with('%'), "config|get is allowed");
    assert_eq!(c.call(&["ACL", "WHOAMI"]), bulk(&u));
    // A container rule covers every subcommand.
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "-config"]), OK);
    assert_eq!(c.call(&["CONFIG", "GET", "maxmemory"]), noperm("config|get"));
    // A category: -@write refuses every write, and only writes.
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "-@write"]), OK);
    let k = key("acl-sub-k");
    assert_eq!(c.call(&["SET", &k, "1"]), noperm("set"));
    assert_eq!(c.call(&["LPUSH", &k, "1"]), noperm("lpush"));
    assert_eq!(c.call(&["GET", &k]), "_\r\n");
    // AUTH, HELLO and QUIT need no permission.
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "nocommands"]), OK);
    assert_eq!(c.call(&["GET", &k]), noperm("get"));
    assert_eq!(c.call(&["AUTH", &u, "x"]), OK);
    assert!(c.call(&["HELLO", "3"]).starts_with("%7\r\n"));
    assert_eq!(c.call(&["QUIT"]), OK);
    assert_eq!(admin.call(&["ACL", "DELUSER", &u]), int(1));
}

#[test]
fn aclfile_load_and_save() {
    // Amalgam's own server: ACL SAVE and LOAD rewrite its users.
    let path = std::env::temp_dir().join(format!("amalgam-aclfile-{}", std::process::id()));
    std::fs::write(&path, "user default on nopass ~* &* +@all\nuser alice on >pw ~a* resetchannels -@all +get\n")
        .unwrap();
    let file = path.to_string_lossy().into_owned();
    let Some(server) = resp_private(&["--aclfile", &file]) else { return };
    let mut admin = Resp::new(&server);
    assert!(list_line(&mut admin, "alice").ends_with(" ~a* resetchannels -@all +get"));
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["AUTH", "alice", "pw"]), OK);
    assert_eq!(c.call(&["GET", "b"]), error(NOPERM_KEYS));
    assert_eq!(admin.call(&["ACL", "SETUSER", "bob", "on", "nopass", "+@all"]), OK);
    assert_eq!(admin.call(&["ACL", "SAVE"]), OK);
    let saved = std::fs::read_to_string(&path).unwrap();
    assert!(saved.contains("user bob on nopass resetchannels +@all\n"), "{saved}");
    assert!(!saved.contains(">pw") && saved.contains("user alice on #"), "hashed: {saved}");
    // LOAD replaces every user with the file's: alice goes, and so does
    // her connection.
    std::fs::write(&path, "user default on nopass ~* &* +@all\nuser carol on nopass +@all\n").unwrap();
    assert_eq!(admin.call(&["ACL", "LOAD"]), OK);
    let users = admin.call(&["ACL", "USERS"]);
    assert_eq!(users, format!("*2\r\n{}{}", bulk("carol"), bulk("default")));
    c.send(&["PING"]);
    assert!(c.closed());
    // A bad file changes nothing.
    std::fs::write(&path, "user dave on +nosuch\n").unwrap();
    assert!(admin.call(&["ACL", "LOAD"]).starts_with("-ERR "));
    assert_eq!(admin.call(&["ACL", "USERS"]), users);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn acl_save_without_a_file() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let no_file = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";
    assert_eq!(c.call(&["ACL", "SAVE"]), error(no_file));
    assert_eq!(c.call(&["ACL", "LOAD"]), error(no_file));
}
