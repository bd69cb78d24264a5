//! Which iolab binary a device needs, and its cache name there.
//!
//! The architecture is read from the ELF header (`e_machine`), not from a
//! file name, so a wrong `--binary` is refused before it is pushed.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::RemoteError;

/// `uname -m`'s word for an ELF file's machine, if it is one iolab builds.
pub fn elf_arch(path: &Path) -> Result<&'static str, RemoteError> {
    let mut head = [0u8; 20];
    let mut f = std::fs::File::open(path).map_err(|e| RemoteError::io(path, e))?;
    f.read_exact(&mut head)
        .map_err(|_| RemoteError::Usage(format!("{} is not an ELF executable", path.display())))?;
    if &head[..4] != b"\x7fELF" {
        return Err(RemoteError::Usage(format!(
            "{} is not an ELF executable: expected an iolab binary",
            path.display()
        )));
    }
    // e_machine, little-endian (both targets are).
    match u16::from_le_bytes([head[18], head[19]]) {
        0x3e => Ok("x86_64"),
        0xb7 => Ok("aarch64"),
        m => Err(RemoteError::Usage(format!(
            "{} is an ELF file for machine {m:#x}: iolab runs on x86_64 and aarch64",
            path.display()
        ))),
    }
}

/// The binary for a device of architecture `arch` (`uname -m`): `given`
/// (checked), this very binary when the device has this machine's
/// architecture, else the aarch64 build `scripts/build-aarch64.sh` leaves
/// in the workspace or an `iolab-aarch64` next to this binary.
pub fn choose(arch: &str, given: Option<&Path>) -> Result<PathBuf, RemoteError> {
    let arch = normalise(arch)?;
    if let Some(p) = given {
        let found = elf_arch(p)?;
        if found != arch {
            return Err(RemoteError::Usage(format!(
                "--binary {} is built for {found} but the device is {arch}: \
                 pass the {arch} build",
                p.display()
            )));
        }
        return Ok(p.to_path_buf());
    }
    let me =
        std::env::current_exe().map_err(|e| RemoteError::io(Path::new("/proc/self/exe"), e))?;
    if elf_arch(&me).ok() == Some(arch) {
        return Ok(me);
    }
    let dir = me.parent().unwrap_or(Path::new("."));
    let candidates = [
        dir.join(format!("iolab-{arch}")),
        // target/{debug,release}/iolab → target/aarch64/<triple>/release/iolab
        dir.join(format!("../{arch}/{arch}-unknown-linux-gnu/release/iolab")),
        dir.join(format!(
            "../../target/{arch}/{arch}-unknown-linux-gnu/release/iolab"
        )),
    ];
    for c in &candidates {
        if c.is_file() && elf_arch(c).ok() == Some(arch) {
            return Ok(c.clone());
        }
    }
    Err(RemoteError::Usage(format!(
        "the device is {arch} and this iolab is {}: build the {arch} binary with \
         scripts/build-aarch64.sh and pass it with --binary PATH",
        std::env::consts::ARCH
    )))
}

/// `uname -m` words for the two architectures iolab builds.
fn normalise(arch: &str) -> Result<&'static str, RemoteError> {
    match arch.trim() {
        "x86_64" | "amd64" => Ok("x86_64"),
        "aarch64" | "arm64" | "armv8" => Ok("aarch64"),
        other => Err(RemoteError::Usage(format!(
            "the device reports architecture {other:?}: iolab builds for x86_64 and \
             aarch64 (a 32-bit userspace on a 64-bit phone reports armv8l; it needs a \
             64-bit shell)"
        ))),
    }
}

/// First 16 hex digits of the file's SHA-256: the binary's name on the
/// device, so an unchanged binary is pushed once.
pub fn short_hash(path: &Path) -> Result<String, RemoteError> {
    let mut f = std::fs::File::open(path).map_err(|e| RemoteError::io(path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| RemoteError::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_machine_from_the_elf_header() {
        let me = std::env::current_exe().unwrap();
        assert_eq!(elf_arch(&me).unwrap(), std::env::consts::ARCH);
        let d = tempfile::tempdir().unwrap();
        let mut fake = b"\x7fELF".to_vec();
        fake.resize(20, 0);
        fake[18] = 0xb7;
        std::fs::write(d.path().join("a"), &fake).unwrap();
        assert_eq!(elf_arch(&d.path().join("a")).unwrap(), "aarch64");
        std::fs::write(d.path().join("s"), "#!/bin/sh\nexit 0\n").unwrap();
        assert!(elf_arch(&d.path().join("s")).is_err());
    }

    #[test]
    fn a_binary_for_the_wrong_device_is_refused() {
        let me = std::env::current_exe().unwrap();
        let other = if std::env::consts::ARCH == "x86_64" {
            "aarch64"
        } else {
            "x86_64"
        };
        let e = choose(other, Some(&me)).unwrap_err().to_string();
        assert!(e.contains("built for") && e.contains(other), "{e}");
        assert_eq!(choose(std::env::consts::ARCH, None).unwrap(), me);
        assert!(choose("armv7l", None)
            .unwrap_err()
            .to_string()
            .contains("x86_64 and aarch64"));
    }

    #[test]
    fn the_hash_changes_with_the_content() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), "one").unwrap();
        std::fs::write(d.path().join("b"), "two").unwrap();
        let (a, b) = (
            short_hash(&d.path().join("a")).unwrap(),
            short_hash(&d.path().join("b")).unwrap(),
        );
        assert_eq!(a.len(), 16);
        assert_ne!(a, b);
        // sha256("one") starts 7692c3ad3540bb80.
        assert_eq!(a, "7692c3ad3540bb80");
    }
}
