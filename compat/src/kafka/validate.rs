//! A walk over a request body by its wire layout ([`super::layouts`]) before it is decoded,
//! so that a frame whose array counts or lengths cannot be true is refused without
//! allocating for them.
//!
//! The protocol crate's decoders size each array's vector from the count on the wire; a
//! few bytes claiming billions of elements would make them ask for hundreds of gigabytes
//! and abort the process. Every element takes at least one byte, so the walk refuses any
//! count larger than the bytes left, reads every element (nested arrays, strings, tagged
//! fields with their contents), and caps the elements of one request at
//! [`MAX_ELEMENTS`], which bounds what decoding can allocate.

use bytes::Buf;

/// Most array elements, over all arrays, one request may carry (a Metadata request for
/// every topic of a very large cluster, or a Produce to thousands of partitions, stays far
/// below it).
pub const MAX_ELEMENTS: usize = 1 << 18;

/// A field's wire type (every type of Kafka's schemas, though no served request has a
/// field of each).
#[derive(Debug)]
#[allow(dead_code)]
pub(crate) enum Ty {
    Bool,
    Int8,
    Int16,
    Uint16,
    Int32,
    Uint32,
    Int64,
    Float64,
    Uuid,
    Str,
    Bytes,
    Records,
    Array(&'static Ty),
    Struct(&'static [Field]),
}

/// One field of a request or struct.
#[derive(Debug)]
pub(crate) struct Field {
    pub(crate) ty: Ty,
    /// Versions the field is present in (inclusive; empty when min > max).
    pub(crate) versions: (i16, i16),
    /// Versions it may be null in.
    pub(crate) nullable: (i16, i16),
    /// A tagged field: (tag, first and last version it is tagged in).
    pub(crate) tag: Option<(u32, i16, i16)>,
}

fn within(v: i16, (lo, hi): (i16, i16)) -> bool {
    lo <= v && v <= hi
}

/// Why a body does not fit its layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// The bytes end inside a field.
    #[error("truncated")]
    Truncated,
    /// A varint longer than its type allows.
    #[error("bad varint")]
    BadVarint,
    /// A length or count that the bytes left cannot hold, or a negative one where null is
    /// not allowed.
    #[error("impossible length or count {0}")]
    Length(i64),
    /// More array elements than [`MAX_ELEMENTS`].
    #[error("more than {MAX_ELEMENTS} array elements")]
    TooManyElements,
    /// Structures nested deeper than any request's layout.
    #[error("nested too deep")]
    TooDeep,
}

struct Walk<'a> {
    buf: &'a [u8],
    version: i16,
    flexible: bool,
    elements: usize,
}

impl Walk<'_> {
    fn skip(&mut self, n: usize) -> Result<(), LayoutError> {
        if self.buf.remaining() < n {
            return Err(LayoutError::Truncated);
        }
        self.buf.advance(n);
        Ok(())
    }

    fn uvarint(&mut self) -> Result<u64, LayoutError> {
        let mut v: u64 = 0;
        for i in 0..5 {
            if !self.buf.has_remaining() {
                return Err(LayoutError::Truncated);
            }
            let b = self.buf.get_u8();
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(LayoutError::BadVarint)
    }

    fn i16(&mut self) -> Result<i64, LayoutError> {
        if self.buf.remaining() < 2 {
            return Err(LayoutError::Truncated);
        }
        Ok(i64::from(self.buf.get_i16()))
    }

    fn i32(&mut self) -> Result<i64, LayoutError> {
        if self.buf.remaining() < 4 {
            return Err(LayoutError::Truncated);
        }
        Ok(i64::from(self.buf.get_i32()))
    }

    /// A length (of bytes or elements): `None` for null; refused when negative and not
    /// null, or larger than the bytes left.
    fn length(
        &mut self,
        compact: bool,
        wide: bool,
        nullable: bool,
    ) -> Result<Option<usize>, LayoutError> {
        let n: i64 = if compact {
            i64::try_from(self.uvarint()?).map_err(|_| LayoutError::BadVarint)? - 1
        } else if wide {
            self.i32()?
        } else {
            self.i16()?
        };
        if n < 0 {
            return if n == -1 && nullable {
                Ok(None)
            } else {
                Err(LayoutError::Length(n))
            };
        }
        let n_usize = usize::try_from(n).map_err(|_| LayoutError::Length(n))?;
        if n_usize > self.buf.remaining() {
            return Err(LayoutError::Length(n));
        }
        Ok(Some(n_usize))
    }

    fn value(&mut self, ty: &Ty, nullable: bool, depth: usize) -> Result<(), LayoutError> {
        if depth > 16 {
            return Err(LayoutError::TooDeep);
        }
        let flex = self.flexible;
        match ty {
            Ty::Bool | Ty::Int8 => self.skip(1),
            Ty::Int16 | Ty::Uint16 => self.skip(2),
            Ty::Int32 | Ty::Uint32 => self.skip(4),
            Ty::Int64 | Ty::Float64 => self.skip(8),
            Ty::Uuid => self.skip(16),
            Ty::Str => {
                let n = self.length(flex, false, nullable)?;
                self.skip(n.unwrap_or(0))
            }
            Ty::Bytes | Ty::Records => {
                // Records are nullable bytes in every version.
                let nullable = nullable || matches!(ty, Ty::Records);
                let n = self.length(flex, true, nullable)?;
                self.skip(n.unwrap_or(0))
            }
            Ty::Array(inner) => {
                let Some(n) = self.length(flex, true, nullable)? else {
                    return Ok(());
                };
                self.elements = self.elements.saturating_add(n);
                if self.elements > MAX_ELEMENTS {
                    return Err(LayoutError::TooManyElements);
                }
                for _ in 0..n {
                    self.value(inner, false, depth + 1)?;
                }
                Ok(())
            }
            Ty::Struct(fields) => self.fields(fields, depth + 1),
        }
    }

    fn fields(&mut self, fields: &[Field], depth: usize) -> Result<(), LayoutError> {
        let v = self.version;
        for f in fields {
            let tagged = f.tag.is_some_and(|(_, lo, hi)| within(v, (lo, hi)));
            if within(v, f.versions) && !tagged {
                self.value(&f.ty, within(v, f.nullable), depth)?;
            }
        }
        if self.flexible {
            self.tagged(fields, depth)?;
        }
        Ok(())
    }

    /// The tagged-field section: each known tag's content is walked within its size,
    /// unknown ones skipped.
    fn tagged(&mut self, fields: &[Field], depth: usize) -> Result<(), LayoutError> {
        let count = self.uvarint()?;
        if count > self.buf.remaining() as u64 {
            return Err(LayoutError::Length(
                i64::try_from(count).unwrap_or(i64::MAX),
            ));
        }
        for _ in 0..count {
            let tag = self.uvarint()?;
            let size = usize::try_from(self.uvarint()?).map_err(|_| LayoutError::BadVarint)?;
            if size > self.buf.remaining() {
                return Err(LayoutError::Length(i64::try_from(size).unwrap_or(i64::MAX)));
            }
            let (content, rest) = self.buf.split_at(size);
            let known = fields.iter().find(|f| {
                f.tag.is_some_and(|(t, lo, hi)| {
                    u64::from(t) == tag && within(self.version, (lo, hi))
                })
            });
            if let Some(f) = known {
                let mut inner = Walk {
                    buf: content,
                    version: self.version,
                    flexible: true,
                    elements: self.elements,
                };
                inner.value(&f.ty, within(self.version, f.nullable), depth)?;
                self.elements = inner.elements;
            }
            self.buf = rest;
        }
        Ok(())
    }
}

/// Walks `body` (the request after its header) as `api`'s layout in `version`. `Ok` for
/// an API without a layout here.
///
/// # Errors
/// [`LayoutError`] when a length, count or the element total cannot be true.
pub fn check_body(api: i16, version: i16, body: &[u8]) -> Result<(), LayoutError> {
    let Some((_, flexible_from, fields)) =
        super::layouts::REQUESTS.iter().find(|(k, _, _)| *k == api)
    else {
        return Ok(());
    };
    let mut w = Walk {
        buf: body,
        version,
        flexible: version >= *flexible_from,
        elements: 0,
    };
    w.fields(fields, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_array_count_is_refused_before_anything_is_read() {
        // Metadata v0: topics array claiming 2^31-16 entries in 4 bytes.
        assert_eq!(
            check_body(3, 0, &[0x7f, 0xff, 0xff, 0xf0]),
            Err(LayoutError::Length(0x7fff_fff0))
        );
        // Metadata v12 (flexible): compact array count 2^32-2.
        assert!(matches!(
            check_body(3, 12, &[0xfe, 0xff, 0xff, 0xff, 0x0f]),
            Err(LayoutError::Length(_))
        ));
        // A null topics array in v1+ is fine; in v0 it is not.
        assert_eq!(check_body(3, 1, &[0xff, 0xff, 0xff, 0xff]), Ok(()));
        assert_eq!(
            check_body(3, 0, &[0xff, 0xff, 0xff, 0xff]),
            Err(LayoutError::Length(-1))
        );
    }

    #[test]
    fn a_real_shaped_body_passes_and_element_totals_are_capped() {
        // Metadata v4: 2 topics "a", "bc", allow auto-creation.
        let body = [0, 0, 0, 2, 0, 1, b'a', 0, 2, b'b', b'c', 1];
        assert_eq!(check_body(3, 4, &body), Ok(()));
        assert_eq!(
            check_body(3, 4, &body[..body.len() - 1]),
            Err(LayoutError::Truncated)
        );
        // ListGroups v4 (flexible): 300,000 empty state filters pass the count check (one
        // byte each) but not the element cap.
        let mut b = Vec::new();
        let n: u64 = 300_001;
        let mut v = n;
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                b.push(byte);
                break;
            }
            b.push(byte | 0x80);
        }
        b.extend(std::iter::repeat_n(1u8, 300_000));
        b.push(0);
        assert_eq!(check_body(16, 4, &b), Err(LayoutError::TooManyElements));
    }
}
