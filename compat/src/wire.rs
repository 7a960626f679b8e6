//! Bound-checked big-endian reads over a byte slice, shared by the binary decoders
//! (ROCKETMQ header, message record, batch body).
//!
//! Invariant: every read checks the remaining length first, so no decoder built on this can
//! index out of bounds or panic on hostile input; a short read reports what was being read.

/// A read that ran past the end of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Truncated {
    /// What was being read.
    pub(crate) what: &'static str,
    /// Bytes needed.
    pub(crate) need: usize,
    /// Bytes available.
    pub(crate) have: usize,
}

/// A cursor over a borrowed byte slice.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// Takes the next `n` bytes.
    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Truncated> {
        let have = self.remaining();
        if n > have {
            return Err(Truncated {
                what,
                need: n,
                have,
            });
        }
        let start = self.pos;
        self.pos = start + n;
        Ok(&self.buf[start..start + n])
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], Truncated> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, Truncated> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn i16(&mut self, what: &'static str) -> Result<i16, Truncated> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32, Truncated> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn i64(&mut self, what: &'static str) -> Result<i64, Truncated> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn array4(&mut self, what: &'static str) -> Result<[u8; 4], Truncated> {
        self.array(what)
    }

    pub(crate) fn array16(&mut self, what: &'static str) -> Result<[u8; 16], Truncated> {
        self.array(what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_the_end_report_what_was_read_and_do_not_advance() {
        let mut r = Reader::new(&[0, 1, 2]);
        assert_eq!(r.i16("a"), Ok(1));
        assert_eq!(
            r.i32("b"),
            Err(Truncated {
                what: "b",
                need: 4,
                have: 1
            })
        );
        assert_eq!(r.position(), 2);
        assert_eq!(r.u8("c"), Ok(2));
        assert_eq!(r.remaining(), 0);
    }
}
