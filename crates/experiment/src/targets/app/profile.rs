//! The synthetic app's profile: which files exist (sizes at scale 1 below)
//! and what a launch does to them, in the order Android does it: open the
//! APK, load the runtime's image and compiled code, load native libraries,
//! `Application.onCreate` (preferences, database), `Activity.onCreate`
//! (resources), then commit preferences.
//!
//! Both the file set and the launch pattern are pure functions of
//! (seed, scale), so every launch of a set does exactly the same I/O.

use iolab_sys::{cast, UsageError};

use super::manifest::{FileEntry, FileKind, Manifest, PROFILE_VERSION};
use crate::targets::content::SplitMix64;

/// Page size the profile is laid out in (the layout must not depend on the
/// machine, so this is fixed; on 16 KiB-page kernels a touch covers more).
pub const PAGE: u64 = 4096;

const MIB: f64 = 1048576.0;
/// Native libraries at scale 1: name and size in MiB (15 MiB in all).
const LIBS: [(&str, f64); 8] = [
    ("libmain.so", 6.0),
    ("libengine.so", 3.0),
    ("libcrypto.so", 2.0),
    ("libc++_shared.so", 1.5),
    ("libimage.so", 1.0),
    ("libsqlcipher.so", 0.75),
    ("libjnibridge.so", 0.5),
    ("libtrace.so", 0.25),
];
const RES_DIRS: [(&str, &str); 4] = [
    ("drawable-xxhdpi", "png"),
    ("layout", "xml"),
    ("raw", "bin"),
    ("font", "ttf"),
];

/// Accepted `--scale` range.
pub const SCALE_RANGE: (f64, f64) = (0.25, 4.0);

/// Checks a `--scale` value.
pub fn check_scale(scale: f64) -> Result<(), UsageError> {
    if scale.is_finite() && (SCALE_RANGE.0..=SCALE_RANGE.1).contains(&scale) {
        Ok(())
    } else {
        Err(UsageError::new(format!(
            "--scale {scale} is out of range: expected {} to {} (0.5 lighter, 1 the documented profile, 2 heavier)",
            SCALE_RANGE.0, SCALE_RANGE.1
        )))
    }
}

fn pages(mib: f64, scale: f64) -> u64 {
    cast::round_u64(mib * scale * MIB / PAGE as f64).max(16) * PAGE
}

fn count(n: f64, scale: f64) -> u64 {
    cast::round_u64(n * scale).max(1)
}

/// The file set for `scale` and `seed`.
pub fn file_set(seed: u64, scale: f64) -> Manifest {
    let f = |path: String, kind, size_bytes| FileEntry {
        path,
        kind,
        size_bytes,
    };
    let mut files = vec![f("base.apk".into(), FileKind::Apk, pages(24.0, scale))];
    for (name, mib) in LIBS {
        files.push(f(
            format!("lib/arm64/{name}"),
            FileKind::NativeLib,
            pages(mib, scale),
        ));
    }
    files.push(f(
        "oat/arm64/base.odex".into(),
        FileKind::Odex,
        pages(8.0, scale),
    ));
    files.push(f(
        "oat/arm64/base.vdex".into(),
        FileKind::Vdex,
        pages(6.0, scale),
    ));
    files.push(f(
        "oat/arm64/base.art".into(),
        FileKind::Art,
        pages(2.0, scale),
    ));
    // Resource sizes are log-uniform over 1..64 KiB (mean about 15 KiB):
    // many small icons and layouts, a few big images and fonts.
    let mut rng = SplitMix64::stream(seed, "res");
    for i in 0..count(200.0, scale) {
        let (dir, ext) = RES_DIRS[(i % 4) as usize];
        let u = rng.next_u64() as f64 / u64::MAX as f64;
        let size = cast::round_u64(1024.0 * 64f64.powf(u));
        files.push(f(
            format!("res/{dir}/r{i:03}.{ext}"),
            FileKind::Resource,
            size,
        ));
    }
    files.push(f(
        "databases/app.db".into(),
        FileKind::Database,
        pages(2.0, scale),
    ));
    files.push(f(
        "shared_prefs/settings.xml".into(),
        FileKind::Prefs,
        8 * 1024,
    ));
    Manifest {
        profile_version: PROFILE_VERSION,
        seed,
        scale,
        files,
    }
}

/// One thing a launch does. `file` indexes `Manifest::files`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// pread `len` bytes at `offset` (in chunks of at most 256 KiB).
    Read {
        /// File index.
        file: usize,
        /// Byte offset.
        offset: u64,
        /// Bytes.
        len: u64,
    },
    /// mmap the whole file, then read one byte of each page, in this order.
    Map {
        /// File index.
        file: usize,
        /// Page numbers (of [`PAGE`] bytes) to touch.
        pages: Vec<u64>,
    },
    /// A rollback-journal transaction updating these database pages:
    /// read them, write them to `<db>-journal`, fsync, write the new pages,
    /// fsync, delete the journal.
    Transaction {
        /// File index.
        file: usize,
        /// Pages updated.
        pages: Vec<u64>,
    },
    /// Rewrite preferences as Android does: rename to `.bak`, write the new
    /// file, fsync, delete the backup.
    Commit {
        /// File index.
        file: usize,
    },
}

/// A named group of steps, timed separately.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phase {
    /// Name, e.g. `native-libs`.
    pub name: &'static str,
    /// Steps in order.
    pub steps: Vec<Step>,
}

/// What a launch must do in total; a launch report should match it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Totals {
    /// Bytes read with pread (journal copies of database pages included).
    pub read_bytes: u64,
    /// Files mapped.
    pub mapped_files: u64,
    /// Pages touched through mappings.
    pub touched_pages: u64,
    /// Bytes written (journal, database pages, preferences).
    pub write_bytes: u64,
    /// fsync calls.
    pub fsyncs: u64,
    /// Distinct files opened (journal and backup files not counted).
    pub files_opened: u64,
}

/// Bytes of a journal: a 512-byte header, then per page a 4-byte page
/// number, the page and a 4-byte checksum (sqlite.org/fileformat.html).
pub fn journal_bytes(pages: usize) -> u64 {
    512 + pages as u64 * (PAGE + 8)
}

/// `fraction` of a file's pages in clusters of 1–16 pages at random places
/// (code is touched function by function, not byte by byte), page 0 first.
fn clustered_pages(rng: &mut SplitMix64, size: u64, fraction: f64) -> Vec<u64> {
    let n = size / PAGE;
    let want = cast::round_u64(n as f64 * fraction).clamp(1, n);
    let mut seen = vec![false; cast::usize_of(n)];
    let mut out = vec![0];
    seen[0] = true;
    while (out.len() as u64) < want {
        let start = rng.range(0, n - 1);
        for p in start..(start + rng.range(1, 16)).min(n) {
            let i = cast::usize_of(p);
            if !seen[i] && (out.len() as u64) < want {
                seen[i] = true;
                out.push(p);
            }
        }
    }
    out
}

/// The launch of `m`: phases of steps.
pub fn plan(m: &Manifest) -> Vec<Phase> {
    let (seed, scale) = (m.seed, m.scale);
    let idx = |kind| m.files.iter().position(|f| f.kind == kind).unwrap_or(0);
    let of_kind = |kind| (0..m.files.len()).filter(move |&i| m.files[i].kind == kind);
    let size = |i: usize| m.files[i].size_bytes;
    let mut rng = SplitMix64::stream(seed, "launch");
    let (apk, db, prefs) = (
        idx(FileKind::Apk),
        idx(FileKind::Database),
        idx(FileKind::Prefs),
    );
    let read = |file, offset, len| Step::Read { file, offset, len };

    // The zip's end: EOCD and central directory (about 1/400 of the APK).
    let cd = ((size(apk) / 400) / PAGE).max(4) * PAGE;
    let apk_open = vec![read(apk, size(apk) - cd, cd), read(apk, PAGE, 6 * PAGE)];

    let mut runtime = Vec::new();
    for i in of_kind(FileKind::Art) {
        runtime.push(read(i, 0, size(i)));
    }
    for (kind, fraction) in [(FileKind::Odex, 0.15), (FileKind::Vdex, 0.10)] {
        for i in of_kind(kind) {
            let pages = clustered_pages(&mut rng, size(i), fraction);
            runtime.push(Step::Map { file: i, pages });
        }
    }

    let mut libs = Vec::new();
    for i in of_kind(FileKind::NativeLib) {
        // The dynamic linker reads the ELF header, then maps the segments.
        libs.push(read(i, 0, PAGE));
        let pages = clustered_pages(&mut rng, size(i), 0.20);
        libs.push(Step::Map { file: i, pages });
    }

    let mut app = vec![read(prefs, 0, size(prefs)), read(db, 0, PAGE)];
    let db_pages = size(db) / PAGE;
    for _ in 0..count(64.0, scale) {
        app.push(read(db, rng.range(1, db_pages - 1) * PAGE, PAGE));
    }
    for _ in 0..count(2.0, scale) {
        let mut pages = vec![0];
        pages.extend((0..5).map(|_| rng.range(1, db_pages - 1)));
        app.push(Step::Transaction { file: db, pages });
    }

    // resources.arsc sits a quarter into the APK, stored uncompressed.
    let arsc = (cast::floor_u64(1.5 * scale * MIB) / PAGE).max(1) * PAGE;
    let mut activity = vec![read(apk, (size(apk) / 4 / PAGE) * PAGE, arsc)];
    for _ in 0..count(48.0, scale) {
        let len = rng.range(8, 96) * 1024;
        let offset = rng.range(0, (size(apk) - len) / 512) * 512;
        activity.push(read(apk, offset, len));
    }
    // Two resource files in three are needed by the first screen, in an
    // order unrelated to their names.
    let mut res: Vec<usize> = of_kind(FileKind::Resource)
        .filter(|_| rng.range(0, 2) > 0)
        .collect();
    for k in (1..res.len()).rev() {
        #[allow(clippy::cast_possible_truncation, reason = "in 0..=k, a usize")]
        let j = rng.range(0, k as u64) as usize;
        res.swap(k, j);
    }
    activity.extend(res.into_iter().map(|i| read(i, 0, size(i))));

    let phase = |name, steps| Phase { name, steps };
    vec![
        phase("apk-open", apk_open),
        phase("runtime", runtime),
        phase("native-libs", libs),
        phase("application", app),
        phase("activity", activity),
        phase("prefs-commit", vec![Step::Commit { file: prefs }]),
    ]
}

/// What `plan` adds up to.
pub fn totals(m: &Manifest, phases: &[Phase]) -> Totals {
    let mut t = Totals::default();
    let mut opened = vec![false; m.files.len()];
    for step in phases.iter().flat_map(|p| &p.steps) {
        match step {
            Step::Read { file, len, .. } => {
                t.read_bytes += len;
                opened[*file] = true;
            }
            Step::Map { file, pages } => {
                t.mapped_files += 1;
                t.touched_pages += pages.len() as u64;
                opened[*file] = true;
            }
            Step::Transaction { file, pages } => {
                t.read_bytes += pages.len() as u64 * PAGE;
                t.write_bytes += journal_bytes(pages.len()) + pages.len() as u64 * PAGE;
                t.fsyncs += 2;
                opened[*file] = true;
            }
            Step::Commit { file } => {
                t.write_bytes += m.files[*file].size_bytes;
                t.fsyncs += 1;
                opened[*file] = true;
            }
        }
    }
    t.files_opened = opened.iter().filter(|&&o| o).count() as u64;
    t
}
