//! The kernel's delay accounting of a task, through taskstats (generic
//! netlink family `TASKSTATS`): the time it waited for a CPU, for block
//! I/O (`blkio`: from a switch-out with `in_iowait` to its wakeup) and for
//! swap-in, in nanoseconds.
//!
//! `/proc/PID/stat` field 42 has the blkio time too, but in clock ticks
//! (10 ms), too coarse to check a start's I/O waits against; taskstats
//! gives nanoseconds. An [`ExitListener`] receives the totals of every
//! task that exits while it listens (the kernel sends them at exit), so a
//! start's main thread is measured over its whole life even when it exits
//! or is killed before anyone could ask. The kernel only accounts while
//! `kernel.task_delayacct` is 1 (off by default since Linux 5.14).

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A task's delay totals, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Delays {
    /// The thread.
    pub tid: i32,
    /// Waits for a CPU (runnable), and how many.
    pub cpu_delay_ns: u64,
    /// How many waits for a CPU.
    pub cpu_count: u64,
    /// Waits for block I/O (`in_iowait` sleeps, switch-out to wakeup).
    pub blkio_delay_ns: u64,
    /// How many.
    pub blkio_count: u64,
    /// Waits for swap-in.
    pub swapin_delay_ns: u64,
}

const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const TASKSTATS_CMD_GET: u8 = 1;
const TASKSTATS_CMD_ATTR_PID: u16 = 1;
const TASKSTATS_CMD_ATTR_REGISTER_CPUMASK: u16 = 3;
const TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK: u16 = 4;
const TASKSTATS_TYPE_PID: u16 = 1;
const TASKSTATS_TYPE_STATS: u16 = 3;
const TASKSTATS_TYPE_AGGR_PID: u16 = 4;
const NLA_F_MASK: u16 = 0x3fff;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// `AF_NETLINK` (16) as `sockaddr_nl.nl_family` (a `sa_family_t`, u16).
#[allow(
    clippy::cast_possible_truncation,
    reason = "AF_NETLINK is 16 (linux/socket.h): a u16 holds it"
)]
const AF_NETLINK: libc::sa_family_t = libc::AF_NETLINK as libc::sa_family_t;
/// `NLM_F_REQUEST` (1) as `nlmsghdr.nlmsg_flags` (u16).
#[allow(
    clippy::cast_possible_truncation,
    reason = "NLM_F_REQUEST is 1 (linux/netlink.h): a u16 holds it"
)]
const NLM_F_REQUEST: u16 = libc::NLM_F_REQUEST as u16;
/// Offsets in `struct taskstats` (linux/taskstats.h, stable since v1).
const OFF_CPU_COUNT: usize = 16;
const OFF_CPU_DELAY: usize = 24;
const OFF_BLKIO_COUNT: usize = 32;
const OFF_BLKIO_DELAY: usize = 40;
const OFF_SWAPIN_DELAY: usize = 56;

/// A generic netlink socket talking to the TASKSTATS family.
struct Socket {
    fd: OwnedFd,
    family: u16,
    seq: u32,
}

impl Socket {
    fn open() -> io::Result<Socket> {
        // SAFETY: plain socket(2); the fd is owned from here on.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_GENERIC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just returned by socket(2) and is not owned elsewhere.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sockaddr_nl is plain data; zeroed is a valid value.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = AF_NETLINK;
        // SAFETY: addr is a valid sockaddr_nl of the given size.
        #[allow(
            clippy::cast_possible_truncation,
            reason = "size_of::<sockaddr_nl>() is 12: a socklen_t holds it"
        )]
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut s = Socket {
            fd,
            family: GENL_ID_CTRL,
            seq: 0,
        };
        let mut name = b"TASKSTATS".to_vec();
        name.push(0);
        s.send(
            GENL_ID_CTRL,
            CTRL_CMD_GETFAMILY,
            &[(CTRL_ATTR_FAMILY_NAME, &name)],
        )?;
        let reply = s.recv(false)?.ok_or_else(|| io::Error::other("no reply"))?;
        let family = parse_messages(&reply)?
            .into_iter()
            .find_map(|(_, attrs)| {
                attrs
                    .iter()
                    .find(|(t, _)| *t == CTRL_ATTR_FAMILY_ID)
                    .and_then(|(_, v)| Some(u16::from_ne_bytes(v.get(..2)?.try_into().ok()?)))
            })
            .ok_or_else(|| io::Error::other("the kernel has no TASKSTATS family"))?;
        s.family = family;
        Ok(s)
    }

    fn send(&mut self, ty: u16, cmd: u8, attrs: &[(u16, &[u8])]) -> io::Result<()> {
        self.seq += 1;
        let mut body = vec![cmd, 1, 0, 0];
        for (t, v) in attrs {
            // nla_len is a u16: an attribute past 64 KiB cannot be sent.
            let len = u16::try_from(4 + v.len()).map_err(|_| {
                io::Error::other(format!(
                    "netlink: attribute {t} of {} bytes does not fit nla_len (u16)",
                    v.len()
                ))
            })?;
            body.extend_from_slice(&len.to_ne_bytes());
            body.extend_from_slice(&t.to_ne_bytes());
            body.extend_from_slice(v);
            body.resize(body.len().next_multiple_of(4), 0);
        }
        let len = u32::try_from(16 + body.len()).map_err(|_| {
            io::Error::other(format!(
                "netlink: a message of {} bytes does not fit nlmsg_len (u32)",
                16 + body.len()
            ))
        })?;
        let mut msg = Vec::with_capacity(16 + body.len());
        msg.extend_from_slice(&len.to_ne_bytes());
        msg.extend_from_slice(&ty.to_ne_bytes());
        msg.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
        msg.extend_from_slice(&self.seq.to_ne_bytes());
        msg.extend_from_slice(&0u32.to_ne_bytes());
        msg.extend_from_slice(&body);
        // SAFETY: msg is a valid buffer of its length.
        let n = unsafe { libc::send(self.fd.as_raw_fd(), msg.as_ptr().cast(), msg.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// One datagram; `None` when `nonblocking` and nothing is queued.
    fn recv(&self, nonblocking: bool) -> io::Result<Option<Vec<u8>>> {
        let mut buf = vec![0u8; 64 << 10];
        let flags = if nonblocking { libc::MSG_DONTWAIT } else { 0 };
        // SAFETY: buf is a valid writable buffer of its length.
        let n = unsafe {
            libc::recv(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                flags,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(None);
            }
            return Err(e);
        }
        buf.truncate(n as usize);
        Ok(Some(buf))
    }

    fn set_rcvbuf(&self, bytes: i32) {
        for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
            // SAFETY: an int option of the right size.
            #[allow(
                clippy::cast_possible_truncation,
                reason = "size_of::<i32>() is 4: a socklen_t holds it"
            )]
            let r = unsafe {
                libc::setsockopt(
                    self.fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    opt,
                    (&bytes as *const i32).cast(),
                    std::mem::size_of::<i32>() as u32,
                )
            };
            if r == 0 {
                return;
            }
        }
    }
}

/// The generic netlink messages of one datagram: `(type, attributes)`.
/// A netlink error message becomes the error.
type Attrs<'a> = Vec<(u16, &'a [u8])>;

fn parse_messages(buf: &[u8]) -> io::Result<Vec<(u16, Attrs<'_>)>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 16 <= buf.len() {
        // Bytes of a buffer checked to be long enough above.
        let len = u32::from_ne_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]) as usize;
        let ty = u16::from_ne_bytes([buf[at + 4], buf[at + 5]]);
        if len < 16 || at + len > buf.len() {
            break;
        }
        let msg = &buf[at + 16..at + len];
        match ty {
            NLMSG_ERROR => {
                // A truncated error message is not "no error".
                let errno = i32::from_ne_bytes(
                    msg.get(..4)
                        .and_then(|b| b.try_into().ok())
                        .ok_or_else(|| io::Error::other("netlink: a truncated NLMSG_ERROR"))?,
                );
                if errno != 0 {
                    return Err(io::Error::from_raw_os_error(-errno));
                }
            }
            NLMSG_DONE => {}
            _ if msg.len() >= 4 => out.push((ty, attrs(&msg[4..]))),
            _ => {}
        }
        at += len.next_multiple_of(4);
    }
    Ok(out)
}

fn attrs(mut b: &[u8]) -> Attrs<'_> {
    let mut out = Vec::new();
    while b.len() >= 4 {
        let len = u16::from_ne_bytes([b[0], b[1]]) as usize;
        let ty = u16::from_ne_bytes([b[2], b[3]]) & NLA_F_MASK;
        if len < 4 || len > b.len() {
            break;
        }
        out.push((ty, &b[4..len]));
        b = &b[len.next_multiple_of(4).min(b.len())..];
    }
    out
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

/// The per-thread totals in one datagram (`TASKSTATS_TYPE_AGGR_PID`).
fn delays_in(buf: &[u8]) -> io::Result<Vec<Delays>> {
    let mut out = Vec::new();
    for (_, top) in parse_messages(buf)? {
        for (t, nested) in top {
            if t != TASKSTATS_TYPE_AGGR_PID {
                continue;
            }
            let inner = attrs(nested);
            let tid = inner
                .iter()
                .find(|(t, _)| *t == TASKSTATS_TYPE_PID)
                .and_then(|(_, v)| Some(i32::from_ne_bytes(v.get(..4)?.try_into().ok()?)));
            let stats = inner.iter().find(|(t, _)| *t == TASKSTATS_TYPE_STATS);
            if let (Some(tid), Some((_, s))) = (tid, stats) {
                out.push(Delays {
                    tid,
                    cpu_count: u64_at(s, OFF_CPU_COUNT),
                    cpu_delay_ns: u64_at(s, OFF_CPU_DELAY),
                    blkio_count: u64_at(s, OFF_BLKIO_COUNT),
                    blkio_delay_ns: u64_at(s, OFF_BLKIO_DELAY),
                    swapin_delay_ns: u64_at(s, OFF_SWAPIN_DELAY),
                });
            }
        }
    }
    Ok(out)
}

/// The delay totals of a live thread, now.
pub fn of_thread(tid: i32) -> io::Result<Delays> {
    let mut s = Socket::open()?;
    s.send(
        s.family,
        TASKSTATS_CMD_GET,
        &[(TASKSTATS_CMD_ATTR_PID, &(tid as u32).to_ne_bytes())],
    )?;
    let reply = s.recv(false)?.ok_or_else(|| io::Error::other("no reply"))?;
    delays_in(&reply)?
        .into_iter()
        .find(|d| d.tid == tid)
        .ok_or_else(|| io::Error::other(format!("no taskstats for thread {tid}")))
}

/// Receives the delay totals of every thread that exits while it listens.
pub struct ExitListener {
    sock: Socket,
    mask: Vec<u8>,
}

/// What an [`ExitListener`] received.
#[derive(Debug, Default)]
pub struct Exits {
    /// Per thread, at its exit.
    pub by_tid: HashMap<i32, Delays>,
    /// True when the socket overflowed (exits were lost, ENOBUFS).
    pub overflowed: bool,
}

impl ExitListener {
    /// Listens on every possible CPU from now on.
    pub fn start() -> io::Result<ExitListener> {
        let mut sock = Socket::open()?;
        // Exits of the whole machine queue here until `finish`: room for
        // thousands (a build in the background forks many).
        sock.set_rcvbuf(8 << 20);
        let possible = std::fs::read_to_string("/sys/devices/system/cpu/possible")?;
        let mut mask = possible.trim().as_bytes().to_vec();
        mask.push(0);
        sock.send(
            sock.family,
            TASKSTATS_CMD_GET,
            &[(TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, &mask)],
        )?;
        Ok(ExitListener { sock, mask })
    }

    /// Stops listening and returns what was received.
    pub fn finish(mut self) -> io::Result<Exits> {
        let family = self.sock.family;
        let mask = std::mem::take(&mut self.mask);
        let dereg = self.sock.send(
            family,
            TASKSTATS_CMD_GET,
            &[(TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK, &mask)],
        );
        let mut out = Exits::default();
        loop {
            match self.sock.recv(true) {
                Ok(Some(buf)) => {
                    // A refused request's error reply is skipped; the
                    // exits are kept.
                    if let Ok(ds) = delays_in(&buf) {
                        for d in ds {
                            out.by_tid.insert(d.tid, d);
                        }
                    }
                }
                Ok(None) => break,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => out.overflowed = true,
                Err(e) => return Err(e),
            }
        }
        dereg?;
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn attributes_nest_and_pad() {
        // AGGR_PID { PID = 42, STATS = 64 bytes with blkio_delay = 7 }.
        let mut stats = vec![0u8; 64];
        stats[OFF_BLKIO_DELAY..OFF_BLKIO_DELAY + 8].copy_from_slice(&7u64.to_ne_bytes());
        let mut inner = Vec::new();
        inner.extend_from_slice(&8u16.to_ne_bytes());
        inner.extend_from_slice(&TASKSTATS_TYPE_PID.to_ne_bytes());
        inner.extend_from_slice(&42u32.to_ne_bytes());
        inner.extend_from_slice(&(4 + 64u16).to_ne_bytes());
        inner.extend_from_slice(&TASKSTATS_TYPE_STATS.to_ne_bytes());
        inner.extend_from_slice(&stats);
        let mut body = vec![2, 1, 0, 0];
        body.extend_from_slice(&u16::try_from(4 + inner.len()).unwrap().to_ne_bytes());
        body.extend_from_slice(&(TASKSTATS_TYPE_AGGR_PID | 0x8000).to_ne_bytes());
        body.extend_from_slice(&inner);
        let mut msg = Vec::new();
        msg.extend_from_slice(&u32::try_from(16 + body.len()).unwrap().to_ne_bytes());
        msg.extend_from_slice(&[0x17, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        msg.extend_from_slice(&body);
        let d = delays_in(&msg).unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].tid, d[0].blkio_delay_ns), (42, 7));
    }
}
