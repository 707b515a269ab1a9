//! Issue 18 item 7: INCRBYFLOAT never answers (or stores) negative zero,
//! as Redis's `ld2string` turns "-0" into "0". Runs against amalgam and,
//! in CI, against redis-server 7.0 (`AMALGAM_TEST_RESP_ADDR`).
mod common;
use common::resp::*;
use common::*;

#[test]
fn incrbyfloat_never_answers_negative_zero() {
    let Some(server) = resp_server() else { return };
    let mut c = Resp::new(&server);
    let k = key("negzero");
    for inc in ["-0.0", "-0", "-0e5", "-.0", "-1e-30", "-0.0000000000000000001", "-5e-324"] {
        assert_eq!(c.call(&["DEL", &k]).len(), 4);
        assert_eq!(c.call(&["INCRBYFLOAT", &k, inc]), bulk("0"), "missing key + {inc}");
        assert_eq!(c.call(&["GET", &k]), bulk("0"), "stored as 0 after {inc}");
    }
    for (start, inc) in
        [("-0", "-0.0"), ("1", "-1"), ("0.1", "-0.1"), ("3.0", "-3"), ("-1e-400", "0"), ("1e-30", "-1e-30")]
    {
        assert_eq!(c.call(&["SET", &k, start]), OK);
        assert_eq!(c.call(&["INCRBYFLOAT", &k, inc]), bulk("0"), "{start} + {inc}");
    }
}
