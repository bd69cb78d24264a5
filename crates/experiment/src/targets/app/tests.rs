#![allow(clippy::unwrap_used)]

use super::*;
use crate::targets::content::SplitMix64;

const MIB: f64 = 1048576.0;

#[test]
fn documented_profile_matches_scale_1() {
    let m = file_set(DEFAULT_SEED, 1.0);
    let t = totals(&m, &plan(&m));
    let count = |k| m.files.iter().filter(|f| f.kind == k).count();
    let mib = |b: u64| (b as f64 / MIB * 10.0).round() / 10.0;
    assert_eq!(m.files.len(), 214);
    assert_eq!(mib(m.total_bytes()), 60.5);
    assert_eq!(
        (count(FileKind::NativeLib), count(FileKind::Resource)),
        (8, 200)
    );
    assert_eq!(t.files_opened, 147);
    assert_eq!(mib(t.read_bytes), 8.5);
    assert_eq!((t.touched_pages, t.mapped_files), (1229, 10));
    assert_eq!((t.write_bytes as f64 / 1024.0 * 10.0).round() / 10.0, 105.1);
    assert_eq!(t.fsyncs, 5);
    let res = m.files.iter().filter(|f| f.kind == FileKind::Resource);
    assert!(res.clone().all(|f| (1024..=65536).contains(&f.size_bytes)));
}

#[test]
fn profile_is_deterministic_and_seeded() {
    let a = file_set(7, 1.0);
    assert_eq!(a, file_set(7, 1.0));
    assert_eq!(plan(&a), plan(&file_set(7, 1.0)));
    let b = file_set(8, 1.0);
    assert_ne!(plan(&a), plan(&b));
}

#[test]
fn scale_makes_launches_heavier_or_lighter() {
    let load = |s| {
        let m = file_set(1, s);
        let t = totals(&m, &plan(&m));
        (m.total_bytes(), t.read_bytes + t.touched_pages * PAGE)
    };
    let (half, one, two) = (load(0.5), load(1.0), load(2.0));
    assert!(half.0 < one.0 && one.0 < two.0);
    assert!(half.1 < one.1 && one.1 < two.1);
    assert!(check_scale(0.1).is_err() && check_scale(f64::NAN).is_err());
    check_scale(2.0).unwrap();
}

#[test]
fn touches_are_clustered_not_sequential() {
    let m = file_set(1, 1.0);
    let phases = plan(&m);
    let pages = phases
        .iter()
        .flat_map(|p| &p.steps)
        .find_map(|s| match s {
            Step::Map { pages, .. } => Some(pages.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(pages[0], 0);
    let backwards = pages.windows(2).filter(|w| w[1] < w[0]).count();
    assert!(
        backwards > pages.len() / 20,
        "{backwards} of {}",
        pages.len()
    );
    let mut sorted = pages.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), pages.len(), "a page is touched twice");
}

#[test]
fn prepare_launch_and_report_agree() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("app");
    assert!(check_prepared(&dir, 0.25, 1).unwrap().is_none());
    let m = prepare(&dir, 0.25, 1).unwrap();
    assert_eq!(check_prepared(&dir, 0.25, 1).unwrap(), Some(m.clone()));
    assert!(check_prepared(&dir, 0.5, 1)
        .unwrap_err()
        .0
        .contains("another --dir"));
    let files = manifest_files(&dir).unwrap();
    assert_eq!(files.len(), m.files.len());
    for (p, f) in files.iter().zip(&m.files) {
        assert_eq!(std::fs::metadata(p).unwrap().len(), f.size_bytes, "{p:?}");
    }
    let db = dir.join("databases/app.db");
    assert_eq!(&std::fs::read(&db).unwrap()[..16], b"SQLite format 3\0");

    let r = start(&dir, &m).unwrap();
    assert_eq!(r.done, r.profile);
    assert!(!r.interrupted && r.recovered.is_empty());
    assert_eq!(r.phases.len(), 6);
    let io = r.proc_io.unwrap();
    assert!(io.rchar >= r.done.read_bytes, "{io:?} vs {:?}", r.done);
    assert!(io.wchar >= r.done.write_bytes, "{io:?} vs {:?}", r.done);
    assert!(!dir.join("databases/app.db-journal").exists());
    assert!(!dir.join("shared_prefs/settings.xml.bak").exists());
    assert_eq!(
        manifest_files(&dir).unwrap(),
        files,
        "launch changed the set"
    );
    for (p, f) in files.iter().zip(&m.files) {
        assert_eq!(std::fs::metadata(p).unwrap().len(), f.size_bytes, "{p:?}");
    }
}

#[test]
fn a_killed_launch_is_cleaned_up_next_time() {
    let d = tempfile::tempdir().unwrap();
    let m = prepare(d.path(), 0.25, 2).unwrap();
    std::fs::write(d.path().join("databases/app.db-journal"), b"x").unwrap();
    let prefs = d.path().join("shared_prefs/settings.xml");
    std::fs::rename(&prefs, d.path().join("shared_prefs/settings.xml.bak")).unwrap();
    let r = start(d.path(), &m).unwrap();
    assert_eq!(r.recovered.len(), 2, "{:?}", r.recovered);
    assert_eq!(r.done, r.profile);
    assert!(prefs.exists());
}

#[test]
fn file_content_depends_on_seed_and_path_only() {
    let a = SplitMix64::stream(1, "base.apk").next_u64();
    assert_eq!(a, SplitMix64::stream(1, "base.apk").next_u64());
    let d = tempfile::tempdir().unwrap();
    prepare(&d.path().join("x"), 0.25, 1).unwrap();
    prepare(&d.path().join("y"), 0.25, 1).unwrap();
    let read = |s: &str| std::fs::read(d.path().join(s).join("lib/arm64/libmain.so")).unwrap();
    assert_eq!(read("x"), read("y"));
}
