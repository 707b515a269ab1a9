//! LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]: the
//! longest common subsequence of two values, Redis 7.0's `lcsCommand`
//! step for step (the dynamic-programming table, then the walk back that
//! emits matching ranges from the end). A missing key is the empty string.
//!
//! The table takes (len1 + 1) × (len2 + 1) × 4 bytes; past the largest
//! string (`proto-max-bulk-len`, as Redis's) the command is refused with
//! Redis's error, so a worker never allocates more than that.

use super::strings::is_string;
use super::{int_arg, is, Arg, Ctx};
use amalgam_protocol::resp::{err, push_array, push_bulk, push_error, push_int, push_map};

const BOTH: &str = "ERR If you want both the length and indexes, please just use IDX.";
/// Redis 7.0's reply when a key holds another type.
const NOT_STRINGS: &str = "ERR The specified keys must contain string values";
const TOO_BIG: &str = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len";

pub fn lcs(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let (mut get_len, mut get_idx, mut with_len) = (false, false, false);
    let mut min_len: i64 = 0;
    let mut j = 3;
    while j < args.len() {
        let a: &[u8] = &args[j];
        let more = args.len() - j - 1;
        if is(a, "idx") {
            get_idx = true;
        } else if is(a, "len") {
            get_len = true;
        } else if is(a, "withmatchlen") {
            with_len = true;
        } else if is(a, "minmatchlen") && more >= 1 {
            match int_arg(&args[j + 1]) {
                Some(n) => min_len = n.max(0),
                None => return push_error(out, err::NOT_INTEGER.as_bytes()),
            }
            j += 1;
        } else {
            return push_error(out, err::SYNTAX.as_bytes());
        }
        j += 1;
    }
    if get_len && get_idx {
        return push_error(out, BOTH.as_bytes());
    }
    let store = &ctx.ks.store;
    // Redis 7.0: "The specified keys must contain string values".
    let (Some(a), Some(b)) = (
        store.get(&args[1], |it| is_string(&it).then(|| it.value().to_vec())).unwrap_or(Some(Vec::new())),
        store.get(&args[2], |it| is_string(&it).then(|| it.value().to_vec())).unwrap_or(Some(Vec::new())),
    ) else {
        return push_error(out, NOT_STRINGS.as_bytes());
    };
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u128 + 1) * (blen as u128 + 1);
    if cells * 4 > ctx.limits.bulk_bytes_max as u128 {
        return push_error(out, TOO_BIG.as_bytes());
    }
    let w = blen + 1;
    let mut dp = vec![0u32; cells as usize];
    for i in 1..=alen {
        for k in 1..=blen {
            dp[k + i * w] = if a[i - 1] == b[k - 1] {
                dp[k - 1 + (i - 1) * w] + 1
            } else {
                dp[k + (i - 1) * w].max(dp[k - 1 + i * w])
            };
        }
    }
    let total = dp[blen + alen * w];
    let mut idx = total as usize;
    let compute = get_idx || !get_len;
    let mut result = vec![0u8; if compute { idx } else { 0 }];
    // The ranges, in the order found (from the end of the strings).
    let mut ranges: Vec<[u64; 5]> = Vec::new();
    let (mut arange_start, mut arange_end, mut brange_start, mut brange_end) = (alen, 0usize, 0usize, 0usize);
    let (mut i, mut k) = (alen, blen);
    while compute && i > 0 && k > 0 {
        let mut emit = false;
        if a[i - 1] == b[k - 1] {
            result[idx - 1] = a[i - 1];
            if arange_start == alen {
                arange_start = i - 1;
                arange_end = i - 1;
                brange_start = k - 1;
                brange_end = k - 1;
            } else if arange_start == i && brange_start == k {
                arange_start -= 1;
                brange_start -= 1;
            } else {
                emit = true;
            }
            if arange_start == 0 || brange_start == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            k -= 1;
        } else {
            if dp[k + (i - 1) * w] > dp[k - 1 + i * w] {
                i -= 1;
            } else {
                k -= 1;
            }
            if arange_start != alen {
                emit = true;
            }
        }
        if emit {
            let match_len = (arange_end - arange_start + 1) as u64;
            if min_len == 0 || match_len >= min_len as u64 {
                ranges.push([
                    arange_start as u64,
                    arange_end as u64,
                    brange_start as u64,
                    brange_end as u64,
                    match_len,
                ]);
            }
            arange_start = alen;
        }
    }
    if get_idx {
        push_map(out, 2, ctx.proto());
        push_bulk(out, b"matches");
        push_array(out, ranges.len());
        for r in &ranges {
            push_array(out, 2 + usize::from(with_len));
            push_array(out, 2);
            push_int(out, r[0] as i64);
            push_int(out, r[1] as i64);
            push_array(out, 2);
            push_int(out, r[2] as i64);
            push_int(out, r[3] as i64);
            if with_len {
                push_int(out, r[4] as i64);
            }
        }
        push_bulk(out, b"len");
        push_int(out, i64::from(total));
    } else if get_len {
        push_int(out, i64::from(total));
    } else {
        push_bulk(out, &result);
    }
}
