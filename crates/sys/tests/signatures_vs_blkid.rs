//! iolab's own signature probe against util-linux's `blkid -p`, on images
//! made by the real tools: what a phone without util-linux must refuse to
//! overwrite is what blkid would have named. No root needed (images are
//! files).
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Stdio};

use iolab_sys::signatures::probe;

/// blkid's TYPE or PTTYPE for `img`, None when it finds nothing.
fn blkid(img: &Path) -> Option<String> {
    let out = Command::new("blkid")
        .args(["-p", "-o", "export"])
        .arg(img)
        .output()
        .unwrap();
    if out.status.code() == Some(2) {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "blkid -p {}: {text}", img.display());
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
            .map(str::to_string)
    };
    get("TYPE").or_else(|| get("PTTYPE"))
}

fn sh(script: &str, img: &Path, src: &Path) -> bool {
    let status = Command::new("sh")
        .args(["-c", script, "sh"])
        .arg(img)
        .arg(src)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    status.success()
}

#[test]
fn every_image_blkid_names_is_named_alike_and_zeros_are_nothing() {
    let test = "every_image_blkid_names_is_named_alike_and_zeros_are_nothing";
    if Command::new("blkid").arg("-V").output().is_err() {
        return iolab_testkit::skip(
            test,
            "util-linux's blkid is the reference: install util-linux",
        );
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("file"), vec![7u8; 100_000]).unwrap();
    // (case, tool, script over $1 = a 320 MiB sparse zeroed image, $2 = a dir)
    let luks = "printf pw | cryptsetup luksFormat -q --batch-mode --pbkdf pbkdf2 --pbkdf-force-iterations 1000";
    let cases: Vec<(&str, &str, String)> = vec![
        ("zeros", "true", "true".into()),
        ("ext2", "mkfs.ext2", "mkfs.ext2 -q -F $1".into()),
        ("ext3", "mkfs.ext3", "mkfs.ext3 -q -F $1".into()),
        ("ext4", "mkfs.ext4", "mkfs.ext4 -q -F $1".into()),
        ("xfs", "mkfs.xfs", "mkfs.xfs -q -f $1".into()),
        ("btrfs", "mkfs.btrfs", "mkfs.btrfs -q -f $1".into()),
        ("f2fs", "mkfs.f2fs", "mkfs.f2fs -q -f $1".into()),
        ("erofs", "mkfs.erofs", "rm $1 && mkfs.erofs $1 $2".into()),
        (
            "squashfs",
            "mksquashfs",
            "rm $1 && mksquashfs $2 $1 -quiet -noappend".into(),
        ),
        ("swap", "mkswap", "mkswap $1".into()),
        ("vfat", "mkfs.vfat", "mkfs.vfat $1".into()),
        ("luks1", "cryptsetup", format!("{luks} --type luks1 $1 -")),
        ("luks2", "cryptsetup", format!("{luks} --type luks2 $1 -")),
        (
            "gpt",
            "sfdisk",
            "printf 'label: gpt\\n,,L\\n' | sfdisk -q $1".into(),
        ),
        (
            "dos",
            "sfdisk",
            "printf 'label: dos\\n,,83\\n' | sfdisk -q $1".into(),
        ),
    ];
    let mut missing = Vec::new();
    for (case, tool, script) in &cases {
        if Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .map_or(true, |s| !s.success())
        {
            missing.push(*tool);
            continue;
        }
        let img = dir.path().join(format!("{case}.img"));
        std::fs::File::create(&img)
            .unwrap()
            .set_len(320 << 20)
            .unwrap();
        assert!(sh(script, &img, &src), "{case}: {script}");
        let want = blkid(&img);
        let got = probe(&img).unwrap().map(|f| f.name.to_string());
        assert_eq!(got, want, "{case}: iolab's probe vs blkid -p");
        if *case != "zeros" {
            assert!(got.is_some(), "{case}");
        }
        std::fs::remove_file(&img).unwrap();
    }
    if !missing.is_empty() {
        iolab_testkit::skip(
            test,
            &format!("not installed, so not compared: {}", missing.join(", ")),
        );
    }
}
