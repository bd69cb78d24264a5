//! `iolab remote --ssh USER@HOST | --adb SERIAL -- COMMAND...`: run any
//! iolab command on a board or a phone and bring its results home.
//!
//! The device gets the binary for its architecture once (by hash), runs
//! the command as root with its results in its own directory, streams its
//! output here, and its results database is pulled (a consistent
//! snapshot) and merged into the local store with the device's identity.
//! The remote iolab has its own guard: when the connection drops it reads
//! end-of-file on its standard input, stops like after Ctrl-C, restores
//! the device and leaves the experiment resumable.

use std::io::Read;
use std::path::PathBuf;

use clap::Args;
use iolab_remote::{Adb, RemoteHost, Ssh, Transport};
use iolab_sys::UsageError;

/// Arguments of `iolab remote`.
#[derive(Debug, Args)]
#[command(after_help = "\
Everything after -- is an iolab command line run on the device, e.g.
  iolab remote --ssh root@rpi4 -- startup --lab-size 256M --workloads 1r -- cat {dir}/f
  iolab remote --adb R58M123 -- demo --reps 1 --scale 0.25     (a quick demo)
  iolab remote --ssh root@rpi4 -- startup --resume 3     (after a lost connection)
Paths in it (job files, --dir) are the device's paths. On an aarch64 device
from an x86-64 host, build the device binary with scripts/build-aarch64.sh
(found by itself in the workspace) or pass --binary.")]
#[command(group(clap::ArgGroup::new("to").required(true).args(["ssh", "adb"])))]
pub struct RemoteArgs {
    /// Run over ssh on USER@HOST (keys or agent; iolab never prompts).
    #[arg(long, value_name = "USER@HOST")]
    ssh: Option<String>,
    /// ssh port.
    #[arg(long, value_name = "PORT", requires = "ssh")]
    ssh_port: Option<u16>,
    /// ssh identity file (-i).
    #[arg(long, value_name = "FILE", requires = "ssh")]
    ssh_identity: Option<PathBuf>,
    /// Further ssh option (-o KEY=VALUE), repeatable.
    #[arg(long, value_name = "KEY=VALUE", requires = "ssh")]
    ssh_option: Vec<String>,
    /// Run over adb on the device with this serial (`adb devices`).
    #[arg(long, value_name = "SERIAL")]
    adb: Option<String>,
    /// The adb client.
    #[arg(long, value_name = "PATH", default_value = "adb", requires = "adb")]
    adb_program: PathBuf,
    /// The iolab binary for the device [default: this one when the
    /// architectures match, else the aarch64 build].
    #[arg(long, value_name = "PATH")]
    binary: Option<PathBuf>,
    /// iolab's directory on the device [default: /var/tmp/iolab, Android
    /// /data/local/tmp/iolab].
    #[arg(long, value_name = "DIR")]
    remote_dir: Option<String>,
    /// Local results database the device's results are merged into.
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    /// Leave the results on the device (no pull, no import).
    #[arg(long)]
    no_import: bool,
    /// The iolab command line to run there.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Runs `iolab remote`.
pub fn run(a: RemoteArgs) -> anyhow::Result<()> {
    let transport = match (&a.ssh, &a.adb) {
        (Some(dest), _) => Transport::Ssh(Ssh {
            dest: dest.clone(),
            port: a.ssh_port,
            identity: a.ssh_identity.clone(),
            options: a.ssh_option.clone(),
        }),
        (None, Some(serial)) => Transport::Adb(Adb {
            serial: serial.clone(),
            program: a.adb_program.clone(),
        }),
        (None, None) => {
            return Err(UsageError::new("say where: --ssh USER@HOST or --adb SERIAL").into())
        }
    };
    if a.command.first().is_some_and(|c| c == "remote") {
        return Err(UsageError::new(
            "the command after -- runs on the device and cannot be `remote` again",
        )
        .into());
    }
    let label = transport.label();
    let device = RemoteHost::connect(transport, a.remote_dir.clone())?;
    let binary = iolab_remote::binary::choose(&device.probe.arch, a.binary.as_deref())?;
    if iolab_remote::binary::has_symbols(&binary).unwrap_or(false) {
        iolab_sys::say!(
            "iolab: {label}: {} carries its symbols ({}): a device needs none;              scripts/build-aarch64.sh makes iolab-device (stripped) and keeps them in iolab.debug",
            binary.display(),
            iolab_sys::units::format_bytes(std::fs::metadata(&binary).map_or(0, |m| m.len()))
        );
    }
    let (bin, pushed) = device.install(&binary)?;
    iolab_sys::say!(
        "iolab: {label}: {} {} ({}, {}), iolab {} {}",
        device.probe.hostname,
        device.probe.arch,
        if device.probe.android {
            "Android"
        } else {
            "Linux"
        },
        device.root.describe(),
        bin,
        if pushed { "copied" } else { "already there" }
    );
    if device.root == iolab_remote::Root::Without {
        iolab_sys::say!(
            "iolab: {label}: uid {} without passwordless sudo: commands that change kernel \
             state will refuse there; log in as root for those",
            device.probe.uid
        );
    }
    let status = device.run_iolab(&bin, &a.command)?;
    let lost = match &device.transport {
        // ssh's own failure, or the client killed under us.
        Transport::Ssh(_) => status.code().is_none_or(|c| c == 255),
        // The client killed under us, or adb's own failure: its client
        // exits 255 when the device goes away mid-shell, a code iolab
        // itself never exits with.
        Transport::Adb(_) => status.code().is_none_or(|c| c == 255),
    };
    if lost {
        iolab_sys::say!(
            "iolab: {label}: the connection ended before the command did; the iolab there \
             stops by itself and restores the device. Results measured so far follow."
        );
    }
    let newest = if a.no_import {
        None
    } else {
        import(&device, &bin, &label, a.db.as_deref())?
    };
    if lost {
        iolab_sys::say!(
            "iolab: resume with `iolab remote {} -- {} --resume {}`",
            remote_flags(&a),
            a.command.first().map_or("startup", String::as_str),
            newest.map_or("ID".to_string(), |id| id.to_string())
        );
    }
    if status.code() == Some(2) && !lost {
        // The device's iolab refused the command line: a usage error here
        // too (exit 2), its one-line reason already printed above.
        return Err(UsageError::new(format!(
            "{label}: the device's iolab refused `iolab {}` (exit 2, reason above)",
            a.command.join(" ")
        ))
        .into());
    }
    if !status.success() {
        anyhow::bail!(
            "{label}: `iolab {}` ended with {}",
            a.command.join(" "),
            iolab_experiment::launch::status_words(status)
        );
    }
    Ok(())
}

/// Pulls the device's results database and merges it into the local one;
/// returns the newest experiment's id on the device.
fn import(
    device: &RemoteHost,
    bin: &str,
    label: &str,
    db: Option<&std::path::Path>,
) -> anyhow::Result<Option<i64>> {
    let dir = tempfile_dir()?;
    let local = dir.join("device.db");
    let fetched = device.fetch_results(bin, &local);
    let result = match fetched {
        Ok(false) => {
            iolab_sys::say!("iolab: {label}: no results database there yet");
            Ok(None)
        }
        Ok(true) => {
            let path = super::db::path(db)?;
            let store = iolab_store::Store::open(&path)?;
            let from = iolab_store::ImportFrom {
                via: Some(label.to_string()),
                host_label: None,
            };
            let imported = store.import(&local, &from)?;
            iolab_sys::say!("iolab: {label}: results merged into {}", path.display());
            let mut err = std::io::stderr().lock();
            super::results::write_imported(&mut err, &imported, false)?;
            Ok(imported.iter().map(|i| i.remote_id).max())
        }
        Err(e) => Err(e.into()),
    };
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// A private scratch directory for the pulled database.
fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("iolab-remote-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The transport flags again, for the resume hint.
fn remote_flags(a: &RemoteArgs) -> String {
    match (&a.ssh, &a.adb) {
        (Some(d), _) => {
            let mut s = format!("--ssh {d}");
            if let Some(p) = a.ssh_port {
                s.push_str(&format!(" --ssh-port {p}"));
            }
            s
        }
        (None, Some(serial)) => format!("--adb {serial}"),
        _ => String::new(),
    }
}

/// The device side of a remote run: when `IOLAB_STOP_ON_STDIN_EOF` is set
/// (by `iolab remote`), end-of-file on standard input means the
/// connection is gone. Output is then sent to a log in the data directory
/// (writing to the dead connection would fail) and the run is asked to
/// stop, as after a first Ctrl-C: the guard restores the device and the
/// experiment stays resumable.
pub fn stop_when_stdin_ends() {
    if std::env::var_os("IOLAB_STOP_ON_STDIN_EOF").is_none() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("iolab-stdin".into())
        .spawn(|| {
            let mut buf = [0u8; 256];
            let mut stdin = std::io::stdin().lock();
            while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
            redirect_output_to_log();
            iolab_guard::request_stop();
        });
    if let Err(e) = spawned {
        iolab_sys::say!(
            "iolab: cannot watch the connection ({e}); a lost connection will not stop this run"
        );
    }
}

fn redirect_output_to_log() {
    use std::os::fd::AsRawFd;
    let dir = iolab_sys::paths::data_dir();
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("disconnected-{}.log", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .or_else(|_| std::fs::OpenOptions::new().write(true).open("/dev/null"));
    if let Ok(f) = file {
        for fd in [1, 2] {
            // SAFETY: dup2 onto the standard descriptors; `f` stays open
            // for the call and the process keeps the duplicates.
            unsafe { libc::dup2(f.as_raw_fd(), fd) };
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod help_tests {
    use clap::{CommandFactory, Parser};

    /// Every example in `iolab remote --help` is a command line iolab
    /// itself accepts: the part after `--` (what runs on the device) and
    /// the whole line. It once advertised `demo --quick`, which did not exist.
    #[test]
    fn every_example_in_the_help_parses() {
        let mut cmd = super::super::Cli::command();
        let remote = cmd.find_subcommand_mut("remote").unwrap();
        let help = remote.get_after_help().unwrap().to_string();
        let examples: Vec<&str> = help
            .lines()
            .filter_map(|l| l.trim().strip_prefix("iolab remote "))
            .map(|l| l.split("  ").next().unwrap().trim())
            .collect();
        assert!(examples.len() >= 3, "{help}");
        for e in examples {
            let whole: Vec<&str> = ["iolab", "remote"]
                .into_iter()
                .chain(e.split_whitespace())
                .collect();
            super::super::Cli::try_parse_from(&whole).unwrap_or_else(|err| panic!("{e}: {err}"));
            let device = e.split_once(" -- ").unwrap().1;
            let args: Vec<&str> = std::iter::once("iolab")
                .chain(device.split_whitespace())
                .collect();
            super::super::Cli::try_parse_from(&args)
                .unwrap_or_else(|err| panic!("{device}: {err}"));
        }
    }
}
