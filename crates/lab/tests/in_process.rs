//! The library API as the start-up matrix uses it: a temporary lab inside
//! the caller's own guard, never persisted, gone when the guard drops.
#![allow(clippy::unwrap_used)]

use iolab_guard::Guard;
use iolab_lab::{Fs, LabKind, LabSpec};

#[test]
fn a_temporary_lab_lives_and_dies_with_its_guard() {
    if !iolab_sys::is_root() {
        iolab_testkit::skip_line(
            "skip: needs root (it makes loop devices and mounts); CI runs as root".to_string(),
        );
        return;
    }
    // The only test in this binary, so setting the environment is safe.
    let run = tempfile::tempdir().unwrap();
    std::env::set_var("IOLAB_RUN_DIR", run.path());
    let img = tempfile::tempdir_in("/var/tmp").unwrap();
    let spec = LabSpec {
        name: format!("inproc-{}", std::process::id()),
        size_bytes: 64 << 20,
        fs: Fs::Ext4,
        scheduler: Some("bfq".into()),
        bw_bytes: Some(50 << 20),
        dir: img.path().to_path_buf(),
        ..LabSpec::default()
    };
    let guard = Guard::new();
    let lab = iolab_lab::up(&guard, &spec).unwrap();
    assert_eq!(lab.kind, LabKind::Loop);
    assert_eq!(lab.device().schedulers().unwrap().current, "bfq");
    assert!(lab.lower.is_some());
    assert_eq!(lab.queue_depth, Some(4));
    let mp = lab.mountpoint.clone().unwrap();
    std::fs::write(mp.join("f"), "x").unwrap();

    // Others can find it while it lives...
    assert_eq!(iolab_lab::open(&spec.name).unwrap(), lab);
    let st = iolab_lab::status(&spec.name).unwrap();
    assert!(!st.persistent);
    assert_eq!(st.owner_pid, Some(std::process::id() as i32));
    assert_eq!(st.sched.as_deref(), Some("bfq"));
    // ... but not take it down: it belongs to this process.
    let e = iolab_lab::down(&spec.name).unwrap_err();
    assert!(
        e.to_string().contains("belongs to running iolab pid"),
        "{e}"
    );
    // Nor create it twice.
    let e = iolab_lab::up(&guard, &spec).unwrap_err();
    assert!(
        iolab_sys::is_usage(&e) && e.to_string().contains("already exists"),
        "{e}"
    );

    let image = lab.image.clone().unwrap();
    drop(guard);
    assert!(!image.exists());
    assert!(iolab_guard::loops_backed_by(&image).is_empty());
    assert!(!mp.exists());
    assert!(iolab_sys::is_usage(
        &iolab_lab::open(&spec.name).unwrap_err()
    ));
    assert!(iolab_lab::list().unwrap().is_empty());
}
