//! Block events on a private loop device: traced completions match
//! /proc/diskstats, and each request's insert/issue arrive before its
//! completion even when they happened on different CPUs.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use common::{leftover_instances, root_guard};
use iolab_trace::{EventRequest, SessionConfig, TraceSession};

#[test]
fn completed_requests_match_diskstats() {
    let Some((guard, dir)) = root_guard("completed_requests_match_diskstats") else {
        return;
    };
    let image = dir.path().join("disk.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let dev = guard.attach_loop(&image, true).unwrap();
    let devno = dev.devno().unwrap();
    let (major, minor) = devno.split_once(':').unwrap();
    // The kernel's dev_t: major << 20 | minor.
    let kdev = (major.parse::<u64>().unwrap() << 20) | minor.parse::<u64>().unwrap();
    let filter = format!("dev == {kdev}");
    let mut config = SessionConfig::new(vec![
        EventRequest::new("block", "block_rq_insert").filter(&filter),
        EventRequest::new("block", "block_rq_issue").filter(&filter),
        EventRequest::new("block", "block_rq_complete").filter(&filter),
    ]);
    config.buffer_kib_per_cpu = 2048;

    let before = iolab_sys::diskstats::read_device(Path::new("/proc"), &dev.name)
        .unwrap()
        .unwrap();
    let mut session = TraceSession::start(&guard, config).unwrap();
    let start = session.start_ns();
    let mut issued: HashMap<u64, u64> = HashMap::new();
    let (mut completes, mut writes, mut bytes) = (0u64, 0u64, 0u64);
    let mut last_ts = 0;
    let mut sink = |r: &iolab_trace::Record| {
        assert!(r.ts_ns >= last_ts);
        last_ts = r.ts_ns;
        assert_eq!(r.u64("dev"), Some(kdev));
        let sector = r.u64("sector").unwrap();
        // A flush (none is expected: O_DIRECT needs no sync) would complete
        // twice (flush_rq and its origin), sector -1, and count once in
        // diskstats: fail loudly rather than miscount.
        assert!(r.u64("nr_sector") != Some(0), "unexpected flush");
        match r.name() {
            "block_rq_issue" => {
                issued.insert(sector, r.ts_ns);
            }
            "block_rq_complete" => {
                let t = issued.remove(&sector);
                let t = t.unwrap_or_else(|| {
                    panic!(
                        "complete without issue: {} {:?} sector {sector} cpu {} ts {} start {}",
                        r.str("rwbs").unwrap(),
                        r.str("cmd"),
                        r.cpu,
                        r.ts_ns,
                        start
                    )
                });
                assert!(t <= r.ts_ns);
                completes += 1;
                if r.str("rwbs").unwrap().starts_with('W') {
                    writes += 1;
                    bytes += r.u64("nr_sector").unwrap() * 512;
                }
            }
            _ => {}
        }
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev.dev_path())
        .unwrap();
    // O_DIRECT needs an aligned buffer: one page from an aligned Vec.
    let layout = std::alloc::Layout::from_size_align(4096, 4096).unwrap();
    let buf = unsafe { std::slice::from_raw_parts_mut(std::alloc::alloc_zeroed(layout), 4096) };
    buf.fill(0x5a);
    const N: u64 = 300;
    for i in 0..N {
        f.write_all(buf).unwrap();
        if i % 50 == 0 {
            session.poll(&mut sink).unwrap();
        }
    }
    drop(f);
    unsafe { std::alloc::dealloc(buf.as_mut_ptr(), layout) };
    let stats = session.finish(&mut sink).unwrap();
    let after = iolab_sys::diskstats::read_device(Path::new("/proc"), &dev.name)
        .unwrap()
        .unwrap();
    let delta = after.since(&before);
    assert_eq!(stats.lost, 0, "{stats:?}");
    assert_eq!(completes, delta.reads + delta.writes, "{delta:?}");
    assert_eq!(writes, N, "one request per direct 4 KiB write");
    assert_eq!(bytes, N * 4096);
    assert_eq!(leftover_instances(&guard), Vec::<String>::new());
}
