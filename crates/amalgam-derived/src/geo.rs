//! Geo commands: GEOADD GEODIST GEOHASH GEOPOS GEORADIUS GEORADIUS_RO
//! GEORADIUSBYMEMBER GEORADIUSBYMEMBER_RO GEOSEARCH GEOSEARCHSTORE, with
//! Redis 7.0's replies, argument-check order and error texts.
//!
//! A geo index is a sorted set whose scores are 52-bit geohashes (Redis
//! keeps no other type: TYPE says `zset`, OBJECT ENCODING `listpack` or
//! `skiplist`, and every Z command works on it). So these are thin
//! adapters over `zset.rs`'s paths — GEOADD is ZADD's [`add_pairs`] with
//! scores made from coordinates, the *STORE forms are ZRANGESTORE's
//! [`store_result`], reads are `typed::read` through a [`ZView`] — and
//! the geometry (hash, neighbours, the nine score ranges, distances, the
//! box test, the reply texts) is `amalgam_types::geo`, where it is tested
//! against redis-server's own answers.
//!
//! ## One read
//! Redis parses a search's options with the source key already looked up
//! (FROMMEMBER and GEORADIUSBYMEMBER read a member's score mid-parse, and
//! a missing key skips that but goes on checking the rest), so the
//! options are parsed inside the read of the source ([`parse`] is given
//! the set's scores, or none for a missing key): the member's position
//! and the search come from the same version of the set, and every error
//! comes in Redis's order.
//!
//! ## Replies
//! A distance is `%.4f` as a bulk string in RESP2 and RESP3 alike; a
//! coordinate is `%.17Lf` trimmed (Redis's `addReplyHumanLongDouble`), a
//! bulk string in RESP2, a double in RESP3; WITHHASH's hash an integer.
//! Without ASC/DESC (and without COUNT) members come in Redis's scan
//! order (cell by cell); sorted, members at equal distances come in
//! Redis's order too (`geo::sort_by_distance`: glibc's stable sort, or
//! Redis's partial quicksort under COUNT).
//!
//! ## STORE and STOREDIST
//! The source is read, then the result stored under the destination's
//! bucket lock (as ZRANGESTORE: not one atomic step across the two keys,
//! zset.rs module notes). An empty result, or a missing source, deletes
//! the destination, as Redis does.

use amalgam_commands::table::{self, Cmd, COMMANDS};
use amalgam_commands::typed::{self, read, Access, Found};
use amalgam_commands::zset::{add_pairs, store_result, view};
use amalgam_commands::{int_arg, is, Arg, Ctx};
use amalgam_engine::namespace;
use amalgam_protocol::resp::{err, push_array, push_bulk, push_error, push_int, push_null, push_null_array, Proto};
use amalgam_types::geo::{self, Extent, Order, Shape};
use amalgam_types::zset::{parse_float, AddFlags, ZSet, ZView};
use amalgam_types::Kind;
use std::borrow::Cow;

/// Redis's `extractUnitOrReply` error.
const ERR_UNIT: &str = "ERR unsupported unit provided. please use M, KM, FT, MI";
/// A member FROMMEMBER or GEORADIUSBYMEMBER names is not in the set.
const ERR_MEMBER: &str = "ERR could not decode requested zset member";
const ERR_RADIUS_NUMERIC: &str = "ERR need numeric radius";
const ERR_RADIUS_NEGATIVE: &str = "ERR radius cannot be negative";
const ERR_WIDTH_NUMERIC: &str = "ERR need numeric width";
const ERR_HEIGHT_NUMERIC: &str = "ERR need numeric height";
const ERR_BOX_NEGATIVE: &str = "ERR height or width cannot be negative";
const ERR_COUNT: &str = "ERR COUNT must be > 0";
const ERR_ANY: &str = "ERR the ANY argument requires COUNT argument";
/// Arguments of GEOADD before its first triple.
const GEOADD_FIRST: usize = 2;
/// Arguments of a coordinate triple (longitude, latitude, member).
const TRIPLE: usize = 3;

pub fn run(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    match cmd {
        Cmd::Geoadd => geoadd(ctx, args, out),
        Cmd::Geodist => geodist(ctx, args, out),
        Cmd::Geohash | Cmd::Geopos => positions(ctx, cmd, args, out),
        Cmd::Georadius
        | Cmd::GeoradiusRo
        | Cmd::Georadiusbymember
        | Cmd::GeoradiusbymemberRo
        | Cmd::Geosearch
        | Cmd::Geosearchstore => search(ctx, cmd, args, out),
        _ => unreachable!("not a geo command: {cmd:?}"),
    }
}

/// A float argument (Redis's `getDoubleFromObject`), or `msg`.
fn float(a: &[u8], msg: &'static str) -> Result<f64, Cow<'static, str>> {
    parse_float(a).map_err(|_| Cow::Borrowed(msg))
}

/// A longitude and latitude (Redis's `extractLongLatOrReply`).
fn lon_lat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), Cow<'static, str>> {
    let x = float(lon, err::NOT_FLOAT)?;
    let y = float(lat, err::NOT_FLOAT)?;
    if !geo::valid_point(x, y) {
        return Err(Cow::Owned(format!("ERR invalid longitude,latitude pair {x:.6},{y:.6}")));
    }
    Ok((x, y))
}

/// A unit's meters (Redis's `extractUnitOrReply`).
fn unit(a: &[u8]) -> Result<f64, Cow<'static, str>> {
    geo::unit_meters(a).ok_or(Cow::Borrowed(ERR_UNIT))
}

/// GEOADD key [NX|XX] [CH] lon lat member …: Redis's `geoaddCommand`
/// (the options, the triple count, each point in order), then ZADD's
/// path with the points' scores.
fn geoadd(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let mut flags = AddFlags::default();
    let mut ch = false;
    let mut j = GEOADD_FIRST;
    // Bounded: j advances each round.
    while j < args.len() {
        if is(&args[j], "nx") {
            flags.nx = true;
        } else if is(&args[j], "xx") {
            flags.xx = true;
        } else if is(&args[j], "ch") {
            ch = true;
        } else {
            break;
        }
        j += 1;
    }
    let triples = &args[j..];
    // No triple at all: ZADD, handed the rest, answers the syntax error.
    if triples.is_empty() || triples.len() % TRIPLE != 0 || (flags.nx && flags.xx) {
        return push_error(out, err::SYNTAX.as_bytes());
    }
    let mut pairs: Vec<(f64, &[u8])> = Vec::with_capacity(triples.len() / TRIPLE);
    for t in triples.chunks_exact(TRIPLE) {
        let score = lon_lat(&t[0], &t[1]).map(|(x, y)| geo::encode_score(x, y));
        match score {
            Ok(Some(s)) => pairs.push((s, &t[2])),
            // A valid point always encodes.
            Ok(None) => return push_error(out, err::SYNTAX.as_bytes()),
            Err(e) => return push_error(out, e.as_bytes()),
        }
    }
    add_pairs(ctx, &args[1], flags, ch, &pairs, out);
}

/// GEODIST key member1 member2 [unit]: the unit and the argument count
/// first, then the key; nil if either member is missing.
fn geodist(ctx: &mut Ctx<'_>, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let unit_m = match args.len() {
        4 => 1.0,
        5 => match unit(&args[4]) {
            Ok(m) => m,
            Err(e) => return push_error(out, e.as_bytes()),
        },
        _ => return push_error(out, err::SYNTAX.as_bytes()),
    };
    let r = read(ctx, &args[1], Kind::ZSet, |z| view(z, |v| Some((v.score(&args[2])?, v.score(&args[3])?))));
    match r {
        Access::Done(Some((a, b))) => {
            let ((x1, y1), (x2, y2)) = (geo::decode_score(a), geo::decode_score(b));
            let mut text = Vec::new();
            geo::format_distance(geo::distance_m(x1, y1, x2, y2) / unit_m, &mut text);
            push_bulk(out, &text);
        }
        Access::Done(None) | Access::Absent => push_null(out, ctx.proto()),
        Access::WrongType => push_error(out, typed::WRONGTYPE.as_bytes()),
    }
}

/// GEOHASH and GEOPOS key member …: per member its 11-character
/// geohash or its position, nil for a missing member (or key).
fn positions(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let members = &args[2..];
    let r = read(ctx, &args[1], Kind::ZSet, |z| view(z, |v| members.iter().map(|m| v.score(m)).collect()));
    let scores: Vec<Option<f64>> = match r {
        Access::Done(s) => s,
        Access::Absent => vec![None; members.len()],
        Access::WrongType => return push_error(out, typed::WRONGTYPE.as_bytes()),
    };
    let proto = ctx.proto();
    push_array(out, scores.len());
    for s in scores {
        match (s, cmd) {
            (Some(s), Cmd::Geohash) => push_bulk(out, &geo::geohash_text(s)),
            (Some(s), _) => {
                let (x, y) = geo::decode_score(s);
                push_array(out, 2);
                push_coord(out, proto, x);
                push_coord(out, proto, y);
            }
            (None, Cmd::Geohash) => push_null(out, proto),
            (None, _) => push_null_array(out, proto),
        }
    }
}

/// A coordinate: a bulk string (RESP2) or a double (RESP3).
fn push_coord(out: &mut Vec<u8>, proto: Proto, v: f64) {
    let mut text = Vec::new();
    geo::format_coord(v, &mut text);
    match proto {
        Proto::Resp3 => {
            out.push(b',');
            out.extend_from_slice(&text);
            out.extend_from_slice(b"\r\n");
        }
        _ => push_bulk(out, &text),
    }
}

/// Which search command, as Redis's `georadiusGeneric` flags say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// GEORADIUS(_RO): `key lon lat radius unit` (RADIUS_COORDS).
    Coords,
    /// GEORADIUSBYMEMBER(_RO): `key member radius unit` (RADIUS_MEMBER).
    Member,
    /// GEOSEARCH and GEOSEARCHSTORE: FROM… and BY… options.
    Search,
}

/// A search's parsed arguments.
#[derive(Debug)]
struct Query<'a> {
    /// None when the source key is missing (Redis parses no further).
    shape: Option<Shape>,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    order: Option<Order>,
    /// COUNT (0: none).
    count: usize,
    any: bool,
    /// STORE / STOREDIST (GEORADIUS) or GEOSEARCHSTORE's destination,
    /// its argument index, and whether distances are stored.
    store: Option<(usize, &'a [u8], bool)>,
}

/// What a shape is missing while the options are read.
#[derive(Default)]
struct Parts {
    centre: Option<(f64, f64)>,
    extent: Option<(Extent, f64)>,
}

/// Parses a search command's arguments in Redis 7.0's order
/// (`georadiusGeneric`): the fixed arguments, then the options one by
/// one, then the combination checks. `score` reads a member's score from
/// the source set; None when the key is missing.
fn parse<'a>(cmd: Cmd, args: &'a [Arg<'_>], score: Option<Scores<'_>>) -> Result<Query<'a>, Cow<'static, str>> {
    // `base`: the first option's argument (Redis's `base_args`).
    let (form, base) = match cmd {
        Cmd::Georadius | Cmd::GeoradiusRo => (Form::Coords, 6),
        Cmd::Georadiusbymember | Cmd::GeoradiusbymemberRo => (Form::Member, 5),
        Cmd::Geosearchstore => (Form::Search, 3),
        _ => (Form::Search, 2),
    };
    let can_store = matches!(cmd, Cmd::Georadius | Cmd::Georadiusbymember);
    let search_store = cmd == Cmd::Geosearchstore;
    let mut parts = Parts::default();
    let distance = |r: &[u8], u: &[u8]| -> Result<(Extent, f64), Cow<'static, str>> {
        let radius = float(r, ERR_RADIUS_NUMERIC)?;
        if radius < 0.0 {
            return Err(Cow::Borrowed(ERR_RADIUS_NEGATIVE));
        }
        Ok((Extent::Radius(radius), unit(u)?))
    };
    match form {
        Form::Coords => {
            parts.centre = Some(lon_lat(&args[2], &args[3])?);
            parts.extent = Some(distance(&args[4], &args[5])?);
        }
        Form::Member => {
            if let Some(score) = score {
                let s = score(&args[2]).ok_or(Cow::Borrowed(ERR_MEMBER))?;
                parts.centre = Some(geo::decode_score(s));
                parts.extent = Some(distance(&args[3], &args[4])?);
            }
        }
        Form::Search => {}
    }
    let mut q = Query {
        shape: None,
        withdist: false,
        withhash: false,
        withcoord: false,
        order: None,
        count: 0,
        any: false,
        store: search_store.then(|| (1, &args[1][..], false)),
    };
    let (mut from_member, mut from_lon_lat, mut by_radius, mut by_box) = (false, false, false, false);
    let search = form == Form::Search;
    let remaining = args.len().saturating_sub(base);
    let mut i = 0;
    // Bounded: i advances each round.
    while i < remaining {
        let at = base + i;
        let a = &args[at];
        let more = remaining - i - 1;
        if is(a, "withdist") {
            q.withdist = true;
        } else if is(a, "withhash") {
            q.withhash = true;
        } else if is(a, "withcoord") {
            q.withcoord = true;
        } else if is(a, "any") {
            q.any = true;
        } else if is(a, "asc") {
            q.order = Some(Order::Asc);
        } else if is(a, "desc") {
            q.order = Some(Order::Desc);
        } else if is(a, "count") && more >= 1 {
            match int_arg(&args[at + 1]) {
                None => return Err(Cow::Borrowed(err::NOT_INTEGER)),
                Some(n) if n <= 0 => return Err(Cow::Borrowed(ERR_COUNT)),
                Some(n) => q.count = usize::try_from(n).unwrap_or(usize::MAX),
            }
            i += 1;
        } else if (is(a, "store") || is(a, "storedist")) && more >= 1 && can_store {
            q.store = Some((at + 1, &args[at + 1][..], is(a, "storedist")));
            i += 1;
        } else if is(a, "storedist") && search_store {
            q.store = q.store.map(|(at, k, _)| (at, k, true));
        } else if is(a, "frommember") && more >= 1 && search && !from_lon_lat {
            if let Some(score) = score {
                let s = score(&args[at + 1]).ok_or(Cow::Borrowed(ERR_MEMBER))?;
                parts.centre = Some(geo::decode_score(s));
            }
            from_member = true;
            i += 1;
        } else if is(a, "fromlonlat") && more >= 2 && search && !from_member {
            parts.centre = Some(lon_lat(&args[at + 1], &args[at + 2])?);
            from_lon_lat = true;
            i += 2;
        } else if is(a, "byradius") && more >= 2 && search && !by_box {
            parts.extent = Some(distance(&args[at + 1], &args[at + 2])?);
            by_radius = true;
            i += 2;
        } else if is(a, "bybox") && more >= 3 && search && !by_radius {
            let width = float(&args[at + 1], ERR_WIDTH_NUMERIC)?;
            let height = float(&args[at + 2], ERR_HEIGHT_NUMERIC)?;
            if height < 0.0 || width < 0.0 {
                return Err(Cow::Borrowed(ERR_BOX_NEGATIVE));
            }
            parts.extent = Some((Extent::Box { width, height }, unit(&args[at + 3])?));
            by_box = true;
            i += 3;
        } else {
            return Err(Cow::Borrowed(err::SYNTAX));
        }
        i += 1;
    }
    if q.store.is_some() && (q.withdist || q.withhash || q.withcoord) {
        let what = if search_store { "GEOSEARCHSTORE" } else { "STORE option in GEORADIUS" };
        return Err(Cow::Owned(format!("ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options")));
    }
    // The command's name as the client sent it.
    let name = || String::from_utf8_lossy(&args[0]).into_owned();
    if search && !(from_member || from_lon_lat) {
        return Err(Cow::Owned(format!("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {}", name())));
    }
    if search && !(by_radius || by_box) {
        return Err(Cow::Owned(format!("ERR exactly one of BYRADIUS and BYBOX can be specified for {}", name())));
    }
    if q.any && q.count == 0 {
        return Err(Cow::Borrowed(ERR_ANY));
    }
    if let (Some((lon, lat)), Some((extent, unit_m)), Some(_)) = (parts.centre, parts.extent, score) {
        q.shape = Some(Shape { lon, lat, extent, unit_m });
    }
    Ok(q)
}

/// A member's score in the source set, as [`parse`] reads it.
type Scores<'s> = &'s dyn Fn(&[u8]) -> Option<f64>;

/// A search's outcome: Redis's error, or the query and what it found.
type Searched<'a> = Result<(Query<'a>, Vec<Point>), Cow<'static, str>>;

/// A member found, copied out of the set.
#[derive(Debug)]
struct Point {
    member: Vec<u8>,
    score: f64,
    lon: f64,
    lat: f64,
    dist_m: f64,
}

/// The members `q` finds in `v`, ordered and cut as Redis does: COUNT
/// without ASC, DESC or ANY sorts ascending; ANY stops the scan at COUNT.
fn run_query(v: &ZView<'_>, q: &Query<'_>) -> Vec<Point> {
    let Some(shape) = q.shape else { return Vec::new() };
    let mut hits = geo::search(v, &shape, if q.any { q.count } else { 0 });
    let order = match q.order {
        None if q.count != 0 && !q.any => Some(Order::Asc),
        o => o,
    };
    let n = if q.count == 0 { hits.len() } else { hits.len().min(q.count) };
    if let Some(o) = order {
        geo::sort_by_distance(&mut hits, o, n);
    }
    hits[..n]
        .iter()
        .map(|h| Point { member: h.member.to_vec(), score: h.score, lon: h.lon, lat: h.lat, dist_m: h.dist_m })
        .collect()
}

/// Parses and runs a search on the source at `args[src]`: Redis's
/// error, or the query with what it found (nothing for a missing key).
fn query<'a>(ctx: &Ctx<'_>, cmd: Cmd, args: &'a [Arg<'_>], src: usize) -> Access<Searched<'a>> {
    let r = read(ctx, &args[src], Kind::ZSet, |z: Found<'_>| {
        view(z, |v| {
            let q = parse(cmd, args, Some(&|m| v.score(m)))?;
            let points = run_query(&v, &q);
            Ok((q, points))
        })
    });
    match r {
        Access::Absent => Access::Done(parse(cmd, args, None).map(|q| (q, Vec::new()))),
        other => other,
    }
}

/// GEORADIUS GEORADIUSBYMEMBER (and _RO) GEOSEARCH GEOSEARCHSTORE.
fn search(ctx: &mut Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], out: &mut Vec<u8>) {
    let src = if cmd == Cmd::Geosearchstore { 2 } else { 1 };
    let ctx: &Ctx<'_> = ctx;
    let (q, points) = match query(ctx, cmd, args, src) {
        Access::Done(Ok(found)) => found,
        Access::Done(Err(e)) => return push_error(out, e.as_bytes()),
        Access::WrongType => return push_error(out, typed::WRONGTYPE.as_bytes()),
        Access::Absent => unreachable!("query answers a missing key"),
    };
    let unit_m = q.shape.map_or(1.0, |s| s.unit_m);
    if let Some((at, dst, dist)) = q.store {
        let dst = stored_key(ctx, cmd, args, at, dst);
        let t = ctx.ks.thresholds.load();
        let pairs = |points: &[Point]| {
            let scored = points.iter().map(|p| (&p.member[..], if dist { p.dist_m / unit_m } else { p.score }));
            ZSet::from_pairs(scored, &t)
        };
        let mut first = Some(pairs(&points));
        // A rerun (the engine made room) reads the source again; if it
        // is gone or changed kind meanwhile, the result is empty.
        let make = || {
            first.take().unwrap_or_else(|| match query(ctx, cmd, args, src) {
                Access::Done(Ok((_, p))) => pairs(&p),
                _ => ZSet::new(&t),
            })
        };
        let event = if cmd == Cmd::Geosearchstore { "geosearchstore" } else { "georadiusstore" };
        return store_result(ctx, &dst, event, make, out);
    }
    let options = usize::from(q.withdist) + usize::from(q.withhash) + usize::from(q.withcoord);
    let proto = ctx.proto();
    push_array(out, points.len());
    for p in &points {
        if out.len() >= ctx.out_stop {
            // Past the client's hard limit: the front end closes it.
            return;
        }
        if options > 0 {
            push_array(out, options + 1);
        }
        push_bulk(out, &p.member);
        if q.withdist {
            let mut text = Vec::new();
            geo::format_distance(p.dist_m / unit_m, &mut text);
            push_bulk(out, &text);
        }
        if q.withhash {
            push_int(out, geo::score_integer(p.score));
        }
        if q.withcoord {
            push_array(out, 2);
            push_coord(out, proto, p.lon);
            push_coord(out, proto, p.lat);
        }
    }
}

/// The destination at `args[at]` in its stored form. The front end
/// encodes (for a database other than 0) the keys the row's key
/// specifications find (`db.rs`), and a STORE/STOREDIST keyword
/// specification finds the first one given; Redis stores to the last,
/// so a later one is encoded here.
fn stored_key<'a>(ctx: &Ctx<'_>, cmd: Cmd, args: &[Arg<'_>], at: usize, key: &'a [u8]) -> Cow<'a, [u8]> {
    let Some(spec) = COMMANDS.iter().find(|s| s.cmd == cmd) else { return Cow::Borrowed(key) };
    let found = table::keys_of(spec, args).iter().any(|&(i, _)| i == at);
    if !found && namespace::needs_encoding(ctx.ns, key) {
        Cow::Owned(namespace::encode(ctx.ns, key))
    } else {
        Cow::Borrowed(key)
    }
}
