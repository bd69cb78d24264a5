//! Merging another machine's results database into this one (`iolab
//! results import`, and `iolab remote` after a run on a board or phone).
//!
//! Every row is copied as stored (raw samples, artifacts, configuration,
//! environment), so the imported numbers are the device's numbers, not a
//! re-derivation. Each imported experiment keeps where it ran (`origin`)
//! and a key (machine id, creation time, id there): importing the same
//! database again leaves unchanged experiments alone and replaces one that
//! changed there (a resumed run) under the same local id.

use std::path::{Path, PathBuf};

use rusqlite::{params, OptionalExtension};
use serde::Serialize;
use serde_json::{json, Value};

use crate::error::StoreError;
use crate::store::Store;
use crate::stored::ExperimentId;
use crate::time::rfc3339_now;

/// What happened to one experiment of the imported database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ImportAction {
    /// Not here before: added.
    New,
    /// Here before with fewer runs or another status: replaced.
    Updated,
    /// Here already, the same: left alone.
    Unchanged,
}

/// One experiment of an import.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Imported {
    /// Its id in the imported database.
    pub remote_id: i64,
    /// Its id here.
    pub local_id: ExperimentId,
    /// The host it ran on.
    pub hostname: String,
    /// Runs it holds.
    pub runs: i64,
    /// What the import did.
    pub action: ImportAction,
}

/// How the imported database was reached, recorded with each experiment.
#[derive(Debug, Clone, Default)]
pub struct ImportFrom {
    /// The transport and address (`ssh root@board`, `adb R58M...`), if any.
    pub via: Option<String>,
    /// A host name for experiments whose environment does not record one
    /// (databases written before iolab recorded the host).
    pub host_label: Option<String>,
}

/// One experiment row of the source.
struct SourceRow {
    id: i64,
    created: String,
    kind: String,
    command_line: String,
    config: String,
    environment: String,
    status: String,
    origin: Option<String>,
    origin_key: Option<String>,
}

impl Store {
    /// Writes a consistent copy of the whole database to `to` (SQLite's
    /// `VACUUM INTO`: one read transaction, so an experiment writing
    /// meanwhile cannot tear it). `iolab remote` pulls this, not the live
    /// file and its WAL.
    pub fn snapshot(&self, to: &Path) -> Result<(), StoreError> {
        self.conn
            .execute("VACUUM INTO ?1", [to.to_string_lossy()])
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// Merges every experiment of the database at `src` into this one.
    /// `src` itself is never modified: a copy is upgraded to this build's
    /// schema and read. One transaction per experiment.
    pub fn import(&self, src: &Path, from: &ImportFrom) -> Result<Vec<Imported>, StoreError> {
        let copy = CopiedDb::new(src, self.path())?;
        // Opening the copy upgrades it (an older iolab's database).
        drop(Store::open(&copy.path)?);
        self.conn
            .execute("ATTACH DATABASE ?1 AS src", [copy.path.to_string_lossy()])
            .map_err(|e| self.sql(e))?;
        let result = self.import_attached(src, from);
        let detached = self.conn.execute("DETACH DATABASE src", []);
        let out = result?;
        detached.map_err(|e| self.sql(e))?;
        Ok(out)
    }

    fn import_attached(&self, src: &Path, from: &ImportFrom) -> Result<Vec<Imported>, StoreError> {
        let rows = self.source_rows()?;
        let mut out = Vec::new();
        for row in rows {
            let (origin, key, hostname) = self.origin_of(&row, src, from)?;
            let runs: i64 = self
                .conn
                .query_row(
                    "SELECT COUNT(*) FROM src.run WHERE experiment_id = ?1",
                    [row.id],
                    |r| r.get(0),
                )
                .map_err(|e| self.sql(e))?;
            let existing: Option<(i64, String, i64)> = self
                .conn
                .query_row(
                    "SELECT e.id, e.status, (SELECT COUNT(*) FROM run WHERE experiment_id = e.id)
                     FROM main.experiment e WHERE e.origin_key = ?1",
                    [&key],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()
                .map_err(|e| self.sql(e))?;
            let action = match &existing {
                Some((_, status, n)) if *status == row.status && *n == runs => {
                    ImportAction::Unchanged
                }
                Some(_) => ImportAction::Updated,
                None => ImportAction::New,
            };
            let local_id = match (&existing, action) {
                (Some((id, _, _)), ImportAction::Unchanged) => *id,
                _ => self.copy_experiment(&row, existing.map(|e| e.0), &origin, &key)?,
            };
            out.push(Imported {
                remote_id: row.id,
                local_id: ExperimentId(local_id),
                hostname,
                runs,
                action,
            });
        }
        Ok(out)
    }

    fn source_rows(&self) -> Result<Vec<SourceRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, created, kind, command_line, config_json, environment_json, status,
                        origin_json, origin_key
                 FROM src.experiment ORDER BY id",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(SourceRow {
                    id: r.get(0)?,
                    created: r.get(1)?,
                    kind: r.get(2)?,
                    command_line: r.get(3)?,
                    config: r.get(4)?,
                    environment: r.get(5)?,
                    status: r.get(6)?,
                    origin: r.get(7)?,
                    origin_key: r.get(8)?,
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.sql(e))
    }

    /// The origin document, the key and the host name of a source row. A
    /// row that was itself imported keeps its first origin.
    fn origin_of(
        &self,
        row: &SourceRow,
        src: &Path,
        from: &ImportFrom,
    ) -> Result<(String, String, String), StoreError> {
        // A document that does not parse is the source's corruption, not
        // a host named "?".
        let corrupt = |what: &str, e: serde_json::Error| StoreError::Corrupt {
            path: src.to_path_buf(),
            what: format!("experiment {}: its {what} is not JSON ({e})", row.id),
        };
        if let (Some(origin), Some(key)) = (&row.origin, &row.origin_key) {
            let v: Value = serde_json::from_str(origin).map_err(|e| corrupt("origin", e))?;
            let host = v["hostname"]
                .as_str()
                .ok_or_else(|| StoreError::Corrupt {
                    path: src.to_path_buf(),
                    what: format!("experiment {}: its origin names no hostname", row.id),
                })?
                .to_string();
            return Ok((origin.clone(), key.clone(), host));
        }
        let env: Value =
            serde_json::from_str(&row.environment).map_err(|e| corrupt("environment", e))?;
        let host = &env["host"];
        let (hostname, machine_id) = match (host["hostname"].as_str(), host["machine_id"].as_str())
        {
            (Some(h), Some(m)) => (h.to_string(), m.to_string()),
            _ => match &from.host_label {
                Some(label) => (label.clone(), format!("label:{label}")),
                None => {
                    return Err(StoreError::usage(format!(
                        "experiment {} of {} does not record its host (written by an iolab \
                         before 0.17): name it with --host NAME",
                        row.id,
                        src.display()
                    )))
                }
            },
        };
        let origin = json!({
            "hostname": hostname,
            "machine_id": machine_id,
            "via": from.via,
            "remote_id": row.id,
            "remote_db": src.display().to_string(),
            "imported_at": rfc3339_now(),
        });
        let key = format!("{machine_id}/{}/{}", row.created, row.id);
        Ok((origin.to_string(), key, hostname))
    }

    /// Copies one experiment with its runs and their artifacts, replacing
    /// `replace` (keeping its id) when given. One transaction.
    fn copy_experiment(
        &self,
        row: &SourceRow,
        replace: Option<i64>,
        origin: &str,
        key: &str,
    ) -> Result<i64, StoreError> {
        let tx = self.conn.unchecked_transaction().map_err(|e| self.sql(e))?;
        if let Some(id) = replace {
            // Cascades to its runs and their artifacts.
            tx.execute("DELETE FROM main.experiment WHERE id = ?1", [id])
                .map_err(|e| self.sql(e))?;
        }
        // The owner is a process on the other machine: 0 makes a stored
        // `running` read as interrupted here (nobody here will finish it).
        tx.execute(
            "INSERT INTO main.experiment (id, created, kind, command_line, config_json,
                 environment_json, status, owner_pid, owner_start, origin_json, origin_key)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, 0, ?8, ?9)",
            params![
                replace,
                row.created,
                row.kind,
                row.command_line,
                row.config,
                row.environment,
                row.status,
                origin,
                key
            ],
        )
        .map_err(|e| self.sql(e))?;
        let local = tx.last_insert_rowid();
        let run_ids: Vec<i64> = {
            let mut stmt = tx
                .prepare("SELECT id FROM src.run WHERE experiment_id = ?1 ORDER BY id")
                .map_err(|e| self.sql(e))?;
            let ids = stmt
                .query_map([row.id], |r| r.get(0))
                .map_err(|e| self.sql(e))?;
            ids.collect::<Result<_, _>>().map_err(|e| self.sql(e))?
        };
        for old in run_ids {
            tx.execute(
                &format!(
                    "INSERT INTO main.run (experiment_id, {cols})
                     SELECT ?1, {cols} FROM src.run WHERE id = ?2",
                    cols = crate::store::RUN_COLUMNS
                ),
                params![local, old],
            )
            .map_err(|e| self.sql(e))?;
            let new = tx.last_insert_rowid();
            tx.execute(
                "INSERT INTO main.run_artifact (run_id, kind, json)
                 SELECT ?1, kind, json FROM src.run_artifact WHERE run_id = ?2",
                params![new, old],
            )
            .map_err(|e| self.sql(e))?;
        }
        tx.commit().map_err(|e| self.sql(e))?;
        Ok(local)
    }
}

/// A private copy of the database to import (with its WAL, which holds
/// the newest commits of a database still open or not checkpointed), next
/// to the destination and removed on drop.
struct CopiedDb {
    dir: PathBuf,
    path: PathBuf,
}

impl CopiedDb {
    fn new(src: &Path, dest: &Path) -> Result<CopiedDb, StoreError> {
        let io = |path: &Path, source| StoreError::Import {
            path: path.to_path_buf(),
            source,
        };
        if !src.is_file() {
            return Err(StoreError::usage(format!(
                "{} is not a file: expected an iolab results database (results.db)",
                src.display()
            )));
        }
        let parent = dest
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let dir = parent.join(format!(".import-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        let copied = CopiedDb {
            path: dir.join("import.db"),
            dir,
        };
        std::fs::copy(src, &copied.path).map_err(|e| io(src, e))?;
        let wal = PathBuf::from(format!("{}-wal", src.display()));
        if wal.is_file() {
            let to = PathBuf::from(format!("{}-wal", copied.path.display()));
            std::fs::copy(&wal, to).map_err(|e| io(&wal, e))?;
        }
        Ok(copied)
    }
}

impl Drop for CopiedDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::stored::Status;
    use crate::testutil::run;

    fn board_env() -> Value {
        json!({"kernel": {"machine": "aarch64"},
               "host": {"hostname": "rpi4", "machine_id": "abc123", "id_source": "machine-id"}})
    }

    /// A "device" database with one experiment of `n` runs, one artifact.
    fn device_db(path: &Path, n: u32) -> ExperimentId {
        let s = Store::open(path).unwrap();
        let id = s
            .create_experiment(
                &iolab_results::ExperimentKind::Startup,
                "iolab startup",
                &json!({"reps": n}),
                &board_env(),
            )
            .unwrap();
        for rep in 0..n {
            let r = s
                .record_run(id, &run("bfq", "1r", rep, 1.0 + rep as f64))
                .unwrap();
            s.add_artifact(
                r,
                &iolab_results::ArtifactDoc {
                    kind: iolab_results::ArtifactKind::Cpu,
                    json: json!({"rep": rep}),
                },
            )
            .unwrap();
        }
        s.set_status(id, Status::Done).unwrap();
        id
    }

    #[test]
    fn imports_every_run_and_artifact_as_stored_and_keeps_the_host() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("dev.db"), d.path().join("local.db"));
        let remote = device_db(&src, 3);
        let local = Store::open(&dst).unwrap();
        // Something already here, so local ids differ from remote ones.
        local
            .create_experiment(
                &iolab_results::ExperimentKind::Sweep,
                "x",
                &json!({}),
                &json!({}),
            )
            .unwrap();
        let from = ImportFrom {
            via: Some("ssh root@rpi4".into()),
            host_label: None,
        };
        let got = local.import(&src, &from).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].action, ImportAction::New);
        assert_eq!(got[0].remote_id, remote.0);
        assert_ne!(got[0].local_id, remote);
        let src_store = Store::open(&src).unwrap();
        assert_eq!(
            local.runs(got[0].local_id).unwrap(),
            src_store.runs(remote).unwrap()
        );
        let arts = local
            .artifacts(got[0].local_id, Some(&iolab_results::ArtifactKind::Cpu))
            .unwrap();
        assert_eq!(arts.len(), 3);
        assert_eq!(arts[2].json, json!({"rep": 2}));
        let e = local.experiment(got[0].local_id).unwrap();
        assert_eq!(e.status, Status::Done);
        assert_eq!(e.origin.as_ref().unwrap()["hostname"], "rpi4");
        assert_eq!(e.origin.as_ref().unwrap()["via"], "ssh root@rpi4");
        let listed = local.list().unwrap();
        assert_eq!(listed[1].host.as_deref(), Some("rpi4"));
        assert_eq!(listed[0].host, None);
    }

    #[test]
    fn a_snapshot_imports_like_the_database() {
        let d = tempfile::tempdir().unwrap();
        let (src, snap, dst) = (
            d.path().join("dev.db"),
            d.path().join("snap.db"),
            d.path().join("local.db"),
        );
        let remote = device_db(&src, 2);
        let s = Store::open(&src).unwrap();
        s.snapshot(&snap).unwrap();
        let local = Store::open(&dst).unwrap();
        let got = local.import(&snap, &ImportFrom::default()).unwrap();
        assert_eq!(
            local.runs(got[0].local_id).unwrap(),
            s.runs(remote).unwrap()
        );
    }

    #[test]
    fn importing_again_updates_in_place_and_never_duplicates() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("dev.db"), d.path().join("local.db"));
        let remote = device_db(&src, 2);
        let local = Store::open(&dst).unwrap();
        let first = local.import(&src, &ImportFrom::default()).unwrap();
        let again = local.import(&src, &ImportFrom::default()).unwrap();
        assert_eq!(again[0].action, ImportAction::Unchanged);
        assert_eq!(again[0].local_id, first[0].local_id);
        // The device resumes the experiment and records one more run.
        {
            let s = Store::open(&src).unwrap();
            s.record_run(remote, &run("bfq", "1r", 2, 9.0)).unwrap();
        }
        let third = local.import(&src, &ImportFrom::default()).unwrap();
        assert_eq!(third[0].action, ImportAction::Updated);
        assert_eq!(third[0].local_id, first[0].local_id);
        assert_eq!(local.runs(first[0].local_id).unwrap().len(), 3);
        assert_eq!(local.list().unwrap().len(), 1);
    }

    #[test]
    fn a_database_without_a_host_needs_a_name_and_the_source_is_not_changed() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("old.db"), d.path().join("local.db"));
        {
            let s = Store::open(&src).unwrap();
            let id = s
                .create_experiment(
                    &iolab_results::ExperimentKind::Startup,
                    "x",
                    &json!({}),
                    &json!({"kernel": {}}),
                )
                .unwrap();
            s.record_run(id, &run("none", "idle", 0, 1.0)).unwrap();
        }
        let before = std::fs::read(&src).unwrap();
        let local = Store::open(&dst).unwrap();
        let e = local.import(&src, &ImportFrom::default()).unwrap_err();
        assert!(
            iolab_sys::is_usage(&e) && e.to_string().contains("--host"),
            "{e}"
        );
        let from = ImportFrom {
            via: None,
            host_label: Some("hikey".into()),
        };
        let got = local.import(&src, &from).unwrap();
        assert_eq!(got[0].hostname, "hikey");
        assert_eq!(std::fs::read(&src).unwrap(), before);
        // The copy it read is gone.
        let left: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().starts_with(".import"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        // Its owner was on the other machine: a stored running reads as
        // interrupted here.
        assert_eq!(
            local.experiment(got[0].local_id).unwrap().status,
            Status::Interrupted
        );
    }
}
