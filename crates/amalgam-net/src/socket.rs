//! What a connection needs of its socket, so that the same connection
//! code runs over mio's `TcpStream` in the event loop and over a fake
//! socket outside it (the server's `worker::Driven`, which the TLS fuzz
//! target drives).

use mio::net::TcpStream;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;

/// What a connection needs of its socket: mio's `TcpStream` in the
/// event loop; anything else that reads and writes (a fake socket) when a
/// connection is driven outside it (the server's `worker::Driven`).
pub trait Socket: Read + Write {
    fn peer_addr(&self) -> std::io::Result<std::net::SocketAddr>;
    fn local_addr(&self) -> std::io::Result<std::net::SocketAddr>;
    /// Its file descriptor (CLIENT LIST's `fd=`); -1 for none.
    fn fd(&self) -> i32;
}

impl Socket for TcpStream {
    fn peer_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        TcpStream::peer_addr(self)
    }

    fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        TcpStream::local_addr(self)
    }

    fn fd(&self) -> i32 {
        self.as_raw_fd()
    }
}

/// The protocol a listener (and each connection it accepts) speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Memcached,
    Resp,
}
