//! SORT and SORT_RO: a list's, set's or sorted set's elements sorted
//! (numerically, or ALPHA as strings), optionally by weights read from
//! other keys (BY pattern), each answered with the element or the values
//! of other keys (GET pattern), windowed (LIMIT), ASC or DESC, returned
//! or stored as a list (STORE) — Redis 7.0's `sort.c`, its replies, error
//! texts and orders, on the collections of `typed.rs`.
//!
//! ## What SORT does, in Redis's order (`sortCommandGeneric`)
//! 1. The options, left to right ([`parse`]): the first bad one answers
//!    (a syntax error, LIMIT's integers, and — for a user who may not
//!    read every key — "BY/GET option of SORT denied due to insufficient
//!    ACL permissions."). A BY pattern without `*` (`nosort`) means no
//!    sort; SORT_RO knows no STORE.
//! 2. The key: missing is an empty list, a string or hash WRONGTYPE.
//! 3. A set under `nosort` would come out in its hash order, which differs
//!    between runs and replicas: called from a script or with STORE it is
//!    sorted ALPHA instead, as Redis does for determinism.
//! 4. LIMIT is clamped to the collection (an offset past the end is an
//!    empty window, a negative count is "to the end"). A list or sorted
//!    set under `nosort` loads only the window, in its own order (DESC from
//!    its end): the sorted set fast path, no sort at all.
//! 5. The weights: with BY, each element's weight is the value its
//!    pattern names (missing: 0, or "no weight", which sorts first under
//!    ALPHA); without, the element itself. Numeric weights are read as
//!    `strtod` reads the C string (leading spaces, hexadecimal, `inf`;
//!    not NaN, not out of range): one that is not a number answers "One or
//!    more scores can't be converted into double" and stores nothing.
//! 6. The sort ([`compare`], Redis's `sortCompare`): numbers, their ties
//!    broken by the elements' bytes; ALPHA compares the elements (or the
//!    BY weights) as C strings (`strcoll` in the C locale, what
//!    redis-server runs with), or byte for byte with STORE. With BY and a
//!    LIMIT window smaller than the collection, Redis sorts partially
//!    ([`partial_sort`], its `pqsort`, whose order of equal weights is its
//!    own); otherwise glibc's `qsort`, a stable merge sort: Rust's stable
//!    sort, so equal weights keep the collection's order, as there.
//! 7. The window, each element once or each GET pattern's value (`#` is
//!    the element; a missing key or field is nil, or an empty string in a
//!    STORE), replied or stored as a list (an empty result deletes the
//!    destination, whatever it held; a stored list has no expiry).
//!
//! ## Patterns name keys (Redis's `lookupKeyByPattern`)
//! The first `*` of a pattern is replaced by the element; `->field` after
//! it reads that field of a hash instead of a string. The key is made in
//! the caller's database ([`amalgam_commands::db`]: its stored form). A key that is
//! not a string (or not a hash, for `->`) reads as missing.
//!
//! ## Pattern keys and atomicity
//! Redis runs SORT alone, so its pattern reads see one instant. Here a
//! command runs with its keys' buckets held (`Store::atomically`), and
//! the keys a pattern names are not known before the collection is read
//! (Redis declares them `unknown`). A SORT run on its own finds them
//! first (a read of the collection, [`pattern_keys`]), then holds the
//! sorted key, the destination and all of them, and sorts; if the
//! collection changed between the two, a pattern names a key it does not
//! hold, and it takes them again, at most [`HOLD_ATTEMPTS_MAX`] times. A
//! SORT whose patterns name more than [`HELD_KEYS_MAX`] keys (or a
//! collection that keeps changing) runs without holding them: each read
//! is atomic, not all at one instant (as MGET outside MULTI). Inside
//! MULTI/EXEC and scripts the keys are taken before the commands run: EXEC
//! and a script find a queued or called SORT's pattern keys with
//! [`pattern_keys`] too (a script runs again with them, as it does for any
//! key it did not declare). A pattern key the running transaction does
//! not hold is never read (`Store::may_touch`: waiting for it could wait
//! for a transaction that waits for this one): the SORT answers
//! [`ERR_UNHELD`] instead.

use amalgam_commands::table::Cmd;
use amalgam_commands::typed::{self, read, read_any, Access, Found};
use amalgam_commands::{int_arg, is, Arg, Ctx};
use amalgam_engine::namespace;
use amalgam_protocol::resp::{err, push_array, push_bulk, push_error, push_int, push_null};
use amalgam_types::list::{self, List};
use amalgam_types::value::Value;
use amalgam_types::zset::{strtod, ZView};
use amalgam_types::{hash, set, Kind};
use std::borrow::Cow;
use std::cmp::Ordering;

/// A weight that is not a number (Redis's text).
const ERR_NOT_DOUBLE: &str = "ERR One or more scores can't be converted into double";
/// BY with a pattern, for a user who may not read every key.
const ERR_BY_DENIED: &str = "ERR BY option of SORT denied due to insufficient ACL permissions.";
/// GET (any, `#` too), for a user who may not read every key.
const ERR_GET_DENIED: &str = "ERR GET option of SORT denied due to insufficient ACL permissions.";
/// A pattern named a key the running transaction does not hold (module
/// notes); the key's name follows.
const ERR_UNHELD: &str = "ERR SORT's BY or GET pattern named a key this transaction or script does not hold \
                              (the sorted collection changed after its keys were taken): run it again. Key: ";

/// The most keys a SORT holds at once (the sorted key, the destination
/// and its patterns' keys): past it, its pattern reads are each atomic on
/// their own (module notes). A held bucket is found in the thread's held
/// set by a linear search (engine `txn.rs`), so the cost of holding grows
/// with the square of this.
pub const HELD_KEYS_MAX: usize = 4096;
/// Times a SORT run on its own takes its keys before it gives up holding
/// them (module notes): each retry follows a change of the collection.
const HOLD_ATTEMPTS_MAX: usize = 3;
/// Shown of a key's name in [`ERR_UNHELD`].
const NAME_SHOWN_BYTES_MAX: usize = 128;

/// SORT's options (Redis's names in `sortCommandGeneric`).
#[derive(Debug)]
struct Options<'a> {
    desc: bool,
    alpha: bool,
    /// LIMIT offset and count (0 and -1 without).
    limit: (i64, i64),
    store: Option<&'a [u8]>,
    /// The last BY pattern.
    by: Option<&'a [u8]>,
    /// A BY pattern without `*` was given (`nosort`): sticky, as Redis's.
    dontsort: bool,
    gets: Vec<&'a [u8]>,
}

impl Options<'_> {
    /// True if a BY or GET pattern may name keys.
    fn names_keys(&self) -> bool {
        let by = self.by.is_some_and(|p| !self.dontsort && has_star(p));
        by || self.gets.iter().any(|p| has_star(p))
    }
}

/// The bytes C sees of an argument: up to its first NUL.
fn c_str(a: &[u8]) -> &[u8] {
    a.split(|&b| b == 0).next().unwrap_or(a)
}

/// Redis's `strchr(pattern, '*')`.
fn has_star(p: &[u8]) -> bool {
    c_str(p).contains(&b'*')
}

/// SORT's options, read as Redis reads them: left to right, the first
/// error answers. `readonly`: SORT_RO (no STORE); `every_key`: the user
/// may read every key (else BY with `*` and any GET are refused).
fn parse<A: AsRef<[u8]>>(args: &[A], readonly: bool, every_key: bool) -> Result<Options<'_>, &'static str> {
    let mut o =
        Options { desc: false, alpha: false, limit: (0, -1), store: None, by: None, dontsort: false, gets: Vec::new() };
    let mut j = 2;
    // Bounded: j grows every turn.
    while j < args.len() {
        let a = args[j].as_ref();
        let left = args.len() - j - 1;
        if is(a, "asc") {
            o.desc = false;
        } else if is(a, "desc") {
            o.desc = true;
        } else if is(a, "alpha") {
            o.alpha = true;
        } else if is(a, "limit") && left >= 2 {
            let (Some(start), Some(count)) = (int_arg(args[j + 1].as_ref()), int_arg(args[j + 2].as_ref())) else {
                return Err(err::NOT_INTEGER);
            };
            o.limit = (start, count);
            j += 2;
        } else if !readonly && is(a, "store") && left >= 1 {
            o.store = Some(args[j + 1].as_ref());
            j += 1;
        } else if is(a, "by") && left >= 1 {
            let p = args[j + 1].as_ref();
            o.by = Some(p);
            if !has_star(p) {
                o.dontsort = true;
            } else if !every_key {
                return Err(ERR_BY_DENIED);
            }
            j += 1;
        } else if is(a, "get") && left >= 1 {
            if !every_key {
                return Err(ERR_GET_DENIED);
            }
            o.gets.push(args[j + 1].as_ref());
            j += 1;
        } else {
            return Err(err::SYNTAX);
        }
        j += 1;
    }
    Ok(o)
}

/// What a pattern names for one element (Redis's `lookupKeyByPattern`).
#[derive(Debug, PartialEq, Eq)]
enum Named<'p> {
    /// `#`: the element itself.
    Itself,
    /// A key (a string), or a field of a hash.
    Key { key: Vec<u8>, field: Option<&'p [u8]> },
    /// No `*`: nothing ("GET a fixed key does not make sense").
    Nothing,
}

/// The key (and field) `pattern` names for `elem`: the first `*` (of the
/// pattern as a C string) replaced by the element; a `->` after it, with
/// something after that, splits off the field (the rest of the pattern).
fn named<'p>(pattern: &'p [u8], elem: &[u8]) -> Named<'p> {
    let c = c_str(pattern);
    if c == b"#" {
        return Named::Itself;
    }
    let Some(star) = c.iter().position(|&b| b == b'*') else { return Named::Nothing };
    let arrow = c[star + 1..].windows(2).position(|w| w == b"->").map(|i| star + 1 + i);
    let (end, field) = match arrow {
        Some(at) if at + 2 < c.len() => (at, Some(&pattern[at + 2..])),
        _ => (pattern.len(), None),
    };
    let mut key = Vec::with_capacity(end - 1 + elem.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(elem);
    key.extend_from_slice(&pattern[star + 1..end]);
    Named::Key { key, field }
}

/// Pattern keys met that the running transaction does not hold (module
/// notes), in their stored forms.
type Unheld = Vec<Vec<u8>>;

/// The value `pattern` names for `elem` in namespace `ns`, if any. A key
/// the running transaction does not hold is not read: it goes to `unheld`
/// and reads as missing (the caller then does not use the result).
fn value_of<'e>(ctx: &Ctx<'_>, pattern: &[u8], elem: &'e [u8], unheld: &mut Unheld) -> Option<Cow<'e, [u8]>> {
    let (name, field) = match named(pattern, elem) {
        Named::Itself => return Some(Cow::Borrowed(elem)),
        Named::Nothing => return None,
        Named::Key { key, field } => (key, field),
    };
    let key = if namespace::needs_encoding(ctx.ns, &name) { namespace::encode(ctx.ns, &name) } else { name };
    let store = ctx.ks.store;
    if !store.may_touch(&key) {
        unheld.push(key);
        return None;
    }
    match field {
        None => store
            .get(&key, |it| amalgam_commands::strings::is_string(&it).then(|| it.value().to_vec()))
            .flatten()
            .map(Cow::Owned),
        Some(f) => {
            let r = read(ctx, &key, Kind::Hash, |h| match h {
                Found::Packed(b) => hash::packed_get(b, f).map(<[u8]>::to_vec),
                Found::Large(Value::Hash(h)) => h.get(f).map(<[u8]>::to_vec),
                Found::Large(_) => None,
            });
            match r {
                Access::Done(v) => v.map(Cow::Owned),
                _ => None,
            }
        }
    }
}

/// A weight read as a number the way Redis's SORT reads it: `strtod` over
/// the C string, which must be used up (leading spaces allowed, trailing
/// not), not NaN, not out of range (ERANGE: overflow, or an underflow to
/// zero or a subnormal). The empty string converts nothing and reads 0.
fn weight(v: &[u8]) -> Option<f64> {
    let c = c_str(v);
    if c.is_empty() {
        return Some(0.0);
    }
    // C's isspace.
    let at = c.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'))?;
    let (x, erange) = strtod(&c[at..])?;
    let subnormal = x != 0.0 && x.abs() < f64::MIN_POSITIVE;
    (!erange && !subnormal && !x.is_nan()).then_some(x)
}

/// One element as SORT sorts it (Redis's `redisSortObject`).
#[derive(Debug)]
struct Item {
    elem: Vec<u8>,
    /// The numeric weight (0 if its BY key is missing).
    score: f64,
    /// The ALPHA weight from BY (None: missing).
    by: Option<Vec<u8>>,
}

/// The comparison's parameters (Redis's `server.sort_*`).
#[derive(Clone, Copy, Debug)]
struct Order {
    desc: bool,
    alpha: bool,
    by: bool,
    /// STORE: ALPHA compares bytes, not C strings.
    store: bool,
}

/// Redis's `sortCompare` (module notes, 6).
fn compare(o: Order, a: &Item, b: &Item) -> Ordering {
    let c = if !o.alpha {
        a.score.partial_cmp(&b.score).unwrap_or(Ordering::Equal).then_with(|| a.elem.cmp(&b.elem))
    } else if o.by {
        match (&a.by, &b.by) {
            (Some(x), Some(y)) if o.store => x.cmp(y),
            (Some(x), Some(y)) => c_str(x).cmp(c_str(y)),
            (x, y) => x.is_some().cmp(&y.is_some()),
        }
    } else if o.store {
        a.elem.cmp(&b.elem)
    } else {
        c_str(&a.elem).cmp(c_str(&b.elem))
    };
    if o.desc {
        c.reverse()
    } else {
        c
    }
}

/// Sorts `v` enough that `v[lo..=hi]` holds what a full sort would put
/// there: Redis's `pqsort`, Bentley and McIlroy's quicksort ("Engineering
/// a Sort Function", 1993: median of three or of nine, three-way
/// partition, insertion sort below seven elements or when a partition
/// moved nothing) that skips the parts outside the window. Replayed step
/// for step, so elements that compare equal end in Redis's order. A work
/// list in place of its recursion (the parts are disjoint: the order in
/// which they are sorted does not matter). Bounded: each part is smaller
/// than the one it came from; O(n log n) comparisons expected, O(n²) at
/// worst, as Redis's.
fn partial_sort<T>(v: &mut [T], lo: usize, hi: usize, cmp: &mut impl FnMut(&T, &T) -> Ordering) {
    let outside = |a: usize, last: usize| (lo < a && hi < a) || (lo > last && hi > last);
    let mut parts = vec![(0, v.len())];
    while let Some((mut a, mut n)) = parts.pop() {
        // One part, and then the part right of it (Redis's `goto loop`).
        loop {
            if n < 7 {
                insertion_sort(v, a, n, cmp);
                break;
            }
            let mut pm = a + n / 2;
            if n > 7 {
                let (mut pl, mut pn) = (a, a + n - 1);
                if n > 40 {
                    let d = n / 8;
                    pl = median3(v, pl, pl + d, pl + 2 * d, cmp);
                    pm = median3(v, pm - d, pm, pm + d, cmp);
                    pn = median3(v, pn - 2 * d, pn - d, pn, cmp);
                }
                pm = median3(v, pl, pm, pn, cmp);
            }
            v.swap(a, pm);
            let (mut pa, mut pb, mut pc, mut pd) = (a + 1, a + 1, a + n - 1, a + n - 1);
            let mut moved = false;
            loop {
                while pb <= pc {
                    let c = cmp(&v[pb], &v[a]);
                    if c == Ordering::Greater {
                        break;
                    }
                    if c == Ordering::Equal {
                        moved = true;
                        v.swap(pa, pb);
                        pa += 1;
                    }
                    pb += 1;
                }
                while pb <= pc {
                    let c = cmp(&v[pc], &v[a]);
                    if c == Ordering::Less {
                        break;
                    }
                    if c == Ordering::Equal {
                        moved = true;
                        v.swap(pc, pd);
                        pd -= 1;
                    }
                    pc -= 1;
                }
                if pb > pc {
                    break;
                }
                v.swap(pb, pc);
                moved = true;
                pb += 1;
                pc -= 1;
            }
            if !moved {
                insertion_sort(v, a, n, cmp);
                break;
            }
            let end = a + n;
            let r = (pa - a).min(pb - pa);
            swap_runs(v, a, pb - r, r);
            let r = (pd - pc).min(end - pd - 1);
            swap_runs(v, pb, end - r, r);
            let left = pb - pa;
            if left > 1 && !outside(a, a + left - 1) {
                parts.push((a, left));
            }
            let right = pd - pc;
            if right <= 1 {
                break;
            }
            a = end - right;
            n = right;
            if outside(a, a + right - 1) {
                break;
            }
        }
    }
}

/// Insertion sort of `v[a..a + n]`, swapping neighbours (as Redis's).
fn insertion_sort<T>(v: &mut [T], a: usize, n: usize, cmp: &mut impl FnMut(&T, &T) -> Ordering) {
    for m in a + 1..a + n {
        let mut l = m;
        while l > a && cmp(&v[l - 1], &v[l]) == Ordering::Greater {
            v.swap(l, l - 1);
            l -= 1;
        }
    }
}

/// The index of the median of three elements (Redis's `med3`).
fn median3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &mut impl FnMut(&T, &T) -> Ordering) -> usize {
    if cmp(&v[a], &v[b]) == Ordering::Less {
        if cmp(&v[b], &v[c]) == Ordering::Less {
            b
        } else if cmp(&v[a], &v[c]) == Ordering::Less {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]) == Ordering::Greater {
        b
    } else if cmp(&v[a], &v[c]) == Ordering::Less {
        a
    } else {
        c
    }
}

/// Swaps `v[x..x + n]` with `v[y..y + n]`, element by element in order.
fn swap_runs<T>(v: &mut [T], x: usize, y: usize, n: usize) {
    for i in 0..n {
        v.swap(x + i, y + i);
    }
}

/// The collection as SORT loads it, with the window over it.
#[derive(Debug)]
struct Loaded {
    items: Vec<Item>,
    /// The window, `start..=end` of `items` (empty when end < start).
    start: i64,
    end: i64,
    /// Sorting is off (`nosort`, not forced for a set).
    dontsort: bool,
    /// ALPHA, perhaps forced (a set under `nosort` from a script or STORE).
    alpha: bool,
    /// BY applies (not dropped by that rule).
    by: bool,
}

fn item(elem: Vec<u8>) -> Item {
    Item { elem, score: 0.0, by: None }
}

/// Loads the collection found (module notes, 3 and 4).
fn load(ctx: &Ctx<'_>, o: &Options<'_>, kind: Kind, found: Found<'_>) -> Loaded {
    let set_forced = o.dontsort && kind == Kind::Set && (o.store.is_some() || ctx.scripted);
    let dontsort = o.dontsort && !set_forced;
    let len = match (&found, kind) {
        (Found::Packed(b), Kind::List) => list::packed_len(b).unwrap_or(0),
        (Found::Large(Value::List(l)), _) => l.len(),
        (Found::Packed(b), Kind::Set) => set::packed_len(b),
        (Found::Large(Value::Set(s)), _) => s.len(),
        (Found::Packed(b), Kind::ZSet) => ZView::packed(b).len(),
        (Found::Large(Value::ZSet(z)), _) => z.len(),
        _ => 0,
    } as i64;
    // Redis's clamps.
    let mut start = o.limit.0.max(0).min(len);
    let count = o.limit.1.max(-1).min(len);
    let mut end = if count < 0 { len - 1 } else { start + count - 1 };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    end = end.min(len - 1);
    let mut items = Vec::new();
    if dontsort && matches!(kind, Kind::List | Kind::ZSet) {
        // The window alone, in the collection's order (DESC from its end).
        if end >= start {
            let (from, to) = if o.desc { (len - 1 - end, len - 1 - start) } else { (start, end) };
            match (&found, kind) {
                (Found::Packed(b), Kind::List) => {
                    items.extend(list::packed_range(b, from, to).map(|e| item(e.to_vec())))
                }
                (Found::Large(Value::List(l)), _) => items.extend(l.range(from, to).map(|e| item(e.to_vec()))),
                (Found::Packed(b), _) => {
                    items.extend(ZView::packed(b).range_by_rank(start, end, o.desc).map(|(m, _)| item(m.to_vec())))
                }
                (Found::Large(Value::ZSet(z)), _) => {
                    items.extend(z.view().range_by_rank(start, end, o.desc).map(|(m, _)| item(m.to_vec())))
                }
                _ => {}
            }
            if o.desc && kind == Kind::List {
                items.reverse();
            }
            end -= start;
            start = 0;
        }
    } else {
        items.reserve(len as usize);
        match (found, kind) {
            (Found::Packed(b), Kind::List) => items.extend(list::packed_range(b, 0, -1).map(|e| item(e.to_vec()))),
            (Found::Large(Value::List(l)), _) => items.extend(l.iter().map(|e| item(e.to_vec()))),
            (Found::Packed(b), Kind::Set) => items.extend(set::packed_iter(b).map(|m| item(m.to_vec()))),
            (Found::Large(Value::Set(s)), _) => items.extend(s.iter().map(|m| item(m.to_vec()))),
            (Found::Packed(b), _) => items.extend(ZView::packed(b).iter().map(|(m, _)| item(m.to_vec()))),
            (Found::Large(Value::ZSet(z)), _) => items.extend(z.view().iter().map(|(m, _)| item(m.to_vec()))),
            _ => {}
        }
    }
    Loaded { items, start, end, dontsort, alpha: o.alpha || set_forced, by: o.by.is_some() && !set_forced }
}

/// Why a SORT did not produce its result.
#[derive(Debug)]
enum Failed {
    /// Answered already (WRONGTYPE, a weight not a number, OOM).
    Answered,
    /// Patterns named keys the running transaction does not hold.
    Unheld(Unheld),
}

/// Runs SORT once (module notes), its reply appended to `out` — or
/// nothing appended, with the pattern keys it could not read, if the
/// running transaction does not hold them all.
fn sort_once(ctx: &Ctx<'_>, o: &Options<'_>, src: &[u8], out: &mut Vec<u8>) -> Result<(), Failed> {
    let r = read_any(ctx, src, |kind, found| match kind {
        Kind::List | Kind::Set | Kind::ZSet => Some(load(ctx, o, kind, found)),
        _ => None,
    });
    let mut l = match r {
        Access::Done(Some(l)) => l,
        Access::Done(None) | Access::WrongType => {
            push_error(out, typed::WRONGTYPE.as_bytes());
            return Err(Failed::Answered);
        }
        // Redis sorts an empty list.
        Access::Absent => {
            Loaded { items: Vec::new(), start: -1, end: -2, dontsort: o.dontsort, alpha: o.alpha, by: o.by.is_some() }
        }
    };
    let mut unheld = Unheld::new();
    if !l.dontsort {
        weigh(ctx, o, &mut l, &mut unheld, out)?;
    }
    let (start, end) = (l.start, l.end);
    let window = if end >= start { &l.items[start as usize..=end as usize] } else { &[][..] };
    match o.store {
        None => reply(ctx, o, window, &mut unheld, out),
        Some(dst) => store(ctx, o, dst, window, &mut unheld, out),
    }
}

/// Reads each element's weight and sorts (module notes, 5 and 6).
fn weigh(ctx: &Ctx<'_>, o: &Options<'_>, l: &mut Loaded, unheld: &mut Unheld, out: &mut Vec<u8>) -> Result<(), Failed> {
    let by = o.by.filter(|_| l.by);
    let mut not_number = false;
    for it in &mut l.items {
        let v = match by {
            Some(p) => value_of(ctx, p, &it.elem, unheld).map(Cow::into_owned),
            None => None,
        };
        if l.alpha {
            it.by = v;
            continue;
        }
        let w = match (by, &v) {
            (Some(_), None) => continue,
            (Some(_), Some(v)) => weight(v),
            (None, _) => weight(&it.elem),
        };
        match w {
            Some(x) => it.score = x,
            None => not_number = true,
        }
    }
    if !unheld.is_empty() {
        return Err(Failed::Unheld(std::mem::take(unheld)));
    }
    if not_number {
        push_error(out, ERR_NOT_DOUBLE.as_bytes());
        return Err(Failed::Answered);
    }
    if l.end < l.start {
        // An empty window: no order to show.
        return Ok(());
    }
    let order = Order { desc: o.desc, alpha: l.alpha, by: by.is_some(), store: o.store.is_some() };
    let len = l.items.len() as i64;
    if by.is_some() && (l.start != 0 || l.end != len - 1) {
        // Redis's pqsort over the window.
        partial_sort(&mut l.items, l.start as usize, l.end as usize, &mut |a, b| compare(order, a, b));
    } else {
        l.items.sort_by(|a, b| compare(order, a, b));
    }
    Ok(())
}

/// The reply: each element of the window, or each GET's value for it.
fn reply(
    ctx: &Ctx<'_>,
    o: &Options<'_>,
    window: &[Item],
    unheld: &mut Unheld,
    out: &mut Vec<u8>,
) -> Result<(), Failed> {
    let mark = out.len();
    push_array(out, window.len() * o.gets.len().max(1));
    for it in window {
        if out.len() >= ctx.out_stop {
            // Past the client's hard limit: unfinished, never sent (the
            // front end closes the client).
            return Ok(());
        }
        if o.gets.is_empty() {
            push_bulk(out, &it.elem);
        }
        for g in &o.gets {
            match value_of(ctx, g, &it.elem, unheld) {
                Some(v) => push_bulk(out, &v),
                None => push_null(out, ctx.proto),
            }
        }
    }
    if !unheld.is_empty() {
        out.truncate(mark);
        return Err(Failed::Unheld(std::mem::take(unheld)));
    }
    Ok(())
}

/// STORE: the window's values as a list at `dst` (an empty one deletes
/// it), replying with their count.
fn store(
    ctx: &Ctx<'_>,
    o: &Options<'_>,
    dst: &[u8],
    window: &[Item],
    unheld: &mut Unheld,
    out: &mut Vec<u8>,
) -> Result<(), Failed> {
    let mut values: Vec<Cow<'_, [u8]>> = Vec::with_capacity(window.len() * o.gets.len().max(1));
    for it in window {
        if o.gets.is_empty() {
            values.push(Cow::Borrowed(&it.elem));
        }
        for g in &o.gets {
            values.push(value_of(ctx, g, &it.elem, unheld).unwrap_or(Cow::Borrowed(b"")));
        }
    }
    if !unheld.is_empty() {
        return Err(Failed::Unheld(std::mem::take(unheld)));
    }
    let t = ctx.ks.thresholds.load();
    let r = typed::replace(ctx, dst, || {
        let mut l = List::new(&t);
        for v in &values {
            l.push_back(v);
        }
        Value::List(l)
    });
    match r {
        Ok(had) => {
            if !values.is_empty() {
                ctx.ks.host.signal(dst);
            }
            let (list, stored) = (amalgam_commands::notify::LIST, !values.is_empty());
            typed::notify_stored(ctx, dst, list, "sortstore", stored, had);
            push_int(out, values.len() as i64);
            Ok(())
        }
        Err(e) => {
            e.reply(out);
            Err(Failed::Answered)
        }
    }
}

/// The keys `o`'s patterns name for the collection at `src` now, in their
/// stored forms for namespace `ns`, sorted, without repeats; None past
/// [`HELD_KEYS_MAX`].
fn named_keys(ctx: &Ctx<'_>, o: &Options<'_>, src: &[u8]) -> Option<Vec<Vec<u8>>> {
    let patterns: Vec<&[u8]> =
        o.by.filter(|p| !o.dontsort && has_star(p)).into_iter().chain(o.gets.iter().copied()).collect();
    let r = read_any(ctx, src, |kind, found| {
        let mut keys = Vec::new();
        let mut add = |e: &[u8]| {
            for p in &patterns {
                if let Named::Key { key, .. } = named(p, e) {
                    keys.push(namespace::encode(ctx.ns, &key));
                }
            }
            keys.len() <= HELD_KEYS_MAX
        };
        // Bounded by the collection, and stopped past HELD_KEYS_MAX.
        let fits = match (found, kind) {
            (Found::Packed(b), Kind::List) => list::packed_range(b, 0, -1).all(&mut add),
            (Found::Large(Value::List(l)), _) => l.iter().all(&mut add),
            (Found::Packed(b), Kind::Set) => set::packed_iter(b).all(|m| m.with_bytes(&mut add)),
            (Found::Large(Value::Set(s)), _) => s.iter().all(|m| m.with_bytes(&mut add)),
            (Found::Packed(b), Kind::ZSet) => ZView::packed(b).iter().all(|(m, _)| add(m)),
            (Found::Large(Value::ZSet(z)), _) => z.view().iter().all(|(m, _)| add(m)),
            _ => true,
        };
        fits.then_some(keys)
    });
    let mut keys = match r {
        Access::Done(k) => k?,
        _ => Vec::new(),
    };
    keys.sort_unstable();
    keys.dedup();
    Some(keys)
}

/// The keys a SORT or SORT_RO (`args` as written, its key not yet in its
/// stored form) would read through its BY and GET patterns in namespace
/// `ns` now, in their stored forms: what MULTI/EXEC and a script hold for
/// it (module notes). Empty when its options are bad, when it names none,
/// or past [`HELD_KEYS_MAX`].
pub fn pattern_keys<A: AsRef<[u8]>>(ctx: &Ctx<'_>, ns: u8, args: &[A]) -> Vec<Vec<u8>> {
    let readonly = args.first().is_some_and(|a| is(a.as_ref(), "sort_ro"));
    let Some(o) = parse(args, readonly, true).ok().filter(|o| o.names_keys()) else { return Vec::new() };
    let cx = Ctx {
        ks: ctx.ks,
        proto: ctx.proto,
        limits: ctx.limits,
        out_stop: ctx.out_stop,
        ns,
        scripted: ctx.scripted,
        notify: ctx.notify,
    };
    named_keys(&cx, &o, &namespace::encode(ns, args[1].as_ref())).unwrap_or_default()
}

/// SORT and SORT_RO (`args` with their keys in stored form). `every_key`:
/// the user may read every key (Redis's
/// `ACLUserCheckCmdWithUnrestrictedKeyAccess`), which BY and GET need.
pub fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], every_key: bool, out: &mut Vec<u8>) {
    let o = match parse(args, cmd == Cmd::SortRo, every_key) {
        Ok(o) => o,
        Err(e) => return push_error(out, e.as_bytes()),
    };
    let ctx = &*ctx;
    let src = &args[1][..];
    let store = ctx.ks.store;
    let mut held: Vec<Vec<u8>> = std::iter::once(src).chain(o.store).map(<[u8]>::to_vec).collect();
    if store.in_transaction() || (!o.names_keys() && held.len() == 1) {
        // EXEC or a script holds the keys already; or one key, read at once.
        return answer(sort_once(ctx, &o, src, out), out);
    }
    if o.names_keys() {
        match named_keys(ctx, &o, src) {
            Some(k) => held.extend(k),
            None => held.clear(),
        }
    }
    // Bounded: HOLD_ATTEMPTS_MAX takings.
    for _ in 0..HOLD_ATTEMPTS_MAX {
        held.sort_unstable();
        held.dedup();
        if held.is_empty() || held.len() > HELD_KEYS_MAX {
            break;
        }
        match store.atomically(&held, || sort_once(ctx, &o, src, out)) {
            Err(Failed::Unheld(more)) => held.extend(more),
            r => return answer(r, out),
        }
    }
    // Too many keys, or a collection that keeps changing: no transaction,
    // so every key may be read (module notes).
    answer(sort_once(ctx, &o, src, out), out);
}

/// Answers the pattern key a transaction did not hold; the rest answered.
fn answer(r: Result<(), Failed>, out: &mut Vec<u8>) {
    if let Err(Failed::Unheld(keys)) = r {
        let name = keys.first().map_or(&[][..], |k| namespace::split(k).1);
        let mut m = ERR_UNHELD.as_bytes().to_vec();
        m.extend_from_slice(&name[..name.len().min(NAME_SHOWN_BYTES_MAX)]);
        push_error(out, &m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_as_redis_reads_them() {
        let p = |s: &str, ro: bool, every: bool| {
            let a: Vec<&[u8]> = s.split(' ').map(str::as_bytes).collect();
            parse(&a, ro, every).map(|o| (o.desc, o.alpha, o.limit, o.store.is_some(), o.dontsort, o.gets.len()))
        };
        assert_eq!(p("sort k", false, true), Ok((false, false, (0, -1), false, false, 0)));
        assert_eq!(p("sort k desc asc ALPHA limit 1 2", false, true), Ok((false, true, (1, 2), false, false, 0)));
        assert_eq!(p("sort k by nosort by w_* get # get x", false, true), Ok((false, false, (0, -1), false, true, 2)));
        assert_eq!(p("sort k store d", false, true), Ok((false, false, (0, -1), true, false, 0)));
        assert_eq!(p("sort_ro k store d", true, true), Err(err::SYNTAX));
        assert_eq!(p("sort k limit 1", false, true), Err(err::SYNTAX));
        assert_eq!(p("sort k limit x 1 foo", false, true), Err(err::NOT_INTEGER));
        assert_eq!(p("sort k foo limit x 1", false, true), Err(err::SYNTAX));
        assert_eq!(p("sort k get", false, true), Err(err::SYNTAX));
        assert_eq!(p("sort k by w_*", false, false), Err(ERR_BY_DENIED));
        assert_eq!(p("sort k by nosort", false, false).map(|o| o.4), Ok(true));
        assert_eq!(p("sort k get #", false, false), Err(ERR_GET_DENIED));
        assert_eq!(p("sort k foo get #", false, false), Err(err::SYNTAX));
    }

    #[test]
    fn patterns_name_keys_and_fields() {
        let key = |k: &[u8], f: Option<&'static [u8]>| Named::Key { key: k.to_vec(), field: f };
        assert_eq!(named(b"#", b"a"), Named::Itself);
        assert_eq!(named(b"nosort", b"a"), Named::Nothing);
        assert_eq!(named(b"w_*", b"a"), key(b"w_a", None));
        assert_eq!(named(b"w_*_x", b"ab"), key(b"w_ab_x", None));
        assert_eq!(named(b"h_*->f", b"a"), key(b"h_a", Some(b"f")));
        assert_eq!(named(b"h_*->", b"a"), key(b"h_a->", None), "an empty field is part of the key");
        assert_eq!(named(b"h_*->x->y", b"a"), key(b"h_a", Some(b"x->y")));
        assert_eq!(named(b"h->*", b"a"), key(b"h->a", None), "the arrow must follow the star");
        assert_eq!(named(b"**", b"a"), key(b"a*", None), "only the first star");
        assert_eq!(named(b"x\0*", b"a"), Named::Nothing, "C string: no star before the NUL");
    }

    #[test]
    fn weights_read_as_strtod() {
        for (s, w) in [
            (&b"1"[..], Some(1.0)),
            (b" 1", Some(1.0)),
            (b"\t\x0b3", Some(3.0)),
            (b"", Some(0.0)),
            (b"\0x", Some(0.0)),
            (b"1\0x", Some(1.0)),
            (b"0x10", Some(16.0)),
            (b"-inf", Some(f64::NEG_INFINITY)),
            (b"Infinity", Some(f64::INFINITY)),
            (b".5", Some(0.5)),
            (b"5.", Some(5.0)),
            (b"1 ", None),
            (b"  ", None),
            (b"nan", None),
            (b"1e400", None),
            (b"1e-400", None),
            (b"1e-310", None),
            (b"1_0", None),
            (b"0x", None),
            (b"abc", None),
        ] {
            assert_eq!(weight(s), w, "{:?}", s.escape_ascii().to_string());
        }
    }

    /// A small deterministic generator for the partial sort's test.
    fn lcg(state: &mut u64) -> u64 {
        *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *state >> 33
    }

    #[test]
    fn partial_sort_puts_the_window_in_place() {
        let mut seed = 7u64;
        for n in [0usize, 1, 2, 6, 7, 8, 40, 41, 100, 1000] {
            for _ in 0..20 {
                let v: Vec<u64> = (0..n).map(|_| lcg(&mut seed) % (n as u64 / 3 + 1)).collect();
                let mut want = v.clone();
                want.sort();
                let lo = if n == 0 { 0 } else { (lcg(&mut seed) as usize) % n };
                let hi = if n == 0 { 0 } else { lo + (lcg(&mut seed) as usize) % (n - lo) };
                let mut got = v.clone();
                partial_sort(&mut got, lo, hi, &mut |a: &u64, b: &u64| a.cmp(b));
                if n > 0 {
                    assert_eq!(got[lo..=hi], want[lo..=hi], "n {n} window {lo}..={hi}");
                }
                let mut all = got.clone();
                all.sort();
                assert_eq!(all, want, "a permutation");
                let mut full = v.clone();
                partial_sort(&mut full, 0, n.saturating_sub(1), &mut |a: &u64, b: &u64| a.cmp(b));
                assert_eq!(full, want);
            }
        }
    }

    #[test]
    fn compare_as_sort_compare() {
        let it = |e: &[u8], s: f64, by: Option<&[u8]>| Item { elem: e.to_vec(), score: s, by: by.map(<[u8]>::to_vec) };
        let o = Order { desc: false, alpha: false, by: false, store: false };
        assert_eq!(compare(o, &it(b"2", 1.0, None), &it(b"1", 1.0, None)), Ordering::Greater, "ties by bytes");
        assert_eq!(compare(Order { desc: true, ..o }, &it(b"a", 1.0, None), &it(b"b", 2.0, None)), Ordering::Greater);
        let alpha = Order { alpha: true, ..o };
        assert_eq!(compare(alpha, &it(b"b\0a", 0.0, None), &it(b"b", 0.0, None)), Ordering::Equal, "C strings");
        let stored = Order { store: true, ..alpha };
        assert_eq!(compare(stored, &it(b"b\0a", 0.0, None), &it(b"b", 0.0, None)), Ordering::Greater, "bytes");
        let by = Order { by: true, ..alpha };
        assert_eq!(compare(by, &it(b"x", 0.0, None), &it(b"y", 0.0, Some(b""))), Ordering::Less, "no weight first");
        assert_eq!(compare(by, &it(b"x", 0.0, None), &it(b"y", 0.0, None)), Ordering::Equal);
    }
}
