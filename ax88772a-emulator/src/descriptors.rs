//! USB descriptors of an AX88772A dongle (0b95:772a): one configuration, one vendor-class
//! interface with an interrupt IN, a bulk IN and a bulk OUT endpoint, as on the real chip
//! (which has them at 0x81, 0x82 and 0x03; here the numbers are the UDC's, see
//! [`EndpointAddrs`]).

use crate::raw_gadget::EpInfo;

/// Vendor id (ASIX Electronics).
pub const VENDOR_ID: u16 = 0x0b95;
/// Product id (AX88772A).
pub const PRODUCT_ID: u16 = 0x772a;
/// bMaxPacketSize0.
const EP0_MAXPACKET: u8 = 64;
/// wMaxPacketSize of the bulk endpoints at high speed.
pub const BULK_MAXPACKET: u16 = 512;
/// wMaxPacketSize of the interrupt endpoint.
const INT_MAXPACKET: u16 = 8;
/// bMaxPower in 2 mA units (250 mA).
pub const MAX_POWER: u8 = 0x7d;
/// bConfigurationValue.
pub const CONFIG_VALUE: u8 = 1;

const DT_DEVICE: u8 = 1;
const DT_CONFIG: u8 = 2;
const DT_STRING: u8 = 3;
const DT_INTERFACE: u8 = 4;
const DT_ENDPOINT: u8 = 5;
const DT_DEVICE_QUALIFIER: u8 = 6;

/// String descriptor indexes.
pub const STRINGS: [&str; 3] = ["ASIX Elec. Corp.", "AX88772A", "000001"];

/// The endpoint addresses the UDC offers (with the direction bit for IN).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndpointAddrs {
    /// Interrupt IN (the link status endpoint; the AX88772 driver does not poll it).
    pub int_in: u8,
    /// Bulk IN: frames to the host.
    pub bulk_in: u8,
    /// Bulk OUT: frames from the host.
    pub bulk_out: u8,
}

impl EndpointAddrs {
    /// Picks endpoints from `USB_RAW_IOCTL_EPS_INFO` (dummy_hcd: `ep5in-int`, `ep1in-bulk`,
    /// `ep2out-bulk`) that take our packet sizes; numbers the UDC leaves open get distinct free
    /// numbers.
    pub fn pick(eps: &[EpInfo]) -> Option<EndpointAddrs> {
        let mut used = Vec::new();
        let mut take = |want: fn(&EpInfo) -> bool, dir_in: bool| -> Option<u8> {
            let ep = eps.iter().find(|e| want(e) && !used.contains(&e.name))?;
            used.push(ep.name.clone());
            let num = ep.addr.unwrap_or(used.len() as u8);
            Some(num | if dir_in { 0x80 } else { 0 })
        };
        let bulk_in = take(
            |e| e.bulk && e.dir_in && e.maxpacket_limit >= BULK_MAXPACKET,
            true,
        )?;
        let bulk_out = take(
            |e| e.bulk && e.dir_out && e.maxpacket_limit >= BULK_MAXPACKET,
            false,
        )?;
        let int_in = take(
            |e| e.int && e.dir_in && e.maxpacket_limit >= INT_MAXPACKET,
            true,
        )?;
        Some(EndpointAddrs {
            int_in,
            bulk_in,
            bulk_out,
        })
    }

    /// The 7-byte endpoint descriptors: interrupt IN, bulk IN, bulk OUT.
    pub fn descriptors(&self) -> [[u8; 7]; 3] {
        let [il, ih] = INT_MAXPACKET.to_le_bytes();
        let [bl, bh] = BULK_MAXPACKET.to_le_bytes();
        [
            [7, DT_ENDPOINT, self.int_in, 0x03, il, ih, 11],
            [7, DT_ENDPOINT, self.bulk_in, 0x02, bl, bh, 0],
            [7, DT_ENDPOINT, self.bulk_out, 0x02, bl, bh, 0],
        ]
    }
}

/// The device descriptor.
pub fn device() -> Vec<u8> {
    let [vl, vh] = VENDOR_ID.to_le_bytes();
    let [pl, ph] = PRODUCT_ID.to_le_bytes();
    vec![
        18,
        DT_DEVICE,
        0x00,
        0x02, // bcdUSB 2.00
        0xff,
        0xff,
        0x00,
        EP0_MAXPACKET,
        vl,
        vh,
        pl,
        ph,
        0x01,
        0x00, // bcdDevice 0.01
        1,
        2,
        3, // iManufacturer, iProduct, iSerialNumber
        1,
    ]
}

/// The device qualifier (asked for by the host of a high-speed device).
pub fn device_qualifier() -> Vec<u8> {
    vec![
        10,
        DT_DEVICE_QUALIFIER,
        0x00,
        0x02,
        0xff,
        0xff,
        0x00,
        EP0_MAXPACKET,
        1,
        0,
    ]
}

/// The configuration descriptor with its interface and endpoints.
pub fn configuration(eps: &EndpointAddrs) -> Vec<u8> {
    let mut d = vec![
        9,
        DT_CONFIG,
        0,
        0,
        1,
        CONFIG_VALUE,
        0,
        0xa0,
        MAX_POWER, // bus powered, remote wakeup
        9,
        DT_INTERFACE,
        0,
        0,
        3,
        0xff,
        0xff,
        0x00,
        0,
    ];
    for e in eps.descriptors() {
        d.extend_from_slice(&e);
    }
    let total = (d.len() as u16).to_le_bytes();
    d[2..4].copy_from_slice(&total);
    d
}

/// String descriptor `index` (0: the language list, US English), or `None`.
pub fn string(index: u8) -> Option<Vec<u8>> {
    if index == 0 {
        return Some(vec![4, DT_STRING, 0x09, 0x04]);
    }
    let s = STRINGS.get(usize::from(index) - 1)?;
    let mut d = vec![0, DT_STRING];
    for u in s.encode_utf16() {
        d.extend_from_slice(&u.to_le_bytes());
    }
    d[0] = d.len() as u8;
    Some(d)
}

/// The descriptor GET_DESCRIPTOR asks for (wValue = type << 8 | index), or `None` to stall.
pub fn get(value: u16, eps: &EndpointAddrs) -> Option<Vec<u8>> {
    let [index, kind] = value.to_le_bytes();
    match kind {
        DT_DEVICE => Some(device()),
        DT_CONFIG => Some(configuration(eps)),
        DT_STRING => string(index),
        DT_DEVICE_QUALIFIER => Some(device_qualifier()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(name: &str, addr: u8, bulk: bool, dir_in: bool) -> EpInfo {
        EpInfo {
            name: name.into(),
            addr: Some(addr),
            bulk,
            int: !bulk,
            dir_in,
            dir_out: !dir_in,
            maxpacket_limit: 1024,
        }
    }

    fn dummy_hcd() -> Vec<EpInfo> {
        vec![
            ep("ep1in-bulk", 1, true, true),
            ep("ep2out-bulk", 2, true, false),
            ep("ep5in-int", 5, false, true),
        ]
    }

    #[test]
    fn picks_dummy_hcd_endpoints() {
        let e = EndpointAddrs::pick(&dummy_hcd()).unwrap();
        assert_eq!(
            e,
            EndpointAddrs {
                int_in: 0x85,
                bulk_in: 0x81,
                bulk_out: 0x02
            }
        );
        assert_eq!(
            EndpointAddrs::pick(&dummy_hcd()[..2]),
            None,
            "no interrupt endpoint"
        );
    }

    #[test]
    fn device_descriptor_is_0b95_772a() {
        let d = device();
        assert_eq!(d.len(), 18);
        assert_eq!(&d[8..12], &[0x95, 0x0b, 0x2a, 0x77]);
    }

    #[test]
    fn configuration_has_three_endpoints_and_total_length() {
        let e = EndpointAddrs::pick(&dummy_hcd()).unwrap();
        let c = configuration(&e);
        assert_eq!(c.len(), 39);
        assert_eq!(u16::from_le_bytes([c[2], c[3]]), 39);
        assert_eq!(c[13], 3, "bNumEndpoints");
        assert_eq!(&c[18..25], &[7, 5, 0x85, 3, 8, 0, 11]);
        assert_eq!(&c[25..32], &[7, 5, 0x81, 2, 0, 2, 0]);
    }

    #[test]
    fn strings() {
        assert_eq!(string(0), Some(vec![4, 3, 9, 4]));
        let p = string(2).unwrap();
        assert_eq!(p[0] as usize, p.len());
        assert_eq!(p.len(), 2 + 2 * 8);
        assert_eq!(string(9), None);
        let e = EndpointAddrs::pick(&dummy_hcd()).unwrap();
        assert_eq!(get(0x0302, &e), string(2));
        assert_eq!(get(0x0f00, &e), None, "no BOS for USB 2.00");
    }
}
