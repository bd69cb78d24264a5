//! qemu's monitor (QMP), read from the host while the guest boots: the
//! root disk's counters every 100 ms (`query-blockstats`, qemu's own
//! block layer), at no cost to the guest — the boot chart's disk line, and
//! a second count of the boot's reads beside the guest kernel's
//! diskstats.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The root disk's counters at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskSample {
    /// Host time since qemu started.
    pub at: Duration,
    /// Bytes read and written, requests read.
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_ops: u64,
}

/// A sampling thread.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<(Vec<DiskSample>, Option<String>)>,
}

/// Samples the drive `device` (qemu's id, `virtio0` for the first
/// `-drive if=virtio`) through the monitor at `sock` every `period`.
pub fn start(sock: PathBuf, device: &'static str, t0: Instant, period: Duration) -> Sampler {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::spawn(move || {
        let mut out = Vec::new();
        let why = sample(&sock, device, t0, period, &flag, &mut out)
            .err()
            .map(|e| e.to_string());
        (out, why)
    });
    Sampler { stop, handle }
}

impl Sampler {
    /// Stops sampling; every sample taken, and why sampling ended early
    /// (the monitor refused or went away; qemu's exit ends it too).
    pub fn finish(self) -> (Vec<DiskSample>, Option<String>) {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .join()
            .unwrap_or_else(|_| (Vec::new(), Some("the QMP sampler panicked".into())))
    }
}

fn sample(
    sock: &std::path::Path,
    device: &str,
    t0: Instant,
    period: Duration,
    stop: &AtomicBool,
    out: &mut Vec<DiskSample>,
) -> std::io::Result<()> {
    // qemu makes the socket as it starts.
    let mut tries = 0;
    let stream = loop {
        match UnixStream::connect(sock) {
            Ok(s) => break s,
            Err(_) if tries < 250 && !stop.load(Ordering::Relaxed) => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    };
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut w = stream.try_clone()?;
    let mut r = BufReader::new(stream);
    let mut reply = |w: &mut UnixStream, cmd: &str| -> std::io::Result<Value> {
        writeln!(w, "{{\"execute\":\"{cmd}\"}}")?;
        loop {
            let mut line = String::new();
            if r.read_line(&mut line)? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            // Events and the greeting come in between.
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                if let Some(ret) = v.get("return") {
                    return Ok(ret.clone());
                }
                if v.get("error").is_some() {
                    return Err(std::io::Error::other(line));
                }
            }
        }
    };
    reply(&mut w, "qmp_capabilities")?;
    while !stop.load(Ordering::Relaxed) {
        let ret = reply(&mut w, "query-blockstats")?;
        let at = t0.elapsed();
        let entry = ret.as_array().and_then(|a| {
            a.iter()
                .find(|e| e["device"] == device)
                .or_else(|| a.first())
        });
        if let Some(s) = entry.map(|e| &e["stats"]) {
            let n = |k: &str| s[k].as_u64().unwrap_or(0);
            out.push(DiskSample {
                at,
                read_bytes: n("rd_bytes"),
                write_bytes: n("wr_bytes"),
                read_ops: n("rd_operations"),
            });
        }
        std::thread::sleep(period);
    }
    Ok(())
}
