//! One boot of the qemu guest built by scripts/guest/boot-build.sh: qemu
//! started in a process group of its own (recorded with the guard, so a
//! killed iolab's next run ends it), the console read line by line with
//! the host's clock, and what the guest left on its results disk read
//! back once it powered off.
//!
//! The guest prints `iolab-boot: start U` as userspace begins (the
//! initramfs's first line), `iolab-boot: init U` when the root's init
//! runs and `iolab-boot: done U` at the boot-done marker, U being its
//! CLOCK_BOOTTIME in seconds (/proc/uptime, 10 ms steps). The host's
//! receipt times of the start and done lines are the outside clock.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use iolab_guard::Guard;

use crate::ExperimentError;

/// How to boot the guest once.
pub struct BootSpec<'a> {
    /// The guest's directory (vmlinuz, initramfs.cpio.gz).
    pub dir: &'a Path,
    /// The root image to boot.
    pub root: &'a Path,
    /// Writes go to a throw-away overlay (every measured boot); off for
    /// the recording boot, which writes its list into the image.
    pub snapshot: bool,
    /// qemu's own throttle of the root disk, bytes/s.
    pub bw_bytes: Option<u64>,
    /// And requests/s.
    pub iops: Option<u64>,
    /// The root disk served by the device model instead (no throttle):
    /// disk.rs.
    pub disk: Option<&'a super::disk::ModelDisk>,
    /// What the initramfs hands over to (`iolab.init=`), argument by
    /// argument.
    pub init: Vec<String>,
    /// More for the kernel command line (what a safety boot breaks).
    pub cmdline: &'a str,
    /// Guest memory.
    pub memory_mib: u32,
    /// Longest a boot may take, qemu's start to its exit.
    pub timeout: Duration,
    /// Where this boot's results disk and console log go.
    pub work: &'a Path,
}

/// What one boot showed.
#[derive(Debug, Default)]
pub struct BootSeen {
    /// Guest CLOCK_BOOTTIME at userspace's first line, at init, at the
    /// marker, s.
    pub start_s: Option<f64>,
    pub init_s: Option<f64>,
    pub done_s: Option<f64>,
    /// Host time from qemu's start to the start and done lines.
    pub host_start: Option<Duration>,
    pub host_done: Option<Duration>,
    /// Host time from qemu's start to its exit.
    pub wall: Duration,
    /// qemu's exit: `None` when it had to be killed (timeout or stop).
    pub exit_ok: Option<bool>,
    /// Stopped by Ctrl-C/SIGTERM.
    pub interrupted: bool,
    /// The results disk's files, extracted (empty when it holds none).
    pub results: PathBuf,
    /// The console's last lines.
    pub console_tail: String,
    /// The root disk's counters every 100 ms, from qemu's monitor.
    pub disk: Vec<super::qmp::DiskSample>,
    /// Why the monitor stopped answering, if it did.
    pub disk_error: Option<String>,
    /// A board's: that a boot happened between the reboot and the read.
    pub reboot: Option<RebootCheck>,
    /// A modelled root disk's counters at the end (the model's side of
    /// what the guest read and wrote), and what could not be undone.
    pub model: Option<iolab_model::stats::ModelStats>,
    pub model_errors: Vec<String>,
}

/// What shows a board really rebooted.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RebootCheck {
    /// /proc/sys/kernel/random/boot_id before the reboot and after.
    pub boot_id_before: String,
    pub boot_id_after: String,
    /// The board's uptime when the host read its record.
    pub uptime_at_read_s: Option<f64>,
    /// The host's clock from the reboot command to that read.
    pub host_since_reboot_s: f64,
    /// How long the host left the board alone after the reboot, and how
    /// many times it then tried ssh until the record was there.
    pub quiet_s: f64,
    pub polls: u32,
}

/// The qemu binary, or a usage error saying how to get it.
pub fn qemu() -> Result<PathBuf, ExperimentError> {
    iolab_spawn::resolve("qemu-system-x86_64").ok_or_else(|| {
        iolab_sys::UsageError::new(
            "iolab boot: no qemu-system-x86_64 in PATH; install it (apt-get install qemu-system-x86)",
        )
        .into()
    })
}

/// Boots once; returns what the console and the results disk showed.
pub fn boot(spec: &BootSpec<'_>, guard: &Guard) -> Result<BootSeen, ExperimentError> {
    let io = |p: &Path, e| ExperimentError::from(iolab_sys::SysError::io(p, e));
    let results_img = spec.work.join("results.img");
    let f = std::fs::File::create(&results_img).map_err(|e| io(&results_img, e))?;
    f.set_len(16 << 20).map_err(|e| io(&results_img, e))?;
    drop(f);
    let served = match spec.disk {
        Some(d) => Some(super::disk::serve(
            guard,
            d,
            spec.root,
            spec.work,
            spec.snapshot,
        )?),
        None => None,
    };
    let mut drive = match &served {
        // O_DIRECT on the model's file: no host page cache between the
        // guest and the model; writes go to this boot's copy.
        Some(s) => format!(
            "file={},format=raw,if=virtio,cache=none,aio=threads",
            s.drive.display()
        ),
        None => format!(
            "file={},format=raw,if=virtio,snapshot={}",
            spec.root.display(),
            if spec.snapshot { "on" } else { "off" }
        ),
    };
    let disk_cmdline = spec.disk.map(|d| d.cmdline()).unwrap_or_default();
    if let Some(bw) = spec.bw_bytes {
        drive.push_str(&format!(",throttling.bps-total={bw}"));
    }
    if let Some(n) = spec.iops {
        drive.push_str(&format!(",throttling.iops-total={n}"));
    }
    let init = if spec.init.is_empty() {
        String::new()
    } else {
        format!(" iolab.init={}", spec.init.join(","))
    };
    let console_log = spec.work.join("console.log");
    let err_path = spec.work.join("qemu.err");
    let err_file = std::fs::File::create(&err_path).map_err(|e| io(&err_path, e))?;
    let qmp_sock = spec.work.join("qmp.sock");
    let mut cmd = Command::new(qemu()?);
    // TCG: the same emulation on every host (nested KVM fails on ours),
    // so boots on two machines differ only by the host's speed.
    cmd.args(["-accel", "tcg", "-m"])
        .arg(spec.memory_mib.to_string())
        .args([
            "-smp",
            "1",
            "-nographic",
            "-no-reboot",
            "-nic",
            "none",
            "-kernel",
        ])
        .arg(spec.dir.join("vmlinuz"))
        .arg("-initrd")
        .arg(spec.dir.join("initramfs.cpio.gz"))
        .arg("-append")
        .arg(
            format!(
                "console=ttyS0 panic=-1 quiet{init} {disk_cmdline} {}",
                spec.cmdline
            )
            .trim_end(),
        )
        .arg("-drive")
        .arg(drive)
        .arg("-drive")
        .arg(format!(
            "file={},format=raw,if=virtio",
            results_img.display()
        ))
        .arg("-qmp")
        .arg(format!("unix:{},server=on,wait=off", qmp_sock.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(err_file))
        .process_group(0);
    let t0 = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            if let Some(s) = served {
                s.finish(guard);
            }
            return Err(io(Path::new("qemu-system-x86_64"), e));
        }
    };
    let pgid = rustix::process::Pid::from_child(&child)
        .as_raw_nonzero()
        .get();
    let tracked = match guard.track_process_group(pgid) {
        Ok(t) => t,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            if let Some(s) = served {
                s.finish(guard);
            }
            return Err(e.into());
        }
    };
    let sampler = super::qmp::start(qmp_sock, "virtio0", t0, Duration::from_millis(100));
    let lines: Arc<Mutex<Vec<(Duration, String)>>> = Arc::default();
    let reader = {
        let out = child.stdout.take();
        let lines = lines.clone();
        std::thread::spawn(move || {
            let Some(out) = out else { return };
            for l in BufReader::new(out).split(b'\n').map_while(Result::ok) {
                let at = t0.elapsed();
                let text = String::from_utf8_lossy(&l).trim_end().to_string();
                lines
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((at, text));
            }
        })
    };
    let (exit_ok, interrupted) = wait(&mut child, spec.timeout);
    let wall = t0.elapsed();
    let (disk, disk_error) = sampler.finish();
    let _ = reader.join();
    let _ = guard.forget(tracked);
    let (model, model_errors) = match served {
        Some(s) => s.finish(guard),
        None => (None, Vec::new()),
    };
    let err = std::fs::read_to_string(&err_path).unwrap_or_else(|e| {
        format!(
            "(qemu's stderr {} could not be read: {e})",
            err_path.display()
        )
    });
    let lines = std::mem::take(&mut *lines.lock().unwrap_or_else(|p| p.into_inner()));
    let mut log: String = lines
        .iter()
        .map(|(at, l)| format!("[{:9.3}] {l}\n", at.as_secs_f64()))
        .collect();
    log.push_str(&err);
    std::fs::write(&console_log, &log).map_err(|e| io(&console_log, e))?;
    let mut seen = BootSeen {
        wall,
        exit_ok,
        interrupted,
        console_tail: tail(&log, 15),
        disk,
        disk_error,
        model,
        model_errors,
        ..Default::default()
    };
    for (at, l) in &lines {
        let Some((what, v)) = marker(l) else { continue };
        match what {
            "start" => (seen.start_s, seen.host_start) = (Some(v), Some(*at)),
            "init" => seen.init_s = Some(v),
            "done" => (seen.done_s, seen.host_done) = (Some(v), Some(*at)),
            _ => {}
        }
    }
    let dir = spec.work.join("results");
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    // The guest wrote a tar archive to the raw disk; tar stops at its end.
    let _ = Command::new("tar")
        .arg("-xf")
        .arg(&results_img)
        .arg("-C")
        .arg(&dir)
        .stderr(Stdio::null())
        .status();
    let _ = std::fs::remove_file(&results_img);
    seen.results = dir;
    Ok(seen)
}

/// `iolab-boot: WHAT SECONDS` anywhere in a console line (the serial
/// console may prefix terminal escapes).
fn marker(line: &str) -> Option<(&str, f64)> {
    let rest = &line[line.find("iolab-boot: ")? + "iolab-boot: ".len()..];
    let mut w = rest.split_whitespace();
    let what = w.next()?;
    let v = w.next()?.parse().ok()?;
    Some((what, v))
}

/// Waits for qemu's exit, at most `timeout`, ending it (its whole group)
/// on a stop request. (exited cleanly?, interrupted)
fn wait(child: &mut Child, timeout: Duration) -> (Option<bool>, bool) {
    let end = Instant::now() + timeout;
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            return (Some(st.success()), false);
        }
        let stop = iolab_guard::stop_requested();
        if stop || Instant::now() >= end {
            let pg = rustix::process::Pid::from_child(child);
            let _ = rustix::process::kill_process_group(pg, rustix::process::Signal::KILL);
            let _ = child.wait();
            return (None, stop);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_read_through_terminal_escapes() {
        assert_eq!(
            marker("\u{1b}c\u{1b}[?7l\u{1b}[2Jiolab-boot: start 3.22"),
            Some(("start", 3.22))
        );
        assert_eq!(marker("iolab-boot: done 11.23"), Some(("done", 11.23)));
        assert_eq!(marker("iolab-boot: failed: the root image"), None);
        assert_eq!(marker("[    8.9] reboot: Power down"), None);
    }
}
