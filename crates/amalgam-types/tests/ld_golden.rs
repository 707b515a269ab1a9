//! HINCRBYFLOAT against redis-server 7.0.15's own answers: 300 random
//! (value, increment) pairs recorded from the real server
//! (`hincrbyfloat_redis_7_0_15.txt`: "value increment reply" per line),
//! reproduced digit for digit by the software long double.

use amalgam_types::hash::Hash;
use amalgam_types::Thresholds;

#[test]
fn every_recorded_reply_matches() {
    let cases = include_str!("hincrbyfloat_redis_7_0_15.txt");
    let th = Thresholds::default();
    let mut n = 0;
    for line in cases.lines() {
        let mut it = line.split(' ');
        let (v, incr, want) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
        let mut h = Hash::new();
        h.insert(b"f", v.as_bytes(), &th);
        let got = h.incr_by_float(b"f", incr.as_bytes(), &th).unwrap();
        assert_eq!(String::from_utf8(got).unwrap(), want, "{v} + {incr}");
        n += 1;
    }
    assert_eq!(n, 300);
}
