//! Memory pressure before a start (the thesis's phase its `-c` switch
//! skipped): a helper fills memory with anonymous pages so the kernel
//! reclaims page cache (the target's files among it), as on a phone where
//! other apps' memory pushed them out before the low-memory killer freed
//! it. Then the helper is killed, and the target starts into free memory
//! with whatever of its files survived reclaim.
//!
//! The helper is a forked child in its own process group, recorded with
//! the guard (killed by pgid on any exit, and after a SIGKILL of iolab on
//! the next run) and first in line for the OOM killer (oom_score_adj 1000).

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use iolab_guard::Guard;
use iolab_sys::cast;
use serde::{Deserialize, Serialize};

/// How much memory to fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pressure {
    /// This many bytes.
    Bytes(u64),
    /// What the kernel reports available (`MemAvailable`) less headroom
    /// ([`auto_bytes`]): reclaim takes nearly all page cache.
    Auto,
}

impl std::str::FromStr for Pressure {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim() == "auto" {
            return Ok(Pressure::Auto);
        }
        match iolab_sys::units::parse_size(s) {
            Ok(b) if b > 0 => Ok(Pressure::Bytes(b)),
            _ => Err(format!(
                "{s}: expected a size such as 2G or `auto` (MemAvailable less headroom)"
            )),
        }
    }
}

/// What one fill did, stored with the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FillReport {
    /// Bytes asked for.
    pub requested_bytes: u64,
    /// Bytes the helper touched before it was released.
    pub filled_bytes: u64,
    /// Time to fill, seconds.
    pub fill_s: f64,
    /// Of the fill, what was resident when the helper was released, by
    /// mincore over the fill's own mappings (the helper's whole RSS where
    /// it could not say): the fill, checked.
    pub helper_rss_bytes: u64,
    /// Of the fill, what the kernel had swapped out when it was released
    /// (`VmSwap`; on a phone, into zram): memory the fill did not hold.
    #[serde(default)]
    pub helper_swap_bytes: u64,
    /// `MemAvailable` before the fill, bytes.
    pub mem_available_before: Option<u64>,
    /// The files measured (the target's files, as for `--cold evict`).
    pub files: usize,
    /// Their page-cache bytes before the fill.
    pub cached_before_bytes: u64,
    /// Their page-cache bytes after it (the helper already gone).
    pub cached_after_bytes: u64,
    /// Why the helper stopped short, if it did (OOM killer, mmap refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short: Option<String>,
}

impl FillReport {
    /// Share of the files' cached bytes that reclaim took, 0 to 1.
    pub fn evicted_share(&self) -> f64 {
        if self.cached_before_bytes == 0 {
            0.0
        } else {
            1.0 - self.cached_after_bytes as f64 / self.cached_before_bytes as f64
        }
    }
}

/// `MemAvailable` less max(128 MiB, MemTotal / 64): room the kernel keeps
/// for itself and for iolab, so the fill pressures page cache without
/// sending the OOM killer after anything but the helper. Inside a memory
/// cgroup with a limit (a container, a systemd slice, an Android app
/// group), the cgroup's own room counts when smaller ([`cgroup_room`]).
pub fn auto_bytes() -> std::io::Result<u64> {
    // Unreadable, the fill would be a guess: say so rather than fill 0.
    let unreadable = |what: &str| std::io::Error::other(format!("/proc/meminfo: no {what}"));
    let avail = mem_available().ok_or_else(|| unreadable("MemAvailable"))?;
    let total = iolab_sys::environment::read_mem_total(Path::new("/proc"))
        .ok_or_else(|| unreadable("MemTotal"))?;
    let headroom = (128u64 << 20).max(total / 64);
    let system = avail.saturating_sub(headroom);
    Ok(match cgroup_room()? {
        Some((room, limit)) => system.min(room.saturating_sub((16u64 << 20).max(limit / 32))),
        None => system,
    })
}

/// The tightest memory limit on this process's cgroup and its ancestors:
/// (limit less what is charged that reclaim cannot take, the limit).
/// cgroup v2 (`memory.max`, `memory.current`, `memory.stat` file) or v1
/// (`memory.limit_in_bytes`, `memory.usage_in_bytes`, `total_cache`).
pub fn cgroup_room() -> std::io::Result<Option<(u64, u64)>> {
    let own = std::fs::read_to_string("/proc/self/cgroup")?;
    let found = own.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (id, ctrls, path) = (f.next()?, f.next()?, f.next()?);
        if ctrls.split(',').any(|c| c == "memory") {
            Some(("/sys/fs/cgroup/memory", path.to_string(), false))
        } else if id == "0"
            && ctrls.is_empty()
            && Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
        {
            Some(("/sys/fs/cgroup", path.to_string(), true))
        } else {
            None
        }
    });
    // No memory controller: no limit of a cgroup's to respect.
    let Some((root, path, v2)) = found else {
        return Ok(None);
    };
    let (limit_f, usage_f, cache_key) = if v2 {
        ("memory.max", "memory.current", "file ")
    } else {
        (
            "memory.limit_in_bytes",
            "memory.usage_in_bytes",
            "total_cache ",
        )
    };
    let mut best: Option<(u64, u64)> = None;
    let mut dir = PathBuf::from(root).join(path.trim_start_matches('/'));
    loop {
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
        // No file or "max": no limit at this level.
        let limit = read(limit_f).and_then(|t| t.trim().parse::<u64>().ok());
        // v1 writes "no limit" as a number near 2^63.
        if let Some(limit) = limit.filter(|&l| l < (1u64 << 62)) {
            // With a limit, what is charged must be read: taken as 0, the
            // fill would reach past the limit and the OOM killer.
            let missing = |f: &str| {
                std::io::Error::other(format!(
                    "{}: unreadable, though {limit_f} sets a limit",
                    dir.join(f).display()
                ))
            };
            let usage = read(usage_f)
                .and_then(|t| t.trim().parse::<u64>().ok())
                .ok_or_else(|| missing(usage_f))?;
            let cache = read("memory.stat")
                .and_then(|t| {
                    t.lines()
                        .find_map(|l| l.strip_prefix(cache_key)?.trim().parse::<u64>().ok())
                })
                .ok_or_else(|| missing("memory.stat"))?;
            let room = limit.saturating_sub(usage.saturating_sub(cache));
            if best.is_none_or(|(r, _)| room < r) {
                best = Some((room, limit));
            }
        }
        if dir == Path::new(root) || !dir.pop() {
            break;
        }
    }
    Ok(best)
}

fn mem_available() -> Option<u64> {
    iolab_lab::mem_available(Path::new("/proc/meminfo"))
}

/// The page-cache bytes of `files`; a file that is gone has none, one
/// that cannot be read is an error (not 0, which would count as evicted).
fn cached_bytes(files: &[PathBuf]) -> std::io::Result<u64> {
    let mut sum = 0;
    for f in files {
        match iolab_sys::pagecache::residency(f) {
            Ok(r) => sum += r.cached_bytes(),
            Err(_) if !f.exists() => {}
            Err(e) => {
                return Err(std::io::Error::other(format!(
                    "{}: its page-cache residency is unreadable: {e}",
                    f.display()
                )))
            }
        }
    }
    Ok(sum)
}

/// Fills memory as `p` says, measuring `files`' page-cache residency
/// before and after; the helper is gone when this returns.
pub fn apply(guard: &Guard, p: Pressure, files: &[PathBuf]) -> std::io::Result<FillReport> {
    let mem_available_before = mem_available();
    let requested = match p {
        Pressure::Bytes(b) => b,
        Pressure::Auto => auto_bytes()?,
    };
    let cached_before_bytes = cached_bytes(files)?;
    let t0 = Instant::now();
    let f = fill(guard, requested)?;
    Ok(FillReport {
        requested_bytes: requested,
        filled_bytes: f.filled,
        helper_rss_bytes: f.rss,
        helper_swap_bytes: f.swap,
        fill_s: t0.elapsed().as_secs_f64(),
        mem_available_before,
        files: files.len(),
        cached_before_bytes,
        cached_after_bytes: cached_bytes(files)?,
        short: f.short,
    })
}

/// Pages are touched in chunks of this size; the helper reports each.
const CHUNK: usize = 64 << 20;
/// Chunks the helper counts resident (256 GiB of fill).
const MAX_CHUNKS: usize = 4096;
/// The longest a fill may take (at a few hundred MB/s on a slow board, a
/// phone's memory fills in well under this).
const FILL_LIMIT: Duration = Duration::from_secs(300);

/// What the helper did before it was killed.
struct Fill {
    filled: u64,
    rss: u64,
    swap: u64,
    short: Option<String>,
    /// Gone by the time it is returned: the test checks that.
    #[cfg_attr(not(test), allow(dead_code))]
    pid: i32,
}

/// Forks the helper, waits until it has touched `bytes` (or stopped
/// short), kills its group and reaps it. Returns the bytes touched and
/// the helper's resident memory then (and its pid, gone by now).
fn fill(guard: &Guard, bytes: u64) -> std::io::Result<Fill> {
    let (r, w) = rustix::pipe::pipe().map_err(std::io::Error::from)?;
    let page = cast::usize_of(iolab_sys::pagecache::page_size());
    let oom_path = c"/proc/self/oom_score_adj";
    // SAFETY: the child runs only async-signal-safe calls (setpgid, open,
    // write, mmap, pause, _exit) and plain memory writes, then never
    // returns into Rust code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        unsafe { helper(w.as_raw_fd(), bytes, page, oom_path.as_ptr()) }
    }
    // The parent sets the group too: whichever runs first, it is set
    // before the guard records it.
    // SAFETY: plain syscall on our own child.
    unsafe { libc::setpgid(pid, pid) };
    drop(w);
    let tracked = guard
        .track_process_group(pid)
        .map_err(std::io::Error::other)?;
    let mut reader = std::fs::File::from(r);
    let deadline = Instant::now() + FILL_LIMIT;
    let mut filled = 0u64;
    let mut short = None;
    let mut buf = [0u8; 8];
    loop {
        use std::io::Read;
        if Instant::now() > deadline {
            short = Some(format!("stopped after {}s", FILL_LIMIT.as_secs()));
            break;
        }
        match reader.read_exact(&mut buf) {
            Ok(()) => {
                let v = u64::from_ne_bytes(buf);
                if v == u64::MAX {
                    short = Some("mmap refused more memory".into());
                    break;
                }
                filled = v;
                if filled >= bytes {
                    break;
                }
            }
            Err(_) => {
                short = Some("the helper died while filling (the OOM killer?)".into());
                break;
            }
        }
    }
    // The fill's resident bytes, as the helper counted them with mincore
    // after its last chunk (not when it was stopped by the deadline: it
    // may still be filling).
    let counted = if short
        .as_deref()
        .is_some_and(|s| s.starts_with("stopped after"))
    {
        None
    } else {
        use std::io::Read;
        let mut b = [0u8; 8];
        reader
            .read_exact(&mut b)
            .ok()
            .map(|()| u64::from_ne_bytes(b))
    };
    let rss = counted.unwrap_or_else(|| {
        std::fs::read_to_string(format!("/proc/{pid}/statm"))
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
            .map_or(0, |pages| pages * page as u64)
    });
    let swap = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let kb = s.lines().find_map(|l| l.strip_prefix("VmSwap:"))?;
            kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok()
        })
        .map_or(0, |kb| kb << 10);
    // SAFETY: kill(2) of the helper's own group, then reaping our child.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
        let mut st = 0;
        while libc::waitpid(pid, &mut st, 0) < 0
            && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
        {}
    }
    guard.forget(tracked).map_err(std::io::Error::other)?;
    Ok(Fill {
        filled,
        rss,
        swap,
        short,
        pid,
    })
}

/// The helper, in the forked child: own group, OOM victim first, touch
/// `bytes` of anonymous memory a chunk at a time, reporting the running
/// total, then wait to be killed.
unsafe fn helper(fd: i32, bytes: u64, page: usize, oom_path: *const libc::c_char) -> ! {
    unsafe {
        libc::setpgid(0, 0);
        let oom = libc::open(oom_path, libc::O_WRONLY);
        if oom >= 0 {
            libc::write(oom, b"1000".as_ptr().cast(), 4);
            libc::close(oom);
        }
        // The fill's own mappings (no allocation in a forked child: a
        // fixed table; past its end a fill is filled but not counted).
        let mut regions = [(std::ptr::null_mut::<libc::c_void>(), 0usize); MAX_CHUNKS];
        let mut n = 0;
        let mut done: u64 = 0;
        while done < bytes {
            let len = CHUNK.min(cast::usize_of(bytes - done));
            let p = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                let m = u64::MAX.to_ne_bytes();
                libc::write(fd, m.as_ptr().cast(), 8);
                break;
            }
            // Huge pages where the kernel allows them (THP `madvise` or
            // `always`): 512 times fewer faults; a fill of gigabytes in 4
            // KiB faults takes a minute in a VM.
            libc::madvise(p, len, libc::MADV_HUGEPAGE);
            fill_incompressible(p.cast::<u64>(), len / 8, done ^ 0x9e37_79b9_7f4a_7c15);
            if n < MAX_CHUNKS {
                regions[n] = (p, len);
                n += 1;
            }
            done += len as u64;
            let m = done.to_ne_bytes();
            libc::write(fd, m.as_ptr().cast(), 8);
        }
        // Then what of it is resident, by mincore over those mappings: the
        // fill itself, not what the helper inherited from iolab at the fork.
        let mut vec = [0u8; CHUNK / 4096];
        let mut resident: u64 = 0;
        for &(p, len) in &regions[..n] {
            let pages = len.div_ceil(page).min(vec.len());
            if libc::mincore(p, pages * page, vec.as_mut_ptr()) == 0 {
                resident +=
                    vec[..pages].iter().filter(|&&b| b & 1 == 1).count() as u64 * page as u64;
            }
        }
        let m = resident.to_ne_bytes();
        libc::write(fd, m.as_ptr().cast(), 8);
        loop {
            libc::pause();
        }
    }
}

/// Writes `words` pseudo-random u64s (xorshift64) from `seed` at `p`:
/// every byte of every page, so zram, which backs a phone's swap,
/// compresses nothing. One byte per page, as a fill once wrote, compresses
/// ~4096:1 there: the "pressure" fits in a few MiB of zram and reclaims
/// next to no page cache.
///
/// # Safety
/// `p` must be valid for writes of `words` u64s. Async-signal-safe: plain
/// memory writes, for the forked helper.
unsafe fn fill_incompressible(p: *mut u64, words: usize, seed: u64) {
    let mut x = seed | 1;
    for i in 0..words {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // SAFETY: i < words, which the caller vouches for.
        unsafe { std::ptr::write_volatile(p.add(i), x) };
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_auto_parse() {
        assert_eq!("auto".parse::<Pressure>(), Ok(Pressure::Auto));
        assert_eq!("2G".parse::<Pressure>(), Ok(Pressure::Bytes(2 << 30)));
        assert!("0".parse::<Pressure>().is_err());
        assert!("lots".parse::<Pressure>().is_err());
        let auto = auto_bytes().unwrap();
        assert!(auto < mem_available().unwrap());
    }

    #[test]
    fn the_helper_touches_what_it_reports_and_is_gone_after() {
        let dir = tempfile::tempdir().unwrap();
        let guard = Guard::in_dir(dir.path().to_path_buf());
        let Fill {
            filled,
            rss,
            swap,
            short,
            pid,
        } = fill(&guard, 256 << 20).unwrap();
        assert_eq!((filled, short), (256 << 20, None));
        // The kernel counts it resident (mincore): all of it, bar what went
        // to swap.
        assert!(
            rss <= filled && rss + swap >= filled,
            "rss {rss} swap {swap}"
        );
        // Killed and reaped: no such process any more.
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }

    /// zram (a phone's swap) is the judge: what the fill writes, written
    /// to a zram device, is stored at nearly its size; the old pattern
    /// (one byte per page) at next to nothing.
    #[test]
    fn the_fill_is_incompressible_to_zram() {
        let test = "the_fill_is_incompressible_to_zram";
        if !iolab_testkit::is_root() {
            return iolab_testkit::skip(test, "a zram device needs root");
        }
        if !Path::new("/sys/class/zram-control").exists() {
            return iolab_testkit::skip(test, "no zram (modprobe zram)");
        }
        let dir = tempfile::tempdir().unwrap();
        let guard = Guard::in_dir(dir.path().to_path_buf());
        let size = 16usize << 20;
        let ratio = |buf: &[u8]| {
            let dev = guard.add_zram(64 << 20, None).unwrap();
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(dev.dev_path())
                .unwrap();
            f.write_all(buf).unwrap();
            f.sync_all().unwrap();
            // mm_stat: orig_data_size compr_data_size ...
            let st = std::fs::read_to_string(dev.sysfs.join("mm_stat")).unwrap();
            let v: Vec<f64> = st
                .split_whitespace()
                .take(2)
                .map(|x| x.parse().unwrap())
                .collect();
            v[1] / v[0]
        };
        let mut words = vec![0u64; size / 8];
        // SAFETY: the buffer holds `words.len()` u64s.
        unsafe { fill_incompressible(words.as_mut_ptr(), words.len(), 42) };
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let ours = ratio(&bytes);
        let mut sparse = vec![0u8; size];
        for p in sparse.iter_mut().step_by(4096) {
            *p = 1;
        }
        let old = ratio(&sparse);
        for r in guard.restore() {
            r.unwrap();
        }
        assert!(ours > 0.9, "the fill compresses to {ours:.3} of its size");
        assert!(old < 0.05, "one byte per page compresses to {old:.3}");
    }
}
