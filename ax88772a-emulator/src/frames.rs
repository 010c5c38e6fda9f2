//! Ethernet frames on the bulk endpoints and the far end of the cable.
//!
//! Both directions carry frames behind a 4-byte little-endian header `len | !len << 16`:
//! `asix_tx_fixup` (host → dongle) sends one frame per transfer and appends a padding word
//! `0xffff0000` when the transfer would be a multiple of the packet size; `asix_rx_fixup_internal`
//! (dongle → host) accepts several frames per transfer, each padded to an even length.
//!
//! The far end answers ARP requests and ICMP echo requests for one IPv4 address, so that `ping`
//! through the dongle works.

use std::net::Ipv4Addr;

/// Frames a transfer from the host carried, and how many bytes could not be parsed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Deframed<'a> {
    /// The Ethernet frames.
    pub frames: Vec<&'a [u8]>,
    /// Set if a header was bad or a frame truncated (the rest of the transfer is dropped).
    pub bad: bool,
}

/// Splits a bulk OUT transfer into frames.
pub fn deframe(buf: &[u8]) -> Deframed<'_> {
    let mut out = Deframed::default();
    let mut off = 0;
    while off + 4 <= buf.len() {
        let h = u32::from_le_bytes([buf[off], buf[off + 1], buf[off + 2], buf[off + 3]]);
        let len = (h & 0xffff) as u16;
        if len != !((h >> 16) as u16) {
            out.bad = true;
            return out;
        }
        off += 4;
        if len == 0 {
            continue; // asix_tx_fixup's padding word 0xffff0000
        }
        let end = off + len as usize;
        if end > buf.len() {
            out.bad = true;
            return out;
        }
        out.frames.push(&buf[off..end]);
        off = end + (len as usize & 1);
    }
    if off < buf.len() {
        out.bad = true;
    }
    out
}

/// One frame for a bulk IN transfer: header, frame, padding to an even length.
pub fn frame(eth: &[u8]) -> Vec<u8> {
    let len = eth.len() as u32 & 0x7ff;
    let mut out = Vec::with_capacity(eth.len() + 5);
    out.extend_from_slice(&(len | ((!len & 0xffff) << 16)).to_le_bytes());
    out.extend_from_slice(eth);
    if out.len() % 2 == 1 {
        out.push(0);
    }
    out
}

const ETH_HLEN: usize = 14;
const ETHERTYPE_ARP: u16 = 0x0806;
const ETHERTYPE_IPV4: u16 = 0x0800;
const IPPROTO_ICMP: u8 = 1;
const BROADCAST: [u8; 6] = [0xff; 6];

/// The RFC 1071 checksum of `data`.
fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// What becomes of a frame from the host.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// An ARP reply.
    Arp(Vec<u8>),
    /// An ICMP echo reply.
    Icmp(Vec<u8>),
    /// The frame itself, back from the PHY in loopback.
    Looped(Vec<u8>),
    /// Not for us, or nothing to answer.
    None,
}

/// The host at the far end of the cable.
#[derive(Debug, Clone, Copy)]
pub struct Peer {
    /// Its MAC address.
    pub mac: [u8; 6],
    /// Its IPv4 address.
    pub ip: Ipv4Addr,
}

impl Peer {
    /// Answers an Ethernet frame from the host.
    pub fn answer(&self, f: &[u8]) -> Answer {
        if f.len() < ETH_HLEN {
            return Answer::None;
        }
        let dst: [u8; 6] = f[0..6].try_into().unwrap_or_default();
        if dst != self.mac && dst != BROADCAST {
            return Answer::None;
        }
        match u16::from_be_bytes([f[12], f[13]]) {
            ETHERTYPE_ARP => self.arp(f).map_or(Answer::None, Answer::Arp),
            ETHERTYPE_IPV4 if dst == self.mac => self.icmp(f).map_or(Answer::None, Answer::Icmp),
            _ => Answer::None,
        }
    }

    /// A reply to an ARP request (Ethernet/IPv4) for our address.
    fn arp(&self, f: &[u8]) -> Option<Vec<u8>> {
        let a = f.get(ETH_HLEN..ETH_HLEN + 28)?;
        // htype 1, ptype 0x0800, hlen 6, plen 4, op 1 (request)
        if a[0..8] != [0, 1, 8, 0, 6, 4, 0, 1] || a[24..28] != self.ip.octets() {
            return None;
        }
        let sha = &a[8..14];
        let spa = &a[14..18];
        let mut r = Vec::with_capacity(42);
        r.extend_from_slice(sha);
        r.extend_from_slice(&self.mac);
        r.extend_from_slice(&ETHERTYPE_ARP.to_be_bytes());
        r.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 2]);
        r.extend_from_slice(&self.mac);
        r.extend_from_slice(&self.ip.octets());
        r.extend_from_slice(sha);
        r.extend_from_slice(spa);
        Some(r)
    }

    /// A reply to an ICMP echo request for our address.
    fn icmp(&self, f: &[u8]) -> Option<Vec<u8>> {
        let ip = f.get(ETH_HLEN..)?;
        if ip.len() < 20 || ip[0] >> 4 != 4 {
            return None;
        }
        let ihl = usize::from(ip[0] & 0xf) * 4;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        if ihl < 20 || total < ihl + 8 || total > ip.len() || ip[9] != IPPROTO_ICMP {
            return None;
        }
        if ip[16..20] != self.ip.octets() || u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0 {
            return None; // not ours, or a fragment
        }
        let icmp = &ip[ihl..total];
        if icmp[0] != 8 || icmp[1] != 0 {
            return None;
        }
        let mut r = Vec::with_capacity(ETH_HLEN + 20 + icmp.len());
        r.extend_from_slice(&f[6..12]);
        r.extend_from_slice(&self.mac);
        r.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        let mut hdr = [0u8; 20];
        hdr[0] = 0x45;
        hdr[1] = ip[1];
        hdr[2..4].copy_from_slice(&((20 + icmp.len()) as u16).to_be_bytes());
        hdr[4..6].copy_from_slice(&ip[4..6]);
        hdr[8] = 64;
        hdr[9] = IPPROTO_ICMP;
        hdr[12..16].copy_from_slice(&self.ip.octets());
        hdr[16..20].copy_from_slice(&ip[12..16]);
        let c = checksum(&hdr);
        hdr[10..12].copy_from_slice(&c.to_be_bytes());
        r.extend_from_slice(&hdr);
        let start = r.len();
        r.extend_from_slice(icmp);
        r[start] = 0; // echo reply
        r[start + 2] = 0;
        r[start + 3] = 0;
        let c = checksum(&r[start..]);
        r[start + 2..start + 4].copy_from_slice(&c.to_be_bytes());
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
    const PEER: Peer = Peer {
        mac: [0, 0x0e, 0xc6, 0x87, 0x72, 0x02],
        ip: Ipv4Addr::new(192, 168, 77, 2),
    };

    /// A transfer as asix_tx_fixup builds it, with maxpacket 512.
    fn tx_fixup(f: &[u8]) -> Vec<u8> {
        let mut out = frame_unpadded(f);
        if out.len().is_multiple_of(512) {
            out.extend_from_slice(&0xffff_0000u32.to_le_bytes());
        }
        out
    }

    fn frame_unpadded(f: &[u8]) -> Vec<u8> {
        let len = f.len() as u32;
        let mut out = ((!len << 16) | len).to_le_bytes().to_vec();
        out.extend_from_slice(f);
        out
    }

    fn arp_request(target: [u8; 4]) -> Vec<u8> {
        let mut f = BROADCAST.to_vec();
        f.extend_from_slice(&HOST);
        f.extend_from_slice(&[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
        f.extend_from_slice(&HOST);
        f.extend_from_slice(&[192, 168, 77, 1]);
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&target);
        f
    }

    fn echo_request(payload: &[u8]) -> Vec<u8> {
        let mut f = PEER.mac.to_vec();
        f.extend_from_slice(&HOST);
        f.extend_from_slice(&[0x08, 0x00]);
        let total = (20 + 8 + payload.len()) as u16;
        let mut ip = vec![
            0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, 1, 0, 0, 192, 168, 77, 1, 192, 168, 77, 2,
        ];
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        let c = checksum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        let mut icmp = vec![8, 0, 0, 0, 0xab, 0xcd, 0, 1];
        icmp.extend_from_slice(payload);
        let c = checksum(&icmp);
        icmp[2..4].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&ip);
        f.extend_from_slice(&icmp);
        f
    }

    #[test]
    fn deframes_tx_fixup_transfers_with_padding_words() {
        let f = vec![0x55u8; 508]; // 508 + 4 = 512: padded
        let t = tx_fixup(&f);
        assert_eq!(t.len(), 516);
        let d = deframe(&t);
        assert_eq!(d.frames, vec![&f[..]]);
        assert!(!d.bad);
    }

    #[test]
    fn deframes_several_frames_with_even_alignment() {
        let mut t = frame(&[1, 2, 3]);
        t.extend(frame(&[4, 5, 6, 7]));
        assert_eq!(t.len(), 8 + 8);
        let d = deframe(&t);
        assert_eq!(d.frames, vec![&[1u8, 2, 3][..], &[4, 5, 6, 7][..]]);
        assert!(!d.bad);
    }

    #[test]
    fn bad_headers_and_truncation_are_reported() {
        assert!(deframe(&[0x10, 0, 0x10, 0, 1, 2]).bad);
        let mut t = frame(&[1, 2, 3, 4]);
        t.truncate(6);
        assert!(deframe(&t).bad);
        assert!(deframe(&[1, 2]).bad);
        assert_eq!(deframe(&[]), Deframed::default());
    }

    #[test]
    fn frame_header_is_len_and_complement() {
        let t = frame(&[0xaa; 60]);
        assert_eq!(&t[..4], &[60, 0, 0xc3, 0xff]);
        assert_eq!(t.len(), 64);
        assert_eq!(frame(&[1]).len(), 6, "odd frames padded to even");
    }

    #[test]
    fn answers_arp_for_its_address_only() {
        let Answer::Arp(r) = PEER.answer(&arp_request([192, 168, 77, 2])) else {
            panic!("no reply")
        };
        assert_eq!(&r[0..6], &HOST);
        assert_eq!(&r[6..12], &PEER.mac);
        assert_eq!(&r[20..22], &[0, 2], "op reply");
        assert_eq!(&r[22..28], &PEER.mac);
        assert_eq!(&r[28..32], &[192, 168, 77, 2]);
        assert_eq!(&r[38..42], &[192, 168, 77, 1]);
        assert_eq!(PEER.answer(&arp_request([192, 168, 77, 3])), Answer::None);
    }

    #[test]
    fn answers_icmp_echo_with_valid_checksums() {
        let req = echo_request(b"phytrace ping payload");
        let Answer::Icmp(r) = PEER.answer(&req) else {
            panic!("no reply")
        };
        assert_eq!(&r[0..6], &HOST);
        let ip = &r[14..34];
        assert_eq!(checksum(ip), 0, "IP header checksum");
        assert_eq!(&ip[12..16], &[192, 168, 77, 2]);
        assert_eq!(&ip[16..20], &[192, 168, 77, 1]);
        let icmp = &r[34..];
        assert_eq!(icmp[0], 0, "echo reply");
        assert_eq!(checksum(icmp), 0, "ICMP checksum");
        assert_eq!(&icmp[4..8], &[0xab, 0xcd, 0, 1], "id and sequence kept");
        assert_eq!(&icmp[8..], b"phytrace ping payload");
    }

    #[test]
    fn ignores_other_traffic_and_garbage() {
        let mut req = echo_request(b"x");
        req[0..6].copy_from_slice(&[0x02, 9, 9, 9, 9, 9]);
        assert_eq!(PEER.answer(&req), Answer::None, "other MAC");
        assert_eq!(PEER.answer(&[0xff; 10]), Answer::None);
        let mut short = echo_request(b"x");
        short.truncate(30);
        assert_eq!(PEER.answer(&short), Answer::None);
        let mut bad_len = echo_request(b"x");
        bad_len[16..18].copy_from_slice(&[0xff, 0xff]);
        assert_eq!(PEER.answer(&bad_len), Answer::None);
    }
}
