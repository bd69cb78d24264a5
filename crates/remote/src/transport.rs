//! How commands reach the device: `ssh` or `adb`, through their own
//! clients (the user's keys, agent, config and `adb` server apply). Both
//! hand one string to the device's shell; files go over the same channel
//! (`cat` over ssh, `adb push`/`pull`), so nothing else (scp, sftp) has to
//! exist on the device.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::quote::sh_word;
use crate::RemoteError;

/// An ssh destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ssh {
    /// `USER@HOST` (or a `Host` of ~/.ssh/config).
    pub dest: String,
    /// `-p PORT`.
    pub port: Option<u16>,
    /// `-i FILE`.
    pub identity: Option<PathBuf>,
    /// Further `-o KEY=VALUE` options.
    pub options: Vec<String>,
}

/// An adb device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adb {
    /// `-s SERIAL` (`adb devices` lists them).
    pub serial: String,
    /// The adb client (`adb` on PATH unless given).
    pub program: PathBuf,
}

/// One way to reach a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// OpenSSH.
    Ssh(Ssh),
    /// Android Debug Bridge.
    Adb(Adb),
}

impl Transport {
    /// `ssh root@board` or `adb SERIAL`: recorded with imported results.
    pub fn label(&self) -> String {
        match self {
            Transport::Ssh(s) => match s.port {
                Some(p) => format!("ssh {} -p {p}", s.dest),
                None => format!("ssh {}", s.dest),
            },
            Transport::Adb(a) => format!("adb {}", a.serial),
        }
    }

    /// The local command that runs `script` in the device's shell.
    pub fn shell(&self, script: &str) -> Command {
        match self {
            Transport::Ssh(s) => {
                let mut c = self.ssh_base(s);
                c.arg("--").arg(&s.dest).arg(script);
                c
            }
            Transport::Adb(a) => {
                let mut c = Command::new(&a.program);
                c.args(["-s", &a.serial, "shell", script]);
                c
            }
        }
    }

    fn ssh_base(&self, s: &Ssh) -> Command {
        let mut c = Command::new("ssh");
        // Never prompt (there may be no terminal); a prompt would hang.
        c.args(["-o", "BatchMode=yes"]);
        if let Some(p) = s.port {
            c.arg("-p").arg(p.to_string());
        }
        if let Some(i) = &s.identity {
            c.arg("-i").arg(i);
        }
        for o in &s.options {
            c.arg("-o").arg(o);
        }
        c
    }

    /// Fails with what to install when the client program is not there.
    /// Checked before spawning rather than read from the spawn's error:
    /// under qemu-user a failed exec looks like an exit with 127, which
    /// `adb shell` also returns for a command missing on the device.
    pub fn check_client(&self) -> Result<(), RemoteError> {
        let program = match self {
            Transport::Ssh(_) => PathBuf::from("ssh"),
            Transport::Adb(a) => a.program.clone(),
        };
        let found = if program.components().count() > 1 {
            program.is_file()
        } else {
            std::env::var_os("PATH")
                .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(&program).is_file()))
        };
        if found {
            Ok(())
        } else {
            Err(self.client_missing(std::io::Error::from(std::io::ErrorKind::NotFound)))
        }
    }

    /// Runs `script` there and returns its standard output; a non-zero
    /// exit is an error carrying its standard error.
    pub fn output(&self, script: &str) -> Result<String, RemoteError> {
        self.check_client()?;
        let out = self
            .shell(script)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| self.client_missing(e))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(self.failed(script, &out))
        }
    }

    /// Copies a local file to `remote` (made executable by the caller).
    pub fn push(&self, local: &Path, remote: &str) -> Result<(), RemoteError> {
        self.check_client()?;
        let out = match self {
            Transport::Ssh(_) => {
                let file = std::fs::File::open(local).map_err(|e| RemoteError::io(local, e))?;
                self.shell(&format!("cat > {}", sh_word(remote)))
                    .stdin(file)
                    .output()
            }
            Transport::Adb(a) => Command::new(&a.program)
                .args(["-s", &a.serial, "push"])
                .arg(local)
                .arg(remote)
                .stdin(Stdio::null())
                .output(),
        };
        self.checked(out, &format!("copy {} to {remote}", local.display()))
    }

    /// Copies `remote` to a local file.
    pub fn pull(&self, remote: &str, local: &Path) -> Result<(), RemoteError> {
        self.check_client()?;
        let out = match self {
            Transport::Ssh(_) => {
                let file = std::fs::File::create(local).map_err(|e| RemoteError::io(local, e))?;
                self.shell(&format!("cat {}", sh_word(remote)))
                    .stdin(Stdio::null())
                    .stdout(file)
                    .output()
            }
            Transport::Adb(a) => Command::new(&a.program)
                .args(["-s", &a.serial, "pull", remote])
                .arg(local)
                .stdin(Stdio::null())
                .output(),
        };
        self.checked(out, &format!("copy {remote} from the device"))
    }

    /// A copy's client run: it could not start, failed, or did it.
    fn checked(
        &self,
        out: std::io::Result<std::process::Output>,
        what: &str,
    ) -> Result<(), RemoteError> {
        let out = out.map_err(|e| self.client_missing(e))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(self.failed(what, &out))
        }
    }

    fn client_missing(&self, e: std::io::Error) -> RemoteError {
        let (client, package) = match self {
            Transport::Ssh(_) => ("ssh".to_string(), "openssh-client"),
            Transport::Adb(a) => (
                a.program.display().to_string(),
                "adb (android-sdk-platform-tools)",
            ),
        };
        RemoteError::usage(format!(
            "cannot run {client}: {e}; install {package} or put it on PATH"
        ))
    }

    fn failed(&self, what: &str, out: &std::process::Output) -> RemoteError {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        let code = out.status.code();
        // 255 is ssh's own failure (connection, authentication), not the
        // command's.
        let lost = matches!(self, Transport::Ssh(_)) && code == Some(255);
        RemoteError::Remote {
            via: self.label(),
            what: what.chars().take(120).collect(),
            why: if lost {
                format!(
                    "ssh failed ({last}); check that `{}` logs in without a prompt",
                    self.label()
                )
            } else {
                format!(
                    "exit {}: {last}",
                    code.map_or("by signal".into(), |c| c.to_string())
                )
            },
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn args(c: &Command) -> Vec<String> {
        std::iter::once(c.get_program())
            .chain(c.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn ssh_never_prompts_and_passes_one_script() {
        let t = Transport::Ssh(Ssh {
            dest: "root@board".into(),
            port: Some(2222),
            identity: Some("/k".into()),
            options: vec!["StrictHostKeyChecking=no".into()],
        });
        assert_eq!(
            args(&t.shell("uname -m")),
            [
                "ssh",
                "-o",
                "BatchMode=yes",
                "-p",
                "2222",
                "-i",
                "/k",
                "-o",
                "StrictHostKeyChecking=no",
                "--",
                "root@board",
                "uname -m"
            ]
        );
        assert_eq!(t.label(), "ssh root@board -p 2222");
    }

    #[test]
    fn adb_addresses_one_device() {
        let t = Transport::Adb(Adb {
            serial: "R58M123".into(),
            program: "adb".into(),
        });
        assert_eq!(
            args(&t.shell("id -u")),
            ["adb", "-s", "R58M123", "shell", "id -u"]
        );
        assert_eq!(t.label(), "adb R58M123");
    }

    #[test]
    fn a_missing_client_says_what_to_install() {
        let t = Transport::Adb(Adb {
            serial: "x".into(),
            program: "/nonexistent/adb".into(),
        });
        let e = t.output("true").unwrap_err().to_string();
        assert!(e.contains("install adb"), "{e}");
    }
}
