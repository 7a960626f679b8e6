//! Frame size limits, validated once when configuration loads.

use crate::error::FrameError;

/// Largest `frameLength` the Java decoder accepts (16 MiB minus the length field).
pub const DEFAULT_MAX_FRAME: usize = 16_777_212;

/// Bounds applied to every incoming frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameLimits {
    max_frame: usize,
    max_header: usize,
}

impl FrameLimits {
    /// Checked constructor: `max_header` ≤ `max_frame` ≤ 16 777 212 and both non-zero.
    ///
    /// # Errors
    /// [`FrameError::InvalidLimits`] when the bounds are inconsistent.
    pub fn try_new(max_frame: usize, max_header: usize) -> Result<Self, FrameError> {
        if max_frame == 0
            || max_header == 0
            || max_header > max_frame
            || max_frame > DEFAULT_MAX_FRAME
        {
            return Err(FrameError::InvalidLimits {
                max_frame,
                max_header,
            });
        }
        Ok(Self {
            max_frame,
            max_header,
        })
    }

    /// Largest accepted `frameLength`.
    pub fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// Largest accepted header length.
    pub fn max_header(&self) -> usize {
        self.max_header
    }
}

impl Default for FrameLimits {
    fn default() -> Self {
        Self {
            max_frame: DEFAULT_MAX_FRAME,
            max_header: 1 << 20,
        }
    }
}
