//! How a reader of the event ring waits between reads: at once while records are waiting, a
//! short gather pause after it caught up, and otherwise until the kernel wakes it or a
//! deadline passes. A session's drain and the bench's same-fields floor both read this way,
//! so that the floor pays for its wake-ups what a session pays.

use std::time::Duration;

use aya::maps::{MapData, RingBuf};
use tokio::io::unix::AsyncFd;

/// Most records one read takes: under overload the reader writes as it reads, and memory
/// stays bounded however fast the kernel produces.
pub const MAX_BATCH: usize = 4096;

/// How long the reader lets records gather after a read that found some. The kernel wakes the
/// reader for the first record after it emptied the ring: reading each time it is woken costs
/// a wake-up (two context switches and an inter-processor interrupt) per few records under
/// load. Pausing reads a millisecond's worth of records per wake-up instead, at the price of
/// this much latency (the default ring holds 26 000 records: over 140 ms at the highest rate
/// one CPU produces them).
const GATHER_PAUSE: Duration = Duration::from_millis(1);

/// What one read of the ring buffer found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// No record.
    Nothing,
    /// Records, up to the last one in the ring.
    CaughtUp,
    /// As many records as one read takes: more are waiting.
    Backlog,
}

impl Read {
    /// What a read that took `taken` records, of at most `limit`, found.
    pub fn after(taken: usize, limit: usize) -> Self {
        match taken {
            0 => Self::Nothing,
            _ if taken >= limit => Self::Backlog,
            _ => Self::CaughtUp,
        }
    }
}

/// Waits before the next read of `ring`, as the `last` read calls for; after a read that found
/// nothing, at most `deadline`. Cancel-safe.
pub async fn wait(
    ring: &mut AsyncFd<RingBuf<MapData>>,
    last: Read,
    deadline: Duration,
) -> std::io::Result<()> {
    match last {
        // Let the other tasks (signals, the writer's caller) run between batches.
        Read::Backlog => tokio::task::yield_now().await,
        Read::CaughtUp => tokio::time::sleep(GATHER_PAUSE).await,
        Read::Nothing => {
            if let Ok(guard) = tokio::time::timeout(deadline, ring.readable_mut()).await {
                // Cleared before reading: a record committed after the read wakes the reader.
                guard?.clear_ready();
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Read;

    #[test]
    fn a_read_is_told_by_what_it_took_of_its_limit() {
        assert_eq!(Read::after(0, 4), Read::Nothing);
        assert_eq!(Read::after(3, 4), Read::CaughtUp);
        assert_eq!(Read::after(4, 4), Read::Backlog);
    }
}
