//! Plain-text tables: the one column layout every iolab table shares
//! (two spaces between columns, trailing blanks trimmed).

/// Aligns rows of cells into columns: the first `left` columns are
/// left-aligned (names), the rest right-aligned (numbers). Pass
/// `usize::MAX` to left-align everything.
pub fn align_columns(rows: &[Vec<String>], left: usize) -> String {
    let ncols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..ncols)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|t| t.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (text, w))| {
                if i < left {
                    format!("{text:<w$}")
                } else {
                    format!("{text:>w$}")
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The last `n` lines of `text` (a command's output tail, for messages).
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_left_numbers_right() {
        let rows = vec![
            vec!["job".to_string(), "iops".to_string()],
            vec!["reader".to_string(), "7".to_string()],
        ];
        assert_eq!(align_columns(&rows, 1), "job     iops\nreader     7\n");
        assert_eq!(
            align_columns(&rows, usize::MAX),
            "job     iops\nreader  7\n"
        );
    }
}
