//! The small vocabularies of a job: its `rw` pattern, its I/O engine,
//! the CPU burner's mode and the directions I/O goes in.

/// The `rw` patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
    /// Sequential mixed reads and writes (`rw`, `readwrite`).
    ReadWrite,
    /// Random mixed reads and writes.
    RandRw,
    /// Sequential trims (discards).
    Trim,
    /// Random trims.
    RandTrim,
    /// Sequential: each block trimmed, then written.
    TrimWrite,
    /// Random: each block trimmed, then written.
    RandTrimWrite,
}

impl Rw {
    /// Every accepted spelling, for error messages.
    pub const NAMES: &'static str =
        "read, write, randread, randwrite, rw (readwrite), randrw, trim, randtrim, trimwrite, randtrimwrite";

    /// Parses fio's spelling.
    pub fn parse(s: &str) -> Option<Rw> {
        Some(match s {
            "read" => Rw::Read,
            "write" => Rw::Write,
            "randread" => Rw::RandRead,
            "randwrite" => Rw::RandWrite,
            "rw" | "readwrite" => Rw::ReadWrite,
            "randrw" => Rw::RandRw,
            "trim" => Rw::Trim,
            "randtrim" => Rw::RandTrim,
            "trimwrite" => Rw::TrimWrite,
            "randtrimwrite" => Rw::RandTrimWrite,
            _ => return None,
        })
    }

    /// fio's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::Write => "write",
            Rw::RandRead => "randread",
            Rw::RandWrite => "randwrite",
            Rw::ReadWrite => "rw",
            Rw::RandRw => "randrw",
            Rw::Trim => "trim",
            Rw::RandTrim => "randtrim",
            Rw::TrimWrite => "trimwrite",
            Rw::RandTrimWrite => "randtrimwrite",
        }
    }

    /// True when the pattern has reads.
    pub fn reads(self) -> bool {
        matches!(self, Rw::Read | Rw::RandRead | Rw::ReadWrite | Rw::RandRw)
    }

    /// True when the pattern changes data: writes, and trims (which
    /// discard it), so every check before writing applies to trims too.
    pub fn writes(self) -> bool {
        !matches!(self, Rw::Read | Rw::RandRead)
    }

    /// True when the pattern trims.
    pub fn trims(self) -> bool {
        matches!(
            self,
            Rw::Trim | Rw::RandTrim | Rw::TrimWrite | Rw::RandTrimWrite
        )
    }

    /// The read/write pattern whose offsets the trims follow: a trim job
    /// walks its blocks as reads would, a trimwrite job as writes would
    /// (each write preceded by a trim of the same block).
    pub fn offsets_as(self) -> Rw {
        match self {
            Rw::Trim => Rw::Read,
            Rw::RandTrim => Rw::RandRead,
            Rw::TrimWrite => Rw::Write,
            Rw::RandTrimWrite => Rw::RandWrite,
            rw => rw,
        }
    }

    /// True for random offsets.
    pub fn random(self) -> bool {
        matches!(
            self,
            Rw::RandRead | Rw::RandWrite | Rw::RandRw | Rw::RandTrim | Rw::RandTrimWrite
        )
    }
}

/// The I/O engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IoEngine {
    /// read(2)/write(2), with lseek(2) when the offset is not the file
    /// position.
    Sync,
    /// pread(2)/pwrite(2) (fio's default on Linux).
    Psync,
    /// io_uring with `iodepth` I/Os in flight.
    IoUring,
    /// Linux native AIO (io_submit/io_getevents) with `iodepth` in flight.
    Libaio,
    /// preadv(2)/pwritev(2).
    Pvsync,
    /// preadv2(2)/pwritev2(2), with `hipri`, `nowait`, `uncached` flags.
    Pvsync2,
    /// POSIX aio_read/aio_write (glibc's thread-based AIO).
    Posixaio,
    /// The file mapped into memory; I/O is memcpy (plus msync for writes
    /// when `sync` options ask).
    Mmap,
    /// No I/O at all: measures the engine loop's own cost.
    Null,
    /// No I/O: burns `cpuload` percent of a CPU.
    CpuIo,
}

impl IoEngine {
    /// Every accepted spelling, for error messages.
    pub const NAMES: &'static str =
        "sync, psync, vsync, pvsync, pvsync2, libaio, io_uring, posixaio, mmap, null, cpuio";

    /// Parses fio's spelling.
    pub fn parse(s: &str) -> Option<IoEngine> {
        Some(match s {
            "sync" => IoEngine::Sync,
            "psync" => IoEngine::Psync,
            // readv/writev of one buffer is read/write: same engine.
            "vsync" => IoEngine::Sync,
            "io_uring" => IoEngine::IoUring,
            "libaio" => IoEngine::Libaio,
            "pvsync" => IoEngine::Pvsync,
            "pvsync2" => IoEngine::Pvsync2,
            "posixaio" => IoEngine::Posixaio,
            "mmap" => IoEngine::Mmap,
            "null" => IoEngine::Null,
            "cpuio" => IoEngine::CpuIo,
            _ => return None,
        })
    }

    /// True for engines that keep `iodepth` I/Os in flight.
    pub fn queues(self) -> bool {
        matches!(
            self,
            IoEngine::IoUring | IoEngine::Libaio | IoEngine::Posixaio
        )
    }

    /// fio's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            IoEngine::Sync => "sync",
            IoEngine::Psync => "psync",
            IoEngine::IoUring => "io_uring",
            IoEngine::Libaio => "libaio",
            IoEngine::Pvsync => "pvsync",
            IoEngine::Pvsync2 => "pvsync2",
            IoEngine::Posixaio => "posixaio",
            IoEngine::Mmap => "mmap",
            IoEngine::Null => "null",
            IoEngine::CpuIo => "cpuio",
        }
    }
}

/// How the cpuio engine burns CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuMode {
    /// A tight loop of no-ops.
    Noop,
    /// Sorting arrays of random numbers (touches caches and memory, like
    /// fio's qsort mode).
    Qsort,
}

/// A value per data direction, as fio's `rate=READ,WRITE`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DirPair<T> {
    /// For reads.
    pub read: T,
    /// For writes.
    pub write: T,
}

/// A data direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Reads.
    Read = 0,
    /// Writes.
    Write = 1,
    /// Trims (discards).
    Trim = 2,
}

impl<T: Copy> DirPair<T> {
    /// The value for `dir`.
    pub fn get(&self, dir: Dir) -> T {
        match dir {
            Dir::Read => self.read,
            // fio's third value (rate=R,W,T) is not taken: trims follow
            // the write setting.
            Dir::Write | Dir::Trim => self.write,
        }
    }
}

/// fio's `file_service_type`: which file the next I/O goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum FileService {
    /// `roundrobin[:N]`: the next file after N I/Os (fio's default, N=1).
    RoundRobin(u32),
    /// `sequential`: each file to its end, then the next.
    Sequential,
    /// `random[:N]`: a random unfinished file, a new one after N I/Os.
    Random(u32),
}

impl FileService {
    /// Parses `roundrobin`, `roundrobin:N`, `sequential`, `random`,
    /// `random:N`.
    pub fn parse(v: &str) -> Result<FileService, String> {
        if matches!(
            v.split(':').next().unwrap_or("").trim(),
            "zipf" | "pareto" | "normal" | "gauss"
        ) {
            return Err(format!(
                "file_service_type={v}: a skewed choice of file is not built; use random, roundrobin or sequential (iolab load --with-fio runs the job with the installed fio)"
            ));
        }
        let (kind, n) = match v.split_once(':') {
            Some((k, n)) => {
                let n: u32 = n.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                    format!(
                        "file_service_type={v}: {n:?} is not a count of I/Os (e.g. roundrobin:4)"
                    )
                })?;
                (k, n)
            }
            None => (v, 1),
        };
        match kind.trim() {
            "roundrobin" => Ok(FileService::RoundRobin(n)),
            "sequential" => Ok(FileService::Sequential),
            "random" => Ok(FileService::Random(n)),
            _ => Err(format!(
                "file_service_type={v}: expected roundrobin[:N], sequential or random[:N]"
            )),
        }
    }
}
