//! Removing a lab: take its journal back and undo it. The journal lists
//! exactly what iolab created (mount, mount point, throttle rules, queue
//! settings, loop or zram devices, image, directories, metadata), so
//! nothing else is touched: a user's files next to the image, or in a
//! directory iolab made, stay.

use serde::Serialize;

use iolab_guard::{Guard, GuardError};

use crate::meta;
use crate::{no_such_lab, LabError};

/// What `down` did to one lab.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DownReport {
    /// Lab name.
    pub name: String,
    /// One line per change undone, newest first.
    pub restored: Vec<String>,
    /// Changes that could not be undone (they stay in the journal, and the
    /// next `iolab lab down` tries again).
    pub failed: Vec<String>,
}

/// Removes the lab `name` made by `iolab lab up`.
pub fn down(name: &str) -> Result<DownReport, LabError> {
    crate::spec::validate_name(name)?;
    let guard = match Guard::adopt_named("labs", name) {
        Ok(Some(g)) => g,
        Ok(None) if meta::read(name).ok().flatten().is_none() => {
            // No journal, no metadata: perhaps an image a reboot orphaned.
            let restored = crate::orphans::remove(name)?;
            if restored.is_empty() {
                return Err(no_such_lab(name));
            }
            return Ok(DownReport {
                name: name.to_string(),
                restored,
                failed: Vec::new(),
            });
        }
        Ok(None) => return Err(not_persisted(name)),
        Err(GuardError::Busy { .. }) => {
            let holder = meta::flock_holder(&meta::journal_path(name));
            return Err(LabError::InUse {
                name: name.to_string(),
                holder: holder.map_or_else(|| "?".to_string(), |p| p.to_string()),
            });
        }
        Err(e) => return Err(e.into()),
    };
    let mut report = DownReport {
        name: name.to_string(),
        ..DownReport::default()
    };
    for line in guard.restore() {
        match line {
            Ok(s) => report.restored.push(s),
            Err(e) => report.failed.push(e),
        }
    }
    Ok(report)
}

/// Removes every lab made by `iolab lab up` (temporary labs of running
/// processes are left to them).
pub fn down_all() -> Result<Vec<DownReport>, LabError> {
    let mut out = Vec::new();
    for name in meta::names()? {
        if meta::journal_path(&name).exists() {
            out.push(down(&name)?);
        }
    }
    Ok(out)
}

/// Explains why a lab without a persisted journal cannot be taken down.
fn not_persisted(name: &str) -> LabError {
    match meta::read(name) {
        Ok(Some(m)) if m.owner_alive() => LabError::usage(format!(
            "lab {name:?} belongs to running iolab pid {} and goes away when that run ends (stop it with Ctrl-C or kill -TERM {})",
            m.owner_pid, m.owner_pid
        )),
        Ok(Some(m)) => LabError::usage(format!(
            "lab {name:?} was left half-made by iolab pid {}, which died: `iolab restore` removes it",
            m.owner_pid
        )),
        Ok(None) => no_such_lab(name),
        Err(e) => e,
    }
}
