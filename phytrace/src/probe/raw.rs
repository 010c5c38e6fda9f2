//! Reading [`RawEvent`]s out of ring-buffer records.

use std::borrow::Cow;

use phytrace_common::RawEvent;

/// The `RawEvent` in a ring-buffer record, borrowed where it is (the kernel aligns records to
/// 8 bytes) or copied out if not; `None` if the record is too short.
pub fn parse(record: &[u8]) -> Option<Cow<'_, RawEvent>> {
    if record.len() < size_of::<RawEvent>() {
        return None;
    }
    let ptr = record.as_ptr().cast::<RawEvent>();
    Some(if ptr.is_aligned() {
        // SAFETY: `ptr` is aligned and points to at least `size_of::<RawEvent>()` bytes that
        // live as long as `record`; `RawEvent` is plain old data, valid for any bit pattern.
        Cow::Borrowed(unsafe { &*ptr })
    } else {
        // SAFETY: as above, and `read_unaligned` needs no alignment.
        Cow::Owned(unsafe { std::ptr::read_unaligned(ptr) })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_records_are_refused() {
        assert!(parse(&[0u8; 16]).is_none());
    }

    #[test]
    fn records_round_trip_aligned_or_not() {
        let mut event = RawEvent::ZERO;
        event.ts_ns = 42;
        event.bus_id[..3].copy_from_slice(b"sim");
        // Room for the event at an aligned and at a misaligned offset.
        let mut buffer = vec![0u64; size_of::<RawEvent>() / 8 + 1];
        let bytes = size_of::<RawEvent>();
        for offset in [0, 1] {
            // SAFETY: the buffer holds `bytes + 8` bytes; the event is plain old data.
            let record = unsafe {
                let base = buffer.as_mut_ptr().cast::<u8>().add(offset);
                std::ptr::copy_nonoverlapping((&raw const event).cast::<u8>(), base, bytes);
                std::slice::from_raw_parts(base, bytes)
            };
            let parsed = parse(record).unwrap();
            assert_eq!(matches!(parsed, Cow::Borrowed(_)), offset == 0);
            assert_eq!(parsed.ts_ns, 42);
            assert_eq!(&parsed.bus_id[..4], b"sim\0");
        }
    }
}
