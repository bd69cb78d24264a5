//! Quoting for the remote POSIX shell (`sh` on Linux, `mksh`/toybox `sh`
//! on Android): ssh and `adb shell` both hand one string to it.

/// `s` as one shell word: bare when it holds only safe characters, else in
/// single quotes with each `'` written as `'\''`.
pub fn sh_word(s: &str) -> String {
    let safe = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Words joined into one command line.
pub fn sh_line<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|w| sh_word(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn words_survive_a_real_shell() {
        let words = [
            "plain",
            "with space",
            "it's",
            "{dir}/f",
            "$HOME",
            "a\"b",
            "",
            "*",
        ];
        let line = sh_line(&words);
        // printf each argument on its own line, through /bin/sh.
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s\\n' {line}"))
            .output()
            .unwrap();
        let got: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(got, words);
    }
}
