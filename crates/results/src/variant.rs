//! A run's variant names what, beside scheduler and workload, the run was
//! made under: a plan point of `--vary` (`wbt_lat_usec=0; cg.load.io.weight=100`)
//! and a prefetch mode (`prefetch:before`), joined by `; ` with the point's
//! settings first, in the plan's axis order. A v4–v6 store's variants
//! (`prefetch:MODE` alone) read the same way: a variant without a point.
//! Values never hold `;` (the plan refuses one), so the text splits back.

/// What separates a variant's parts.
pub const SEP: &str = "; ";

/// One setting of a point: `name=value`.
pub fn setting(name: &str, value: &str) -> String {
    format!("{name}={value}")
}

/// The variant of a run made at `point` (its settings' text, `None` for an
/// experiment without axes) with `prefetch` (e.g. `prefetch:before`).
pub fn join(point: Option<&str>, prefetch: Option<&str>) -> Option<String> {
    match (point.filter(|p| !p.is_empty()), prefetch) {
        (None, None) => None,
        (Some(p), None) => Some(p.to_string()),
        (None, Some(f)) => Some(f.to_string()),
        (Some(p), Some(f)) => Some(format!("{p}{SEP}{f}")),
    }
}

/// The point part of a variant (`None` when it has none).
pub fn point_of(variant: Option<&str>) -> Option<String> {
    let parts: Vec<&str> = variant?
        .split(SEP)
        .filter(|p| !p.starts_with(super::prefetch::VARIANT_PREFIX) && p.contains('='))
        .collect();
    (!parts.is_empty()).then(|| parts.join(SEP))
}

/// The prefetch part of a variant, e.g. `prefetch:before`.
pub fn prefetch_of(variant: Option<&str>) -> Option<&str> {
    variant?
        .split(SEP)
        .find(|p| p.starts_with(super::prefetch::VARIANT_PREFIX))
}

/// A point's settings as `(name, value)` pairs, in order.
pub fn settings_of(point: &str) -> Vec<(&str, &str)> {
    point.split(SEP).filter_map(|s| s.split_once('=')).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variant_splits_back_into_its_point_and_prefetch() {
        let v = join(
            Some("wbt_lat_usec=0; cg.load.io.max=rbps=1 wbps=max"),
            Some("prefetch:before"),
        );
        let v = v.as_deref();
        assert_eq!(
            point_of(v).as_deref(),
            Some("wbt_lat_usec=0; cg.load.io.max=rbps=1 wbps=max")
        );
        assert_eq!(prefetch_of(v), Some("prefetch:before"));
        assert_eq!(
            settings_of(&point_of(v).unwrap_or_default()),
            [("wbt_lat_usec", "0"), ("cg.load.io.max", "rbps=1 wbps=max")]
        );
    }

    #[test]
    fn an_older_stores_variant_is_a_prefetch_without_a_point() {
        assert_eq!(point_of(Some("prefetch:parallel")), None);
        assert_eq!(
            prefetch_of(Some("prefetch:parallel")),
            Some("prefetch:parallel")
        );
        assert_eq!(join(None, None), None);
        assert_eq!(
            join(Some(""), Some("prefetch:before")).as_deref(),
            Some("prefetch:before")
        );
        assert_eq!(point_of(None), None);
    }
}
