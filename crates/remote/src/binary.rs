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
        .map_err(|_| RemoteError::usage(format!("{} is not an ELF executable", path.display())))?;
    if &head[..4] != b"\x7fELF" {
        return Err(RemoteError::usage(format!(
            "{} is not an ELF executable: expected an iolab binary",
            path.display()
        )));
    }
    // e_machine, little-endian (both targets are).
    match u16::from_le_bytes([head[18], head[19]]) {
        0x3e => Ok("x86_64"),
        0xb7 => Ok("aarch64"),
        m => Err(RemoteError::usage(format!(
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
            return Err(RemoteError::usage(format!(
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
    // The stripped build scripts/build-aarch64.sh makes (`iolab-device`,
    // its symbols kept on the host in `iolab.debug`) before the build
    // itself: a device gets what it runs, not 70 MB of line tables.
    let release = |base: &str| {
        [
            dir.join(format!(
                "{base}/{arch}/{arch}-unknown-linux-gnu/release/iolab-device"
            )),
            dir.join(format!(
                "{base}/{arch}/{arch}-unknown-linux-gnu/release/iolab"
            )),
        ]
    };
    let candidates: Vec<PathBuf> = std::iter::once(dir.join(format!("iolab-{arch}")))
        // target/{debug,release}/iolab → target/aarch64/<triple>/release/
        .chain(release(".."))
        .chain(release("../../target"))
        .collect();
    for c in &candidates {
        if c.is_file() && elf_arch(c).ok() == Some(arch) {
            return Ok(c.clone());
        }
    }
    Err(RemoteError::usage(format!(
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
        other => Err(RemoteError::usage(format!(
            "the device reports architecture {other:?}: iolab builds for x86_64 and \
             aarch64 (a 32-bit userspace on a 64-bit phone reports armv8l; it needs a \
             64-bit shell)"
        ))),
    }
}

/// True when the ELF file carries a symbol table or DWARF sections (what
/// a device does not need: `strip` removes them, `objcopy
/// --only-keep-debug` keeps them apart for the host).
pub fn has_symbols(path: &Path) -> Result<bool, RemoteError> {
    let data = std::fs::read(path).map_err(|e| RemoteError::io(path, e))?;
    let bad = || RemoteError::usage(format!("{} is not a 64-bit ELF file", path.display()));
    // Offsets are the file's own u64s: one past the data (or past usize,
    // or an overflowing sum) is a malformed file, not a panic.
    let from = |o: u64| data.get(usize::try_from(o).ok()?..);
    let bytes_at = |o: u64, n: usize| from(o)?.get(..n);
    let u16_at = |o: u64| -> Option<u64> {
        Some(u16::from_le_bytes(bytes_at(o, 2)?.try_into().ok()?).into())
    };
    let u32_at = |o: u64| -> Option<u64> {
        Some(u32::from_le_bytes(bytes_at(o, 4)?.try_into().ok()?).into())
    };
    let u64_at =
        |o: u64| -> Option<u64> { Some(u64::from_le_bytes(bytes_at(o, 8)?.try_into().ok()?)) };
    if data.get(..5) != Some(b"\x7fELF\x02") {
        return Err(bad());
    }
    // ELF64 header: e_shoff at 0x28, e_shentsize 0x3a, e_shnum 0x3c,
    // e_shstrndx 0x3e; section header: sh_name +0, sh_offset +0x18.
    let (shoff, entsize, num, strndx) = (
        u64_at(0x28).ok_or_else(bad)?,
        u16_at(0x3a).ok_or_else(bad)?,
        u16_at(0x3c).ok_or_else(bad)?,
        u16_at(0x3e).ok_or_else(bad)?,
    );
    // Field `off` of section header `i`.
    let field = |i: u64, off: u64| shoff.checked_add(i.checked_mul(entsize)?)?.checked_add(off);
    let names = field(strndx, 0x18).and_then(u64_at).ok_or_else(bad)?;
    const SHF_ALLOC: u64 = 0x2;
    for i in 0..num {
        let name_at = field(i, 0)
            .and_then(u32_at)
            .and_then(|n| names.checked_add(n))
            .ok_or_else(bad)?;
        let name = from(name_at).ok_or_else(bad)?;
        let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
        // Loaded sections stay (`.debug_gdb_scripts` is loaded).
        let loaded = field(i, 0x8).and_then(u64_at).ok_or_else(bad)? & SHF_ALLOC != 0;
        if !loaded && (name == b".symtab" || name.starts_with(b".debug_")) {
            return Ok(true);
        }
    }
    Ok(false)
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
    fn symbols_are_seen_and_a_stripped_copy_has_none() {
        // This test binary has symbols; `strip` (binutils) removes them.
        let me = std::env::current_exe().unwrap();
        assert!(has_symbols(&me).unwrap());
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("stripped");
        let ok = std::process::Command::new("strip")
            .arg("-o")
            .arg(&out)
            .arg(&me)
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            assert!(!has_symbols(&out).unwrap());
        }
        std::fs::write(d.path().join("s"), "#!/bin/sh\n").unwrap();
        assert!(has_symbols(&d.path().join("s")).is_err());
    }

    #[test]
    fn section_headers_past_any_offset_are_refused_not_a_panic() {
        let d = tempfile::tempdir().unwrap();
        let mut elf = b"\x7fELF\x02".to_vec();
        elf.resize(0x40, 0);
        elf[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes()); // e_shoff
        elf[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
        elf[0x3c..0x3e].copy_from_slice(&1u16.to_le_bytes()); // e_shnum
        std::fs::write(d.path().join("e"), &elf).unwrap();
        let e = has_symbols(&d.path().join("e")).unwrap_err().to_string();
        assert!(e.contains("not a 64-bit ELF"), "{e}");
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
