//! A device reached over a transport: what it is (architecture, Android
//! or not, host name), how iolab gets root there, where its files live,
//! and running iolab there with its output streamed here.

use std::path::Path;
use std::process::{ExitStatus, Stdio};

use crate::quote::{sh_line, sh_word};
use crate::transport::Transport;
use crate::RemoteError;

/// How commands get root on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    /// The login is root (ssh root@, `adb root`).
    Login,
    /// `sudo -n` (passwordless sudo).
    Sudo,
    /// `su -c 'CMD'` (Magisk, SuperSU).
    SuDashC,
    /// `su 0 sh -c 'CMD'` (AOSP userdebug `su`).
    SuZero,
    /// None: commands that change kernel state will refuse there.
    Without,
}

impl Root {
    /// `script` as it must be run to get root.
    pub fn wrap(self, script: &str) -> String {
        match self {
            Root::Login | Root::Without => script.to_string(),
            Root::Sudo => format!("sudo -n sh -c {}", sh_word(script)),
            Root::SuDashC => format!("su -c {}", sh_word(script)),
            Root::SuZero => format!("su 0 sh -c {}", sh_word(script)),
        }
    }

    /// Words for the user.
    pub fn describe(self) -> &'static str {
        match self {
            Root::Login => "root login",
            Root::Sudo => "sudo -n",
            Root::SuDashC => "su -c",
            Root::SuZero => "su 0",
            Root::Without => "no root",
        }
    }
}

/// What `adb root` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdbRoot {
    /// `restarting adbd as root`: wait for the device, then probe again.
    Restarting,
    /// `adbd is already running as root`.
    Already,
    /// `adbd cannot run as root in production builds`: try su.
    Production,
    /// Anything else, verbatim.
    Other(String),
}

/// Classifies `adb root`'s output (recorded outputs are in the tests).
pub fn parse_adb_root(text: &str) -> AdbRoot {
    let t = text.trim();
    if t.contains("restarting adbd as root") {
        AdbRoot::Restarting
    } else if t.contains("already running as root") {
        AdbRoot::Already
    } else if t.contains("production builds") {
        AdbRoot::Production
    } else {
        AdbRoot::Other(t.to_string())
    }
}

/// What one probe of the device found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// `uname -m`.
    pub arch: String,
    /// `id -u`.
    pub uid: u32,
    /// `uname -n`.
    pub hostname: String,
    /// `/system/build.prop` exists.
    pub android: bool,
}

/// The probe script: one round trip.
pub const PROBE: &str = "uname -m; id -u; uname -n; \
     if [ -f /system/build.prop ]; then echo android; else echo linux; fi";

/// Parses [`PROBE`]'s output.
pub fn parse_probe(text: &str) -> Result<Probe, String> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    match lines.as_slice() {
        [arch, uid, host, kind, ..] => Ok(Probe {
            arch: arch.to_string(),
            uid: uid
                .parse()
                .map_err(|_| format!("`id -u` printed {uid:?}, not a number"))?,
            hostname: host.to_string(),
            android: *kind == "android",
        }),
        _ => Err(format!(
            "expected four lines (uname -m, id -u, uname -n, android|linux), got {text:?}"
        )),
    }
}

/// A connected device.
#[derive(Debug, Clone)]
pub struct RemoteHost {
    /// How it is reached.
    pub transport: Transport,
    /// What it is.
    pub probe: Probe,
    /// How iolab gets root there.
    pub root: Root,
    /// iolab's directory there: `bin/` (binaries by hash) and `data/` (its
    /// results database).
    pub dir: String,
}

impl RemoteHost {
    /// Probes the device and settles how to get root. `dir` overrides the
    /// default directory (`/data/local/tmp/iolab` on Android, else
    /// `/var/tmp/iolab`).
    pub fn connect(transport: Transport, dir: Option<String>) -> Result<RemoteHost, RemoteError> {
        let mut probe = probe(&transport)?;
        let root = if probe.uid == 0 {
            Root::Login
        } else {
            match &transport {
                Transport::Adb(a) => {
                    let out = std::process::Command::new(&a.program)
                        .args(["-s", &a.serial, "root"])
                        .stdin(Stdio::null())
                        .output()
                        .map_err(|e| RemoteError::io(&a.program, e))?;
                    let said = format!(
                        "{}{}",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    );
                    if parse_adb_root(&said) == AdbRoot::Restarting {
                        let _ = std::process::Command::new(&a.program)
                            .args(["-s", &a.serial, "wait-for-device"])
                            .status();
                        probe = self::probe(&transport)?;
                    }
                    if probe.uid == 0 {
                        Root::Login
                    } else {
                        su_form(&transport).ok_or_else(|| {
                            RemoteError::usage(format!(
                                "{}: the shell is uid {}, `adb root` said {:?} and su is \
                                 missing or refused: use a userdebug/eng build (adb root) or a \
                                 rooted phone (Magisk su)",
                                transport.label(),
                                probe.uid,
                                said.trim()
                            ))
                        })?
                    }
                }
                Transport::Ssh(_) => {
                    if transport.output("sudo -n true").is_ok() {
                        Root::Sudo
                    } else {
                        Root::Without
                    }
                }
            }
        };
        let dir = dir.unwrap_or_else(|| {
            if probe.android {
                "/data/local/tmp/iolab".to_string()
            } else {
                "/var/tmp/iolab".to_string()
            }
        });
        Ok(RemoteHost {
            transport,
            probe,
            root,
            dir,
        })
    }

    /// Where the results database lives there.
    pub fn data_dir(&self) -> String {
        format!("{}/data", self.dir)
    }

    /// Puts `binary` on the device as `DIR/bin/iolab-HASH` unless it is
    /// there already. Returns its path there and whether it was copied.
    pub fn install(&self, binary: &Path) -> Result<(String, bool), RemoteError> {
        let hash = crate::binary::short_hash(binary)?;
        let bin_dir = format!("{}/bin", self.dir);
        let path = format!("{bin_dir}/iolab-{hash}");
        let check = format!("test -x {} && echo cached || echo missing", sh_word(&path));
        if self.transport.output(&check)?.trim() == "cached" {
            return Ok((path, false));
        }
        self.transport
            .output(&format!("mkdir -p {}", sh_word(&bin_dir)))?;
        let tmp = format!("{path}.part");
        self.transport.push(binary, &tmp)?;
        // Renamed only when whole: an interrupted copy is never "cached".
        self.transport.output(&format!(
            "chmod 755 {t} && mv {t} {p}",
            t = sh_word(&tmp),
            p = sh_word(&path)
        ))?;
        Ok((path, true))
    }

    /// The command line that runs `bin ARGS` there as root, with its
    /// results in [`RemoteHost::data_dir`], stopping (and restoring the device)
    /// when the connection ends.
    pub fn iolab_script(&self, bin: &str, args: &[String]) -> String {
        let mut words = vec![
            "env".to_string(),
            format!("IOLAB_DATA_DIR={}", self.data_dir()),
            "IOLAB_STOP_ON_STDIN_EOF=1".to_string(),
            bin.to_string(),
        ];
        words.extend(args.iter().cloned());
        let script = format!("cd {} && exec {}", sh_word(&self.dir), sh_line(&words));
        self.root.wrap(&script)
    }

    /// Runs iolab there, its output streamed to ours. Our end of its
    /// standard input stays open for as long as it runs: when the
    /// connection drops the remote side reads end-of-file and stops.
    pub fn run_iolab(&self, bin: &str, args: &[String]) -> Result<ExitStatus, RemoteError> {
        let script = self.iolab_script(bin, args);
        let mut child = self
            .transport
            .shell(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| RemoteError::io(Path::new("ssh/adb"), e))?;
        let stdin = child.stdin.take();
        let status = loop {
            match child.wait() {
                Ok(s) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(RemoteError::io(Path::new("ssh/adb"), e)),
            }
        };
        drop(stdin);
        Ok(status)
    }

    /// Copies a consistent snapshot of the device's results database to
    /// `local` (`results snapshot` there: SQLite's `VACUUM INTO`, safe
    /// while an experiment still writes). False when it has none yet.
    pub fn fetch_results(&self, bin: &str, local: &Path) -> Result<bool, RemoteError> {
        let db = format!("{}/{}", self.data_dir(), iolab_sys::paths::DB_FILE_NAME);
        let snap = format!("{}/pull-{}.db", self.dir, std::process::id());
        let script = format!(
            "if [ -f {db} ]; then rm -f {snap} && {bin} results --db {db} snapshot {snap} \
             && echo ready; else echo none; fi",
            db = sh_word(&db),
            snap = sh_word(&snap),
            bin = sh_word(bin)
        );
        if self.transport.output(&self.root.wrap(&script))?.trim() != "ready" {
            return Ok(false);
        }
        let pulled = self.transport.pull(&snap, local);
        let _ = self
            .transport
            .output(&self.root.wrap(&format!("rm -f {}", sh_word(&snap))));
        pulled.map(|()| true)
    }
}

fn probe(t: &Transport) -> Result<Probe, RemoteError> {
    let out = t.output(PROBE)?;
    parse_probe(&out).map_err(|why| RemoteError::Remote {
        via: t.label(),
        what: "probe".into(),
        why,
    })
}

/// Which `su` form gives root, if any.
fn su_form(t: &Transport) -> Option<Root> {
    [Root::SuDashC, Root::SuZero]
        .into_iter()
        .find(|r| t.output(&r.wrap("id -u")).is_ok_and(|o| o.trim() == "0"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn adb_roots_words_as_adb_prints_them() {
        // adb 34.0.5 on a userdebug Pixel, on one already rooted, and on a
        // production build.
        assert_eq!(
            parse_adb_root("restarting adbd as root\n"),
            AdbRoot::Restarting
        );
        assert_eq!(
            parse_adb_root("adbd is already running as root\n"),
            AdbRoot::Already
        );
        assert_eq!(
            parse_adb_root("adbd cannot run as root in production builds\n"),
            AdbRoot::Production
        );
        assert_eq!(
            parse_adb_root("error: no devices/emulators found\n"),
            AdbRoot::Other("error: no devices/emulators found".into())
        );
    }

    #[test]
    fn the_probe_reads_linux_and_android() {
        let p = parse_probe("aarch64\n2000\nlocalhost\nandroid\n").unwrap();
        assert_eq!(
            p,
            Probe {
                arch: "aarch64".into(),
                uid: 2000,
                hostname: "localhost".into(),
                android: true
            }
        );
        assert!(!parse_probe("x86_64\n0\nbox\nlinux\n").unwrap().android);
        assert!(parse_probe("x86_64\n").is_err());
        assert!(parse_probe("x86_64\nroot\nh\nlinux\n").is_err());
    }

    #[test]
    fn root_wrappers_run_the_same_script_through_a_real_shell() {
        // Each wrapper keeps the script one argument: checked by replacing
        // the root tool with a stand-in that runs its last argument.
        let script = "printf '%s|' \"it's\" a\\ b";
        for r in [Root::Sudo, Root::SuDashC, Root::SuZero] {
            let wrapped = r.wrap(script);
            let stand_in = "sudo() { shift; \"$@\"; }; su() { [ \"$1\" = 0 ] && shift; \
                            if [ \"$1\" = -c ]; then sh -c \"$2\"; else \"$@\"; fi; }";
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("{stand_in}; {wrapped}"))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), "it's|a b|", "{r:?}");
        }
    }
}
