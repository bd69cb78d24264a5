//! Trace records → [`BlockEvent`]s, with field offsets from the events'
//! `format` files (include/trace/events/block.h defines the fields; the
//! files say where they are on this kernel). Fields are resolved once per
//! event type; decoding a record is then a few loads.

use iolab_trace::{Field, Field32, Format, Formats, Record};

use crate::event::{BlockEvent, Comm, Dev, EventKind, Rwbs};

/// Resolved fields of one block tracepoint.
#[derive(Debug, Clone)]
struct Layout {
    kind: EventKind,
    dev: Field32,
    sector: Field,
    nr_sector: Field32,
    rwbs: Field,
    comm: Option<Field>,
    error: Option<Field32>,
}

impl Layout {
    fn of(format: &Format) -> Result<Option<Layout>, DecodeError> {
        if format.system != "block" {
            return Ok(None);
        }
        let Some(kind) = EventKind::from_tracepoint(&format.name) else {
            return Ok(None);
        };
        let error = |field: &str, why: String| DecodeError {
            event: format.name.clone(),
            field: field.to_string(),
            why,
        };
        let need = |name: &str| {
            format
                .field(name)
                .cloned()
                .ok_or_else(|| error(name, "is not in its format file".into()))
        };
        // dev_t, unsigned int nr_sector and int error are 4 bytes: a wider
        // one would not fit the u32/i32 they are decoded into.
        let narrow = |f: &Field| {
            f.narrow32().ok_or_else(|| {
                error(
                    &f.name,
                    format!("is {} bytes in its format file, not at most 4", f.size),
                )
            })
        };
        Ok(Some(Layout {
            kind,
            dev: narrow(&need("dev")?)?,
            sector: need("sector")?,
            nr_sector: narrow(&need("nr_sector")?)?,
            rwbs: need("rwbs")?,
            comm: format.field("comm").cloned(),
            error: format.field("error").map(narrow).transpose()?,
        }))
    }
}

/// A block event's format lacks a field iolab needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tracepoint block/{event}: field {field:?} {why}: this kernel's block events are not the ones iolab knows")]
pub struct DecodeError {
    /// The tracepoint.
    pub event: String,
    /// The missing or unusable field.
    pub field: String,
    /// What is wrong with it.
    pub why: String,
}

/// Decodes records of the block tracepoints iolab uses.
#[derive(Debug, Clone, Default)]
pub struct Decoder {
    /// Indexed by format id.
    layouts: Vec<Option<Layout>>,
}

impl Decoder {
    /// Resolves the fields of every block tracepoint in `formats`.
    pub fn new(formats: &Formats) -> Result<Decoder, DecodeError> {
        let mut d = Decoder::default();
        for f in formats.iter() {
            if let Some(layout) = Layout::of(f)? {
                let id = usize::from(f.id);
                if d.layouts.len() <= id {
                    d.layouts.resize(id + 1, None);
                }
                d.layouts[id] = Some(layout);
            }
        }
        Ok(d)
    }

    /// The event in `rec`, if it is one of iolab's block tracepoints.
    #[inline]
    pub fn decode(&self, rec: &Record<'_>) -> Option<BlockEvent> {
        let l = self.layouts.get(usize::from(rec.format.id))?.as_ref()?;
        let data = rec.data;
        Some(BlockEvent {
            kind: l.kind,
            ts_ns: rec.ts_ns,
            cpu: rec.cpu,
            tid: rec.pid,
            dev: Dev(l.dev.u32(data)),
            sector: l.sector.u64(data),
            nr_sector: l.nr_sector.u32(data),
            rwbs: Rwbs::parse(l.rwbs.bytes(data)),
            comm: l
                .comm
                .as_ref()
                .map(|f| Comm::new(f.bytes(data)))
                .unwrap_or_default(),
            error: l.error.as_ref().map_or(0, |f| f.i32(data)),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::path::Path;

    /// block_rq_issue's format on Linux 6.18 (x86_64), verbatim.
    const RQ_ISSUE: &str = "name: block_rq_issue
ID: 1234
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:unsigned int bytes;\toffset:28;\tsize:4;\tsigned:0;
\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;
\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;
\tfield:char comm[16];\toffset:44;\tsize:16;\tsigned:0;
\tfield:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;

print fmt: \"%d,%d %s %u (%s) %llu + %u [%s]\", 0
";

    /// block_rq_complete's, with `error` and no `comm`.
    const RQ_COMPLETE: &str = "name: block_rq_complete
ID: 1236
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;
\tfield:int error;\toffset:28;\tsize:4;\tsigned:1;
\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;
\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;
\tfield:__data_loc char[] cmd;\toffset:44;\tsize:4;\tsigned:0;

print fmt: \"%d,%d %s (%s) %llu + %u [%d]\", 0
";

    fn formats() -> Formats {
        let mut f = Formats::new();
        for text in [RQ_ISSUE, RQ_COMPLETE] {
            f.insert(Format::parse("block", text, Path::new("format")).unwrap());
        }
        f
    }

    fn payload(format: &Format, fill: &dyn Fn(&mut Vec<u8>)) -> Vec<u8> {
        let mut d = vec![0u8; 64];
        d[..2].copy_from_slice(&format.id.to_le_bytes());
        d[4..8].copy_from_slice(&4242i32.to_le_bytes());
        fill(&mut d);
        d
    }

    #[test]
    fn decodes_issue_fields_at_the_format_offsets() {
        let formats = formats();
        let dec = Decoder::new(&formats).unwrap();
        let f = formats.find("block", "block_rq_issue").unwrap();
        let data = payload(f, &|d| {
            d[8..12].copy_from_slice(&((7u32 << 20) | 3).to_le_bytes());
            d[16..24].copy_from_slice(&123_456u64.to_le_bytes());
            d[24..28].copy_from_slice(&8u32.to_le_bytes());
            d[34..36].copy_from_slice(b"RS");
            d[44..47].copy_from_slice(b"fio");
        });
        let rec = Record {
            format: f,
            ts_ns: 99,
            cpu: 1,
            pid: 4242,
            data: &data,
            stack: None,
        };
        let e = dec.decode(&rec).unwrap();
        assert_eq!(e.kind, EventKind::RqIssue);
        assert_eq!((e.dev, e.sector, e.nr_sector), (Dev::new(7, 3), 123_456, 8));
        assert_eq!(e.rwbs, Rwbs::parse(b"RS"));
        assert_eq!(e.comm.as_str(), "fio");
        assert_eq!((e.ts_ns, e.cpu, e.tid, e.error), (99, 1, 4242, 0));
    }

    #[test]
    fn decodes_a_negative_error_of_a_completion() {
        let formats = formats();
        let dec = Decoder::new(&formats).unwrap();
        let f = formats.find("block", "block_rq_complete").unwrap();
        let data = payload(f, &|d| {
            d[28..32].copy_from_slice(&(-5i32).to_le_bytes());
            d[34..35].copy_from_slice(b"W");
        });
        let rec = Record {
            format: f,
            ts_ns: 1,
            cpu: 0,
            pid: 0,
            data: &data,
            stack: None,
        };
        let e = dec.decode(&rec).unwrap();
        assert_eq!((e.kind, e.error), (EventKind::RqComplete, -5));
        assert_eq!(e.comm.as_str(), "");
    }

    #[test]
    fn a_format_without_a_needed_field_is_an_error_naming_it() {
        let broken = RQ_ISSUE.replace("sector_t sector;", "sector_t start;");
        let mut f = Formats::new();
        f.insert(Format::parse("block", &broken, Path::new("format")).unwrap());
        let e = Decoder::new(&f).unwrap_err();
        assert_eq!(
            (e.event.as_str(), e.field.as_str()),
            ("block_rq_issue", "sector")
        );
    }

    #[test]
    fn a_field_wider_than_its_decoded_type_is_an_error_naming_it() {
        // An 8-byte nr_sector would be cut to 32 bits: refused, not decoded.
        let wide = RQ_ISSUE.replace(
            "unsigned int nr_sector;\toffset:24;\tsize:4;",
            "unsigned long nr_sector;\toffset:24;\tsize:8;",
        );
        let mut f = Formats::new();
        f.insert(Format::parse("block", &wide, Path::new("format")).unwrap());
        let e = Decoder::new(&f).unwrap_err();
        assert_eq!(e.field, "nr_sector");
        assert!(e.to_string().contains("8 bytes"), "{e}");
    }
}
