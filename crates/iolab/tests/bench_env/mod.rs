//! A private run directory and results database for tests that run whole
//! experiments (`startup`, `sweep`) through the binary; restores whatever a
//! killed iolab left in that run directory when dropped (then its
//! [`Env`](crate::lab_env::Env) takes the labs down). Also the small output
//! helpers those tests share.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

use crate::lab_env::Env;

/// Run directory, labs and database of one test.
pub struct Bench {
    pub env: Env,
    pub db: PathBuf,
}

impl Bench {
    pub fn new(test: &str) -> Bench {
        let env = Env::new(test);
        let db = env.run.path().join("results.db");
        Bench { env, db }
    }

    pub fn cmd(&self) -> assert_cmd::Command {
        self.env.cmd()
    }

    /// `iolab results ARGS --db <the bench's database>`.
    pub fn results(&self, args: &[&str]) -> Output {
        self.cmd()
            .arg("results")
            .args(args)
            .arg("--db")
            .arg(&self.db)
            .output()
            .unwrap()
    }

    /// The JSON export of experiment `id`.
    pub fn export(&self, id: u64) -> Value {
        let out = self.results(&["export", &id.to_string(), "--format", "json"]);
        ok(&out);
        json_of(&out.stdout)
    }

    /// `results list --json`, or null when there is no database yet.
    pub fn list(&self) -> Value {
        let out = self.results(&["list", "--json"]);
        if out.status.success() {
            json_of(&out.stdout)
        } else {
            Value::Null
        }
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        let _ = self.cmd().arg("restore").output();
    }
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn json_of(b: &[u8]) -> Value {
    serde_json::from_slice(b).unwrap_or_else(|e| panic!("{e}: {}", text(b)))
}

pub fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
}
