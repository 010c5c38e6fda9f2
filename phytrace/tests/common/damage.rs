//! Damaged copies of a capture, as a crash, a full disk or a bad copy leaves them.

/// A small deterministic generator (xorshift64*), so that a failure names its copy.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }
}

/// The kinds of damage, each applied after the header (`from`).
pub const KINDS: [&str; 7] = [
    "cut short",
    "bit flipped",
    "byte inserted",
    "byte removed",
    "word 0xffffffff",
    "word 0",
    "word 0x7fffffff",
];

/// `bytes` with damage `kind` somewhere after `from`.
pub fn damaged(bytes: &[u8], from: usize, kind: usize, rng: &mut Rng) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let at = from + rng.below(bytes.len() - from - 4);
    match kind {
        0 => out.truncate(at),
        1 => out[at] ^= 1 << rng.below(8),
        2 => out.insert(at, rng.below(256) as u8),
        3 => {
            out.remove(at);
        }
        _ => {
            let word: u32 = [u32::MAX, 0, 0x7fff_ffff][kind - 4];
            out[at..at + 4].copy_from_slice(&word.to_le_bytes());
        }
    }
    out
}

/// Byte ranges of the event timestamps of a binary capture's ring-buffer event frames (after
/// the header, at `from`).
pub fn binary_timestamps(bytes: &[u8], from: usize) -> Vec<usize> {
    let mut at = from;
    let mut found = Vec::new();
    while at + 5 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 1..at + 5].try_into().unwrap()) as usize;
        // A `RawEvent` or `RawNamed` (not an identity): its `ts_ns` is at byte 8.
        if bytes[at] == b'R' && bytes[at + 5] != 16 {
            found.push(at + 5 + 8);
        }
        at += 5 + len;
    }
    found
}

/// `bytes` (JSON Lines) with the timestamp of event line `nth` set to all ones.
pub fn json_timestamp_all_ones(bytes: &[u8], nth: usize) -> Vec<u8> {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let mut seen = 0;
    let lines: Vec<String> = text
        .split_inclusive('\n')
        .map(|line| {
            if !line.starts_with(r#"{"type":"event""#) {
                return line.to_owned();
            }
            seen += 1;
            if seen != nth {
                return line.to_owned();
            }
            let start = line.find(r#""ts":"#).unwrap() + 5;
            let end = start + line[start..].find(',').unwrap();
            format!("{}{}{}", &line[..start], u64::MAX, &line[end..])
        })
        .collect();
    lines.concat().into_bytes()
}
