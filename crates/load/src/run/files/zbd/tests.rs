//! zonemode=zbd on emulated zones: placement, the open-zone limit, reads
//! below the write pointer, zones owned while I/O is in flight, trims.
use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::job::kinds::{Dir, Rw};
use crate::job::model::Job;

const Z: u64 = 1 << 20;

/// A job over 4 emulated zones of 1 MiB in 64 KiB blocks.
fn job(rw: Rw, opts: &[(&str, &str)]) -> Job {
    let mut j = Job::new("z");
    j.rw = rw;
    for (k, v) in [("zonemode", "zbd"), ("zonesize", "1m"), ("bs", "64k")]
        .iter()
        .chain(opts)
    {
        crate::job::options::apply(&mut j, k, Some(v)).unwrap();
    }
    j
}

fn file(j: &Job) -> Arc<ZbdFile> {
    Arc::new(ZbdFile::open(Path::new("/nonexistent"), false, 4 * Z, j).unwrap())
}

fn io(z: &mut ZbdClone, dir: Dir, off: u64) -> (u64, u64) {
    match z.place(dir, off, 64 << 10) {
        Placed::Io(o, l) => {
            z.done(dir, o, l);
            (o, l)
        }
        p => panic!("{p:?} for {dir:?} at {off}"),
    }
}

#[test]
fn writes_go_to_the_write_pointer_and_a_full_zone_is_reset() {
    let j = job(Rw::RandWrite, &[]);
    let mut z = ZbdClone::new(file(&j), 1, &j, 0, 4 * Z);
    // Drawn anywhere in zone 2: written at its start, then after.
    assert_eq!(io(&mut z, Dir::Write, 2 * Z + 5 * 65536), (2 * Z, 65536));
    assert_eq!(io(&mut z, Dir::Write, 2 * Z), (2 * Z + 65536, 65536));
    for _ in 2..16 {
        io(&mut z, Dir::Write, 2 * Z);
    }
    assert_eq!(z.resets, 0);
    // Zone 2 is full: the next write there resets it.
    assert_eq!(io(&mut z, Dir::Write, 2 * Z + 65536), (2 * Z, 65536));
    assert_eq!(z.resets, 1);
}

#[test]
fn the_open_zone_limit_sends_writes_to_zones_already_open() {
    let j = job(Rw::RandWrite, &[("max_open_zones", "2")]);
    let mut z = ZbdClone::new(file(&j), 1, &j, 0, 4 * Z);
    io(&mut z, Dir::Write, 0);
    io(&mut z, Dir::Write, Z);
    // A third zone would exceed the limit: the write goes to an open one.
    let (o, _) = io(&mut z, Dir::Write, 3 * Z);
    assert!(o < 2 * Z, "{o}");
    assert_eq!(z.f.table().open.len(), 2);
}

#[test]
fn reads_stay_below_the_write_pointer_and_end_without_data() {
    let j = job(Rw::RandRead, &[]);
    let f = file(&j);
    let mut r = ZbdClone::new(f.clone(), 1, &j, 0, 4 * Z);
    assert_eq!(r.place(Dir::Read, Z, 65536), Placed::Eof);
    let w = job(Rw::Write, &[]);
    let mut wz = ZbdClone::new(f, 2, &w, 0, 4 * Z);
    io(&mut wz, Dir::Write, 3 * Z);
    io(&mut wz, Dir::Write, 3 * Z);
    // Drawn in empty zone 1: read from zone 3's 128 KiB of data.
    let (o, l) = io(&mut r, Dir::Read, Z + 7 * 65536);
    assert!(
        (3 * Z..3 * Z + 2 * 65536).contains(&o) && o + l <= 3 * Z + 2 * 65536,
        "{o}"
    );
}

#[test]
fn a_zone_with_another_clones_io_in_flight_waits_until_it_completes() {
    let j = job(Rw::Write, &[]);
    let f = file(&j);
    let mut a = ZbdClone::new(f.clone(), 1, &j, 0, 4 * Z);
    let mut b = ZbdClone::new(f.clone(), 2, &j, 0, 4 * Z);
    let Placed::Io(o, l) = a.place(Dir::Write, 0, 65536) else {
        panic!()
    };
    assert_eq!(b.place(Dir::Write, 0, 65536), Placed::Wait);
    // a's own next write in the zone does not wait (fio's recursive
    // zone lock), and goes after the first.
    assert_eq!(a.place(Dir::Write, 0, 65536), Placed::Io(65536, 65536));
    a.done(Dir::Write, o, l);
    a.done(Dir::Write, 65536, 65536);
    assert_eq!(b.place(Dir::Write, 0, 65536), Placed::Io(2 * 65536, 65536));
    // A clone that ends with I/O in flight frees its zone.
    drop(b);
    let mut c = ZbdClone::new(f, 3, &j, 0, 4 * Z);
    assert!(matches!(c.place(Dir::Write, 0, 65536), Placed::Io(..)));
}

#[test]
fn a_trim_resets_its_zone_and_must_start_it() {
    let j = job(Rw::Write, &[]);
    let mut z = ZbdClone::new(file(&j), 1, &j, 0, 4 * Z);
    io(&mut z, Dir::Write, 0);
    assert!(z.trim(65536).unwrap().is_err());
    z.trim(0).unwrap().unwrap();
    assert_eq!(z.resets, 1);
    assert_eq!(io(&mut z, Dir::Write, 0), (0, 65536));
}
