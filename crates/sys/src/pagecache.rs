//! The page cache, file by file: how much of a file is cached (mincore(2)),
//! evicting a file (posix_fadvise(2) `POSIX_FADV_DONTNEED`), and read-only
//! file mappings whose page touches are real page faults.
//!
//! Eviction lives here rather than in the guard because it changes no
//! setting: there is nothing to restore, only cache contents that any read
//! would change too. It is how `--cold evict` makes a start cold without
//! dropping every cache on the machine (`drop_caches`, which the guard owns).

use std::fs::File;
use std::num::NonZeroU64;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};

use rustix::fs::Advice;
use rustix::mm::{MapFlags, ProtFlags};

use crate::SysError;

/// How much of one file is in the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Residency {
    /// Pages of the file present in the page cache.
    pub cached_pages: u64,
    /// Pages the file spans (its size rounded up to whole pages).
    pub total_pages: u64,
    /// Page size in bytes.
    pub page_size: u64,
}

impl Residency {
    /// Cached share of the file, 0.0 to 1.0 (0.0 for an empty file).
    pub fn fraction(&self) -> f64 {
        if self.total_pages == 0 {
            0.0
        } else {
            self.cached_pages as f64 / self.total_pages as f64
        }
    }

    /// Cached bytes (whole pages, as fincore counts them).
    pub fn cached_bytes(&self) -> u64 {
        self.cached_pages * self.page_size
    }
}

/// The system page size in bytes.
pub fn page_size() -> u64 {
    rustix::param::page_size() as u64
}

/// Measures how much of `path` is cached, like util-linux `fincore`.
pub fn residency(path: &Path) -> Result<Residency, SysError> {
    let page = page_size();
    let file = File::open(path).map_err(|e| SysError::io(path, e))?;
    let len = file.metadata().map_err(|e| SysError::io(path, e))?.len();
    if len == 0 {
        return Ok(Residency {
            cached_pages: 0,
            total_pages: 0,
            page_size: page,
        });
    }
    let map = Mapping::of_file(&file, path)?;
    Ok(Residency {
        cached_pages: map.resident_pages()?,
        total_pages: len.div_ceil(page),
        page_size: page,
    })
}

/// Evicts each file from the page cache: `fdatasync` first (dirty pages
/// cannot be dropped), then `POSIX_FADV_DONTNEED` over the whole file. A
/// file on a filesystem without fsync (EROFS, which holds a phone's
/// system, system_ext, product and vendor, says EINVAL) or a read-only
/// one has no dirty pages: it is not synced.
/// Pages mapped by a running process stay cached; everything else goes.
pub fn evict<P: AsRef<Path>>(paths: &[P]) -> Result<(), SysError> {
    for p in paths {
        evict_file(p.as_ref())?;
    }
    Ok(())
}

/// Evicts one file; see [`evict`].
pub fn evict_file(path: &Path) -> Result<(), SysError> {
    let file = File::open(path).map_err(|e| SysError::io(path, e))?;
    match rustix::fs::fdatasync(&file) {
        Ok(()) | Err(rustix::io::Errno::INVAL) | Err(rustix::io::Errno::ROFS) => {}
        Err(e) => return Err(SysError::io(path, e.into())),
    }
    rustix::fs::fadvise(&file, 0, None::<NonZeroU64>, Advice::DontNeed)
        .map_err(|e| SysError::io(path, e.into()))
}

/// A whole file mapped read-only and private, the way a dynamic linker maps
/// a library: touching a page that is not cached is a major page fault that
/// reads it (and its read-around window) from storage.
#[derive(Debug)]
pub struct Mapping {
    addr: *mut libc::c_void,
    len: usize,
    path: PathBuf,
}

impl Mapping {
    /// Maps the whole of `path`; an empty file cannot be mapped.
    pub fn open(path: &Path) -> Result<Mapping, SysError> {
        let file = File::open(path).map_err(|e| SysError::io(path, e))?;
        Self::of_file(&file, path)
    }

    fn of_file(file: &File, path: &Path) -> Result<Mapping, SysError> {
        let len = file.metadata().map_err(|e| SysError::io(path, e))?.len();
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l > 0)
            .ok_or_else(|| SysError::Parse {
                path: path.to_path_buf(),
                text: len.to_string(),
                why: "a mappable file must be non-empty and fit in memory".into(),
            })?;
        // SAFETY: a fresh mapping at an address the kernel picks; nothing
        // aliases it, and we only ever read it through `touch`.
        let addr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ,
                MapFlags::PRIVATE,
                file,
                0,
            )
        }
        .map_err(|e| SysError::io(path, e.into()))?;
        Ok(Mapping {
            addr,
            len,
            path: path.to_path_buf(),
        })
    }

    /// Length of the mapping in bytes (the file size).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: empty files are refused by [`Mapping::open`].
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads the byte at `offset` (clamped to the end), faulting its page in.
    pub fn touch(&self, offset: usize) -> u8 {
        let off = offset.min(self.len - 1);
        // SAFETY: `off < len`, the mapping is live and readable for `len`
        // bytes; a volatile read keeps the compiler from eliding the fault.
        unsafe { std::ptr::read_volatile((self.addr as *const u8).add(off)) }
    }

    /// Pages of the mapped file that are in the page cache (mincore(2)),
    /// counted in windows so a huge file needs only a small vector.
    pub fn resident_pages(&self) -> Result<u64, SysError> {
        const WINDOW_PAGES: usize = 1 << 16;
        let page = crate::cast::usize_of(page_size());
        let pages = self.len.div_ceil(page);
        let mut vec = vec![0u8; WINDOW_PAGES.min(pages)];
        let mut cached = 0u64;
        let mut first = 0;
        while first < pages {
            let n = WINDOW_PAGES.min(pages - first);
            let len = (n * page).min(self.len - first * page);
            // SAFETY: the range lies inside our live mapping and `vec` holds
            // at least one byte per page of it, as mincore(2) requires.
            let rc = unsafe {
                libc::mincore(
                    (self.addr as *mut u8).add(first * page).cast(),
                    len,
                    vec.as_mut_ptr(),
                )
            };
            if rc != 0 {
                return Err(SysError::io(&self.path, std::io::Error::last_os_error()));
            }
            cached += vec[..n].iter().filter(|&&b| b & 1 == 1).count() as u64;
            first += n;
        }
        Ok(cached)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the region mmap returned; no references
        // into it outlive `self`.
        let _ = unsafe { rustix::mm::munmap(self.addr, self.len) };
    }
}

/// The page map of `len` bytes of the file behind `fd` from `offset` (a
/// multiple of the page size): one byte per page in `out` (resized to
/// fit), 1 where the page is in the page cache and up to date, 0 where it
/// is not (mincore(2) through a transient read-only mapping; only bit 0 is
/// kept). `len` 0 leaves `out` empty.
///
/// mincore answers truthfully only for files the caller owns or could
/// write (root always); for others it reports every page as cached (Linux
/// ≥ 5.2), so callers check that first.
pub fn page_map(
    fd: BorrowedFd<'_>,
    offset: u64,
    len: u64,
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    out.clear();
    let Ok(len) = usize::try_from(len) else {
        return Err(std::io::Error::from_raw_os_error(libc::EFBIG));
    };
    if len == 0 {
        return Ok(());
    }
    let pages = len.div_ceil(crate::cast::usize_of(page_size()));
    out.resize(pages, 0);
    // SAFETY: a fresh private read-only mapping the kernel places; it is
    // never dereferenced, only passed to mincore and unmapped below.
    let addr = unsafe {
        rustix::mm::mmap(
            std::ptr::null_mut(),
            len,
            ProtFlags::READ,
            MapFlags::PRIVATE,
            fd,
            offset,
        )
    }?;
    // SAFETY: the range is exactly our live mapping and `out` holds one
    // byte per page of it, as mincore(2) requires.
    let rc = unsafe { libc::mincore(addr, len, out.as_mut_ptr()) };
    let err = (rc != 0).then(std::io::Error::last_os_error);
    // SAFETY: unmaps exactly what mmap returned; nothing refers into it.
    let _ = unsafe { rustix::mm::munmap(addr, len) };
    if let Some(e) = err {
        return Err(e);
    }
    for b in out.iter_mut() {
        *b &= 1;
    }
    Ok(())
}

/// readahead(2): asks the kernel to read `len` bytes from `offset` into the
/// page cache. Returns once the reads are submitted, not when they finish.
pub fn readahead(fd: BorrowedFd<'_>, offset: u64, len: u64) -> std::io::Result<()> {
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    // SAFETY: readahead takes a descriptor and two integers, no memory.
    let rc = unsafe { libc::readahead(fd.as_raw_fd(), offset as libc::off64_t, len) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A temp file of `pages` pages, or `None` (with the reason printed)
    /// when the temp dir is on tmpfs, whose pages cannot be evicted.
    fn file_of(pages: usize) -> Option<tempfile::NamedTempFile> {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let fs = crate::mounts::containing(f.path()).map(|m| m.fstype);
        if fs.as_deref() == Some("tmpfs") {
            iolab_testkit::skip_line(
                "skip: temp dir is on tmpfs, which fadvise cannot evict".to_string(),
            );
            return None;
        }
        f.write_all(&vec![7u8; pages * crate::cast::usize_of(page_size())])
            .unwrap();
        f.flush().unwrap();
        Some(f)
    }

    /// `fincore`'s PAGES column for one file.
    fn fincore_pages(path: &Path) -> Option<u64> {
        let out = std::process::Command::new("fincore")
            .args(["--noheadings", "--raw", "--output", "PAGES"])
            .arg(path)
            .output()
            .ok()?;
        String::from_utf8(out.stdout).ok()?.trim().parse().ok()
    }

    #[test]
    fn residency_matches_util_linux_fincore() {
        let Some(f) = file_of(256) else { return };
        evict_file(f.path()).unwrap();
        // Cache a scattered subset: a few reads with readahead off.
        let file = File::open(f.path()).unwrap();
        rustix::fs::fadvise(&file, 0, None, Advice::Random).unwrap();
        let mut buf = [0u8; 4096];
        for page in [0u64, 3, 50, 51, 52, 200] {
            rustix::io::pread(&file, &mut buf, page * page_size()).unwrap();
        }
        let ours = residency(f.path()).unwrap();
        let Some(theirs) = fincore_pages(f.path()) else {
            iolab_testkit::skip_line("skip: util-linux fincore is not installed".to_string());
            return;
        };
        assert!(ours.cached_pages >= 6, "{ours:?}");
        assert!(ours.cached_pages < 256, "{ours:?}");
        assert_eq!(ours.cached_pages, theirs);
    }

    #[test]
    fn written_file_is_cached_then_evicted() {
        let Some(f) = file_of(64) else { return };
        let before = residency(f.path()).unwrap();
        assert_eq!(before.total_pages, 64);
        assert!(before.cached_pages > 0, "{before:?}");
        evict(&[f.path()]).unwrap();
        let after = residency(f.path()).unwrap();
        assert_eq!(after.cached_pages, 0, "{after:?}");
    }

    #[test]
    fn touching_a_mapping_faults_the_page_in() {
        let Some(f) = file_of(16) else { return };
        evict_file(f.path()).unwrap();
        let m = Mapping::open(f.path()).unwrap();
        assert_eq!(m.touch(5 * crate::cast::usize_of(page_size())), 7);
        assert!(m.resident_pages().unwrap() >= 1);
    }

    #[test]
    fn empty_file_has_no_pages_and_cannot_be_mapped() {
        let Some(f) = file_of(0) else { return };
        let r = residency(f.path()).unwrap();
        assert_eq!((r.cached_pages, r.total_pages, r.fraction()), (0, 0, 0.0));
        assert!(Mapping::open(f.path()).is_err());
    }

    #[test]
    fn missing_file_error_names_it() {
        let e = evict_file(Path::new("/nonexistent/iolab-x")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/iolab-x"), "{e}");
    }

    /// EROFS (a phone's system partitions) has no fsync: eviction works
    /// there all the same, and fincore sees the file dropped.
    #[test]
    fn a_file_on_erofs_is_evicted() {
        let test = "a_file_on_erofs_is_evicted";
        if !iolab_testkit::is_root() {
            return iolab_testkit::skip(test, "mounting an EROFS image needs root");
        }
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir(&src).unwrap();
        std::fs::write(
            src.join("app.odex"),
            vec![9u8; 64 * crate::cast::usize_of(page_size())],
        )
        .unwrap();
        let img = dir.path().join("system_ext.img");
        let made = std::process::Command::new("mkfs.erofs")
            .arg(&img)
            .arg(&src)
            .output();
        if !made.as_ref().is_ok_and(|o| o.status.success()) {
            return iolab_testkit::skip(test, "mkfs.erofs (erofs-utils) is not installed");
        }
        // Configuring a loop changes its queue, and detaching it does not
        // change it back: written back while still bound (as the guard
        // does), so the test leaves the machine as it found it.
        let (att, found) = crate::loopdev::attach_for_test(&img, false, true);
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let mounted = rustix::mount::mount(
            &att.node,
            &mnt,
            "erofs",
            rustix::mount::MountFlags::RDONLY,
            None,
        );
        let result = std::panic::catch_unwind(|| {
            mounted.expect("mount erofs");
            let odex = mnt.join("app.odex");
            std::fs::read(&odex).unwrap();
            assert!(residency(&odex).unwrap().cached_pages > 0);
            evict_file(&odex).unwrap();
            assert_eq!(fincore_pages(&odex), Some(0));
        });
        let _ = rustix::mount::unmount(&mnt, rustix::mount::UnmountFlags::empty());
        found.put_back();
        assert!(crate::loopdev::detach_if_backed_by(&att.name, &img).unwrap());
        result.unwrap();
    }
}
