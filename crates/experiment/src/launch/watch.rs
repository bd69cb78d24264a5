//! Watching a launched target: its output's lines (the ready and full
//! lines, the tail kept for failures) and its exit, from one thread
//! polling both pipes and a pidfd, started while the target is held.

use std::io::Read;
use std::sync::mpsc;
use std::time::Instant;

use regex::Regex;

use super::{Event, LaunchSpec, Ready, TAIL_BYTES};

/// The target's output, read line by line (for the ready and full lines,
/// and the tail kept for failures), and its exit, on one thread polling
/// both pipes and a pidfd: at the exit one thread wakes, not three (two
/// readers and a waiter), which left the waiter queued behind the readers
/// on a 2-CPU host. Without pidfds (Linux before 5.3) a waiter thread of
/// its own waits for the exit. Started while the target is held.
pub(super) fn watch_output(
    pid: i32,
    streams: [Option<std::fs::File>; 2],
    spec: &LaunchSpec,
    tx: &mpsc::Sender<Event>,
) -> (
    Vec<std::thread::JoinHandle<()>>,
    std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
) {
    let tail = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let lines = Lines {
        re: match &spec.ready {
            Ready::Line(re) => Some(re.clone()),
            _ => None,
        },
        full: spec.full_line.clone(),
        seen: false,
        seen_full: false,
        tx: tx.clone(),
        tail: tail.clone(),
    };
    let pidfd = rustix::process::Pid::from_raw(pid)
        .and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok());
    let mut threads = Vec::new();
    if pidfd.is_none() {
        threads.push(spawn_waiter(pid, tx.clone()));
    }
    let exit_tx = tx.clone();
    threads.push(std::thread::spawn(move || {
        poll_output(pid, streams, pidfd, lines, &exit_tx);
    }));
    (threads, tail)
}

/// wait4 rather than Child::wait: its rusage is the target's own I/O and
/// CPU (children it waited for included), which lets the run tell the
/// background's device traffic from the target's. `at` is when the exit
/// was seen.
fn send_exit(pid: i32, at: Instant, tx: &mpsc::Sender<Event>) {
    let _ = match iolab_spawn::wait4(pid) {
        Ok(done) => tx.send(Event::Exited(at, done.status, done.usage)),
        Err(_) => tx.send(Event::WaitFailed),
    };
}

fn spawn_waiter(pid: i32, tx: mpsc::Sender<Event>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || wait_exit(pid, &tx))
}

/// Blocks until `pid` exits, dates it, and reports it.
fn wait_exit(pid: i32, tx: &mpsc::Sender<Event>) {
    // SAFETY: waitid on our own child with WNOWAIT leaves it to be
    // reaped by `send_exit`'s wait4; the struct is plain data.
    let seen = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        )
    };
    let at = Instant::now();
    if seen == 0 {
        send_exit(pid, at, tx);
    } else {
        let _ = tx.send(Event::WaitFailed);
    }
}

/// Until both pipes are at EOF and the exit (with a pidfd) was seen.
fn poll_output(
    pid: i32,
    streams: [Option<std::fs::File>; 2],
    pidfd: Option<std::os::fd::OwnedFd>,
    mut lines: Lines,
    tx: &mpsc::Sender<Event>,
) {
    use std::os::fd::AsRawFd;
    let mut open: Vec<(std::fs::File, Vec<u8>)> = streams
        .into_iter()
        .flatten()
        .map(|f| (f, Vec::new()))
        .collect();
    let mut exit = pidfd;
    let mut chunk = [0u8; 8192];
    while !open.is_empty() || exit.is_some() {
        let mut fds: Vec<libc::pollfd> = open
            .iter()
            .map(|(f, _)| f.as_raw_fd())
            .chain(exit.as_ref().map(AsRawFd::as_raw_fd))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: `fds` is a live array of `fds.len()` pollfds.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            // poll refused: the exit is still waited for and reported
            // (blocking, dated when seen), never left to the timeout.
            if exit.is_some() {
                wait_exit(pid, tx);
            }
            break;
        }
        let at = Instant::now();
        // Output first: lines printed before the exit are read before it
        // is reported.
        let mut closed = Vec::new();
        for (i, (f, partial)) in open.iter_mut().enumerate() {
            if fds[i].revents == 0 {
                continue;
            }
            match f.read(&mut chunk) {
                Ok(0) | Err(_) => {
                    // EOF: the last line may lack its newline.
                    if !partial.is_empty() {
                        lines.line(&std::mem::take(partial), at);
                    }
                    closed.push(i);
                }
                Ok(got) => {
                    partial.extend_from_slice(&chunk[..got]);
                    while let Some(nl) = partial.iter().position(|&c| c == b'\n') {
                        let line: Vec<u8> = partial.drain(..=nl).collect();
                        lines.line(&line, at);
                    }
                }
            }
        }
        for i in closed.into_iter().rev() {
            open.remove(i);
        }
        if exit.is_some() && fds.last().is_some_and(|p| p.revents != 0) {
            exit = None;
            send_exit(pid, at, tx);
        }
    }
}

/// The ready and full lines' matching, and the tail.
struct Lines {
    re: Option<Regex>,
    full: Option<Regex>,
    seen: bool,
    seen_full: bool,
    tx: mpsc::Sender<Event>,
    tail: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl Lines {
    fn line(&mut self, line: &[u8], at: Instant) {
        if !self.seen {
            if let Some(re) = &self.re {
                if re.is_match(&String::from_utf8_lossy(line)) {
                    self.seen = true;
                    let _ = self.tx.send(Event::ReadyLine(at));
                }
            }
        }
        if !self.seen_full {
            if let Some(re) = &self.full {
                if re.is_match(&String::from_utf8_lossy(line)) {
                    self.seen_full = true;
                    let _ = self.tx.send(Event::FullLine(at));
                }
            }
        }
        if let Ok(mut t) = self.tail.lock() {
            t.extend_from_slice(line);
            if t.len() > TAIL_BYTES {
                let cut = t.len() - TAIL_BYTES;
                t.drain(..cut);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The waiter a kernel without pidfds gets: it sees the exit without
    /// reaping it (WNOWAIT), dates it, then reaps it for its rusage.
    #[test]
    #[allow(
        clippy::zombie_processes,
        reason = "reaped by the waiter under test, checked below"
    )]
    fn the_waiter_without_a_pidfd_reports_the_exit_and_its_status() {
        let child = std::process::Command::new("sh")
            .args(["-c", "exit 3"])
            .spawn()
            .unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        let before = Instant::now();
        let (tx, rx) = mpsc::channel();
        spawn_waiter(pid, tx).join().unwrap();
        match rx.recv().unwrap() {
            Event::Exited(at, status, _) => {
                assert!(at >= before);
                assert_eq!(status.code(), Some(3));
            }
            _ => panic!("no exit reported"),
        }
        // Reaped: no such child any more.
        assert!(iolab_spawn::wait4(pid).is_err());
    }
}
