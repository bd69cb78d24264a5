//! Tracepoint `format` files: where each field of an event's payload lives.
//!
//! The kernel describes every event in `events/<system>/<name>/format`
//! (Documentation/trace/events.rst, "Event formats"):
//!
//! ```text
//! name: sched_switch
//! ID: 372
//! format:
//!     field:unsigned short common_type;  offset:0;  size:2;  signed:0;
//!     field:char prev_comm[16];          offset:8;  size:16; signed:0;
//!     field:__data_loc char[] cmd;       offset:44; size:4;  signed:0;
//! ```
//!
//! Decoding reads fields at the offsets the file gives, never at offsets
//! compiled into iolab, so a kernel that reorders a struct still decodes.
//! `__data_loc` fields hold `(len << 16) | offset` of a variable part inside
//! the payload; `__rel_loc` the same with the offset relative to the end of
//! the field itself.

use std::collections::HashMap;
use std::path::Path;

use crate::TraceError;

/// How a field's bytes are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// One integer of `size` bytes.
    Scalar,
    /// A fixed array (`char comm[16]`, `unsigned long caller[8]`).
    Array {
        /// Declared element count.
        len: usize,
    },
    /// `__data_loc T[]`: a u32 `(len << 16) | offset` into the payload.
    DataLoc,
    /// `__rel_loc T[]`: like `DataLoc`, offset counted from the field's end.
    RelLoc,
}

/// One field of an event payload, as its `format` file describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Field name, e.g. `prev_pid`.
    pub name: String,
    /// C type as written, e.g. `pid_t`, `char`, `__data_loc char[]`.
    pub type_name: String,
    /// Byte offset in the payload.
    pub offset: usize,
    /// Size in bytes (the whole array for arrays, 4 for `__data_loc`).
    pub size: usize,
    /// Whether the integer is signed.
    pub signed: bool,
    /// Layout.
    pub kind: FieldKind,
}

impl Field {
    /// The field's integer value (zero-extended), little-endian as the
    /// kernel wrote it; for an array, its first element. 0 when the payload
    /// is too short (a format that does not match the data).
    #[inline]
    pub fn u64(&self, data: &[u8]) -> u64 {
        let size = match self.kind {
            FieldKind::Array { len } if len > 0 => self.size / len,
            _ => self.size,
        };
        read_uint(data, self.offset, size)
    }

    /// The field's value sign-extended from its size when it is signed.
    /// An unsigned 8-byte field is reinterpreted (above `i64::MAX` it
    /// reads negative): read those with [`Field::u64`].
    #[inline]
    pub fn i64(&self, data: &[u8]) -> i64 {
        let v = self.u64(data);
        let bits = self.size.min(8) * 8;
        if self.signed && bits > 0 && bits < 64 {
            let shift = 64 - bits;
            ((v << shift) as i64) >> shift
        } else {
            v as i64
        }
    }

    /// The raw bytes of the field: the fixed bytes for scalars and arrays,
    /// the variable part for `__data_loc`/`__rel_loc`. Empty when out of
    /// bounds.
    pub fn bytes<'d>(&self, data: &'d [u8]) -> &'d [u8] {
        let (start, len) = match self.kind {
            FieldKind::DataLoc | FieldKind::RelLoc => {
                let loc = read_uint(data, self.offset, 4);
                let mut start = (loc & 0xffff) as usize;
                if self.kind == FieldKind::RelLoc {
                    start += self.offset + self.size;
                }
                (start, (loc >> 16) as usize)
            }
            _ => (self.offset, self.size),
        };
        data.get(start..start + len).unwrap_or(&[])
    }

    /// The field as text: a `char[]` up to its first NUL (or a
    /// `__data_loc char[]` string). Invalid UTF-8 ends the text where the
    /// valid part ends.
    pub fn str<'d>(&self, data: &'d [u8]) -> &'d str {
        let b = self.bytes(data);
        let b = match b.iter().position(|&c| c == 0) {
            Some(n) => &b[..n],
            None => b,
        };
        // The first chunk's valid part: all of it when it is valid.
        b.utf8_chunks().next().map_or("", |c| c.valid())
    }

    /// Element `i` of an integer array field (e.g. `caller[i]`).
    pub fn element(&self, data: &[u8], i: usize) -> Option<u64> {
        let FieldKind::Array { len } = self.kind else {
            return None;
        };
        let width = self.size.checked_div(len)?;
        if i >= len || !matches!(width, 1 | 2 | 4 | 8) {
            return None;
        }
        let off = self.offset + i * width;
        (off + width <= data.len()).then(|| read_uint(data, off, width))
    }

    /// This field as a [`Field32`], or `None` when the format declares it
    /// wider than 4 bytes or not a single integer (a kernel whose field is
    /// not the one the caller knows).
    pub fn narrow32(&self) -> Option<Field32> {
        (self.kind == FieldKind::Scalar && matches!(self.size, 1 | 2 | 4))
            .then(|| Field32(self.clone()))
    }
}

/// A field its format declares one integer of 1, 2 or 4 bytes (`pid_t`,
/// `dev_t`, `int`, `unsigned int`): its value is exactly a 32-bit
/// integer. Decoders resolve such fields once with [`Field::narrow32`]
/// and then read each record without a cast that could drop bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field32(Field);

impl Field32 {
    /// The field it wraps.
    pub fn field(&self) -> &Field {
        &self.0
    }

    /// The value, zero-extended (as [`Field::u64`]).
    #[inline]
    #[allow(
        clippy::cast_possible_truncation,
        reason = "narrow32 admits fields of at most 4 bytes: u64() read at most 32 bits"
    )]
    pub fn u32(&self, data: &[u8]) -> u32 {
        self.0.u64(data) as u32
    }

    /// The value, sign-extended when the format says `signed:1` (as
    /// [`Field::i64`]); an unsigned 4-byte value is reinterpreted, as C
    /// converts an `unsigned int` to `int`.
    #[inline]
    #[allow(
        clippy::cast_possible_truncation,
        reason = "narrow32 admits fields of at most 4 bytes: i64() is sign-extended from at \
                  most 32 bits, or an unsigned value below 2^32 whose low 32 bits are kept"
    )]
    pub fn i32(&self, data: &[u8]) -> i32 {
        self.0.i64(data) as i32
    }
}

/// The `N` bytes at `offset`, if `data` holds them.
#[inline]
fn bytes_at<const N: usize>(data: &[u8], offset: usize) -> Option<[u8; N]> {
    data.get(offset..offset.checked_add(N)?)?.try_into().ok()
}

/// The little-endian integer of `size` bytes (1, 2, 4 or 8) at `offset`;
/// 0 when out of bounds or of another size.
#[inline]
pub(crate) fn read_uint(data: &[u8], offset: usize, size: usize) -> u64 {
    match size {
        1 => bytes_at::<1>(data, offset).map_or(0, |[b]| u64::from(b)),
        2 => u64::from(read_u16(data, offset)),
        4 => u64::from(read_u32(data, offset)),
        8 => bytes_at(data, offset).map_or(0, u64::from_le_bytes),
        _ => 0,
    }
}

/// The little-endian u16 at `offset` (0 when out of bounds): a 2-byte
/// field read at its own width, so no cast narrows it.
#[inline]
pub(crate) fn read_u16(data: &[u8], offset: usize) -> u16 {
    bytes_at(data, offset).map_or(0, u16::from_le_bytes)
}

/// The little-endian u32 at `offset` (0 when out of bounds).
#[inline]
pub(crate) fn read_u32(data: &[u8], offset: usize) -> u32 {
    bytes_at(data, offset).map_or(0, u32::from_le_bytes)
}

/// The little-endian i32 at `offset` (0 when out of bounds): a 4-byte
/// signed field (`int`, `pid_t`) read as what it is.
#[inline]
pub(crate) fn read_i32(data: &[u8], offset: usize) -> i32 {
    bytes_at(data, offset).map_or(0, i32::from_le_bytes)
}

/// One event's format: id, names and fields (including `common_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    /// The event id (`common_type` of its records).
    pub id: u16,
    /// Subsystem, e.g. `sched`.
    pub system: String,
    /// Event name, e.g. `sched_switch`.
    pub name: String,
    /// Every field in file order, `common_*` first.
    pub fields: Vec<Field>,
    /// The `format` file's text, kept so a trace file can store it.
    pub text: String,
}

impl Format {
    /// Parses the text of `events/<system>/<name>/format`; `path` is only
    /// used in error messages.
    pub fn parse(system: &str, text: &str, path: &Path) -> Result<Format, TraceError> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        for line in text.lines() {
            let t = line.trim();
            if let Some(v) = t.strip_prefix("name:") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = t.strip_prefix("ID:") {
                let v = v.trim();
                id = Some(
                    v.parse::<u16>()
                        .map_err(|_| TraceError::parse(path, line, "ID must be a number"))?,
                );
            } else if t.starts_with("field:") {
                fields.push(parse_field(t).ok_or_else(|| {
                    TraceError::parse(
                        path,
                        line,
                        "expected `field:TYPE NAME; offset:N; size:N; signed:0|1;`",
                    )
                })?);
            }
        }
        let (Some(name), Some(id)) = (name, id) else {
            return Err(TraceError::parse(
                path,
                text.lines().next().unwrap_or(""),
                "a format file starts with `name:` and `ID:` lines",
            ));
        };
        Ok(Format {
            id,
            system: system.to_string(),
            name,
            fields,
            text: text.to_string(),
        })
    }

    /// Parses one `field:...;` line (also used for `events/header_page`).
    pub(crate) fn parse_field_line(line: &str) -> Option<Field> {
        let t = line.trim();
        t.starts_with("field:").then(|| parse_field(t)).flatten()
    }

    /// The field called `name`.
    #[inline]
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The field called `name`, or an error naming the event, for callers
    /// that resolve their fields once at start.
    pub fn require(&self, name: &str) -> Result<&Field, TraceError> {
        self.field(name).ok_or_else(|| {
            let have: Vec<&str> = self.fields.iter().map(|f| f.name.as_str()).collect();
            TraceError::parse(
                format!("events/{}/{}/format", self.system, self.name),
                name,
                format!("no such field; the event has: {}", have.join(", ")),
            )
        })
    }
}

/// `field:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;`
fn parse_field(line: &str) -> Option<Field> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.split(';') {
        let part = part.trim();
        if let Some(d) = part.strip_prefix("field:") {
            decl = Some(d.trim());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let decl = decl?;
    let (offset, size): (usize, usize) = (offset?, size?);
    // The name is the last identifier, before a trailing `[N]` if any
    // (`char comm[16]`); `__data_loc char[] name` has its brackets first.
    let (before, array) = match decl.rfind('[') {
        Some(i) if decl.ends_with(']') => (decl[..i].trim_end(), Some(&decl[i..])),
        _ => (decl, None),
    };
    let split = before.rfind(|c: char| c.is_whitespace() || c == '*')?;
    let name = before[split + 1..].trim();
    if name.is_empty() {
        return None;
    }
    let type_name = format!("{}{}", before[..split + 1].trim(), array.unwrap_or(""));
    let kind = if decl.starts_with("__data_loc") {
        FieldKind::DataLoc
    } else if decl.starts_with("__rel_loc") {
        FieldKind::RelLoc
    } else if let Some(a) = array {
        let n = a.trim_start_matches('[').split(']').next()?.trim();
        match n.parse() {
            Ok(len) => FieldKind::Array { len },
            // `[]` or a symbolic length: treat the declared size as bytes.
            Err(_) => FieldKind::Array { len: size },
        }
    } else {
        FieldKind::Scalar
    };
    Some(Field {
        name: name.to_string(),
        type_name,
        offset,
        size,
        signed,
        kind,
    })
}

/// The formats of the events a session or trace file knows, by id.
#[derive(Debug, Clone, Default)]
pub struct Formats {
    list: Vec<Format>,
    by_id: HashMap<u16, usize>,
}

impl Formats {
    /// An empty set.
    pub fn new() -> Formats {
        Formats::default()
    }

    /// Adds `format` (replacing one with the same id) and returns it.
    pub fn insert(&mut self, format: Format) -> &Format {
        let i = match self.by_id.get(&format.id) {
            Some(&i) => {
                self.list[i] = format;
                i
            }
            None => {
                self.by_id.insert(format.id, self.list.len());
                self.list.push(format);
                self.list.len() - 1
            }
        };
        &self.list[i]
    }

    /// Reads and adds `<events_dir>/<system>/<name>/format`.
    pub fn load(
        &mut self,
        events_dir: &Path,
        system: &str,
        name: &str,
    ) -> Result<&Format, TraceError> {
        let path = events_dir.join(system).join(name).join("format");
        let text = std::fs::read_to_string(&path).map_err(|e| TraceError::io(&path, e))?;
        let f = Format::parse(system, &text, &path)?;
        Ok(self.insert(f))
    }

    /// The format with event id `id`.
    #[inline]
    pub fn get(&self, id: u16) -> Option<&Format> {
        self.by_id.get(&id).map(|&i| &self.list[i])
    }

    /// The format of `system/name`.
    pub fn find(&self, system: &str, name: &str) -> Option<&Format> {
        self.list
            .iter()
            .find(|f| f.name == name && f.system == system)
    }

    /// Every format, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &Format> {
        self.list.iter()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:__data_loc char[] cmd;\toffset:44;\tsize:4;\tsigned:0;
\tfield:const char * name;\toffset:48;\tsize:8;\tsigned:0;

print fmt: \"prev_comm=%s\", REC->prev_comm
";

    fn fmt() -> Format {
        Format::parse("sched", SWITCH, Path::new("t")).unwrap()
    }

    #[test]
    fn parses_header_and_fields() {
        let f = fmt();
        assert_eq!((f.id, f.name.as_str()), (372, "sched_switch"));
        let comm = f.field("prev_comm").unwrap();
        assert_eq!((comm.offset, comm.size), (8, 16));
        assert_eq!(comm.kind, FieldKind::Array { len: 16 });
        assert_eq!(comm.type_name, "char[16]");
        let pid = f.field("prev_pid").unwrap();
        assert!(pid.signed && pid.kind == FieldKind::Scalar);
        assert_eq!(f.field("cmd").unwrap().kind, FieldKind::DataLoc);
        assert_eq!(f.field("name").unwrap().type_name, "const char *");
        assert!(f.field("nope").is_none());
        assert!(f.require("nope").is_err());
    }

    #[test]
    fn decodes_values() {
        let f = fmt();
        let mut d = vec![0u8; 64];
        d[8..12].copy_from_slice(b"bash");
        d[24..28].copy_from_slice(&(-5i32).to_le_bytes());
        d[32..40].copy_from_slice(&2u64.to_le_bytes());
        // "sdb\0" at offset 56, length 4.
        d[44..48].copy_from_slice(&((4u32 << 16) | 56).to_le_bytes());
        d[56..60].copy_from_slice(b"sdb\0");
        assert_eq!(f.field("prev_comm").unwrap().str(&d), "bash");
        assert_eq!(f.field("prev_pid").unwrap().i64(&d), -5);
        assert_eq!(f.field("prev_pid").unwrap().u64(&d), 0xffff_fffb);
        assert_eq!(f.field("prev_state").unwrap().i64(&d), 2);
        assert_eq!(f.field("cmd").unwrap().str(&d), "sdb");
        // Too short: 0, not a panic.
        assert_eq!(f.field("prev_state").unwrap().u64(&d[..10]), 0);
    }

    #[test]
    fn narrow32_admits_only_fields_of_at_most_four_bytes() {
        let f = fmt();
        let mut d = vec![0u8; 64];
        d[24..28].copy_from_slice(&(-5i32).to_le_bytes());
        let pid = f.field("prev_pid").unwrap().narrow32().unwrap();
        assert_eq!((pid.i32(&d), pid.u32(&d)), (-5, 0xffff_fffb));
        let ty = f.field("common_type").unwrap().narrow32().unwrap();
        assert_eq!(ty.u32(&[0x34, 0x12]), 0x1234);
        for wide in ["prev_state", "prev_comm", "cmd", "name"] {
            assert!(f.field(wide).unwrap().narrow32().is_none(), "{wide}");
        }
    }

    #[test]
    fn reads_at_their_own_width_and_zero_out_of_bounds() {
        let d = [0xfe, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(read_u16(&d, 0), 0xfffe);
        assert_eq!(read_u32(&d, 1), 0x01ff_ffff);
        assert_eq!(read_i32(&d, 0), -2);
        assert_eq!(read_uint(&d, 4, 1), 1);
        assert_eq!(
            (read_u16(&d, 4), read_u32(&d, 2), read_i32(&d, usize::MAX)),
            (0, 0, 0)
        );
        assert_eq!(read_uint(&d, 0, 3), 0);
    }

    #[test]
    fn rejects_garbage() {
        assert!(Format::parse("x", "hello", Path::new("t")).is_err());
        assert!(Format::parse("x", "name: a\nID: zz\n", Path::new("t")).is_err());
    }
}
