//! The options and engines iolab knows and refuses, each with the reason,
//! and the error for a name nobody knows (the nearest known one).

/// Options iolab knows and refuses, with the reason (said instead of "did
/// you mean").
const REFUSED: &[(&str, &str)] = &[
    (
        "numa_cpu_nodes",
        "NUMA placement is not supported (this build has no libnuma)",
    ),
    (
        "numa_mem_policy",
        "NUMA placement is not supported (this build has no libnuma)",
    ),
    ("atomic", "atomic writes (RWF_ATOMIC) are not supported"),
    ("sprandom", "SPRandom preconditioning is not supported"),
    (
        "fdp",
        "NVMe flexible data placement needs an NVMe device and io_uring_cmd, not supported",
    ),
    ("fdp_pli", "NVMe flexible data placement is not supported"),
    (
        "verify_offset",
        "iolab's verify header has a fixed place at the start of each chunk",
    ),
    ("verify_only", "iolab verifies blocks this job wrote"),
    ("trim_percentage", "trims are not supported"),
    (
        "unlink_each_loop",
        "files are removed at the end of the job only (unlink=1)",
    ),
    (
        "cpus_allowed",
        "CPU affinity per job is not supported: use taskset on iolab",
    ),
    (
        "cpumask",
        "CPU affinity per job is not supported: use taskset on iolab",
    ),
    ("exec_prerun", "iolab runs no commands from job files"),
    ("exec_postrun", "iolab runs no commands from job files"),
    ("include", "put the jobs in one file"),
];

/// Engines iolab knows and refuses, with the reason.
const ENGINES_REFUSED: &[(&str, &str)] = &[
    ("net", "a network engine"),
    ("netsplice", "a network engine"),
    ("rdma", "a network (RDMA) engine"),
    ("http", "a network (HTTP/S3) engine"),
    ("nbd", "a network block device engine (needs libnbd)"),
    ("nfs", "a network engine (needs libnfs)"),
    ("rbd", "a Ceph engine (needs librbd)"),
    ("rados", "a Ceph engine (needs librados)"),
    ("gfapi", "a GlusterFS engine (needs libgfapi)"),
    ("libhdfs", "an HDFS engine"),
    ("dfs", "a DAOS engine"),
    ("libiscsi", "an iSCSI engine"),
    ("libcufile", "a GPU (cuFile) engine"),
    ("libhipfile", "a GPU (hipFile) engine"),
    ("dev-dax", "a persistent-memory engine (needs a DAX device)"),
    ("libpmem", "a persistent-memory engine"),
    ("libzbc", "a zoned-device engine (no zoned devices here)"),
    (
        "io_uring_cmd",
        "an NVMe passthrough engine (needs /dev/ngXnY)",
    ),
    ("xnvme", "an NVMe engine (needs libxnvme)"),
    ("libblkio", "a vendor-library engine (needs libblkio)"),
    ("spdk", "a vendor-library engine"),
    ("sg", "a SCSI generic engine (needs /dev/sgN)"),
    ("mtd", "a raw flash engine (needs /dev/mtdN)"),
    ("ime_psync", "a DDN IME engine"),
    ("ime_psyncv", "a DDN IME engine"),
    ("ime_aio", "a DDN IME engine"),
    ("exec", "runs arbitrary programs"),
    ("e4defrag", "an ext4 online defragmentation engine"),
    ("falloc", "an fallocate engine"),
    ("ftruncate", "an ftruncate engine"),
    ("filecreate", "a file-creation engine"),
    ("filestat", "a stat engine"),
    ("filedelete", "a file-deletion engine"),
    ("dircreate", "a directory engine"),
    ("dirstat", "a directory engine"),
    ("dirdelete", "a directory engine"),
    ("splice", "a splice engine"),
    (
        "sync_file_range",
        "not an engine here: use the sync_file_range option",
    ),
    ("windowsaio", "Windows only"),
    ("solarisaio", "Solaris only"),
    ("guasi", "not built"),
    ("page_fault", "a page-fault engine"),
    ("cpp_null", "an external C++ engine"),
];

/// The error for an option nobody knows: the nearest known name, or why a
/// known one is refused.
pub fn unknown<'a>(key: &str, known: impl Iterator<Item = &'a str>) -> String {
    if let Some((_, why)) = REFUSED.iter().find(|(k, _)| *k == key) {
        return format!("option {key} is not supported: {why} (iolab load --with-fio runs the job with the installed fio)");
    }
    let names = known.chain(REFUSED.iter().map(|r| r.0));
    match nearest(key, names) {
        Some(n) => format!("unknown option {key:?}: did you mean {n}? (iolab load --help lists the options)"),
        None => format!("unknown option {key:?}: not a fio option iolab knows (iolab load --help lists them; --with-fio runs the job with the installed fio)"),
    }
}

/// The error for an engine iolab does not run.
pub fn unknown_engine(v: &str) -> String {
    if let Some((_, why)) = ENGINES_REFUSED.iter().find(|(k, _)| *k == v) {
        return format!(
            "ioengine={v} is not supported: {why}, which iolab does not run; use one of {}",
            crate::job::kinds::IoEngine::NAMES
        );
    }
    let names = crate::job::kinds::IoEngine::NAMES.split(", ");
    match nearest(v, names) {
        Some(n) => format!(
            "ioengine={v}: unknown engine: did you mean {n}? (expected one of {})",
            crate::job::kinds::IoEngine::NAMES
        ),
        None => format!(
            "ioengine={v}: unknown engine: expected one of {}",
            crate::job::kinds::IoEngine::NAMES
        ),
    }
}

fn nearest<'a>(key: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    names
        .map(|n| (strsim::damerau_levenshtein(key, n), n))
        .filter(|(d, n)| *d <= 2.max(key.len().min(n.len()) / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}
