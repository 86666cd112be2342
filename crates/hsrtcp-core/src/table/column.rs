//! One growable, nullable column of a table being built: plain vectors while rows are
//! appended, one Arrow array at the end.
//!
//! Arrow's own builders check and grow their bit-packed buffers value by value; writing
//! the events table through them cost about 80 instructions per cell (a tenth of a whole
//! analysis, on a capture where every ACK gives an RTT sample). Here a cell is a push onto
//! a vector or two, and the validity bits are packed once per batch.

use std::sync::Arc;

use arrow_array::types::{Float64Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{ArrayRef, ArrowPrimitiveType, BooleanArray, PrimitiveArray, StringArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};

use super::ColType;

/// Values of one fixed-width type and their validity.
pub(super) struct Values<T> {
    values: Vec<T>,
    valid: Vec<bool>,
    nulls: usize,
}

impl<T: Copy + Default> Values<T> {
    fn with_capacity(rows: usize) -> Self {
        Values { values: Vec::with_capacity(rows), valid: Vec::with_capacity(rows), nulls: 0 }
    }

    #[inline]
    pub(super) fn push(&mut self, v: Option<T>) {
        self.values.push(v.unwrap_or_default());
        self.valid.push(v.is_some());
        self.nulls += v.is_none() as usize;
    }

    /// The values and, when some are null, the validity bitmap.
    fn take(self) -> (Vec<T>, Option<NullBuffer>) {
        let nulls = (self.nulls > 0).then(|| NullBuffer::from(self.valid));
        (self.values, nulls)
    }
}

/// UTF-8 strings, end to end in one byte vector, and their validity.
pub(super) struct Strings {
    bytes: Vec<u8>,
    /// offsets[i]..offsets[i + 1] are the bytes of row i (Arrow's layout).
    offsets: Vec<i32>,
    valid: Vec<bool>,
    nulls: usize,
}

impl Strings {
    fn with_capacity(rows: usize) -> Self {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        Strings { bytes: Vec::with_capacity(16 * rows), offsets, valid: Vec::with_capacity(rows), nulls: 0 }
    }

    #[inline]
    pub(super) fn push(&mut self, v: Option<&str>) {
        if let Some(s) = v {
            self.bytes.extend_from_slice(s.as_bytes());
        }
        let end = i32::try_from(self.bytes.len()).expect("a batch holds under 2 GiB of strings per column");
        self.offsets.push(end);
        self.valid.push(v.is_some());
        self.nulls += v.is_none() as usize;
    }
}

/// A string column of `n` values none of which is null (the `rtt` table's short words),
/// built column-wise instead of cell by cell through a [`super::TableBuilder`].
pub(crate) fn str_column<'a>(values: impl Iterator<Item = &'a str>, n: usize) -> ArrayRef {
    let mut c = Strings::with_capacity(n);
    for v in values {
        c.push(Some(v));
    }
    Column::Str(c).finish()
}

/// A column being built, by type.
pub(super) enum Column {
    U64(Values<u64>),
    U32(Values<u32>),
    I64(Values<i64>),
    F64(Values<f64>),
    Bool(Values<bool>),
    Str(Strings),
}

impl Column {
    /// An empty column with room for `rows` values (strings: 16 bytes each on average).
    pub(super) fn new(ty: ColType, rows: usize) -> Self {
        match ty {
            ColType::U64 => Column::U64(Values::with_capacity(rows)),
            ColType::U32 => Column::U32(Values::with_capacity(rows)),
            ColType::I64 => Column::I64(Values::with_capacity(rows)),
            ColType::F64 => Column::F64(Values::with_capacity(rows)),
            ColType::Bool => Column::Bool(Values::with_capacity(rows)),
            ColType::Str => Column::Str(Strings::with_capacity(rows)),
        }
    }

    pub(super) fn push_null(&mut self) {
        match self {
            Column::U64(c) => c.push(None),
            Column::U32(c) => c.push(None),
            Column::I64(c) => c.push(None),
            Column::F64(c) => c.push(None),
            Column::Bool(c) => c.push(None),
            Column::Str(c) => c.push(None),
        }
    }

    pub(super) fn finish(self) -> ArrayRef {
        match self {
            Column::U64(c) => primitive::<UInt64Type>(c),
            Column::U32(c) => primitive::<UInt32Type>(c),
            Column::I64(c) => primitive::<Int64Type>(c),
            Column::F64(c) => primitive::<Float64Type>(c),
            Column::Bool(c) => {
                let (v, n) = c.take();
                Arc::new(BooleanArray::new(BooleanBuffer::from(v), n))
            }
            Column::Str(c) => {
                let nulls = (c.nulls > 0).then(|| NullBuffer::from(c.valid));
                let offsets = OffsetBuffer::new(ScalarBuffer::from(c.offsets));
                // Every value came in as a &str, so the bytes are UTF-8 (checked again here).
                Arc::new(StringArray::new(offsets, Buffer::from_vec(c.bytes), nulls))
            }
        }
    }
}

/// A numeric column's values and validity as its Arrow array (one generic body for the four
/// number types).
fn primitive<T: ArrowPrimitiveType>(c: Values<T::Native>) -> ArrayRef {
    let (v, n) = c.take();
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(v), n))
}
