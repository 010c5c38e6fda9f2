//! Reading [`RawEvent`]s out of ring-buffer records.

use phytrace_common::RawEvent;

/// Copies a `RawEvent` out of a ring-buffer record; `None` if the record is too short.
pub fn parse(record: &[u8]) -> Option<RawEvent> {
    if record.len() < size_of::<RawEvent>() {
        return None;
    }
    // SAFETY: the record holds at least `size_of::<RawEvent>()` bytes, `RawEvent` is plain old
    // data for which any bit pattern is valid, and `read_unaligned` needs no alignment.
    Some(unsafe { std::ptr::read_unaligned(record.as_ptr().cast::<RawEvent>()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_records_are_refused() {
        assert!(parse(&[0u8; 16]).is_none());
    }

    #[test]
    fn records_round_trip() {
        let mut event = RawEvent::ZERO;
        event.ts_ns = 42;
        event.bus_id[..3].copy_from_slice(b"sim");
        // SAFETY: viewing a plain-old-data struct as bytes for the test.
        let bytes = unsafe {
            std::slice::from_raw_parts((&raw const event).cast::<u8>(), size_of::<RawEvent>())
        };
        let parsed = parse(bytes).unwrap();
        assert_eq!(parsed.ts_ns, 42);
        assert_eq!(&parsed.bus_id[..4], b"sim\0");
    }
}
