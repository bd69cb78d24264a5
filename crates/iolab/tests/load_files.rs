//! Several files per job (`filename=a:b:c`, `nrfiles`, `file_service_type`)
//! through the real binary: the order of I/O against fio's own iolog for
//! the same job, every engine's blocks read back from the files
//! themselves, fio's file names and size split, verify across files and
//! loops, and a multi-file iolog replayed.
#![allow(clippy::unwrap_used)]

mod load_env;

use load_env::{fio_or_skip, json, stderr, Env};

/// The I/O lines of an iolog as `FILE OP OFFSET LEN`.
fn ios(log: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter(|l| l.contains(" read ") || l.contains(" write "))
        .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        .collect()
}

/// fio's order is the outside truth: the same job under fio and iolab
/// writes the same iolog lines (file, direction, offset, length), for the
/// default roundrobin, roundrobin:2 and sequential file service.
#[test]
fn several_files_take_their_turns_as_under_fio() {
    if !fio_or_skip("several_files_take_their_turns_as_under_fio") {
        return;
    }
    for extra in [
        vec!["--rw=write"],
        vec!["--rw=read", "--loops=2"],
        vec!["--rw=write", "--file_service_type=roundrobin:2"],
        vec!["--rw=read", "--file_service_type=sequential"],
    ] {
        let env = Env::new();
        let mut args = vec![
            "--name=j".to_string(),
            "--filename=a:b:c".to_string(),
            "--bs=4k".to_string(),
            "--size=48k".to_string(),
            "--output=/dev/null".to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let fio = std::process::Command::new("fio")
            .current_dir(env.dir())
            .args(&args)
            .arg("--write_iolog=fio.log")
            .output()
            .unwrap();
        assert!(fio.status.success(), "{}", stderr(&fio));
        for f in ["a", "b", "c"] {
            std::fs::remove_file(env.dir().join(f)).unwrap();
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = env
            .cmd(&refs)
            .arg("--write_iolog=iolab.log")
            .current_dir(env.dir())
            .output()
            .unwrap();
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        let (want, got) = (
            ios(&env.dir().join("fio.log")),
            ios(&env.dir().join("iolab.log")),
        );
        assert!(want.len() >= 12, "{want:?}");
        assert_eq!(got, want, "{extra:?}");
        // Each file holds its third of size (16 KiB), as fio left them.
        for f in ["a", "b", "c"] {
            assert_eq!(
                std::fs::metadata(env.dir().join(f)).unwrap().len(),
                16 << 10
            );
        }
        // fio's log replays onto the same files in the same order.
        let out = env
            .cmd(&["--name=r", "--read_iolog=fio.log", "--replay_no_stall=1"])
            .args(["--write_iolog=rep.log", "--output=/dev/null"])
            .current_dir(env.dir())
            .output()
            .unwrap();
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        assert_eq!(ios(&env.dir().join("rep.log")), want, "replay {extra:?}");
    }
}

/// Every engine puts each block in its own file at its own offset: read
/// back from the files, each 64 KiB block starts with iolab's verify
/// header (magic "IOLV") naming the offset it was written to.
#[test]
fn every_engine_writes_each_block_into_its_own_file() {
    let env = Env::new();
    let d = env.dir();
    for engine in ["psync", "sync", "pvsync", "libaio", "io_uring", "posixaio"] {
        let names: Vec<_> = (0..3).map(|k| d.join(format!("{engine}.{k}"))).collect();
        let list = names
            .iter()
            .map(|p| p.to_str().unwrap())
            .collect::<Vec<_>>()
            .join(":");
        let direct = if matches!(engine, "libaio" | "io_uring") {
            "1"
        } else {
            "0"
        };
        let out = env.run(&[
            "--name=w",
            &format!("--filename={list}"),
            &format!("--ioengine={engine}"),
            &format!("--direct={direct}"),
            "--iodepth=8",
            "--rw=randwrite",
            "--bs=64k",
            "--size=3m",
            "--verify=crc32c",
            "--do_verify=0",
            "--output-format=json",
        ]);
        assert!(out.status.success(), "{engine}: {}", stderr(&out));
        let v = json(&out);
        assert_eq!(v["jobs"][0]["write"]["io_bytes"], 3 << 20, "{engine}");
        for p in &names {
            let data = std::fs::read(p).unwrap();
            assert_eq!(data.len(), 1 << 20, "{engine}: {}", p.display());
            for (i, block) in data.chunks(64 << 10).enumerate() {
                assert_eq!(&block[..4], &0x564c_4f49u32.to_le_bytes(), "{engine} {i}");
                let off = u64::from_le_bytes(block[16..24].try_into().unwrap());
                assert_eq!(off, (i as u64) << 16, "{engine}: {} block {i}", p.display());
            }
        }
    }
}

/// `nrfiles` without `filename`: fio's names (`NAME.CLONE.FILE`), `size`
/// shared by each clone's files, and a verify pass per loop over all of
/// them (fio's t0037-pre: as many bytes read back as written). Direct
/// libaio keeps writes in flight at each loop's end: they complete before
/// the loop's verify, else a block the next loop rewrites is checked once
/// for two loops (CI caught that: 1,474,560 bytes read of 1,572,864).
#[test]
fn nrfiles_names_and_sizes_files_as_fio_and_verifies_each_loop() {
    let env = Env::new();
    let d = env.dir().to_str().unwrap();
    let out = env.run(&[
        "--name=j",
        &format!("--directory={d}"),
        "--nrfiles=2",
        "--numjobs=2",
        "--rw=write",
        "--bs=16k",
        "--size=256k",
        "--loops=3",
        "--verify=md5",
        "--ioengine=libaio",
        "--direct=1",
        "--iodepth=4",
        "--group_reporting",
        "--output-format=json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    for name in ["j.0.0", "j.0.1", "j.1.0", "j.1.1"] {
        let len = std::fs::metadata(env.dir().join(name)).unwrap().len();
        assert_eq!(len, 128 << 10, "{name}");
    }
    let v = json(&out);
    let j = &v["jobs"][0];
    assert_eq!(j["error"], 0, "{}", stderr(&out));
    assert_eq!(j["write"]["io_bytes"], 2 * 3 * (256 << 10));
    assert_eq!(j["read"]["io_bytes"], j["write"]["io_bytes"]);
    // A flipped byte in the second file is caught and named.
    let victim = env.dir().join("j.0.1");
    let mut data = std::fs::read(&victim).unwrap();
    data[40_000] ^= 0xff;
    std::fs::write(&victim, &data).unwrap();
    let out = env.run(&[
        "--name=j",
        &format!("--directory={d}"),
        "--nrfiles=2",
        "--rw=read",
        "--bs=16k",
        "--size=256k",
        "--verify=md5",
        "--output-format=json",
    ]);
    let err = stderr(&out);
    assert!(
        err.contains("j.0.1") && err.contains("offset 32768"),
        "{err}"
    );
}

/// A multi-file iolog replays onto the files it names: the replay's own
/// iolog repeats the recorded one line for line.
#[test]
fn a_multi_file_iolog_replays_onto_its_files() {
    let env = Env::new();
    let d = env.dir();
    let run = |args: &[&str]| {
        let out = env.cmd(args).current_dir(d).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    };
    run(&[
        "--name=rec",
        "--filename=x:y",
        "--rw=randwrite",
        "--bs=8k",
        "--size=256k",
        "--write_iolog=rec.log",
        "--output=/dev/null",
    ]);
    run(&[
        "--name=rep",
        "--read_iolog=rec.log",
        "--replay_no_stall=1",
        "--write_iolog=rep.log",
        "--output=/dev/null",
    ]);
    let (rec, rep) = (ios(&d.join("rec.log")), ios(&d.join("rep.log")));
    assert_eq!(rec.len(), 32);
    assert!(rec.iter().any(|l| l.starts_with("x ")) && rec.iter().any(|l| l.starts_with("y ")));
    assert_eq!(rep, rec);
}
