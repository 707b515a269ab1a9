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
    // The directory goes when `dir` drops, the early return against an
    // external server included.
    let dir = TempDir::new("aclfile");
    let path =
        dir.file("users.acl", "user default on nopass ~* &* +@all\nuser alice on >pw ~a* resetchannels -@all +get\n");
    let file = path.to_string_lossy().into_owned();
    let Some(server) = resp_private(&["--aclfile", &file]) else { return };
    let mut admin = Resp::new(&server);
    assert!(list_line(&mut admin, "alice").ends_with(" ~a* resetchannels -@all +get"));
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["AUTH", "alice", "pw"]), OK);
    assert_eq!(c.call(&["GET", "b"]), error(NOPERM_KEYS));
    assert_eq!(admin.call(&["ACL", "SETUSER", "bob", "on", "nopass", "+@all", "(~b*", "+get)"]), OK);
    assert_eq!(admin.call(&["ACL", "SAVE"]), OK);
    let saved = std::fs::read_to_string(&path).unwrap();
    assert!(saved.contains("user bob on nopass resetchannels +@all (~b* resetchannels -@all +get)\n"), "{saved}");
    // What SAVE wrote loads back the same, selectors included.
    let before = admin.call(&["ACL", "LIST"]);
    assert_eq!(admin.call(&["ACL", "LOAD"]), OK);
    assert_eq!(admin.call(&["ACL", "LIST"]), before);
    assert!(c.closed(), "LOAD closes the clients of every user but default");
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["AUTH", "alice", "pw"]), OK);
    assert!(!saved.contains(">pw") && saved.contains("user alice on #"), "hashed: {saved}");
    // LOAD replaces every user with the file's: alice goes, and so does
    // her connection.
    std::fs::write(&path, "user default on nopass ~* &* +@all\nuser carol on nopass +@all\n").unwrap();
    assert_eq!(admin.call(&["ACL", "LOAD"]), OK);
    let users = admin.call(&["ACL", "USERS"]);
    assert_eq!(users, format!("*2\r\n{}{}", bulk("carol"), bulk("default")));
    c.send(&["PING"]);
    assert!(c.closed());
    // Redis 7.0 closes every client of a user but `default` at ACL LOAD,
    // kept users' too, without waiting for their next command.
    let mut carol = Resp::new(&server);
    assert_eq!(carol.call(&["AUTH", "carol", "x"]), OK);
    let mut plain = Resp::new(&server);
    assert_eq!(plain.call(&["PING"]), "+PONG\r\n");
    assert_eq!(admin.call(&["ACL", "LOAD"]), OK);
    assert!(carol.closed(), "carol's client is closed");
    assert_eq!(plain.call(&["PING"]), "+PONG\r\n", "default's clients stay");
    // A bad file changes nothing.
    std::fs::write(&path, "user dave on +nosuch\n").unwrap();
    assert!(admin.call(&["ACL", "LOAD"]).starts_with("-ERR "));
    assert_eq!(admin.call(&["ACL", "USERS"]), users);
}

#[test]
fn acl_save_without_a_file() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let no_file = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";
    assert_eq!(c.call(&["ACL", "SAVE"]), error(no_file));
    assert_eq!(c.call(&["ACL", "LOAD"]), error(no_file));
}

/// The ACL LOG entries (RESP2) whose username is `user`, newest first,
/// each as its (field, value) pairs.
fn log_of(c: &mut Resp, user: &str) -> Vec<Vec<(String, V)>> {
    let log = call(c, &["ACL", "LOG", "1000"]);
    log.array()
        .iter()
        .map(|e| e.array().chunks(2).map(|kv| (kv[0].bulk().to_string(), kv[1].clone())).collect::<Vec<_>>())
        .filter(|e: &Vec<(String, V)>| e[4].1 == V::Bulk(user.to_string()))
        .collect()
}

/// An entry's count, reason, context and object.
fn summary(e: &[(String, V)]) -> (i64, String, String, String) {
    (e[0].1.int(), e[1].1.bulk().into(), e[2].1.bulk().into(), e[3].1.bulk().into())
}

#[test]
fn acl_log_records_refusals_and_failed_auth() {
    let Some(server) = resp_server() else { return };
    let mut admin = Resp::new(&server);
    let u = key("acl-log");
    let (mine, other) = (format!("{u}:k"), key("acl-log-other"));
    let (keys, channels) = (format!("~{u}:*"), format!("&{u}:*"));
    assert_eq!(
        admin.call(&["ACL", "SETUSER", &u, "on", ">pw", &keys, &channels, "+get", "+publish", "+multi", "+exec"]),
        OK
    );
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["AUTH", &u, "pw"]), OK);
    assert_eq!(c.call(&["GET", &other]), error(NOPERM_KEYS));
    assert_eq!(c.call(&["SET", &mine, "1"]), noperm("set"));
    // The same refusal again: one entry, counted twice, moved to the front.
    assert_eq!(c.call(&["GET", &other]), error(NOPERM_KEYS));
    assert_eq!(
        c.call(&["PUBLISH", "elsewhere", "m"]),
        error("NOPERM this user has no permissions to access one of the channels used as arguments")
    );
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["GET", &other]), error(NOPERM_KEYS));
    assert_eq!(c.call(&["EXEC"]), error("EXECABORT Transaction discarded because of previous errors."));
    // Rules changed between MULTI and EXEC: Redis's EXEC-time refusal.
    assert_eq!(c.call(&["MULTI"]), OK);
    assert_eq!(c.call(&["GET", &mine]), "+QUEUED\r\n");
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "-get"]), OK);
    assert_eq!(
        c.call(&["EXEC"]),
        "*1\r\n-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand\r\n"
    );
    // Failed authentications: the command as typed, the user as given.
    let mut d = Resp::new(&server);
    assert_eq!(d.call(&["auth", &u, "wrong"]), error(WRONGPASS));
    assert_eq!(d.call(&["HeLLo", "3", "AUTH", &u, "wrong"]), error(WRONGPASS));
    let nobody = key("acl-log-nobody");
    assert_eq!(d.call(&["AUTH", &nobody, "x"]), error(WRONGPASS));

    let log = log_of(&mut admin, &u);
    let fields: Vec<&str> = log[0].iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(fields, ["count", "reason", "context", "object", "username", "age-seconds", "client-info"]);
    let got: Vec<_> = log.iter().map(|e| summary(e)).collect();
    let want = [
        (1, "auth", "toplevel", "HeLLo"),
        (1, "auth", "toplevel", "auth"),
        (1, "command", "multi", "get"),
        (1, "key", "multi", other.as_str()),
        (1, "channel", "toplevel", "elsewhere"),
        (2, "key", "toplevel", other.as_str()),
        (1, "command", "toplevel", "set"),
    ];
    let want: Vec<_> = want.iter().map(|&(n, r, c, o)| (n, r.to_string(), c.to_string(), o.to_string())).collect();
    assert_eq!(got, want);
    // client-info: the client's CLIENT LIST line at the refusal.
    let info = |e: &[(String, V)]| e[6].1.bulk().to_string();
    assert!(info(&log[5]).starts_with("id=") && info(&log[5]).contains(" cmd=get user="), "{}", info(&log[5]));
    assert!(info(&log[0]).contains(" cmd=hello user=default "), "{}", info(&log[0]));
    assert!(info(&log[6]).contains(&format!(" cmd=set user={u} ")), "{}", info(&log[6]));
    let age: f64 = log[0][5].1.bulk().parse().unwrap();
    assert!((0.0..60.0).contains(&age), "{age}");
    let unknown = log_of(&mut admin, &nobody);
    assert_eq!(summary(&unknown[0]), (1, "auth".into(), "toplevel".into(), "AUTH".into()));
    // The count argument.
    assert_eq!(call(&mut admin, &["ACL", "LOG", "1"]).array().len(), 1);
    assert_eq!(admin.call(&["ACL", "LOG", "-1"]), "*0\r\n");
    assert_eq!(admin.call(&["ACL", "LOG", "0"]), "*0\r\n");
    assert_eq!(admin.call(&["ACL", "LOG", "x"]), error("ERR value is not an integer or out of range"));
    assert_eq!(
        admin.call(&["ACL", "log", "1", "2"]),
        error("ERR unknown subcommand or wrong number of arguments for 'log'. Try ACL HELP.")
    );
    assert_eq!(admin.call(&["ACL", "DELUSER", &u]), int(1));
}

#[test]
fn acl_log_reset_max_len_and_resp3() {
    // Amalgam's own server: RESET and acllog-max-len change the one log.
    let Some(server) = resp_private(&["--acllog-max-len", "5"]) else { return };
    let mut admin = Resp::new(&server);
    assert_eq!(admin.config_get("acllog-max-len"), "5");
    assert_eq!(admin.call(&["CONFIG", "SET", "acllog-max-len", "2"]), OK);
    assert_eq!(admin.config_get("acllog-max-len"), "2");
    assert_eq!(admin.call(&["ACL", "SETUSER", "lu", "on", "nopass", "~a", "+get"]), OK);
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["AUTH", "lu", "x"]), OK);
    for k in ["b", "c", "d"] {
        assert_eq!(c.call(&["GET", k]), error(NOPERM_KEYS));
    }
    let log = log_of(&mut admin, "lu");
    let objects: Vec<String> = log.iter().map(|e| summary(e).3).collect();
    assert_eq!(objects, ["d", "c"], "trimmed to acllog-max-len");
    // RESP3: a map per entry, the age a double.
    assert!(admin.call(&["HELLO", "3"]).starts_with('%'));
    let r = admin.call(&["ACL", "LOG", "1"]);
    assert!(
        r.starts_with("*1\r\n%7\r\n$5\r\ncount\r\n:1\r\n$6\r\nreason\r\n$3\r\nkey\r\n$7\r\ncontext\r\n$8\r\ntoplevel\r\n$6\r\nobject\r\n$1\r\nd\r\n$8\r\nusername\r\n$2\r\nlu\r\n$11\r\nage-seconds\r\n,"),
        "{r:?}"
    );
    assert_eq!(admin.call(&["ACL", "LOG", "RESET"]), OK);
    assert_eq!(admin.call(&["ACL", "LOG"]), "*0\r\n");
    assert_eq!(
        admin.call(&["CONFIG", "SET", "acllog-max-len", "-1"]),
        error("ERR CONFIG SET failed (possibly related to argument 'acllog-max-len') - argument must be between 0 and 9223372036854775807 inclusive")
    );
}

#[test]
fn acl_dryrun_answers_as_redis() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let u = key("acl-dry");
    let (keys, channels) = (format!("~{u}:*"), format!("&{u}:*"));
    assert_eq!(c.call(&["ACL", "SETUSER", &u, "on", "nopass", &keys, &channels, "+get", "+publish", "+auth"]), OK);
    let (mine, other) = (format!("{u}:k"), key("acl-dry-other"));
    let nobody = key("acl-dry-nobody");
    for (args, want) in [
        (vec!["GET", &mine], OK.to_string()),
        (vec!["get", &other], bulk(&format!("This user has no permissions to access the '{other}' key"))),
        (vec!["SET", &mine, "v"], bulk("This user has no permissions to run the 'set' command")),
        (vec!["CONFIG", "GET", "x"], bulk("This user has no permissions to run the 'config|get' command")),
        (vec!["PUBLISH", "elsewhere", "m"], bulk("This user has no permissions to access the 'elsewhere' channel")),
        (vec!["PUBLISH", &format!("{u}:ch"), "m"], OK.to_string()),
        (vec!["AUTH", "a", "b"], OK.to_string()),
        (vec!["nosuch", "k"], error("ERR Command 'nosuch' not found")),
        (vec!["CONFIG", "nosuch"], error("ERR Command 'CONFIG' not found")),
        (vec!["GET"], error("ERR wrong number of arguments for 'get' command")),
        (vec!["CONFIG"], error("ERR wrong number of arguments for 'config' command")),
        (vec!["CONFIG", "GET"], error("ERR wrong number of arguments for 'config|get' command")),
    ] {
        let mut all = vec!["ACL", "DRYRUN", &u];
        all.extend(args.iter().map(|a| &a[..]));
        assert_eq!(c.call(&all), want, "{args:?}");
    }
    assert_eq!(c.call(&["ACL", "DRYRUN", &nobody, "GET", "k"]), error(&format!("ERR User '{nobody}' not found")));
    assert_eq!(c.call(&["ACL", "DRYRUN", &u, "GET"]), error("ERR wrong number of arguments for 'get' command"));
    assert_eq!(c.call(&["ACL", "DRYRUN", &u]), error("ERR wrong number of arguments for 'acl|dryrun' command"));
    assert_eq!(c.call(&["ACL", "DELUSER", &u]), int(1));
}

#[test]
fn read_and_write_key_patterns() {
    let Some(server) = resp_server() else { return };
    let mut admin = Resp::new(&server);
    let u = key("acl-rw");
    let p = |prefix: &str, what: &str| format!("{prefix}{u}:{what}*");
    let (r, w, b) = (p("%R~", "r"), p("%W~", "w"), p("%RW~", "b"));
    let (c1, c2) = (p("%rw~", "c"), p("%Wr~", "c"));
    let (d1, d2) = (p("%R~", "d"), p("%W~", "d"));
    assert_eq!(
        admin.call(&["ACL", "SETUSER", &u, "reset", "on", "nopass", "+@all", &r, &w, &b, &c1, &c2, &d1, &d2]),
        OK
    );
    // %RW~ is shown as ~, and a pattern given twice grants both.
    let keys = format!("%R~{u}:r* %W~{u}:w* ~{u}:b* ~{u}:c* ~{u}:d*");
    assert_eq!(list_line(&mut admin, &u), format!("user {u} on nopass sanitize-payload {keys} resetchannels +@all"));
    let getuser = call(&mut admin, &["ACL", "GETUSER", &u]);
    assert_eq!(getuser.array()[7], V::Bulk(keys));
    let k = |what: &str| format!("{u}:{what}1");
    let (rk, wk, bk, dk) = (k("r"), k("w"), k("b"), k("d"));
    let no = |key: &str| bulk(&format!("This user has no permissions to access the '{key}' key"));
    // Each as Redis 7.0.15's ACL DRYRUN answers: reads need R, writes W.
    for (args, want) in [
        (vec!["GET", &rk], OK.to_string()),
        (vec!["GET", &wk], no(&wk)),
        (vec!["SET", &wk, "v"], OK.to_string()),
        (vec!["SET", &rk, "v"], no(&rk)),
        (vec!["SET", &wk, "v", "GET"], no(&wk)),
        (vec!["SET", &bk, "v", "GET"], OK.to_string()),
        (vec!["SET", &dk, "v", "GET"], OK.to_string()),
        (vec!["DEL", &wk], OK.to_string()),
        (vec!["DEL", &rk], no(&rk)),
        (vec!["EXISTS", &wk], OK.to_string()),
        (vec!["INCR", &wk], no(&wk)),
        (vec!["COPY", &rk, &wk], OK.to_string()),
        (vec!["RENAME", &rk, &wk], no(&rk)),
        (vec!["LMOVE", &bk, &wk, "LEFT", "RIGHT"], OK.to_string()),
        (vec!["BITFIELD", &rk, "GET", "u8", "0", "OVERFLOW", "WRAP"], OK.to_string()),
        (vec!["BITFIELD", &rk, "SET", "u8", "0", "1"], no(&rk)),
        (vec!["BITFIELD", &bk, "INCRBY", "u8", "0", "1"], OK.to_string()),
        (vec!["MGET", &rk, &wk], no(&wk)),
        (vec!["MSET", &wk, "v", &rk, "v"], no(&rk)),
        (vec!["GETDEL", &wk], no(&wk)),
        (vec!["BITOP", "AND", &wk, &rk], OK.to_string()),
    ] {
        let mut all = vec!["ACL", "DRYRUN", &u];
        all.extend(args.iter().map(|a| &a[..]));
        assert_eq!(admin.call(&all), want, "{args:?}");
    }
    // The same check on a connection of the user's.
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["AUTH", &u, "x"]), OK);
    assert_eq!(c.call(&["SET", &wk, "v"]), OK);
    assert_eq!(c.call(&["GET", &wk]), error(NOPERM_KEYS));
    assert_eq!(c.call(&["SET", &rk, "v"]), error(NOPERM_KEYS));
    assert_eq!(c.call(&["GET", &rk]), "$-1\r\n");
    assert_eq!(c.call(&["COPY", &wk, &bk]), error(NOPERM_KEYS));
    let modifier = |op: &str, why: &str| error(&format!("ERR Error in ACL SETUSER modifier '{op}': {why}"));
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "%X~a"]), modifier("%X~a", "Syntax error"));
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "%RR~a"]), modifier("%RR~a", "Syntax error"));
    assert_eq!(admin.call(&["ACL", "DELUSER", &u]), int(1));
    assert_eq!(admin.call(&["DEL", &wk]), int(1));
}

#[test]
fn losing_a_channel_closes_the_users_subscribers() {
    let Some(server) = resp_server() else { return };
    let mut admin = Resp::new(&server);
    let u = key("acl-subs");
    let ch = |what: &str| format!("{u}:{what}");
    let all = format!("&{u}:*");
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "on", "nopass", "~*", &all, "+@all"]), OK);
    let login = || {
        let mut c = Resp::new(&server);
        assert_eq!(c.call(&["AUTH", &u, "x"]), OK);
        c
    };
    let (mut sub, mut psub, mut ssub, mut idle) = (login(), login(), login(), login());
    assert!(sub.call(&["SUBSCRIBE", &ch("a")]).starts_with("*3\r\n$9\r\nsubscribe\r\n"));
    assert!(psub.call(&["PSUBSCRIBE", &ch("*")]).starts_with("*3\r\n$10\r\npsubscribe\r\n"));
    assert!(ssub.call(&["SSUBSCRIBE", &ch("b")]).starts_with("*3\r\n$10\r\nssubscribe\r\n"));
    // More channels: nobody is closed.
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, &format!("&{u}x")]), OK);
    assert!(sub.silent() && psub.silent() && ssub.silent());
    // The pattern is no longer one of the user's (patterns compare
    // literally): its subscriber goes; channels still matched stay.
    let (a, b) = (format!("&{}", ch("a")), format!("&{}", ch("b")));
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "resetchannels", &a, &b]), OK);
    assert!(psub.closed(), "the pattern subscriber is closed");
    assert!(sub.silent() && ssub.silent());
    // No channel left: every subscriber goes, a client holding none stays.
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "resetchannels"]), OK);
    assert!(sub.closed() && ssub.closed());
    assert_eq!(idle.call(&["PING"]), "+PONG\r\n");
    // DELUSER closes the user's clients at once.
    assert_eq!(admin.call(&["ACL", "DELUSER", &u]), int(1));
    assert!(idle.closed(), "a deleted user's idle client is closed");
}

#[test]
fn selectors_grant_what_the_root_does_not() {
    let Some(server) = resp_server() else { return };
    let mut admin = Resp::new(&server);
    let u = key("acl-sel");
    let (a, b, c) = (format!("~{u}:a*"), format!("(~{u}:b*"), format!("(%R~{u}:c* +@string -append)"));
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "reset", "on", "nopass", &a, "+get", &b, "+set)", &c]), OK);
    let line = format!(
        "user {u} on nopass sanitize-payload ~{u}:a* resetchannels -@all +get (~{u}:b* resetchannels -@all +set) (%R~{u}:c* resetchannels -@all +@string -append)"
    );
    assert_eq!(list_line(&mut admin, &u), line);
    let sel = |commands: &str, keys: &str| {
        format!(
            "*6\r\n{}{}{}{}{}{}",
            bulk("commands"),
            bulk(commands),
            bulk("keys"),
            bulk(keys),
            bulk("channels"),
            bulk("")
        )
    };
    let getuser = admin.call(&["ACL", "GETUSER", &u]);
    let want_selectors = format!(
        "{}*2\r\n{}{}",
        bulk("selectors"),
        sel("-@all +set", &format!("~{u}:b*")),
        sel("-@all +@string -append", &format!("%R~{u}:c*"))
    );
    assert!(getuser.ends_with(&want_selectors), "{getuser}");
    let k = |what: &str| format!("{u}:{what}1");
    let no_key = |key: &str| bulk(&format!("This user has no permissions to access the '{key}' key"));
    for (args, want) in [
        (vec!["GET".to_string(), k("a")], OK.to_string()),
        (vec!["SET".to_string(), k("b"), "v".into()], OK.to_string()),
        (vec!["GET".to_string(), k("c")], OK.to_string()),
        // Every selector refuses: a key refusal is reported before a
        // command refusal.
        (vec!["SET".to_string(), k("a"), "v".into()], no_key(&k("a"))),
        (
            vec!["APPEND".to_string(), k("c"), "v".into()],
            bulk("This user has no permissions to run the 'append' command"),
        ),
        (vec!["HGET".to_string(), k("a"), "f".into()], bulk("This user has no permissions to run the 'hget' command")),
    ] {
        let mut all = vec!["ACL".to_string(), "DRYRUN".into(), u.clone()];
        all.extend(args.iter().cloned());
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        assert_eq!(admin.call(&all), want, "{args:?}");
    }
    // The same on a connection of the user's.
    let mut conn = Resp::new(&server);
    assert_eq!(conn.call(&["AUTH", &u, "x"]), OK);
    assert_eq!(conn.call(&["SET", &k("b"), "1"]), OK);
    assert_eq!(conn.call(&["SET", &k("a"), "1"]), error(NOPERM_KEYS));
    assert_eq!(conn.call(&["GET", &k("b")]), error(NOPERM_KEYS));
    assert_eq!(conn.call(&["STRLEN", &k("c")]), int(0));
    // Errors, as Redis 7.0.15's.
    let modifier = |op: &str, why: &str| error(&format!("ERR Error in ACL SETUSER modifier '{op}': {why}"));
    assert_eq!(
        admin.call(&["ACL", "SETUSER", &u, "on", "(+get", "~x*"]),
        error("ERR Unmatched parenthesis in acl selector starting at '(+get'.")
    );
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "(on)"]), modifier("(on)", "Syntax error"));
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "(reset)"]), modifier("(reset)", "Syntax error"));
    assert_eq!(
        admin.call(&["ACL", "SETUSER", &u, "(+nosuch)"]),
        modifier("(+nosuch)", "Unknown command or category name in ACL")
    );
    assert_eq!(list_line(&mut admin, &u), line, "a refused SETUSER changes nothing");
    // RESP3: the flags a set, each selector a map.
    assert!(admin.call(&["HELLO", "3"]).starts_with('%'));
    let getuser = admin.call(&["ACL", "GETUSER", &u]);
    assert!(getuser.starts_with("%6\r\n$5\r\nflags\r\n~3\r\n"), "{getuser}");
    assert!(getuser.contains(&format!("{}*2\r\n%3\r\n", bulk("selectors"))), "{getuser}");
    // clearselectors keeps the root rules.
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "clearselectors"]), OK);
    assert_eq!(
        list_line(&mut admin, &u),
        format!("user {u} on nopass sanitize-payload ~{u}:a* resetchannels -@all +get")
    );
    assert_eq!(conn.call(&["SET", &k("b"), "1"]), "-NOPERM this user has no permissions to run the 'set' command\r\n");
    assert_eq!(admin.call(&["ACL", "DELUSER", &u]), ":1\r\n");
    assert_eq!(admin.call(&["DEL", &k("b")]), ":1\r\n");
}

#[test]
fn default_users_subscribers_go_when_it_loses_their_channels() {
    // Amalgam's own server: the default user's rules change for every
    // client. As Redis 7.0.15 (checked by hand: the peer is shared).
    let Some(server) = resp_private(&[]) else { return };
    let mut admin = Resp::new(&server);
    let mut sub = Resp::new(&server);
    assert!(sub.call(&["SUBSCRIBE", "x1"]).starts_with("*3\r\n$9\r\nsubscribe\r\n"));
    let mut kept = Resp::new(&server);
    assert!(kept.call(&["SUBSCRIBE", "y1"]).starts_with("*3\r\n$9\r\nsubscribe\r\n"));
    assert_eq!(admin.call(&["ACL", "SETUSER", "default", "resetchannels", "&y*"]), OK);
    assert!(sub.closed(), "x1 is no longer the default user's");
    assert!(kept.silent());
    assert_eq!(admin.call(&["PING"]), "+PONG\r\n");
}

#[test]
fn a_pipeline_of_a_user_with_rules_is_checked_command_by_command() {
    // One write of GETs, SETs, MGETs and HSETs, some on keys the user may
    // not touch, some of commands it may not run: each answered in order
    // (amalgam batches the permitted ones and runs each refused one
    // alone), every permitted write made, every refusal logged.
    let Some(server) = resp_server() else { return };
    let mut admin = Resp::new(&server);
    let u = key("acl-pipe");
    let (mine, h, other) = (format!("{u}:k"), format!("{u}:h"), key("acl-pipe-other"));
    let pattern = format!("~{u}:*");
    assert_eq!(admin.call(&["ACL", "SETUSER", &u, "on", ">pw", &pattern, "+@string", "+hset", "+hget", "-mget"]), OK);
    assert_eq!(admin.call(&["SET", &other, "theirs"]), OK);
    let mut c = Resp::new(&server);
    assert_eq!(c.call(&["AUTH", &u, "pw"]), OK);
    let mut pipeline = Vec::new();
    let mut want = Vec::new();
    for i in 0..40 {
        let v = i.to_string();
        let (cmd, reply): (Vec<&str>, String) = match i % 8 {
            0 => (vec!["SET", &mine, &v], OK.to_string()),
            1 => (vec!["GET", &mine], bulk(&(i - 1).to_string())),
            2 => (vec!["GET", &other], error(NOPERM_KEYS)),
            3 => (vec!["SET", &other, "mine now"], error(NOPERM_KEYS)),
            4 => (vec!["MGET", &mine], noperm("mget")),
            5 => (vec!["HSET", &h, &v, &v], int(1)),
            6 => (vec!["HSET", &other, "f", "v"], error(NOPERM_KEYS)),
            _ => (vec!["LPUSH", &mine, "x"], noperm("lpush")),
        };
        let args: Vec<&[u8]> = cmd.iter().map(|a| a.as_bytes()).collect();
        pipeline.extend(encode(&args));
        want.push(reply);
    }
    c.send_raw(&pipeline);
    for (i, w) in want.iter().enumerate() {
        assert_eq!(&c.reply(), w, "reply {i}");
    }
    assert_eq!(admin.call(&["GET", &mine]), bulk("32"));
    assert_eq!(admin.call(&["GET", &other]), bulk("theirs"));
    assert_eq!(admin.call(&["HLEN", &h]), int(5));
    // Each kind of refusal is one ACL LOG entry whose count is how often
    // it happened (Redis groups a repeated refusal: the key ones by the
    // key, whichever command touched it).
    let mut counts: Vec<(i64, String, String)> = log_of(&mut admin, &u)
        .iter()
        .map(|e| {
            let (count, reason, _, object) = summary(e);
            (count, reason, object)
        })
        .collect();
    counts.sort();
    let mut expected = vec![
        (15, "key".to_string(), other.clone()),
        (5, "command".to_string(), "mget".to_string()),
        (5, "command".to_string(), "lpush".to_string()),
    ];
    expected.sort();
    assert_eq!(counts, expected);
    assert_eq!(admin.call(&["ACL", "DELUSER", &u]), int(1));
    assert_eq!(admin.call(&["DEL", &mine, &h, &other]), int(3));
}
