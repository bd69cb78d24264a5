//! Quantiles of Student's t distribution.
//!
//! Wraps `distrs::StudentsT::ppf`, which implements Hill's algorithm
//! (G. W. Hill, "Algorithm 396: Student's t-quantiles", CACM 13(10), 1970).
//! The degrees of freedom may be fractional (Welch–Satterthwaite, used by
//! the ratio's interval). Tests check it against printed tables.

/// The `p` quantile of Student's t with `dof` degrees of freedom, or `None`
/// when `p` is outside (0, 1) or `dof` < 1 (where Hill's algorithm is not
/// defined; n = 1 sample has no spread anyway).
pub fn t_quantile(p: f64, dof: f64) -> Option<f64> {
    // Written positively so NaN arguments are rejected too.
    let valid = p > 0.0 && p < 1.0 && dof >= 1.0;
    if !valid {
        return None;
    }
    let q = distrs::StudentsT::ppf(p, dof);
    q.is_finite().then_some(q)
}

/// The critical value of a two-sided interval at confidence `level` (e.g.
/// 0.95 → the 0.975 quantile).
pub fn two_sided_critical(level: f64, dof: f64) -> Option<f64> {
    t_quantile(1.0 - (1.0 - level) / 2.0, dof)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// Two-sided 95 % critical values from any t table (e.g. NIST/SEMATECH
    /// e-Handbook, table 1.3.6.7.2), to the three decimals tables print.
    #[test]
    fn matches_printed_table() {
        let table = [
            (1.0, 12.706),
            (2.0, 4.303),
            (4.0, 2.776),
            (7.0, 2.365),
            (9.0, 2.262),
            (19.0, 2.093),
            (29.0, 2.045),
            (100.0, 1.984),
        ];
        for (dof, want) in table {
            let got = two_sided_critical(0.95, dof).expect("valid dof");
            assert!(
                close(got, want, 6e-4),
                "t(0.975, {dof}) = {got}, table {want}"
            );
        }
    }

    #[test]
    fn other_levels_and_symmetry() {
        // t(0.995, 9) = 3.250 (99 % two-sided), t(0.95, 4) = 2.132.
        assert!(close(
            two_sided_critical(0.99, 9.0).expect("ok"),
            3.250,
            6e-4
        ));
        assert!(close(t_quantile(0.95, 4.0).expect("ok"), 2.132, 6e-4));
        let lo = t_quantile(0.025, 9.0).expect("ok");
        let hi = t_quantile(0.975, 9.0).expect("ok");
        assert!(close(lo, -hi, 1e-12));
    }

    #[test]
    fn approaches_the_normal_quantile() {
        let q = t_quantile(0.975, 1e6).expect("ok");
        assert!(close(q, 1.959_964, 1e-4), "{q}");
    }

    #[test]
    fn rejects_invalid_arguments() {
        assert_eq!(t_quantile(0.975, 0.0), None);
        assert_eq!(t_quantile(0.975, f64::NAN), None);
        assert_eq!(t_quantile(1.0, 5.0), None);
        assert_eq!(t_quantile(0.0, 5.0), None);
    }
}
