//! `iolab app`: a synthetic Android-like app launch.
//!
//! Real apps make poor benchmarks (the thesis gave up on Candy Crush: too
//! many threads, services and unknown I/O), and a single big file makes a
//! poor app. This one has the shape of an Android app's start-up I/O and
//! does exactly the same I/O every time.
//!
//! # Profile at scale 1 (checked by a unit test)
//!
//! File set, 214 files, 60.5 MiB, content seeded (comparable across runs):
//! - `base.apk` 24 MiB, a zip-like blob;
//! - `lib/arm64/*.so`, 8 native libraries of 0.25–6 MiB (15 MiB);
//! - `oat/arm64/base.odex` 8 MiB, `base.vdex` 6 MiB, `base.art` 2 MiB;
//! - `res/*/r*.{png,xml,bin,ttf}`, 200 files of 1–64 KiB (log-uniform);
//! - `databases/app.db` 2 MiB, `shared_prefs/settings.xml` 8 KiB.
//!
//! Launch, in Android's order, 147 files opened:
//! 1. `apk-open`: pread the zip's central directory (60 KiB at the end)
//!    and the manifest entry (24 KiB);
//! 2. `runtime`: read `base.art` whole; mmap `base.odex` and `base.vdex`
//!    and touch 15 % and 10 % of their pages in clusters of 1–16 pages at
//!    random places (page faults, not sequential reads);
//! 3. `native-libs`: per library, pread the ELF header, mmap it, touch
//!    20 % of its pages the same way;
//! 4. `application`: read the preferences, the database header and 64
//!    random database pages, then 2 rollback-journal transactions of 6
//!    pages (write `app.db-journal`, fsync, write the pages, fsync, delete
//!    the journal);
//! 5. `activity`: pread `resources.arsc` (1.5 MiB) and 48 APK entries of
//!    8–96 KiB at random offsets, open and read 2 of every 3 resource files;
//! 6. `prefs-commit`: rename the preferences to `.bak`, write them anew,
//!    fsync, delete the backup.
//!
//! In bytes: 8.5 MiB through read(2)-family calls, 1229 pages (4.8 MiB)
//! touched through 10 mappings of 29 MiB, 105 KiB written, 5 fsyncs.
//! Cold, the kernel reads more than is touched (fault-around, read-around
//! and readahead bring in neighbours), so what comes from storage depends
//! on the device's `read_ahead_kb`: about 27 MiB at 128 KiB, 40 MiB at
//! 2560 KiB (the loop-device default, where mapped files are read whole);
//! `proc_io.read_bytes` in the report shows it. On an idle device
//! throttled to 20 MiB/s a cold launch takes 1.1–1.4 s (128 KiB) or about
//! 1.9 s (2560 KiB). `--scale` multiplies the
//! sizes and counts (library count and preference size stay fixed).

mod manifest;
mod profile;
mod start;

use std::path::Path;

use iolab_sys::{SysError, UsageError};

pub use manifest::{manifest_files, FileEntry, FileKind, Manifest, MANIFEST_NAME, PROFILE_VERSION};
pub use profile::{check_scale, file_set, plan, totals, Phase, Step, Totals, PAGE, SCALE_RANGE};
pub use start::{start, PhaseTime, StartReport};

/// Seed used unless the user picks one.
pub const DEFAULT_SEED: u64 = 1;

/// Decides whether `dir` needs preparing for (`scale`, `seed`): `Ok(None)`
/// if it holds no file set, `Ok(Some(manifest))` if it already holds this
/// one, and a usage error if it holds a different one (stale files of a
/// bigger set would linger if it were overwritten).
pub fn check_prepared(dir: &Path, scale: f64, seed: u64) -> Result<Option<Manifest>, UsageError> {
    check_scale(scale)?;
    if !dir.join(MANIFEST_NAME).exists() {
        return Ok(None);
    }
    let m = Manifest::load(dir)?;
    if m.scale != scale || m.seed != seed {
        return Err(UsageError::new(format!(
            "{} already holds an app prepared with --scale {} --seed {}: use another --dir, or remove it to prepare --scale {scale} --seed {seed}",
            dir.display(),
            m.scale,
            m.seed
        )));
    }
    Ok(Some(m))
}

/// Creates the file set for (`scale`, `seed`) in `dir`, every file synced
/// to storage, and writes the manifest last.
pub fn prepare(dir: &Path, scale: f64, seed: u64) -> Result<Manifest, SysError> {
    let m = file_set(seed, scale);
    std::fs::create_dir_all(dir).map_err(|e| SysError::io(dir, e))?;
    for f in &m.files {
        let file_seed = crate::targets::content::SplitMix64::stream(seed, &f.path).next_u64();
        super::content::write_file(&m.path_of(dir, f), f.size_bytes, file_seed, magic(f))?;
    }
    m.save(dir)?;
    Ok(m)
}

/// The first bytes of each kind of file, so `file(1)` and a curious human
/// recognise them.
fn magic(f: &FileEntry) -> &'static [u8] {
    match f.kind {
        FileKind::Apk => b"PK\x03\x04",
        FileKind::NativeLib | FileKind::Odex => b"\x7fELF\x02\x01\x01",
        FileKind::Vdex => b"vdex027\0",
        FileKind::Art => b"art\n074\0",
        FileKind::Resource if f.path.ends_with(".png") => b"\x89PNG\r\n\x1a\n",
        FileKind::Resource => b"",
        FileKind::Database => b"SQLite format 3\0",
        FileKind::Prefs => b"<?xml version='1.0' encoding='utf-8' standalone='yes' ?>\n",
    }
}

#[cfg(test)]
mod tests;
