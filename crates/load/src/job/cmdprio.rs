//! fio's per-command priorities (`cmdprio_percentage`, `cmdprio_class`,
//! `cmdprio`, `cmdprio_bssplit`), options of its libaio and io_uring
//! engines: a share of the I/Os, drawn at random per I/O, carries an I/O
//! priority of its own in the request itself (the iocb's `aio_reqprio`
//! with IOCB_FLAG_IOPRIO, the SQE's `ioprio`), which the I/O schedulers
//! honour (bfq, mq-deadline) per request. The report then splits each
//! direction's latency by priority (fio's `prios`).

/// fio's default class for prioritized commands: real-time.
const DEFAULT_CLASS: u8 = 1;

/// One rule: this share of the I/Os (of block size `bs`, or any when 0)
/// gets this priority.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Rule {
    /// Block size the rule is for; 0 for every size.
    pub bs: u64,
    /// Percent of those I/Os.
    pub pct: u8,
    /// I/O priority class (1 real-time, 2 best-effort, 3 idle).
    pub class: u8,
    /// Level in the class (0 highest to 7).
    pub level: u8,
    /// Priority hint (newer fio's fifth field; 0 none).
    pub hint: u16,
}

impl Rule {
    /// The raw ioprio value (class << 13 | level), as the kernel takes it.
    pub fn ioprio(&self) -> u16 {
        (u16::from(self.class) << 13) | (self.hint << 3) | u16::from(self.level)
    }
}

/// The rules per direction (read, write), as typed.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CmdPrio {
    /// `cmdprio_percentage` per direction.
    pub pct: [u8; 2],
    /// `cmdprio_class` per direction (default real-time).
    pub class: [Option<u8>; 2],
    /// `cmdprio` per direction (default 0).
    pub level: [Option<u8>; 2],
    /// `cmdprio_bssplit` per direction.
    pub bssplit: [Vec<Rule>; 2],
}

impl CmdPrio {
    /// True when some I/O gets a priority of its own.
    pub fn active(&self) -> bool {
        self.pct.iter().any(|&p| p > 0) || self.bssplit.iter().any(|b| !b.is_empty())
    }

    /// The rules of direction `d` (0 read, 1 write).
    pub fn rules(&self, d: usize) -> Vec<Rule> {
        if !self.bssplit[d].is_empty() {
            // A `bs/pct` entry takes cmdprio_class and cmdprio.
            let mut rules = self.bssplit[d].clone();
            for r in rules.iter_mut().filter(|r| r.class == 0) {
                r.class = self.class[d].unwrap_or(DEFAULT_CLASS);
                r.level = self.level[d].unwrap_or(0);
            }
            return rules;
        }
        if self.pct[d] == 0 {
            return Vec::new();
        }
        vec![Rule {
            bs: 0,
            pct: self.pct[d],
            class: self.class[d].unwrap_or(DEFAULT_CLASS),
            level: self.level[d].unwrap_or(0),
            hint: 0,
        }]
    }
}

/// The ioprio for an I/O of `bs` bytes given a draw `r` in 0..100, or
/// `None` (the job's own priority).
pub fn pick(rules: &[Rule], bs: u64, r: u32) -> Option<u16> {
    let mut cum = 0u32;
    for rule in rules.iter().filter(|x| x.bs == 0 || x.bs == bs) {
        cum += u32::from(rule.pct);
        if r < cum {
            return Some(rule.ioprio());
        }
    }
    None
}

/// Splits fio's `a,b` per-direction value; one value is for both.
fn per_dir(value: &str) -> [&str; 2] {
    match value.split_once(',') {
        Some((r, w)) => [r, if w.is_empty() { r } else { w }],
        None => [value, value],
    }
}

fn num(key: &str, v: &str, max: u8) -> Result<u8, String> {
    match v.trim().parse::<u8>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(format!("{key}={v}: expected a number from 0 to {max}")),
    }
}

/// Applies one of the cmdprio options.
pub fn apply(c: &mut CmdPrio, key: &str, value: &str) -> Result<(), String> {
    for (d, v) in per_dir(value).into_iter().enumerate() {
        match key {
            "cmdprio_percentage" => c.pct[d] = num(key, v, 100)?,
            "cmdprio_class" => {
                let n = num(key, v, 3)?;
                if n == 0 {
                    return Err(format!(
                        "{key}={value}: expected 1 (real-time), 2 (best-effort) or 3 (idle)"
                    ));
                }
                c.class[d] = Some(n);
            }
            "cmdprio" => c.level[d] = Some(num(key, v, 7)?),
            "cmdprio_bssplit" => c.bssplit[d] = bssplit(key, v)?,
            _ => return Err(format!("{key} is not a cmdprio option")),
        }
    }
    Ok(())
}

/// `bs/pct[/class/level]:...`: without class and level an entry takes
/// `cmdprio_class` and `cmdprio` (class 0 here until [`CmdPrio::rules`]).
fn bssplit(key: &str, text: &str) -> Result<Vec<Rule>, String> {
    let mut out = Vec::new();
    let mut total = std::collections::HashMap::<u64, u32>::new();
    for entry in text.split(':').filter(|e| !e.is_empty()) {
        let f: Vec<&str> = entry.split('/').collect();
        if !matches!(f.len(), 2 | 4 | 5) {
            return Err(format!(
                "{key}={text}: {entry:?} is not bs/percent or bs/percent/class/level[/hint] (e.g. 64k/25/1/1:1024k/0)"
            ));
        }
        let bs = crate::job::value::size(key, f[0])?;
        let pct = num(key, f[1], 100)?;
        let (class, level) = if f.len() >= 4 {
            (num(key, f[2], 3)?, num(key, f[3], 7)?)
        } else {
            (0, 0)
        };
        // The kernel's priority hints fit in 10 bits; fio's are small.
        let hint = match f.get(4) {
            Some(h) => u16::from(num(key, h, 255)?),
            None => 0,
        };
        let t = total.entry(bs).or_default();
        *t += u32::from(pct);
        if *t > 100 {
            return Err(format!(
                "{key}={text}: the percentages for {} add up to more than 100",
                f[0]
            ));
        }
        out.push(Rule {
            bs,
            pct,
            class,
            level,
            hint,
        });
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn percentage_class_and_level_make_one_rule_per_direction() {
        let mut c = CmdPrio::default();
        apply(&mut c, "cmdprio_percentage", "50").unwrap();
        apply(&mut c, "cmdprio_class", "2,1").unwrap();
        assert_eq!(c.rules(0)[0].ioprio(), 2 << 13);
        assert_eq!(c.rules(1)[0].ioprio(), 1 << 13);
        assert_eq!(pick(&c.rules(0), 4096, 49), Some(2 << 13));
        assert_eq!(pick(&c.rules(0), 4096, 50), None);
        assert!(apply(&mut c, "cmdprio_percentage", "101").is_err());
    }

    #[test]
    fn bssplit_rules_apply_to_their_block_size_in_turn() {
        let mut c = CmdPrio::default();
        apply(&mut c, "cmdprio_bssplit", "64k/25/1/1:64k/75/3/2:1024k/0").unwrap();
        let r = c.rules(0);
        assert_eq!(pick(&r, 65536, 10), Some((1 << 13) | 1));
        assert_eq!(pick(&r, 65536, 30), Some((3 << 13) | 2));
        assert_eq!(pick(&r, 1 << 20, 0), None);
        assert!(apply(&mut c, "cmdprio_bssplit", "64k/60:64k/50").is_err());
        // Entries without class and level take cmdprio_class and cmdprio.
        let mut c = CmdPrio::default();
        apply(&mut c, "cmdprio_bssplit", "64k/100:1024k/0").unwrap();
        apply(&mut c, "cmdprio_class", "3").unwrap();
        apply(&mut c, "cmdprio", "5").unwrap();
        assert_eq!(pick(&c.rules(1), 65536, 99), Some((3 << 13) | 5));
    }
}
