//! Loop devices by ioctl (`/dev/loop-control`'s LOOP_CTL_GET_FREE, then
//! LOOP_CONFIGURE), not by `losetup`: Android's losetup is toybox's, which
//! has neither `--find --show` as util-linux spells them nor `--direct-io`,
//! and a phone or a container may have no losetup at all. See loop(4) and
//! `include/uapi/linux/loop.h`.
//!
//! Nodes: the kernel adds the device; devtmpfs shows it at once as
//! `/dev/loopN`, Android's ueventd makes `/dev/block/loopN` a moment later,
//! and a static `/dev` (a container, a test namespace) never does. So the
//! node is looked for where each system puts it, and where none comes it is
//! made in iolab's machine directory.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use linux_raw_sys::loop_device as ld;

/// `/dev/loop-control`, where Android and every desktop have it.
const CONTROL: &str = "/dev/loop-control";

/// loop.h's flags (an enum there, so not plain constants in the bindings).
const LO_FLAGS_READ_ONLY: u32 = 1;
const LO_FLAGS_DIRECT_IO: u32 = 16;

/// How long a new device's node may take to appear (ueventd) before iolab
/// makes its own.
const NODE_WAIT: Duration = Duration::from_millis(500);

/// A loop device iolab attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attached {
    /// Kernel name, `loopN`.
    pub name: String,
    /// The node it was opened by.
    pub node: PathBuf,
    /// True when iolab made `node` (no devtmpfs or ueventd made one): the
    /// caller removes it with the device.
    pub node_made: bool,
    /// True when the kernel took direct I/O.
    pub direct_io: bool,
}

/// Attaches `backing` to a free loop device, with direct I/O when asked
/// (the kernel falls back to buffered I/O where the backing file cannot do
/// it: reported in [`Attached::direct_io`]).
pub fn attach(backing: &Path, direct_io: bool, read_only: bool) -> std::io::Result<Attached> {
    attach_announced(backing, direct_io, read_only, &mut |_| Ok(()))
}

/// [`attach`], calling `before` with the device's name (`loopN`) once the
/// kernel has given it and before it is configured: configuring a loop
/// device changes its queue (read_ahead_kb, rotational, from the backing
/// file), and detaching it does not change them back, so the
/// guard reads and journals them here. An error from `before` leaves the
/// device unconfigured. Called again if the device is taken in between.
pub fn attach_announced(
    backing: &Path,
    direct_io: bool,
    read_only: bool,
    before: &mut dyn FnMut(&str) -> std::io::Result<()>,
) -> std::io::Result<Attached> {
    let file = OpenOptions::new()
        .read(true)
        .write(!read_only)
        .open(backing)?;
    let control = File::open(CONTROL).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("{CONTROL}: {e}: the kernel's loop driver is needed (modprobe loop)"),
        )
    })?;
    // Another process may take the number between GET_FREE and CONFIGURE
    // (EBUSY): ask again.
    let mut last = None;
    for _ in 0..16 {
        // SAFETY: LOOP_CTL_GET_FREE takes no argument and returns a number.
        let n = unsafe { libc::ioctl(control.as_raw_fd(), ld::LOOP_CTL_GET_FREE as _) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let name = format!("loop{n}");
        let (node, node_made) = node_for(&name)?;
        let dev = OpenOptions::new().read(true).write(!read_only).open(&node);
        let dev = match dev.and_then(|d| before(&name).map(|()| d)) {
            Ok(d) => d,
            Err(e) => {
                if node_made {
                    let _ = std::fs::remove_file(&node);
                }
                return Err(e);
            }
        };
        match configure(&dev, &file, backing, direct_io, read_only) {
            Ok(()) => {
                let took = std::fs::read_to_string(format!("/sys/block/{name}/loop/dio"))
                    .map(|s| s.trim() == "1")
                    .unwrap_or(false);
                return Ok(Attached {
                    name,
                    node,
                    node_made,
                    direct_io: took,
                });
            }
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                if node_made {
                    let _ = std::fs::remove_file(&node);
                }
                last = Some(e);
            }
            Err(e) => {
                if node_made {
                    let _ = std::fs::remove_file(&node);
                }
                return Err(e);
            }
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free loop device")))
}

fn configure(
    dev: &File,
    file: &File,
    backing: &Path,
    direct_io: bool,
    read_only: bool,
) -> std::io::Result<()> {
    // SAFETY: loop_config is plain old data; zero is its "unset" value.
    let mut cfg: ld::loop_config = unsafe { std::mem::zeroed() };
    cfg.fd = file.as_raw_fd() as u32;
    if read_only {
        cfg.info.lo_flags |= LO_FLAGS_READ_ONLY;
    }
    // The name `losetup -a` shows; the kernel's backing_file is the path.
    let name = backing.as_os_str().as_encoded_bytes();
    let n = name.len().min(cfg.info.lo_file_name.len() - 1);
    cfg.info.lo_file_name[..n].copy_from_slice(&name[..n]);
    let with_dio = |cfg: &mut ld::loop_config, on: bool| {
        if on {
            cfg.info.lo_flags |= LO_FLAGS_DIRECT_IO;
        } else {
            cfg.info.lo_flags &= !LO_FLAGS_DIRECT_IO;
        }
    };
    with_dio(&mut cfg, direct_io);
    let call = |cfg: &ld::loop_config| {
        // SAFETY: cfg outlives the call; the kernel only reads it.
        let r = unsafe { libc::ioctl(dev.as_raw_fd(), ld::LOOP_CONFIGURE as _, cfg) };
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    let Err(mut e) = call(&cfg) else {
        return Ok(());
    };
    // A backing file that cannot do direct I/O (newer kernels refuse
    // instead of falling back): buffered, as losetup does.
    if direct_io && e.raw_os_error() == Some(libc::EINVAL) {
        with_dio(&mut cfg, false);
        match call(&cfg) {
            Ok(()) => return Ok(()),
            Err(again) => e = again,
        }
        with_dio(&mut cfg, true);
    }
    // Kernels before 5.8 have no LOOP_CONFIGURE (Android 11 and 12 phones
    // run 4.19 and 5.4): the three calls it replaced.
    if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOTTY))
        && configure_old(dev, file, &cfg)?
    {
        return Ok(());
    }
    Err(e)
}

/// LOOP_SET_FD, LOOP_SET_STATUS64, LOOP_SET_DIRECT_IO; true when done,
/// false when LOOP_SET_FD is not there either (not a loop device).
fn configure_old(dev: &File, file: &File, cfg: &ld::loop_config) -> std::io::Result<bool> {
    // SAFETY: LOOP_SET_FD takes the backing descriptor as its argument.
    let r = unsafe { libc::ioctl(dev.as_raw_fd(), ld::LOOP_SET_FD as _, file.as_raw_fd()) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        return if e.raw_os_error() == Some(libc::ENOTTY) {
            Ok(false)
        } else {
            Err(e)
        };
    }
    let mut info = cfg.info;
    let dio = info.lo_flags & LO_FLAGS_DIRECT_IO != 0;
    info.lo_flags &= !LO_FLAGS_DIRECT_IO;
    // SAFETY: info outlives the call.
    let r = unsafe { libc::ioctl(dev.as_raw_fd(), ld::LOOP_SET_STATUS64 as _, &info) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        let _ = detach_file(dev);
        return Err(e);
    }
    if dio {
        // Best effort, as losetup: buffered when the file cannot do it.
        // SAFETY: the argument is a plain integer.
        let _ = unsafe {
            libc::ioctl(
                dev.as_raw_fd(),
                ld::LOOP_SET_DIRECT_IO as _,
                1 as libc::c_ulong,
            )
        };
    }
    Ok(true)
}

/// Detaches loop device `name` when it is bound to `backing`
/// (LOOP_CLR_FD), and says whether it did. A loop number is anyone's the
/// moment it is detached, so a name looked up earlier (a journal, a
/// listing, a detach repeated) may now be another process's image: a test
/// that detached twice by name took the EROFS test's image from under its
/// mount. The device is opened first and its binding read after: while
/// iolab holds it open nobody can unbind it (the kernel defers any other
/// LOOP_CLR_FD to the last close), so the file compared is the one
/// detached. Compared by path as sysfs prints it ([`backing_file`]), never
/// by touching the file: a model lab's image is served by FUSE, whose dead
/// server answers ENOTCONN and whose stopped one would block. The kernel
/// defers the detach while the device is open, as a busy device wants.
pub fn detach_if_backed_by(name: &str, backing: &Path) -> std::io::Result<bool> {
    // A device being removed this moment backs nothing either.
    let dev = match open_any(name) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => return Ok(false),
        Err(e) => return Err(e),
    };
    if backing_file(name)?.as_deref() != Some(backing) {
        return Ok(false);
    }
    match detach_file(&dev) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The file loop device `name` is bound to, as sysfs names it (a deleted
/// one without its " (deleted)"); None when it is bound to nothing (an
/// unbound device has no `loop/backing_file`).
pub fn backing_file(name: &str) -> std::io::Result<Option<PathBuf>> {
    match std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")) {
        Ok(s) => {
            let s = s.trim_end();
            let s = s.strip_suffix(" (deleted)").unwrap_or(s);
            Ok((!s.is_empty()).then(|| PathBuf::from(s)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn detach_file(dev: &File) -> std::io::Result<()> {
    // SAFETY: LOOP_CLR_FD takes no argument.
    let r = unsafe { libc::ioctl(dev.as_raw_fd(), ld::LOOP_CLR_FD as _, 0) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Opens device `name` by its node, or by a node made for this one call
/// (and unlinked at once) where the system has none.
fn open_any(name: &str) -> std::io::Result<File> {
    if let Some(node) = crate::block::node_of(name) {
        return File::open(node);
    }
    let dir = crate::paths::machine_dir().join("dev");
    std::fs::create_dir_all(&dir)?;
    let tmp = dir.join(format!(".{name}.{}", std::process::id()));
    make_node(name, &tmp)?;
    let f = File::open(&tmp);
    let _ = std::fs::remove_file(&tmp);
    f
}

/// The node of new device `name`: the system's when it makes one within
/// [`NODE_WAIT`], else one made in the machine directory (true).
fn node_for(name: &str) -> std::io::Result<(PathBuf, bool)> {
    let until = Instant::now() + NODE_WAIT;
    loop {
        if let Some(n) = crate::block::node_of(name) {
            return Ok((n, false));
        }
        if Instant::now() >= until {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let dir = crate::paths::machine_dir().join("dev");
    std::fs::create_dir_all(&dir)?;
    let node = dir.join(name);
    let _ = std::fs::remove_file(&node);
    make_node(name, &node)?;
    Ok((node, true))
}

/// mknod of a block node for `name` at `path`, its number from sysfs.
fn make_node(name: &str, path: &Path) -> std::io::Result<()> {
    let text = std::fs::read_to_string(format!("/sys/block/{name}/dev"))?;
    let (maj, min) = text
        .trim()
        .split_once(':')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
        .ok_or_else(|| std::io::Error::other(format!("/sys/block/{name}/dev: {text:?}")))?;
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::BlockDevice,
        rustix::fs::Mode::from_raw_mode(0o600),
        rustix::fs::makedev(maj, min),
    )
    .map_err(std::io::Error::from)
}

/// For tests: [`attach`], keeping the queue attributes the configure
/// changes from the backing file (read_ahead_kb, rotational, as the guard
/// journals them), which the detach leaves: a test writes
/// them back with [`QueueAsFound::put_back`] while the device is still
/// bound, so it leaves the machine's loop devices as it found them.
#[cfg(test)]
pub(crate) fn attach_for_test(
    backing: &Path,
    direct_io: bool,
    read_only: bool,
) -> (Attached, QueueAsFound) {
    let mut found = QueueAsFound(Vec::new());
    let att = attach_announced(backing, direct_io, read_only, &mut |name| {
        found.0.clear();
        // Not write_cache: writing back an unbound device's "write through"
        // sets a flag every later bind of the number keeps (see the
        // guard's LOOP_QUEUE_ATTRS).
        for a in ["read_ahead_kb", "rotational"] {
            let p = Path::new("/sys/block").join(name).join("queue").join(a);
            found.0.push((p.clone(), std::fs::read_to_string(&p)?));
        }
        Ok(())
    })
    .unwrap();
    (att, found)
}

/// A test device's queue attributes as they were before its configure.
#[cfg(test)]
pub(crate) struct QueueAsFound(Vec<(PathBuf, String)>);

#[cfg(test)]
impl QueueAsFound {
    pub(crate) fn put_back(&self) {
        for (p, v) in &self.0 {
            std::fs::write(p, v.trim()).unwrap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// losetup (util-linux) is the outside truth: it lists what iolab
    /// attached, with direct I/O, and no longer after the detach.
    #[test]
    fn attach_and_detach_are_what_losetup_sees() {
        let test = "attach_and_detach_are_what_losetup_sees";
        if !iolab_testkit::is_root() {
            iolab_testkit::skip(test, "attaching a loop device needs root");
            return;
        }
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let img = dir.path().join("disk.img");
        std::fs::File::create(&img)
            .unwrap()
            .set_len(8 << 20)
            .unwrap();
        let (att, found) = attach_for_test(&img, true, false);
        let list = |name: &str| {
            let out = std::process::Command::new("losetup")
                .args(["--list", "--noheadings", "--output", "NAME,BACK-FILE,DIO"])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .find(|l| l.split_whitespace().next() == Some(&format!("/dev/{name}")))
                .map(str::to_string)
        };
        let line = list(&att.name).expect("losetup lists the device");
        assert!(line.contains(img.to_str().unwrap()), "{line}");
        assert!(line.trim_end().ends_with('1') && att.direct_io, "{line}");
        assert!(!att.node_made, "devtmpfs made {}", att.node.display());
        found.put_back();
        assert!(detach_if_backed_by(&att.name, &img).unwrap());
        // The device's number may go to another test's image at once (they
        // run in parallel): what must be gone is ours behind it.
        assert!(
            list(&att.name).is_none_or(|l| !l.contains(img.to_str().unwrap())),
            "{:?}",
            list(&att.name)
        );
        // Detaching again is not an error, and does nothing: whatever now
        // has the number stays (the next test).
        assert!(!detach_if_backed_by(&att.name, &img).unwrap());
    }

    /// A loop device bound to another image than the one named is left
    /// bound, as losetup sees it: what a number detached and taken at once
    /// by another process looks like to whoever detaches it again.
    #[test]
    fn a_device_bound_to_another_image_is_not_detached() {
        let test = "a_device_bound_to_another_image_is_not_detached";
        if !iolab_testkit::is_root() {
            iolab_testkit::skip(test, "attaching a loop device needs root");
            return;
        }
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        // sysfs names a backing file by its resolved path.
        let at = dir.path().canonicalize().unwrap();
        let (ours, theirs) = (at.join("ours.img"), at.join("theirs.img"));
        for img in [&ours, &theirs] {
            std::fs::File::create(img)
                .unwrap()
                .set_len(8 << 20)
                .unwrap();
        }
        let (att, found) = attach_for_test(&theirs, false, true);
        let backing = || {
            std::fs::read_to_string(format!("/sys/block/{}/loop/backing_file", att.name))
                .map(|s| s.trim_end().to_string())
                .ok()
        };
        let kept = detach_if_backed_by(&att.name, &ours);
        let after = backing();
        found.put_back();
        // Its own image does detach it (and cleans up before asserting).
        let gone = detach_if_backed_by(&att.name, &theirs);
        assert!(!kept.unwrap());
        assert_eq!(after.as_deref(), theirs.to_str());
        assert!(gone.unwrap());
        // The kernel defers a detach while anyone has the device open (a
        // parallel test's losetup reading it): it goes at the last close.
        let until = Instant::now() + Duration::from_secs(5);
        while backing().as_deref() == theirs.to_str() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        let out = std::process::Command::new("losetup")
            .args(["--list", "--noheadings", "--output", "NAME,BACK-FILE"])
            .output()
            .unwrap();
        let listed = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(!listed.contains(theirs.to_str().unwrap()), "{listed}");
    }

    #[test]
    fn the_config_is_the_kernels_size() {
        // struct loop_config in loop.h: fd, block_size, loop_info64 (232
        // bytes), 8 reserved u64.
        assert_eq!(std::mem::size_of::<ld::loop_config>(), 4 + 4 + 232 + 64);
    }
}
