//! `iolab load --with-fio`'s command line: which flags stay with iolab
//! and which go to fio (the run itself is
//! `iolab_experiment::load_session::with_fio`).

use std::ffi::OsString;

use iolab_sys::UsageError;

/// Flags that stay with iolab (the rest go to fio), and whether each takes
/// a value.
pub const OWN: [(&str, bool); 8] = [
    ("with-fio", false),
    ("output-format", true),
    ("output", true),
    ("json", false),
    ("status-interval", true),
    ("cpu", false),
    ("trace", true),
    ("force", false),
];

/// Splits the arguments after `load`: iolab's own flags (kept for clap)
/// and fio's, returned as the JSON list the hidden `--fio-argv` carries.
pub fn split(args: &[OsString]) -> (Vec<OsString>, String) {
    let mut kept = Vec::new();
    let mut fio: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let s = args[i].to_string_lossy().into_owned();
        i += 1;
        let key = s
            .strip_prefix("--")
            .map(|f| f.split('=').next().unwrap_or(f));
        match key.and_then(|k| OWN.iter().find(|(o, _)| *o == k)) {
            Some((_, takes)) => {
                kept.push(OsString::from(&s));
                if *takes && !s.contains('=') && i < args.len() {
                    kept.push(args[i].clone());
                    i += 1;
                }
            }
            None => fio.push(s),
        }
    }
    // A list of strings always serialises; `{:?}` of each is not JSON's
    // escaping, so serde_json writes it.
    let list = serde_json::Value::from(fio).to_string();
    (kept, list)
}

/// fio's arguments back from the hidden `--fio-argv` that [`split`]
/// wrote; anything else there is a bug to report, not an empty argument
/// list to run fio with.
pub fn fio_args(fio_argv: Option<&str>) -> Result<Vec<String>, UsageError> {
    serde_json::from_str(fio_argv.unwrap_or("[]"))
        .map_err(|e| UsageError::new(format!("--fio-argv: expected a JSON list of strings: {e}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn own_flags_stay_and_the_rest_goes_to_fio() {
        let args: Vec<OsString> = [
            "--with-fio",
            "job.fio",
            "--output-format",
            "json",
            "--runtime=2",
            "--output=x",
            "--serialize_overlap=1",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let (kept, fio) = split(&args);
        assert_eq!(
            kept,
            ["--with-fio", "--output-format", "json", "--output=x"]
                .iter()
                .map(OsString::from)
                .collect::<Vec<_>>()
        );
        assert_eq!(fio, r#"["job.fio","--runtime=2","--serialize_overlap=1"]"#);
        assert_eq!(
            fio_args(Some(&fio)).unwrap(),
            ["job.fio", "--runtime=2", "--serialize_overlap=1"]
        );
        assert!(fio_args(Some("job.fio")).is_err());
    }
}
