//! The model backend: the device under test is a loop device over
//! `disk.img` on a FUSE filesystem served by `iolab __model-server`, which
//! completes each request when the device model says.
//!
//! Order of the guarded changes, so that undo (newest first) takes them
//! apart cleanly even after a SIGKILL of anyone: FUSE mount point → FUSE
//! mount (this process mounts, with the /dev/fuse descriptor it then
//! hands to the server) → the server's process group → loop device over
//! `disk.img` → (mkfs, queue depth, scheduler, mount, as any lab). Undo
//! unmounts the lab, detaches the loop device, kills the server (its
//! connection aborts: pending requests fail, nothing waits in D state),
//! unmounts FUSE. A server left without its mount exits by itself.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use iolab_guard::Guard;
use iolab_model::ModelParams;
use iolab_sys::block::BlockDev;

use crate::meta;
use crate::LabError;

/// Where the model's FUSE filesystem of lab `name` is mounted.
pub fn fuse_mountpoint(name: &str) -> PathBuf {
    meta::labs_dir().join(format!("{name}.model"))
}

/// The server's statistics of lab `name`: a file the server itself serves
/// next to `disk.img`, so it exists exactly while the server runs.
pub fn stats_path(name: &str) -> PathBuf {
    fuse_mountpoint(name).join(iolab_model::server::STATS_NAME)
}

/// The program that serves the model: this iolab binary, and nothing an
/// environment variable could name (a root process must not run a program
/// chosen by its environment; no test needed another).
fn server_program() -> Result<PathBuf, LabError> {
    std::env::current_exe().map_err(|e| LabError::io("the iolab executable", e))
}

/// Makes the model's FUSE mount and server for `image`, and returns the
/// loop device over it (direct I/O: no page cache between the scheduler
/// and the model).
pub(crate) fn make(
    guard: &Guard,
    name: &str,
    image: &Path,
    params: &ModelParams,
) -> Result<BlockDev, LabError> {
    let mnt = serve(guard, name, image, params)?;
    let dev = guard.attach_loop(&mnt.join(iolab_model::server::FILE_NAME), true)?;
    // The round trip of this very path (block layer, loop, FUSE, server),
    // taken off every modelled time from now on.
    let ns = iolab_model::server::measure(&dev.dev_path())
        .map_err(|e| LabError::io(dev.dev_path(), e))?;
    let path = iolab_model::server::PathCost { ns, ps_per_byte: 0 };
    set_transport(name, path, path)?;
    Ok(dev)
}

/// Writes the round trips the model takes off each read and each write of
/// lab `name`. Until then the server answers at once (reads as zeros), as
/// calibration needs.
pub fn set_transport(
    name: &str,
    read: iolab_model::server::PathCost,
    write: iolab_model::server::PathCost,
) -> Result<(), LabError> {
    let control = fuse_mountpoint(name).join(iolab_model::server::CONTROL_NAME);
    std::fs::write(
        &control,
        format!(
            "transport_ns={} transport_ps_per_byte={} write_transport_ns={} write_transport_ps_per_byte={}\n",
            read.ns, read.ps_per_byte, write.ns, write.ps_per_byte
        ),
    )
    .map_err(|e| LabError::io(&control, e))
}

/// Serves `image` through the device model under the name `name` (its
/// FUSE mount and server, each guarded) and returns the directory whose
/// `disk.img` is the modelled device: a loop device's backing for a lab,
/// a qemu guest's drive for `iolab boot --disk`. It answers at once until
/// [`set_transport`].
pub fn serve(
    guard: &Guard,
    name: &str,
    image: &Path,
    params: &ModelParams,
) -> Result<PathBuf, LabError> {
    params.validate()?;
    let fuse = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .map_err(|e| {
            LabError::usage(format!(
                "the device model needs FUSE, but /dev/fuse cannot be opened ({e}): load it with `modprobe fuse`, or use --backend throttle"
            ))
        })?;
    let fuse = OwnedFd::from(fuse);
    let mnt = fuse_mountpoint(name);
    guard.mkdir_all(&mnt)?;
    // The kernel takes `fd=` from the mounting process: this one.
    let data = format!(
        "fd={},rootmode=40000,user_id=0,group_id=0,allow_other,max_read={}",
        fuse.as_raw_fd(),
        iolab_model::server::MAX_REQUEST
    );
    guard.mount("iolab-model", &mnt, "fuse.iolab-model", &data)?;
    let params_json = serde_json::to_string(params).map_err(|e| {
        LabError::io(
            "the device model's parameters",
            std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        )
    })?;
    let mut cmd = Command::new(server_program()?);
    cmd.arg("__model-server")
        .arg("--image")
        .arg(image)
        .arg("--params")
        .arg(&params_json)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let raw = fuse.as_raw_fd();
    // SAFETY: between fork and exec only async-signal-safe calls: setsid
    // (a session of its own: the user's Ctrl-C to `lab up` must not kill
    // the lab's server) and dup2 of the descriptor to fd 3.
    unsafe {
        cmd.pre_exec(move || {
            libc::setsid();
            if libc::dup2(raw, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| LabError::io("starting the device-model server", e))?;
    // pid_max is at most 2^22 (threads.h's PID_MAX_LIMIT): it fits.
    let pid = i32::try_from(child.id()).map_err(|_| {
        LabError::io(
            "the device-model server",
            std::io::Error::other(format!("pid {} out of range", child.id())),
        )
    })?;
    // Tracked by its process group (setsid made it a leader), so undo
    // kills it by group with a start-time check, never by name.
    let tracked = guard.track_process_group(pid);
    // The server holds the descriptor now; ours would keep the connection
    // alive after the server died.
    drop(fuse);
    tracked?;
    // Reaped by a thread when it ends (undo kills it): a long-lived
    // process serving many disks (`iolab boot --disk`) keeps no zombies;
    // `lab up` exits first and leaves the server to init.
    let mut child = child;
    std::thread::spawn(move || child.wait());
    wait_for(name, pid)?;
    Ok(mnt)
}

/// Waits until the server answers.
fn wait_for(name: &str, pid: i32) -> Result<(), LabError> {
    let stats = stats_path(name);
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if iolab_model::stats::read(&stats).is_some() {
            return Ok(());
        }
        if !Path::new(&format!("/proc/{pid}")).exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err(LabError::io(
        stats,
        std::io::Error::other("the device-model server did not come up"),
    ))
}
