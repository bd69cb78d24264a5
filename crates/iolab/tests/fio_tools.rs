//! fio's own output tools on iolab's output and on fio's, for the same
//! jobs: fio_jsonplus_clat2csv, fiologparser.py, fiologparser_hist.py,
//! fio-histo-log-pctiles.py, fio2gnuplot, fio_generate_plots and
//! fiograph. Each must do on iolab's files what it does on fio's: the
//! same files, rows and columns, values within 2 % where the run is paced
//! (exact where a count is fixed), and the same failure where the tool
//! fails on fio 3.33's own output. The tools come from fio 3.33's
//! source (Debian's, fetched by `scripts/fio-tools.sh`, never vendored:
//! GPL) and from Debian's fio package; the test prints the table
//! docs/FIO-COMPAT.md shows.
#![allow(clippy::unwrap_used)]

mod load_env;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use load_env::{stderr, Env};
use serde_json::Value;

/// fio's tools/ directory, or why the test cannot run.
fn tools() -> Result<PathBuf, String> {
    // scripts/fio-tools.sh's default place, unless told otherwise.
    let dir = std::env::var_os("FIO_TOOLS").map_or_else(
        || PathBuf::from("/var/cache/iolab/fio-3.33/tools"),
        PathBuf::from,
    );
    if !dir.is_dir() {
        return Err(format!(
            "needs fio's tools/ at {} (bash scripts/fio-tools.sh fetches it; FIO_TOOLS=DIR elsewhere)",
            dir.display()
        ));
    }
    for p in [
        "fiologparser.py",
        "hist/fiologparser_hist.py",
        "fiograph/fiograph.py",
    ] {
        if !dir.join(p).exists() {
            return Err(format!("{} has no {p}", dir.display()));
        }
    }
    for bin in [
        "fio",
        "fio_jsonplus_clat2csv",
        "fio2gnuplot",
        "fio_generate_plots",
        "gnuplot",
        "dot",
    ] {
        let found = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(bin).is_file()));
        if !found {
            return Err(format!("needs {bin} in PATH (.ci/run installs it)"));
        }
    }
    let py = Command::new("/usr/bin/python3")
        .args(["-c", "import pandas, numpy, graphviz"])
        .output()
        .map_err(|e| format!("/usr/bin/python3: {e}"))?;
    if !py.status.success() {
        return Err("needs python3-pandas, python3-numpy, python3-graphviz".into());
    }
    Ok(dir)
}

fn run(dir: &Path, cmd: &mut Command) -> Output {
    cmd.current_dir(dir).output().unwrap()
}

fn py(tools: &Path, script: &str) -> Command {
    let mut c = Command::new("/usr/bin/python3");
    c.arg(tools.join(script));
    c
}

/// The paced job: two clones of randrw at 500 IOPS a direction, 2 s,
/// every log with 250 ms windows and histograms, json+ output.
const PACED: &str = "[global]\nioengine=null\nsize=100g\nbs=4k\nrw=randrw\nrate_iops=500\n\
time_based\nruntime=2\nlog_avg_msec=250\nlog_hist_msec=250\nwrite_bw_log=p\n\
write_iops_log=p\nwrite_lat_log=p\nwrite_hist_log=p\n[p]\nnumjobs=2\n";

/// Runs the paced job with `tool` ("fio" or iolab) in `dir`.
fn paced(env: &Env, tool: &str, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("paced.fio"), PACED).unwrap();
    let args = ["--output-format=json+", "--output=out.json", "paced.fio"];
    let out = if tool == "fio" {
        run(dir, Command::new("fio").args(args))
    } else {
        run(dir, &mut env.cmd(&args))
    };
    assert!(out.status.success(), "{tool}: {}", stderr(&out));
}

fn within(a: f64, b: f64, frac: f64) -> bool {
    (a - b).abs() <= frac * b.abs().max(1.0)
}

fn csv(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(',').map(|c| c.trim().to_string()).collect())
        .collect()
}

/// What one tool makes of one run directory.
type Summary = Result<Value, String>;

fn clat2csv(dir: &Path) -> Summary {
    let out = run(
        dir,
        Command::new("fio_jsonplus_clat2csv").args(["out.json", "c.csv"]),
    );
    if !out.status.success() {
        return Err(stderr(&out));
    }
    let doc: Value = serde_json::from_slice(&std::fs::read(dir.join("out.json")).unwrap()).unwrap();
    let mut files = Vec::new();
    for (i, job) in doc["jobs"].as_array().unwrap().iter().enumerate() {
        let name = format!("c_job{i}.csv");
        let rows =
            csv(&std::fs::read_to_string(dir.join(&name)).map_err(|e| format!("{name}: {e}"))?);
        let head = &rows[0];
        let mut last = serde_json::Map::new();
        for d in ["read", "write"] {
            let col = head
                .iter()
                .position(|h| h == &format!("{d}_clat_ns_cumulative"))
                .ok_or(format!("{name}: no {d}_clat_ns_cumulative"))?;
            let max = rows[1..]
                .iter()
                .filter_map(|r| r.get(col).and_then(|c| c.parse::<u64>().ok()))
                .max()
                .unwrap_or(0);
            // Each entry's last cumulative count is its I/Os.
            if max != job[d]["total_ios"].as_u64().unwrap() {
                return Err(format!(
                    "{name}: {d} cumulative {max} vs total_ios {}",
                    job[d]["total_ios"]
                ));
            }
            last.insert(d.into(), max.into());
        }
        files.push(serde_json::json!({"file": name, "columns": head, "ios": last}));
    }
    Ok(Value::Array(files))
}

fn fiologparser(tools: &Path, dir: &Path) -> Summary {
    let out = run(
        dir,
        py(tools, "fiologparser.py").args(["-i", "250", "p_bw.1.log"]),
    );
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into())
    } else {
        // Its error's last line (fio 3.33 writes a priority column the
        // tool does not expect).
        Err(stderr(&out).lines().last().unwrap_or("").to_string())
    }
}

fn hist_rows(text: &str, skip: usize) -> Vec<(u64, f64)> {
    csv(text)
        .iter()
        .skip(skip)
        .filter_map(|r| {
            let at = iolab_sys::cast::floor_u64(r[0].parse::<f64>().ok()?);
            Some((at, r[1].parse::<f64>().ok()?))
        })
        .collect()
}

fn fiologparser_hist(tools: &Path, dir: &Path) -> Summary {
    let out = run(
        dir,
        py(tools, "hist/fiologparser_hist.py").args(["p_clat_hist.1.log", "p_clat_hist.2.log"]),
    );
    if !out.status.success() {
        return Err(stderr(&out));
    }
    let rows = hist_rows(&String::from_utf8_lossy(&out.stdout), 1);
    Ok(serde_json::json!(rows))
}

fn histo_pctiles(tools: &Path, dir: &Path) -> Summary {
    let out = run(
        dir,
        py(tools, "hist/fio-histo-log-pctiles.py").args([
            "--log-hist-msec",
            "250",
            "p_clat_hist.1.log",
            "p_clat_hist.2.log",
        ]),
    );
    if !out.status.success() {
        return Err(stderr(&out));
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let body = text.split("msec-since-start").nth(1).ok_or("no table")?;
    Ok(serde_json::json!(hist_rows(body, 1)))
}

/// The files a plotting tool made, an empty one marked (the null
/// engine's slat log is empty in both tools, and so is its plot).
fn made(dir: &Path, ext: &str) -> Result<BTreeSet<String>, String> {
    let mut v = BTreeSet::new();
    for e in std::fs::read_dir(dir).map_err(|e| e.to_string())? {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(ext) {
            let empty = if e.metadata().unwrap().len() == 0 {
                " (empty)"
            } else {
                ""
            };
            v.insert(format!("{name}{empty}"));
        }
    }
    Ok(v)
}

fn fio2gnuplot(dir: &Path) -> Summary {
    let out = run(
        dir,
        Command::new("fio2gnuplot").args(["-b", "-g", "-d", "g"]),
    );
    if !out.status.success() {
        return Err(stderr(&out));
    }
    Ok(serde_json::json!(made(&dir.join("g"), ".png")?))
}

fn generate_plots(dir: &Path) -> Summary {
    let out = run(dir, Command::new("fio_generate_plots").arg("t"));
    if !out.status.success() {
        return Err(stderr(&out));
    }
    Ok(serde_json::json!(made(dir, ".svg")?))
}

/// fiograph draws a job file: the one both tools ran.
fn fiograph(tools: &Path, dir: &Path) -> Summary {
    let out = run(
        dir,
        py(tools, "fiograph/fiograph.py").args([
            "--file",
            "paced.fio",
            "--output",
            "graph",
            "--format",
            "svg",
            "--config",
            tools.join("fiograph/fiograph.conf").to_str().unwrap(),
        ]),
    );
    if !out.status.success() {
        return Err(stderr(&out));
    }
    match std::fs::metadata(dir.join("graph.svg")) {
        Ok(m) if m.len() > 0 => Ok(serde_json::json!("graph.svg")),
        _ => Err("no graph.svg".into()),
    }
}

/// Rows of (time, samples) agree in time (within 12 ms, a twentieth of
/// the 250 ms window: each tool's timer stamps a few ms late under load,
/// and a row at another boundary is off by a window) and within 2 % in
/// samples.
fn rows_agree(a: &Value, b: &Value) -> bool {
    let (a, b) = (a.as_array().unwrap(), b.as_array().unwrap());
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x[0].as_u64().unwrap().abs_diff(y[0].as_u64().unwrap()) <= 12
                && within(x[1].as_f64().unwrap(), y[1].as_f64().unwrap(), 0.02)
        })
}

fn clat_agree(a: &Value, b: &Value) -> bool {
    let (a, b) = (a.as_array().unwrap(), b.as_array().unwrap());
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x["file"] == y["file"]
                && x["columns"] == y["columns"]
                && ["read", "write"].iter().all(|d| {
                    within(
                        x["ios"][d].as_f64().unwrap(),
                        y["ios"][d].as_f64().unwrap(),
                        0.02,
                    )
                })
        })
}

#[test]
fn fios_output_tools_read_iolabs_output_as_they_read_fios() {
    let tools = match tools() {
        Ok(t) => t,
        Err(why) => {
            iolab_testkit::skip(
                "fios_output_tools_read_iolabs_output_as_they_read_fios",
                &why,
            );
            return;
        }
    };
    let env = Env::new();
    let (fio_dir, our_dir) = (env.dir().join("fio"), env.dir().join("iolab"));
    paced(&env, "fio", &fio_dir);
    paced(&env, "iolab", &our_dir);
    type Check<'a> = (
        &'a str,
        Box<dyn Fn(&Path) -> Summary + 'a>,
        fn(&Value, &Value) -> bool,
    );
    let same = |a: &Value, b: &Value| a == b;
    let checks: Vec<Check> = vec![
        ("fio_jsonplus_clat2csv", Box::new(clat2csv), clat_agree),
        (
            "fiologparser.py",
            Box::new(|d| fiologparser(&tools, d)),
            same,
        ),
        (
            "hist/fiologparser_hist.py",
            Box::new(|d| fiologparser_hist(&tools, d)),
            rows_agree,
        ),
        (
            "hist/fio-histo-log-pctiles.py",
            Box::new(|d| histo_pctiles(&tools, d)),
            rows_agree,
        ),
        ("plot/fio2gnuplot", Box::new(fio2gnuplot), same),
        ("fio_generate_plots", Box::new(generate_plots), same),
        (
            "fiograph/fiograph.py",
            Box::new(|d| fiograph(&tools, d)),
            same,
        ),
    ];
    let mut table = String::from("| tool | fio 3.33 | iolab | the same |\n|---|---|---|---|\n");
    let mut wrong = Vec::new();
    for (name, check, agree) in &checks {
        let theirs = check(&fio_dir);
        let ours = check(&our_dir);
        let word = |s: &Summary| match s {
            Ok(_) => "pass".to_string(),
            Err(e) => format!("fail: {}", e.lines().last().unwrap_or("").trim()),
        };
        let alike = match (&theirs, &ours) {
            (Ok(t), Ok(o)) => agree(o, t),
            (Err(t), Err(o)) => t == o,
            _ => false,
        };
        table.push_str(&format!(
            "| {name} | {} | {} | {} |\n",
            word(&theirs),
            word(&ours),
            if alike { "yes" } else { "NO" }
        ));
        if !alike {
            wrong.push(format!("{name}: fio's {theirs:?}\n  iolab's {ours:?}"));
        }
    }
    println!("{table}");
    assert!(wrong.is_empty(), "{table}\n{}", wrong.join("\n"));
}
