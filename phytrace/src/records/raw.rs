//! Reading the records of the ring buffer: each starts with its kind byte, which says which
//! struct of `phytrace_common` it is.

use std::borrow::Cow;

use phytrace_common::{RawEvent, RawIdentity, RawKind, RawNamed};

/// One ring-buffer record, borrowed where it is (the kernel aligns records to 8 bytes) or
/// copied out if not.
#[derive(Debug)]
pub enum Record<'a> {
    /// A driver, MDIO or MAC event, or a self-test one.
    Event(Cow<'a, RawEvent>),
    /// A PHY or bus named.
    Identity(Cow<'a, RawIdentity>),
    /// A module loaded or freed, or a carrier change, with its name.
    Named(Cow<'a, RawNamed>),
}

/// The record in `bytes`; `None` if its kind is unknown or it is shorter than its kind's
/// struct.
pub fn parse(bytes: &[u8]) -> Option<Record<'_>> {
    let kind = RawKind::from_u8(*bytes.first()?)?;
    Some(match kind {
        RawKind::Identity => Record::Identity(view(bytes)?),
        RawKind::ModuleLoad | RawKind::ModuleFree | RawKind::CarrierOn | RawKind::CarrierOff => {
            Record::Named(view(bytes)?)
        }
        _ => Record::Event(view(bytes)?),
    })
}

impl Record<'_> {
    /// The record's bytes as the ring buffer holds them (the inverse of [`parse`]), for
    /// tests and benchmarks that stand in for the kernel side.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Self::Event(event) => bytes_of(&**event),
            Self::Identity(identity) => bytes_of(&**identity),
            Self::Named(named) => bytes_of(&**named),
        }
    }
}

fn bytes_of<T: Plain>(value: &T) -> Vec<u8> {
    // SAFETY: `value` is `size_of::<T>()` readable bytes; the record structs are `repr(C)`
    // with explicit padding fields, so every byte is initialised.
    unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>()) }.to_vec()
}

/// Marks the plain-old-data record structs, valid for any bit pattern.
trait Plain: Copy {}
impl Plain for RawEvent {}
impl Plain for RawIdentity {}
impl Plain for RawNamed {}

fn view<T: Plain>(bytes: &[u8]) -> Option<Cow<'_, T>> {
    if bytes.len() < size_of::<T>() {
        return None;
    }
    let ptr = bytes.as_ptr().cast::<T>();
    Some(if ptr.is_aligned() {
        // SAFETY: `ptr` is aligned and points to at least `size_of::<T>()` bytes that live as
        // long as `bytes`; `T` is plain old data, valid for any bit pattern.
        Cow::Borrowed(unsafe { &*ptr })
    } else {
        // SAFETY: as above, and `read_unaligned` needs no alignment.
        Cow::Owned(unsafe { std::ptr::read_unaligned(ptr) })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `value`'s bytes at an aligned (`offset` 0) or misaligned place.
    fn placed<'b, T: Plain>(value: &T, buffer: &'b mut Vec<u64>, offset: usize) -> &'b [u8] {
        let bytes = size_of::<T>();
        buffer.resize(bytes / 8 + 1, 0);
        // SAFETY: the buffer holds `bytes + 8` bytes; `T` is plain old data.
        unsafe {
            let base = buffer.as_mut_ptr().cast::<u8>().add(offset);
            std::ptr::copy_nonoverlapping((value as *const T).cast::<u8>(), base, bytes);
            std::slice::from_raw_parts(base, bytes)
        }
    }

    #[test]
    fn short_and_unknown_records_are_refused() {
        let mut event = RawEvent::ZERO;
        event.kind = RawKind::MdioRead as u8;
        let mut buffer = Vec::new();
        let bytes = placed(&event, &mut buffer, 0);
        assert!(parse(&bytes[..16]).is_none());
        assert!(parse(&[]).is_none());
        assert!(parse(&[0u8; 128]).is_none());
        assert!(parse(&[99u8; 128]).is_none());
    }

    #[test]
    fn records_round_trip_aligned_or_not() {
        let mut event = RawEvent::ZERO;
        event.kind = RawKind::CallbackEnter as u8;
        event.ts_ns = 42;
        let mut identity = RawIdentity::ZERO;
        identity.bus_id[..3].copy_from_slice(b"sim");
        for offset in [0, 1] {
            let mut buffer = Vec::new();
            let Some(Record::Event(parsed)) = parse(placed(&event, &mut buffer, offset)) else {
                panic!("not an event");
            };
            assert_eq!(matches!(parsed, Cow::Borrowed(_)), offset == 0);
            assert_eq!(parsed.ts_ns, 42);
            let mut buffer = Vec::new();
            let Some(Record::Identity(parsed)) = parse(placed(&identity, &mut buffer, offset))
            else {
                panic!("not an identity");
            };
            assert_eq!(&parsed.bus_id[..4], b"sim\0");
        }
    }
}
