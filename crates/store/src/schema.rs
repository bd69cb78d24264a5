//! The database schema, versioned with SQLite's `PRAGMA user_version`.
//!
//! Migrations are a list: entry i upgrades version i to i + 1. Each runs in
//! its own `BEGIN IMMEDIATE` transaction that re-reads the version first, so
//! two iolab processes opening a fresh database at once cannot both migrate,
//! and re-opening a current database changes nothing. Never edit a released
//! migration: append a new one.

use rusqlite::{Connection, TransactionBehavior};

/// Migration i takes the database from version i to i + 1.
pub const MIGRATIONS: &[&str] = &[
    // v1: experiments and their runs. Every raw sample is a row of `run`,
    // censored ones included; `extra_json` holds further raw samples of a
    // run (e.g. the probe's slow operations). owner_pid/owner_start identify
    // the process that runs the experiment, so a crashed one reads as
    // interrupted.
    "CREATE TABLE experiment (
        id               INTEGER PRIMARY KEY,
        created          TEXT    NOT NULL,
        kind             TEXT    NOT NULL,
        command_line     TEXT    NOT NULL,
        config_json      TEXT    NOT NULL,
        environment_json TEXT    NOT NULL,
        status           TEXT    NOT NULL
                         CHECK (status IN ('running', 'done', 'interrupted')),
        owner_pid        INTEGER NOT NULL,
        owner_start      INTEGER NOT NULL
    );
    CREATE TABLE run (
        id             INTEGER PRIMARY KEY,
        experiment_id  INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
        scheduler      TEXT    NOT NULL,
        workload       TEXT    NOT NULL,
        rep            INTEGER NOT NULL,
        target         TEXT    NOT NULL,
        started_at     TEXT    NOT NULL,
        duration_ns    INTEGER NOT NULL,
        censored       INTEGER NOT NULL CHECK (censored IN (0, 1)),
        timeout_ns     INTEGER NOT NULL,
        exit_code      INTEGER,
        signal         INTEGER,
        overhead_ns    INTEGER,
        bg_read_bytes  INTEGER,
        bg_write_bytes INTEGER,
        bg_seconds     REAL,
        config_json    TEXT    NOT NULL,
        extra_json     TEXT    NOT NULL,
        UNIQUE (experiment_id, scheduler, workload, target, rep)
    );",
    // v2: documents measured alongside a run (per-request latency
    // histograms, CPU/PSI series, stall attribution, prefetch reports), one
    // JSON document per (run, kind), raw samples included, so new kinds need
    // no migration.
    "CREATE TABLE run_artifact (
        id      INTEGER PRIMARY KEY,
        run_id  INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
        kind    TEXT    NOT NULL,
        json    TEXT    NOT NULL,
        UNIQUE (run_id, kind)
    );",
    // v3: every run's outcome is explicit. Before it, a target that exited
    // without its ready line was stored as a 0 s start and a crash as a
    // clean one. Existing rows are classified from what they recorded:
    // censored stays censored; a 0 s start, or an exit of its own (exit_ns
    // set, no ready time) with a non-zero status or a signal, is failed.
    "ALTER TABLE run ADD COLUMN outcome TEXT NOT NULL DEFAULT 'ok'
        CHECK (outcome IN ('ok', 'censored', 'failed', 'invalid'));
    ALTER TABLE run ADD COLUMN reason TEXT;
    UPDATE run SET outcome = 'censored' WHERE censored = 1;
    UPDATE run SET outcome = 'failed',
        reason = 'exited without becoming ready (classified when the database was upgraded)'
        WHERE censored = 0 AND duration_ns = 0;
    UPDATE run SET outcome = 'failed',
        reason = CASE WHEN signal IS NOT NULL
                      THEN 'killed by signal ' || signal || ' (classified when the database was upgraded)'
                      ELSE 'exited with status ' || exit_code || ' (classified when the database was upgraded)' END
        WHERE censored = 0 AND outcome = 'ok'
          AND json_extract(extra_json, '$.exit_ns') IS NOT NULL
          AND json_extract(extra_json, '$.ready_ns') IS NULL
          AND (signal IS NOT NULL OR (exit_code IS NOT NULL AND exit_code != 0));",
    // A run's variant (e.g. `prefetch:before`) gets its own column; it was
    // appended to the target (`app +prefetch:before`). The uniqueness of a
    // run must include it, and SQLite cannot change a table's UNIQUE, so
    // the table is rebuilt (foreign keys are off around migrations, see
    // `migrate`, so the artifacts that reference runs by id stay).
    "CREATE TABLE run_v4 (
        id             INTEGER PRIMARY KEY,
        experiment_id  INTEGER NOT NULL REFERENCES experiment(id) ON DELETE CASCADE,
        scheduler      TEXT    NOT NULL,
        workload       TEXT    NOT NULL,
        rep            INTEGER NOT NULL,
        target         TEXT    NOT NULL,
        started_at     TEXT    NOT NULL,
        duration_ns    INTEGER NOT NULL,
        censored       INTEGER NOT NULL CHECK (censored IN (0, 1)),
        timeout_ns     INTEGER NOT NULL,
        exit_code      INTEGER,
        signal         INTEGER,
        overhead_ns    INTEGER,
        bg_read_bytes  INTEGER,
        bg_write_bytes INTEGER,
        bg_seconds     REAL,
        config_json    TEXT    NOT NULL,
        extra_json     TEXT    NOT NULL,
        outcome        TEXT    NOT NULL DEFAULT 'ok'
                       CHECK (outcome IN ('ok', 'censored', 'failed', 'invalid')),
        reason         TEXT,
        variant        TEXT    NOT NULL DEFAULT '',
        UNIQUE (experiment_id, scheduler, workload, target, variant, rep)
    );
    INSERT INTO run_v4 SELECT id, experiment_id, scheduler, workload, rep,
        CASE WHEN instr(target, ' +prefetch:') > 0
             THEN substr(target, 1, instr(target, ' +prefetch:') - 1) ELSE target END,
        started_at, duration_ns, censored, timeout_ns, exit_code, signal, overhead_ns,
        bg_read_bytes, bg_write_bytes, bg_seconds, config_json, extra_json, outcome, reason,
        CASE WHEN instr(target, ' +prefetch:') > 0
             THEN substr(target, instr(target, ' +prefetch:') + 2) ELSE '' END
        FROM run;
    DROP TABLE run;
    ALTER TABLE run_v4 RENAME TO run;",
    // v5: experiments imported from another machine's database (`iolab
    // remote`, `iolab results import`) keep where they ran: `origin_json`
    // (host name, machine id, transport, the id it had there) and a key
    // that makes importing the same database twice update, not duplicate.
    "ALTER TABLE experiment ADD COLUMN origin_json TEXT;
    ALTER TABLE experiment ADD COLUMN origin_key TEXT;
    CREATE UNIQUE INDEX experiment_origin_key ON experiment(origin_key)
        WHERE origin_key IS NOT NULL;",
];

/// The schema version this build writes.
pub fn current_version() -> i64 {
    MIGRATIONS.len() as i64
}

/// Outcome of [`migrate`].
#[derive(Debug, PartialEq, Eq)]
pub enum Migrated {
    /// The database is at `current_version()`; holds the version found.
    From(i64),
    /// The database is newer than this build; holds its version.
    TooNew(i64),
}

/// Brings the database up to [`current_version`], one transaction per step.
pub fn migrate(conn: &mut Connection) -> rusqlite::Result<Migrated> {
    let found = user_version(conn)?;
    if found > current_version() {
        return Ok(Migrated::TooNew(found));
    }
    if found == current_version() {
        // The common case: no write lock taken, so opening a database that
        // a running experiment writes to never waits on it.
        return Ok(Migrated::From(found));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate() {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Re-read inside the write lock: another process may have migrated.
        if user_version(&tx)? > i as i64 {
            continue;
        }
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tx.commit()?;
    }
    Ok(Migrated::From(found))
}

/// The database's `PRAGMA user_version`.
pub fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_idempotent() {
        let mut conn = Connection::open_in_memory().expect("memory db");
        assert_eq!(migrate(&mut conn).expect("first"), Migrated::From(0));
        assert_eq!(user_version(&conn).expect("version"), current_version());
        assert_eq!(
            migrate(&mut conn).expect("second"),
            Migrated::From(current_version())
        );
        assert_eq!(user_version(&conn).expect("version"), current_version());
        let tables: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'",
                [],
                |r| r.get(0),
            )
            .expect("count");
        assert_eq!(tables, 3);
    }

    #[test]
    fn newer_databases_are_refused() {
        let mut conn = Connection::open_in_memory().expect("memory db");
        conn.pragma_update(None, "user_version", current_version() + 1)
            .expect("set version");
        assert_eq!(
            migrate(&mut conn).expect("check"),
            Migrated::TooNew(current_version() + 1)
        );
    }
}
