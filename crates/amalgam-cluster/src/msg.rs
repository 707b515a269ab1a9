//! The cluster bus's messages, byte for byte as Redis 7.0 writes them
//! (`cluster.h`: `clusterMsg`, `clusterMsgDataGossip`, the ping
//! extensions; every integer in network byte order), and their checks
//! (Redis's `clusterIsValidPacket`).
//!
//! A message is a 2,256-byte header — signature `RCmb`, total length,
//! version 1, the sender's ports, type and count, epochs and replication
//! offset, name, slot bitmap, primary's name, announced IP, extension
//! count, flags, the cluster state it sees, message flags — then a body
//! by type: PING, PONG and MEET carry `count` gossip entries of 104 bytes
//! (and, with `CLUSTERMSG_FLAG0_EXT_DATA`, `extensions` 8-byte-aligned
//! extensions); FAIL a node name; UPDATE a config epoch, a node name and
//! a slot bitmap; PUBLISH and PUBLISHSHARD a channel and a message; FAILOVER_AUTH_REQUEST,
//! FAILOVER_AUTH_ACK and MFSTART nothing. Decoding never trusts a length:
//! the total must equal what the type and counts imply, as Redis checks,
//! or the message is refused (and the link closed by the caller).

use crate::node::{Name, NAME_LEN};
use crate::slot::{SlotSet, SLOTS};

/// The header's length (Redis's `CLUSTERMSG_MIN_LEN`).
pub const HEADER_LEN: usize = 2256;
/// One gossip entry.
pub const GOSSIP_LEN: usize = 104;
/// Redis's `NET_IP_STR_LEN`: an address field, NUL-padded.
pub const IP_LEN: usize = 46;
/// The one protocol version (`CLUSTER_PROTO_VER`).
pub const VERSION: u16 = 1;
/// The largest message this node reads: past it the link is closed
/// (Redis bounds a link by memory alone; a PUBLISH may carry a large
/// message, so the bound is Redis's largest bulk string).
pub const MESSAGE_MAX: usize = 512 << 20;
/// The most gossip entries a message may carry (a message of this many
/// is far past any cluster: Redis sends a tenth of its nodes, at least 3).
pub const GOSSIP_MAX: usize = 4096;
/// The most extensions a PING may carry.
pub const EXTENSIONS_MAX: usize = 64;

/// `clusterMsg`'s `mflags[0]` bits.
pub const FLAG0_PAUSED: u8 = 1;
pub const FLAG0_FORCEACK: u8 = 2;
pub const FLAG0_EXT_DATA: u8 = 4;

/// Ping extension types (Redis 7.0 knows the hostname; 7.2 adds more,
/// which a 7.0 node skips and so does this one).
pub const EXT_HOSTNAME: u16 = 0;

/// Message types (`CLUSTERMSG_TYPE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Type {
    Ping = 0,
    Pong = 1,
    Meet = 2,
    Fail = 3,
    Publish = 4,
    AuthRequest = 5,
    AuthAck = 6,
    Update = 7,
    MfStart = 8,
    Module = 9,
    PublishShard = 10,
}

impl Type {
    pub fn from_u16(t: u16) -> Option<Type> {
        use Type::*;
        Some(match t {
            0 => Ping,
            1 => Pong,
            2 => Meet,
            3 => Fail,
            4 => Publish,
            5 => AuthRequest,
            6 => AuthAck,
            7 => Update,
            8 => MfStart,
            9 => Module,
            10 => PublishShard,
            _ => return None,
        })
    }
}

/// The header, decoded.
#[derive(Debug, Clone)]
pub struct Header {
    pub ty: u16,
    pub port: u16,
    pub pport: u16,
    pub cport: u16,
    pub current_epoch: u64,
    pub config_epoch: u64,
    pub offset: u64,
    pub sender: Name,
    pub slots: SlotSet,
    /// The sender's primary (None: it is a primary).
    pub primary: Option<Name>,
    /// The sender's announced IP (empty: use the link's peer address).
    pub ip: String,
    pub flags: u16,
    /// The cluster's state from the sender's view (0 ok, 1 fail).
    pub state: u8,
    pub mflags: [u8; 3],
}

/// One gossip entry: what the sender knows of another node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gossip {
    pub name: Name,
    /// Seconds (Redis sends its milliseconds / 1000).
    pub ping_sent: u32,
    pub pong_received: u32,
    pub ip: String,
    pub port: u16,
    pub cport: u16,
    pub flags: u16,
    pub pport: u16,
}

/// A message's body, by type.
#[derive(Debug, Clone)]
pub enum Body {
    /// PING, PONG, MEET.
    Ping {
        gossip: Vec<Gossip>,
        hostname: Option<String>,
    },
    Fail {
        about: Name,
    },
    Publish {
        channel: Vec<u8>,
        message: Vec<u8>,
    },
    Update {
        config_epoch: u64,
        name: Name,
        slots: SlotSet,
    },
    /// FAILOVER_AUTH_REQUEST, FAILOVER_AUTH_ACK, MFSTART.
    Empty,
    /// MODULE and types this node does not know: kept as bytes, skipped.
    Other,
}

#[derive(Debug, Clone)]
pub struct Message {
    pub header: Header,
    pub body: Body,
}

/// Why a message was refused; the caller closes the link and logs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Not `RCmb`, or a total length below the header's or above
    /// [`MESSAGE_MAX`] (Redis: "Bad message length or signature received
    /// from Cluster bus.").
    Framing(usize),
    /// The total length is not what the type and counts imply.
    Length { ty: u16, got: usize, expected: usize },
    /// A ping extension's length is not a multiple of 8 or runs past the
    /// message.
    Extension(u16),
    /// More gossip entries or extensions than this node reads.
    TooMany(u16),
    /// A version other than 1 (Redis skips these silently).
    Version(u16),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Framing(n) => write!(f, "Bad message length or signature received from Cluster bus ({n} bytes)"),
            Refused::Length { ty, got, expected } => {
                write!(f, "Received invalid {} packet of length {got} but expected length {expected}", type_name(*ty))
            }
            Refused::Extension(ty) => write!(f, "Received a {} packet with bad extension data", type_name(*ty)),
            Refused::TooMany(ty) => write!(f, "Received a {} packet with too many entries", type_name(*ty)),
            Refused::Version(v) => write!(f, "Received a packet of protocol version {v}"),
        }
    }
}

/// Redis's `clusterGetMessageTypeString`.
pub fn type_name(ty: u16) -> &'static str {
    const NAMES: [&str; 11] = [
        "ping",
        "pong",
        "meet",
        "fail",
        "publish",
        "auth-req",
        "auth-ack",
        "update",
        "mfstart",
        "module",
        "publishshard",
    ];
    NAMES.get(ty as usize).copied().unwrap_or("unknown")
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}
fn name_at(b: &[u8], at: usize) -> Name {
    let mut n = [0u8; NAME_LEN];
    n.copy_from_slice(&b[at..at + NAME_LEN]);
    n
}
/// A NUL-padded text field (an IP, a hostname): up to its first NUL.
fn text_at(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// The total length a message's first 8 bytes announce, once they are
/// in: Some(len) to read, or the framing refusal (Redis checks the
/// signature and the minimum length before reading the rest).
pub fn frame_len(first8: &[u8]) -> Result<usize, Refused> {
    let len = u32_at(first8, 4) as usize;
    if &first8[..4] != b"RCmb" || !(HEADER_LEN..=MESSAGE_MAX).contains(&len) {
        return Err(Refused::Framing(len));
    }
    Ok(len)
}

/// Decodes one whole message (`buf.len()` is its announced total).
pub fn decode(buf: &[u8]) -> Result<Message, Refused> {
    let totlen = frame_len(buf)?;
    if totlen != buf.len() {
        return Err(Refused::Framing(buf.len()));
    }
    let ver = u16_at(buf, 8);
    if ver != VERSION {
        return Err(Refused::Version(ver));
    }
    let ty = u16_at(buf, 12);
    let count = u16_at(buf, 14) as usize;
    let slots = {
        let mut s = SlotSet::default();
        s.0.copy_from_slice(&buf[80..80 + SLOTS / 8]);
        s
    };
    let primary = name_at(buf, 2128);
    let mflags = [buf[2253], buf[2254], buf[2255]];
    let extensions = u16_at(buf, 2214) as usize;
    let header = Header {
        ty,
        port: u16_at(buf, 10),
        current_epoch: u64_at(buf, 16),
        config_epoch: u64_at(buf, 24),
        offset: u64_at(buf, 32),
        sender: name_at(buf, 40),
        slots,
        primary: primary.iter().any(|&b| b != 0).then_some(primary),
        ip: text_at(&buf[2168..2168 + IP_LEN]),
        pport: u16_at(buf, 2246),
        cport: u16_at(buf, 2248),
        flags: u16_at(buf, 2250),
        state: buf[2252],
        mflags,
    };
    let data = &buf[HEADER_LEN..];
    let exact = |expected: usize| {
        if totlen == expected {
            Ok(())
        } else {
            Err(Refused::Length { ty, got: totlen, expected })
        }
    };
    let body = match Type::from_u16(ty) {
        Some(Type::Ping | Type::Pong | Type::Meet) => {
            if count > GOSSIP_MAX || extensions > EXTENSIONS_MAX {
                return Err(Refused::TooMany(ty));
            }
            let mut explen = HEADER_LEN + count * GOSSIP_LEN;
            if totlen < explen {
                return Err(Refused::Length { ty, got: totlen, expected: explen });
            }
            let mut gossip = Vec::with_capacity(count);
            for i in 0..count {
                let g = &data[i * GOSSIP_LEN..(i + 1) * GOSSIP_LEN];
                gossip.push(Gossip {
                    name: name_at(g, 0),
                    ping_sent: u32_at(g, 40),
                    pong_received: u32_at(g, 44),
                    ip: text_at(&g[48..48 + IP_LEN]),
                    port: u16_at(g, 94),
                    cport: u16_at(g, 96),
                    flags: u16_at(g, 98),
                    pport: u16_at(g, 100),
                });
            }
            let mut hostname = None;
            if mflags[0] & FLAG0_EXT_DATA != 0 {
                for _ in 0..extensions {
                    if totlen - explen < 8 {
                        return Err(Refused::Extension(ty));
                    }
                    let ext = &buf[explen..];
                    let len = u32_at(ext, 0) as usize;
                    if len % 8 != 0 || len < 8 || totlen - explen < len {
                        return Err(Refused::Extension(ty));
                    }
                    if u16_at(ext, 4) == EXT_HOSTNAME {
                        hostname = Some(text_at(&ext[8..len]));
                    }
                    explen += len;
                }
            }
            exact(explen)?;
            Body::Ping { gossip, hostname }
        }
        Some(Type::Fail) => {
            exact(HEADER_LEN + NAME_LEN)?;
            Body::Fail { about: name_at(data, 0) }
        }
        Some(Type::Publish | Type::PublishShard) => {
            if totlen < HEADER_LEN + 8 {
                return Err(Refused::Length { ty, got: totlen, expected: HEADER_LEN + 8 });
            }
            let (cl, ml) = (u32_at(data, 0) as usize, u32_at(data, 4) as usize);
            exact((HEADER_LEN + 8).saturating_add(cl).saturating_add(ml))?;
            Body::Publish { channel: data[8..8 + cl].to_vec(), message: data[8 + cl..8 + cl + ml].to_vec() }
        }
        Some(Type::AuthRequest | Type::AuthAck | Type::MfStart) => {
            exact(HEADER_LEN)?;
            Body::Empty
        }
        Some(Type::Update) => {
            exact(HEADER_LEN + 8 + NAME_LEN + SLOTS / 8)?;
            let mut s = SlotSet::default();
            s.0.copy_from_slice(&data[48..48 + SLOTS / 8]);
            Body::Update { config_epoch: u64_at(data, 0), name: name_at(data, 8), slots: s }
        }
        // MODULE, and types past Redis 7.0's: skipped, as Redis skips a
        // type it does not know.
        Some(Type::Module) | None => Body::Other,
    };
    Ok(Message { header, body })
}

/// Writes `header` with its type and count and the total length filled in
/// at the end ([`finish`]).
pub fn encode_header(h: &Header, count: u16, extensions: u16, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + HEADER_LEN, 0);
    let b = &mut out[start..];
    b[0..4].copy_from_slice(b"RCmb");
    b[8..10].copy_from_slice(&VERSION.to_be_bytes());
    b[10..12].copy_from_slice(&h.port.to_be_bytes());
    b[12..14].copy_from_slice(&h.ty.to_be_bytes());
    b[14..16].copy_from_slice(&count.to_be_bytes());
    b[16..24].copy_from_slice(&h.current_epoch.to_be_bytes());
    b[24..32].copy_from_slice(&h.config_epoch.to_be_bytes());
    b[32..40].copy_from_slice(&h.offset.to_be_bytes());
    b[40..80].copy_from_slice(&h.sender);
    b[80..80 + SLOTS / 8].copy_from_slice(&h.slots.0[..]);
    if let Some(p) = h.primary {
        b[2128..2168].copy_from_slice(&p);
    }
    let ip = h.ip.as_bytes();
    let n = ip.len().min(IP_LEN - 1);
    b[2168..2168 + n].copy_from_slice(&ip[..n]);
    b[2214..2216].copy_from_slice(&extensions.to_be_bytes());
    b[2246..2248].copy_from_slice(&h.pport.to_be_bytes());
    b[2248..2250].copy_from_slice(&h.cport.to_be_bytes());
    b[2250..2252].copy_from_slice(&h.flags.to_be_bytes());
    b[2252] = h.state;
    b[2253..2256].copy_from_slice(&h.mflags);
}

/// Sets the total length of the message that began at `start`.
pub fn finish(out: &mut [u8], start: usize) {
    let len = (out.len() - start) as u32;
    out[start + 4..start + 8].copy_from_slice(&len.to_be_bytes());
}

/// Appends one gossip entry.
pub fn encode_gossip(g: &Gossip, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + GOSSIP_LEN, 0);
    let b = &mut out[start..];
    b[0..40].copy_from_slice(&g.name);
    b[40..44].copy_from_slice(&g.ping_sent.to_be_bytes());
    b[44..48].copy_from_slice(&g.pong_received.to_be_bytes());
    let ip = g.ip.as_bytes();
    let n = ip.len().min(IP_LEN - 1);
    b[48..48 + n].copy_from_slice(&ip[..n]);
    b[94..96].copy_from_slice(&g.port.to_be_bytes());
    b[96..98].copy_from_slice(&g.cport.to_be_bytes());
    b[98..100].copy_from_slice(&g.flags.to_be_bytes());
    b[100..102].copy_from_slice(&g.pport.to_be_bytes());
}

/// Appends the hostname extension (Redis 7.0's only one): the name and
/// its NUL, padded to 8 bytes, after an 8-byte extension header.
pub fn encode_hostname(hostname: &str, out: &mut Vec<u8>) {
    let body = (hostname.len() + 1).div_ceil(8) * 8;
    let len = (8 + body) as u32;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&EXT_HOSTNAME.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    let start = out.len();
    out.extend_from_slice(hostname.as_bytes());
    out.resize(start + body, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(ty: Type) -> Header {
        let mut slots = SlotSet::default();
        slots.set(0, true);
        slots.set(16383, true);
        Header {
            ty: ty as u16,
            port: 7000,
            pport: 0,
            cport: 17000,
            current_epoch: 7,
            config_epoch: 3,
            offset: 12345,
            sender: [b'a'; 40],
            slots,
            primary: None,
            ip: "127.0.0.1".into(),
            flags: 1,
            state: 0,
            mflags: [FLAG0_EXT_DATA, 0, 0],
        }
    }

    #[test]
    fn a_ping_round_trips_at_redis_s_offsets() {
        let mut out = Vec::new();
        let h = header(Type::Ping);
        encode_header(&h, 1, 1, &mut out);
        let g = Gossip {
            name: [b'b'; 40],
            ping_sent: 1,
            pong_received: 2,
            ip: "10.0.0.2".into(),
            port: 7001,
            cport: 17001,
            flags: 1,
            pport: 0,
        };
        encode_gossip(&g, &mut out);
        encode_hostname("node-a", &mut out);
        finish(&mut out, 0);
        assert_eq!(out.len(), HEADER_LEN + GOSSIP_LEN + 16);
        // The offsets cluster.h asserts.
        assert_eq!(&out[0..4], b"RCmb");
        assert_eq!(u16_at(&out, 2248), 17000);
        assert_eq!(out[80], 1);
        assert_eq!(out[80 + 2047], 0x80);
        let m = decode(&out).unwrap();
        assert_eq!(m.header.sender, [b'a'; 40]);
        assert_eq!((m.header.current_epoch, m.header.config_epoch, m.header.offset), (7, 3, 12345));
        assert_eq!(m.header.slots.count(), 2);
        assert_eq!(m.header.ip, "127.0.0.1");
        let Body::Ping { gossip, hostname } = m.body else { panic!("a ping") };
        assert_eq!(gossip, vec![g]);
        assert_eq!(hostname.as_deref(), Some("node-a"));
    }

    #[test]
    fn lying_lengths_are_refused() {
        let mut out = Vec::new();
        encode_header(&header(Type::Ping), 2, 0, &mut out);
        finish(&mut out, 0);
        // Two gossip entries announced, none there.
        assert!(matches!(decode(&out), Err(Refused::Length { .. })));
        let mut out = Vec::new();
        encode_header(&header(Type::Fail), 0, 0, &mut out);
        finish(&mut out, 0);
        assert!(matches!(decode(&out), Err(Refused::Length { expected, .. }) if expected == HEADER_LEN + 40));
        let mut bad = out.clone();
        bad[0] = b'X';
        assert_eq!(decode(&bad).unwrap_err(), Refused::Framing(HEADER_LEN));
        assert!(frame_len(&[b'R', b'C', b'm', b'b', 0, 0, 0, 16]).is_err());
        // An extension whose length is not a multiple of 8.
        let mut out = Vec::new();
        encode_header(&header(Type::Pong), 0, 1, &mut out);
        out.extend_from_slice(&12u32.to_be_bytes());
        out.extend_from_slice(&[0; 8]);
        finish(&mut out, 0);
        assert_eq!(decode(&out).unwrap_err(), Refused::Extension(1));
    }

    #[test]
    fn publish_and_update_bodies() {
        let mut out = Vec::new();
        encode_header(&header(Type::Publish), 0, 0, &mut out);
        out.extend_from_slice(&2u32.to_be_bytes());
        out.extend_from_slice(&3u32.to_be_bytes());
        out.extend_from_slice(b"chmsg");
        finish(&mut out, 0);
        let Body::Publish { channel, message } = decode(&out).unwrap().body else { panic!() };
        assert_eq!((&channel[..], &message[..]), (&b"ch"[..], &b"msg"[..]));
        // A channel length past the message.
        let mut out2 = out.clone();
        out2[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode(&out2).is_err());
    }
}
