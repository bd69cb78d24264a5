//! The results database: open (creating and migrating), record, query.
//!
//! Durability: WAL journal with `synchronous = FULL`, and every call that
//! writes is one statement, hence one committed transaction, so each run is
//! on disk when [`Store::record_run`] returns: a crash, SIGKILL or Ctrl-C
//! later loses nothing already recorded. WAL also lets `iolab results` read
//! while an experiment writes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use iolab_results::{ArtifactDoc, ArtifactKind, ExperimentKind};
use rusqlite::{params, Connection, ErrorCode, OptionalExtension, Row};
use serde_json::Value;

use crate::error::StoreError;
use crate::schema::{self, Migrated};
use crate::stored::{
    Artifact, BackgroundIo, Experiment, ExperimentId, ExperimentSummary, RunId, RunKey, RunOutcome,
    RunRecord, Status,
};
use crate::time::rfc3339_now;

/// `results.db` in the system's data directory: `~/.local/share/iolab`,
/// `/var/lib/iolab` without `HOME`, `/data/local/tmp/iolab` on Android
/// (see `iolab_sys::paths`).
pub fn default_db_path() -> Result<PathBuf, StoreError> {
    Ok(iolab_sys::paths::data_dir().join(iolab_sys::paths::DB_FILE_NAME))
}

/// An open results database.
#[derive(Debug)]
pub struct Store {
    pub(crate) conn: Connection,
    path: PathBuf,
}

const EXPERIMENT_COLUMNS: &str =
    "id, created, kind, command_line, status, owner_pid, owner_start, \
     config_json, environment_json, origin_json";

pub(crate) const RUN_COLUMNS: &str =
    "scheduler, workload, rep, target, started_at, duration_ns, censored, \
     timeout_ns, exit_code, signal, overhead_ns, bg_read_bytes, bg_write_bytes, bg_seconds, \
     config_json, extra_json, outcome, reason, variant";

/// How long opening waits for other processes creating the same database.
const OPEN_BUSY_LIMIT: Duration = Duration::from_secs(30);

/// Opens, switches to WAL, sets the pragmas and migrates.
fn configure(path: &Path) -> rusqlite::Result<(Connection, Migrated)> {
    let mut conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    // Foreign keys are enforced only after the migrations: one rebuilds
    // the run table, and dropping the old one with them on would delete
    // every artifact by cascade. (SQLite ignores this pragma inside a
    // transaction, so it cannot be switched per migration.)
    conn.pragma_update(None, "foreign_keys", false)?;
    let migrated = schema::migrate(&mut conn)?;
    conn.pragma_update(None, "foreign_keys", true)?;
    Ok((conn, migrated))
}

/// SQLITE_BUSY or SQLITE_LOCKED: another connection holds a lock.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

impl Store {
    /// Opens (creating its directory and the file if needed) and migrates
    /// the database at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::create_dir(dir, &e))?;
        }
        let open_err = |e| StoreError::open(&path, &e);
        // Another iolab may be creating the same database right now: the
        // switch to WAL and the first migration take locks SQLite does not
        // always wait for (it returns SQLITE_BUSY at once where waiting
        // could deadlock). The whole sequence is idempotent, so it is
        // retried until the other process is done.
        let deadline = std::time::Instant::now() + OPEN_BUSY_LIMIT;
        let (conn, migrated) = loop {
            match configure(&path) {
                Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => break other.map_err(open_err)?,
            }
        };
        if let Migrated::TooNew(found) = migrated {
            return Err(StoreError::newer_schema(
                &path,
                found,
                schema::current_version(),
            ));
        }
        Ok(Store { conn, path })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records a new experiment, status `running`, owned by this process.
    pub fn create_experiment(
        &self,
        kind: &ExperimentKind,
        command_line: &str,
        config: &Value,
        environment: &Value,
    ) -> Result<ExperimentId, StoreError> {
        let (pid, start) = iolab_sys::process::me();
        self.conn
            .execute(
                "INSERT INTO experiment (created, kind, command_line, config_json,
                     environment_json, status, owner_pid, owner_start)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6, ?7)",
                params![
                    rfc3339_now(),
                    kind.as_str(),
                    command_line,
                    config.to_string(),
                    environment.to_string(),
                    pid,
                    start
                ],
            )
            .map_err(|e| self.sql(e))?;
        Ok(ExperimentId(self.conn.last_insert_rowid()))
    }

    /// Records one finished run; it is committed when this returns.
    pub fn record_run(&self, id: ExperimentId, run: &RunRecord) -> Result<RunId, StoreError> {
        let bg = run.background;
        let result = self.conn.execute(
            &format!(
                "INSERT INTO run (experiment_id, {RUN_COLUMNS}) VALUES
                 (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)"
            ),
            params![
                id.0,
                run.scheduler,
                run.workload,
                run.rep,
                run.target,
                run.started_at,
                run.duration_ns,
                run.censored,
                run.timeout_ns,
                run.exit_code,
                run.signal,
                run.overhead_ns,
                bg.map(|b| b.read_bytes),
                bg.map(|b| b.write_bytes),
                bg.map(|b| b.seconds),
                run.config.to_string(),
                run.extra.to_string(),
                run.outcome.as_str(),
                run.reason,
                run.variant.as_deref().unwrap_or(""),
            ],
        );
        match result {
            Ok(_) => Ok(RunId(self.conn.last_insert_rowid())),
            Err(rusqlite::Error::SqliteFailure(f, _))
                if f.code == ErrorCode::ConstraintViolation =>
            {
                if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY {
                    return Err(self.no_such(id));
                }
                Err(StoreError::DuplicateRun {
                    id,
                    scheduler: run.scheduler.clone(),
                    workload: run.workload.clone(),
                    target: run.target.clone(),
                    rep: run.rep,
                    path: self.path.clone(),
                })
            }
            Err(e) => Err(self.sql(e)),
        }
    }

    /// Attaches a document to a run (replacing an earlier one of the same
    /// kind); committed when this returns.
    pub fn add_artifact(&self, run: RunId, doc: &ArtifactDoc) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO run_artifact (run_id, kind, json) VALUES (?1, ?2, ?3)
                 ON CONFLICT (run_id, kind) DO UPDATE SET json = excluded.json",
                params![run.0, doc.kind.as_str(), doc.json.to_string()],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// Every document attached to the runs of an experiment, in run order,
    /// optionally only those of one `kind`.
    pub fn artifacts(
        &self,
        id: ExperimentId,
        kind: Option<&ArtifactKind>,
    ) -> Result<Vec<Artifact>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT a.run_id, r.scheduler, r.workload, r.target, r.rep, a.kind, a.json, r.variant
                 FROM run_artifact a JOIN run r ON r.id = a.run_id
                 WHERE r.experiment_id = ?1 AND (?2 IS NULL OR a.kind = ?2)
                 ORDER BY a.run_id, a.kind",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![id.0, kind.map(ArtifactKind::as_str)], |r| {
                Ok((
                    RunId(r.get(0)?),
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, u32>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, String>(6)?,
                    r.get::<_, String>(7)?,
                ))
            })
            .map_err(|e| self.sql(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (run_id, scheduler, workload, target, rep, kind, json, variant) =
                row.map_err(|e| self.sql(e))?;
            let json = self.json(&json, "run artifact")?;
            out.push(Artifact {
                run_id,
                scheduler,
                workload,
                target,
                rep,
                variant: Some(variant).filter(|v| !v.is_empty()),
                kind: ArtifactKind::parse(&kind),
                json,
            });
        }
        Ok(out)
    }

    /// Every run of an experiment, in the order recorded.
    pub fn runs(&self, id: ExperimentId) -> Result<Vec<RunRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {RUN_COLUMNS} FROM run WHERE experiment_id = ?1 ORDER BY id"
            ))
            .map_err(|e| self.sql(e))?;
        let rows = stmt.query_map([id.0], raw_run).map_err(|e| self.sql(e))?;
        let mut runs = Vec::new();
        for row in rows {
            let (mut run, config, extra) = row.map_err(|e| self.sql(e))?;
            run.config = self.json(&config, "run config")?;
            run.extra = self.json(&extra, "run extra samples")?;
            runs.push(run);
        }
        Ok(runs)
    }

    /// The (scheduler, workload, variant, rep) repetitions already
    /// recorded, so a resumed experiment (`--resume ID`) runs only the
    /// missing ones.
    pub fn completed_cells(&self, id: ExperimentId) -> Result<BTreeSet<RunKey>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT scheduler, workload, variant, rep FROM run WHERE experiment_id = ?1")
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([id.0], |r| {
                Ok(RunKey {
                    scheduler: r.get(0)?,
                    workload: r.get(1)?,
                    variant: Some(r.get::<_, String>(2)?).filter(|v| !v.is_empty()),
                    rep: r.get(3)?,
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// Sets an experiment's status. Setting `running` (on resume) also makes
    /// this process its owner.
    pub fn set_status(&self, id: ExperimentId, status: Status) -> Result<(), StoreError> {
        let (pid, start) = iolab_sys::process::me();
        let changed = if status == Status::Running {
            self.conn.execute(
                "UPDATE experiment SET status = ?2, owner_pid = ?3, owner_start = ?4
                 WHERE id = ?1",
                params![id.0, status.as_str(), pid, start],
            )
        } else {
            self.conn.execute(
                "UPDATE experiment SET status = ?2 WHERE id = ?1",
                params![id.0, status.as_str()],
            )
        }
        .map_err(|e| self.sql(e))?;
        if changed == 0 {
            return Err(self.no_such(id));
        }
        Ok(())
    }

    /// Every experiment, oldest first, with run counts.
    pub fn list(&self) -> Result<Vec<ExperimentSummary>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT e.id, e.created, e.kind, e.command_line, e.status, e.owner_pid,
                        e.owner_start,
                        (SELECT COUNT(*) FROM (SELECT DISTINCT scheduler, workload, target
                                                FROM run WHERE experiment_id = e.id)),
                        (SELECT COUNT(*) FROM run WHERE experiment_id = e.id),
                        (SELECT COUNT(*) FROM run WHERE experiment_id = e.id AND censored),
                        json_extract(e.origin_json, '$.hostname')
                 FROM experiment e ORDER BY e.id",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([], |r| {
                let status: String = r.get(4)?;
                Ok((
                    ExperimentSummary {
                        id: ExperimentId(r.get(0)?),
                        created: r.get(1)?,
                        kind: ExperimentKind::parse(&r.get::<_, String>(2)?),
                        command_line: r.get(3)?,
                        status: Status::Running,
                        cells: r.get(7)?,
                        runs: r.get(8)?,
                        censored: r.get(9)?,
                        host: r.get(10)?,
                    },
                    status,
                    r.get::<_, i32>(5)?,
                    r.get::<_, u64>(6)?,
                ))
            })
            .map_err(|e| self.sql(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (mut summary, status, pid, start) = row.map_err(|e| self.sql(e))?;
            summary.status = self.status(&status, pid, start)?;
            out.push(summary);
        }
        Ok(out)
    }

    /// One experiment with its configuration and environment.
    pub fn experiment(&self, id: ExperimentId) -> Result<Experiment, StoreError> {
        let row = self
            .conn
            .query_row(
                &format!("SELECT {EXPERIMENT_COLUMNS} FROM experiment WHERE id = ?1"),
                [id.0],
                |r| {
                    Ok((
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, i32>(5)?,
                        r.get::<_, u64>(6)?,
                        r.get::<_, String>(7)?,
                        r.get::<_, String>(8)?,
                        r.get::<_, Option<String>>(9)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        let (created, kind, command_line, status, pid, start, config, env, origin) =
            row.ok_or_else(|| self.no_such(id))?;
        Ok(Experiment {
            id,
            created,
            kind: ExperimentKind::parse(&kind),
            command_line,
            status: self.status(&status, pid, start)?,
            config: self.json(&config, "experiment config")?,
            environment: self.json(&env, "experiment environment")?,
            origin: origin
                .map(|o| self.json(&o, "experiment origin"))
                .transpose()?,
        })
    }

    /// A stored `running` whose owner process is gone (crash, SIGKILL)
    /// reads as `interrupted`: nobody will finish it but `--resume`.
    fn status(&self, stored: &str, pid: i32, start: u64) -> Result<Status, StoreError> {
        let status = Status::parse(stored).ok_or_else(|| StoreError::Corrupt {
            path: self.path.clone(),
            what: format!("unknown experiment status {stored:?}"),
        })?;
        if status == Status::Running && !iolab_sys::process::is_alive(pid, start) {
            return Ok(Status::Interrupted);
        }
        Ok(status)
    }

    fn json(&self, text: &str, what: &str) -> Result<Value, StoreError> {
        serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
            path: self.path.clone(),
            what: format!("{what} is not JSON ({e}): {text:.80}"),
        })
    }

    pub(crate) fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sql {
            path: self.path.clone(),
            source,
        }
    }

    fn no_such(&self, id: ExperimentId) -> StoreError {
        StoreError::no_such_experiment(id, &self.path)
    }
}

/// A run row, with its two JSON columns still as text.
fn raw_run(r: &Row<'_>) -> rusqlite::Result<(RunRecord, String, String)> {
    let bg = match (r.get(11)?, r.get(12)?, r.get(13)?) {
        (Some(read_bytes), Some(write_bytes), Some(seconds)) => Some(BackgroundIo {
            read_bytes,
            write_bytes,
            seconds,
        }),
        _ => None,
    };
    let run = RunRecord {
        scheduler: r.get(0)?,
        workload: r.get(1)?,
        rep: r.get(2)?,
        target: r.get(3)?,
        started_at: r.get(4)?,
        duration_ns: r.get(5)?,
        censored: r.get(6)?,
        timeout_ns: r.get(7)?,
        exit_code: r.get(8)?,
        signal: r.get(9)?,
        overhead_ns: r.get(10)?,
        background: bg,
        config: Value::Null,
        extra: Value::Null,
        outcome: {
            let word: String = r.get(16)?;
            RunOutcome::parse(&word).ok_or_else(|| {
                rusqlite::Error::FromSqlConversionFailure(
                    16,
                    rusqlite::types::Type::Text,
                    format!("unknown run outcome {word:?}").into(),
                )
            })?
        },
        reason: r.get(17)?,
        variant: Some(r.get::<_, String>(18)?).filter(|v| !v.is_empty()),
    };
    Ok((run, r.get(14)?, r.get(15)?))
}
