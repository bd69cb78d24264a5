//! Configuration and environment as `key: value` lines. Nested objects
//! flatten to dotted keys (`device.rotational: 0`) so a terminal shows every
//! setting that shaped the numbers, one per line, greppable.

use serde_json::Value;

/// `(dotted.key, value)` for every leaf of `v`; arrays stay compact JSON,
/// strings print without quotes.
pub fn key_values(v: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    flatten("", v, &mut out);
    out
}

/// [`key_values`] as aligned, indented lines.
pub fn render_key_values(v: &Value, indent: &str) -> String {
    let pairs = key_values(v);
    let width = pairs
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    pairs
        .iter()
        .map(|(k, val)| {
            format!(
                "{indent}{:<width$}  {val}\n",
                format!("{k}:"),
                width = width + 1
            )
        })
        .collect()
}

fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(map) if !map.is_empty() => {
            for (k, child) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, child, out);
            }
        }
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flattens_nested_objects() {
        let v = json!({"kernel": "6.18", "device": {"model": "QEMU", "rotational": 0},
                       "schedulers": ["bfq", "none"], "empty": {}});
        let kv = key_values(&v);
        assert!(kv.contains(&("device.model".into(), "QEMU".into())));
        assert!(kv.contains(&("device.rotational".into(), "0".into())));
        assert!(kv.contains(&("schedulers".into(), "[\"bfq\",\"none\"]".into())));
        assert!(kv.contains(&("empty".into(), "{}".into())));
        let text = render_key_values(&json!({"a": 1, "long.key": "x"}), "  ");
        assert_eq!(text, "  a:         1\n  long.key:  x\n");
    }

    #[test]
    fn a_scalar_root_has_an_empty_key() {
        assert_eq!(
            key_values(&json!(3)),
            vec![(String::new(), "3".to_string())]
        );
    }
}
