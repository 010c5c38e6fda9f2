//! The AX88772A's vendor control requests on ep0 (`AX_CMD_*` of `drivers/net/usb/asix.h`):
//! decoding a setup packet, and the MAC-side state they read and write (node id, RX control,
//! medium mode, software MII access, …), with the internal PHY behind READ/WRITE_MII_REG.
//! Also the injected MDIO faults and the counters `ctl status` reports.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::phy::{self, Phy};

/// `USB_DIR_IN | USB_TYPE_VENDOR | USB_RECIP_DEVICE`: asix_read_cmd.
pub const VENDOR_IN: u8 = 0xc0;
/// `USB_DIR_OUT | USB_TYPE_VENDOR | USB_RECIP_DEVICE`: asix_write_cmd.
pub const VENDOR_OUT: u8 = 0x40;

/// `AX_HOST_EN` in STATMNGSTS: software MII access is granted.
const HOST_EN: u8 = 0x01;
/// `AX_AX88772A_CHIPCODE` (under `AX_CHIPCODE_MASK` 0x70).
const CHIPCODE_AX88772A: u8 = 0x10;
/// `AX_HOST_EN_RETRIES`: STATMNGSTS reads asix makes before an MDIO access times out.
pub const HOST_EN_RETRIES: u32 = 30;
/// `AX_SWRESET_IPRL`: internal PHY reset released.
const SWRESET_IPRL: u8 = 0x20;
/// `AX_SWRESET_IPPD`: internal PHY powered down.
const SWRESET_IPPD: u8 = 0x40;
/// `AX_MEDIUM_RE`: receive enable.
pub const MEDIUM_RE: u16 = 0x0100;
/// `AX_RX_CTL_SO`: start operation.
pub const RX_CTL_SO: u16 = 0x0080;
/// Medium mode at power-on (`AX88772_MEDIUM_DEFAULT`).
const MEDIUM_DEFAULT: u16 = 0x0306;
/// EEPROM size in 16-bit words (`AX_EEPROM_LEN` bytes).
const EEPROM_WORDS: usize = 0x100;

/// A setup packet (`struct usb_ctrlrequest`, little-endian fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    /// bmRequestType.
    pub request_type: u8,
    /// bRequest.
    pub request: u8,
    /// wValue.
    pub value: u16,
    /// wIndex.
    pub index: u16,
    /// wLength.
    pub length: u16,
}

impl Setup {
    /// Decodes the 8 bytes of a CONTROL event.
    pub fn parse(raw: &[u8; 8]) -> Setup {
        Setup {
            request_type: raw[0],
            request: raw[1],
            value: u16::from_le_bytes([raw[2], raw[3]]),
            index: u16::from_le_bytes([raw[4], raw[5]]),
            length: u16::from_le_bytes([raw[6], raw[7]]),
        }
    }

    /// Device-to-host (IN data stage).
    pub fn is_in(&self) -> bool {
        self.request_type & 0x80 != 0
    }
}

/// The vendor requests the 6.12 asix driver issues to an AX88772A.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// 0x06 `AX_CMD_SET_SW_MII`: the host takes the MDIO bus.
    SetSwMii,
    /// 0x07 `AX_CMD_READ_MII_REG`: wValue PHY address, wIndex register; 2 bytes LE.
    ReadMiiReg {
        /// MDIO address.
        addr: u8,
        /// Register.
        reg: u8,
    },
    /// 0x08 `AX_CMD_WRITE_MII_REG`: as the read, 2 bytes LE of data.
    WriteMiiReg {
        /// MDIO address.
        addr: u8,
        /// Register.
        reg: u8,
    },
    /// 0x09 `AX_CMD_STATMNGSTS_REG`: 1 byte, chip code and HOST_EN.
    StatMngSts,
    /// 0x0a `AX_CMD_SET_HW_MII`: the MAC takes the MDIO bus back.
    SetHwMii,
    /// 0x0b `AX_CMD_READ_EEPROM`: wValue word; 2 bytes.
    ReadEeprom(u16),
    /// 0x0c `AX_CMD_WRITE_EEPROM`: wValue word, wIndex data.
    WriteEeprom(u16, u16),
    /// 0x0d `AX_CMD_WRITE_ENABLE` (EEPROM).
    WriteEnable,
    /// 0x0e `AX_CMD_WRITE_DISABLE` (EEPROM).
    WriteDisable,
    /// 0x0f `AX_CMD_READ_RX_CTL`: 2 bytes.
    ReadRxCtl,
    /// 0x10 `AX_CMD_WRITE_RX_CTL`: wValue.
    WriteRxCtl(u16),
    /// 0x11 `AX_CMD_READ_IPG012`: 3 bytes.
    ReadIpg012,
    /// 0x12 `AX_CMD_WRITE_IPG0`: wValue IPG0|IPG1, wIndex IPG2.
    WriteIpg0(u16, u16),
    /// 0x13 `AX_CMD_READ_NODE_ID`: 6 bytes.
    ReadNodeId,
    /// 0x14 `AX_CMD_WRITE_NODE_ID`: 6 bytes of data.
    WriteNodeId,
    /// 0x16 `AX_CMD_WRITE_MULTI_FILTER`: 8 bytes of data.
    WriteMultiFilter,
    /// 0x19 `AX_CMD_READ_PHY_ID`: 2 bytes, external and internal PHY address.
    ReadPhyId,
    /// 0x1a `AX_CMD_READ_MEDIUM_STATUS`: 2 bytes.
    ReadMediumStatus,
    /// 0x1b `AX_CMD_WRITE_MEDIUM_MODE`: wValue.
    WriteMediumMode(u16),
    /// 0x1c `AX_CMD_READ_MONITOR_MODE`: 1 byte (ethtool's get_wol).
    ReadMonitorMode,
    /// 0x1d `AX_CMD_WRITE_MONITOR_MODE`: wValue (set_wol).
    WriteMonitorMode(u8),
    /// 0x1e `AX_CMD_READ_GPIOS`: 1 byte.
    ReadGpios,
    /// 0x1f `AX_CMD_WRITE_GPIOS`: wValue.
    WriteGpios(u8),
    /// 0x20 `AX_CMD_SW_RESET`: wValue flags.
    SwReset(u8),
    /// 0x22 `AX_CMD_SW_PHY_SELECT`: wValue.
    SwPhySelect(u8),
}

impl Request {
    /// Decodes a vendor setup packet; `None` for anything the AX88772A model does not answer
    /// (wrong direction, wrong data length, unknown code).
    pub fn decode(s: &Setup) -> Option<Request> {
        use Request::*;
        let v = s.value;
        let r = match (s.request_type, s.request, s.length) {
            (VENDOR_OUT, 0x06, 0) => SetSwMii,
            (VENDOR_IN, 0x07, 2) => ReadMiiReg {
                addr: (v & 0x1f) as u8,
                reg: (s.index & 0x1f) as u8,
            },
            (VENDOR_OUT, 0x08, 2) => WriteMiiReg {
                addr: (v & 0x1f) as u8,
                reg: (s.index & 0x1f) as u8,
            },
            (VENDOR_IN, 0x09, 1) => StatMngSts,
            (VENDOR_OUT, 0x0a, 0) => SetHwMii,
            (VENDOR_IN, 0x0b, 2) => ReadEeprom(v),
            (VENDOR_OUT, 0x0c, 0) => WriteEeprom(v, s.index),
            (VENDOR_OUT, 0x0d, 0) => WriteEnable,
            (VENDOR_OUT, 0x0e, 0) => WriteDisable,
            (VENDOR_IN, 0x0f, 2) => ReadRxCtl,
            (VENDOR_OUT, 0x10, 0) => WriteRxCtl(v),
            (VENDOR_IN, 0x11, 3) => ReadIpg012,
            (VENDOR_OUT, 0x12, 0) => WriteIpg0(v, s.index),
            (VENDOR_IN, 0x13, 6) => ReadNodeId,
            (VENDOR_OUT, 0x14, 6) => WriteNodeId,
            (VENDOR_OUT, 0x16, 8) => WriteMultiFilter,
            (VENDOR_IN, 0x19, 2) => ReadPhyId,
            (VENDOR_IN, 0x1a, 2) => ReadMediumStatus,
            (VENDOR_OUT, 0x1b, 0) => WriteMediumMode(v),
            (VENDOR_IN, 0x1c, 1) => ReadMonitorMode,
            (VENDOR_OUT, 0x1d, 0) => WriteMonitorMode(v as u8),
            (VENDOR_IN, 0x1e, 1) => ReadGpios,
            (VENDOR_OUT, 0x1f, 0) => WriteGpios(v as u8),
            (VENDOR_OUT, 0x20, 0) => SwReset(v as u8),
            (VENDOR_OUT, 0x22, 0) => SwPhySelect(v as u8),
            _ => return None,
        };
        Some(r)
    }

    /// The asix name without `AX_CMD_`, the key of the request counters.
    pub fn name(&self) -> &'static str {
        use Request::*;
        match self {
            SetSwMii => "SET_SW_MII",
            ReadMiiReg { .. } => "READ_MII_REG",
            WriteMiiReg { .. } => "WRITE_MII_REG",
            StatMngSts => "STATMNGSTS_REG",
            SetHwMii => "SET_HW_MII",
            ReadEeprom(_) => "READ_EEPROM",
            WriteEeprom(..) => "WRITE_EEPROM",
            WriteEnable => "WRITE_ENABLE",
            WriteDisable => "WRITE_DISABLE",
            ReadRxCtl => "READ_RX_CTL",
            WriteRxCtl(_) => "WRITE_RX_CTL",
            ReadIpg012 => "READ_IPG012",
            WriteIpg0(..) => "WRITE_IPG0",
            ReadNodeId => "READ_NODE_ID",
            WriteNodeId => "WRITE_NODE_ID",
            WriteMultiFilter => "WRITE_MULTI_FILTER",
            ReadPhyId => "READ_PHY_ID",
            ReadMediumStatus => "READ_MEDIUM_STATUS",
            WriteMediumMode(_) => "WRITE_MEDIUM_MODE",
            ReadMonitorMode => "READ_MONITOR_MODE",
            WriteMonitorMode(_) => "WRITE_MONITOR_MODE",
            ReadGpios => "READ_GPIOS",
            WriteGpios(_) => "WRITE_GPIOS",
            SwReset(_) => "SW_RESET",
            SwPhySelect(_) => "SW_PHY_SELECT",
        }
    }

    /// An MDIO register access (the one whose answer `--mdio-delay-us` delays).
    pub fn is_mii_access(&self) -> bool {
        matches!(
            self,
            Request::ReadMiiReg { .. } | Request::WriteMiiReg { .. }
        )
    }
}

/// What ep0 answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The IN data stage.
    Data(Vec<u8>),
    /// Acknowledge (OUT request done).
    Ack,
}

/// MDIO operation of an injected error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MdioOp {
    /// READ_MII_REG.
    Read,
    /// WRITE_MII_REG.
    Write,
}

/// Per-register MDIO counters (any PHY address).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RegCounters {
    /// READ_MII_REG answered with data.
    pub reads: u64,
    /// WRITE_MII_REG accepted.
    pub writes: u64,
    /// READ_MII_REG stalled (injected error).
    pub rd_err: u64,
    /// WRITE_MII_REG stalled (injected error).
    pub wr_err: u64,
}

/// Counters of ep0 traffic.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    /// Requests answered, by name (vendor and standard).
    pub requests: BTreeMap<&'static str, u64>,
    /// Requests stalled on purpose (injected errors), by name.
    pub stalled: BTreeMap<&'static str, u64>,
    /// MDIO accesses by (PHY address, register).
    pub mdio: BTreeMap<(u8, u8), RegCounters>,
    /// MDIO accesses that timed out (30 STATMNGSTS reads without HOST_EN).
    pub mdio_timeouts: u64,
    /// Requests neither the standard nor the vendor model knows (stalled).
    pub unknown: u64,
    /// The last unknown setup packets (at most [`UNKNOWN_KEPT`]).
    pub unknown_last: Vec<Setup>,
}

/// How many unknown setup packets `status` shows.
pub const UNKNOWN_KEPT: usize = 16;

impl Counters {
    /// Counts an answered request.
    pub fn count(&mut self, name: &'static str) {
        *self.requests.entry(name).or_default() += 1;
    }

    /// Counts and remembers an unknown request.
    pub fn unknown(&mut self, s: Setup) {
        self.unknown += 1;
        if self.unknown_last.len() == UNKNOWN_KEPT {
            self.unknown_last.remove(0);
        }
        self.unknown_last.push(s);
    }
}

/// The MAC's registers, the PHY behind it, injected faults and counters.
#[derive(Debug, Clone)]
pub struct Mac {
    /// The node id READ_NODE_ID answers (the dongle's burnt-in MAC address).
    pub node_id: [u8; 6],
    /// The last WRITE_NODE_ID (the address the host uses).
    pub node_id_written: [u8; 6],
    /// RX_CTL.
    pub rx_ctl: u16,
    /// Medium mode.
    pub medium: u16,
    /// IPG0, IPG1, IPG2.
    pub ipg: [u8; 3],
    /// GPIO value.
    pub gpio: u8,
    /// Last SW_RESET flags.
    pub sw_reset: u8,
    /// Last SW_PHY_SELECT value.
    pub phy_select: u8,
    /// Monitor (wake-on-LAN) mode.
    pub monitor: u8,
    /// Multicast filter.
    pub multi_filter: [u8; 8],
    /// Software MII access granted (SET_SW_MII .. SET_HW_MII).
    pub sw_mii: bool,
    eeprom: Vec<u16>,
    eeprom_write_enabled: bool,
    /// The internal PHY.
    pub phy: Phy,
    /// Injected MDIO errors: (op, register) → accesses left to stall.
    pub mdio_errors: BTreeMap<(MdioOp, u8), u32>,
    /// MDIO accesses still to time out, each from its first SET_SW_MII on.
    pub timeouts_armed: u32,
    /// STATMNGSTS reads left that report no HOST_EN in the access timing out now.
    pub timeout_reads_left: u32,
    /// A SET_SW_MII began an access whose HOST_EN check has not ended yet.
    host_check_pending: bool,
    /// Counters.
    pub counters: Counters,
}

impl Mac {
    /// A freshly powered dongle with this node id.
    pub fn new(node_id: [u8; 6], phy: Phy) -> Mac {
        let mut eeprom = vec![0xffff; EEPROM_WORDS];
        for i in 0..3 {
            eeprom[4 + i] = u16::from_le_bytes([node_id[2 * i], node_id[2 * i + 1]]);
        }
        Mac {
            node_id,
            node_id_written: node_id,
            rx_ctl: 0,
            medium: MEDIUM_DEFAULT,
            ipg: [0x15, 0x0c, 0x12],
            gpio: 0,
            sw_reset: SWRESET_IPRL,
            phy_select: 1,
            monitor: 0,
            multi_filter: [0; 8],
            sw_mii: false,
            eeprom,
            eeprom_write_enabled: false,
            phy,
            mdio_errors: BTreeMap::new(),
            timeouts_armed: 0,
            timeout_reads_left: 0,
            host_check_pending: false,
            counters: Counters::default(),
        }
    }

    /// Makes the next `n` MDIO accesses time out (STATMNGSTS without HOST_EN). An access
    /// already past its first SET_SW_MII is not affected: it began before the command.
    pub fn inject_timeout(&mut self, n: u32) {
        self.timeouts_armed = n;
    }

    /// Stalls the next `n` `op` accesses to `reg` (0 clears the rule).
    pub fn inject_error(&mut self, op: MdioOp, reg: u8, n: u32) {
        if n == 0 {
            self.mdio_errors.remove(&(op, reg));
        } else {
            self.mdio_errors.insert((op, reg), n);
        }
    }

    /// Whether this request is to be stalled by an injected error (consumes one). Asked before
    /// the data stage of an OUT request is read, as a stall must come instead of it.
    pub fn take_fault(&mut self, req: &Request) -> bool {
        let (op, addr, reg) = match *req {
            Request::ReadMiiReg { addr, reg } => (MdioOp::Read, addr, reg),
            Request::WriteMiiReg { addr, reg } => (MdioOp::Write, addr, reg),
            _ => return false,
        };
        let Some(left) = self.mdio_errors.get_mut(&(op, reg)) else {
            return false;
        };
        *left -= 1;
        if *left == 0 {
            self.mdio_errors.remove(&(op, reg));
        }
        let c = self.counters.mdio.entry((addr, reg)).or_default();
        match op {
            MdioOp::Read => c.rd_err += 1,
            MdioOp::Write => c.wr_err += 1,
        }
        *self.counters.stalled.entry(req.name()).or_default() += 1;
        true
    }

    /// Answers a decoded request; `data` is the OUT data stage (empty for IN requests).
    pub fn handle(&mut self, req: &Request, data: &[u8], now: Duration) -> Reply {
        use Request::*;
        self.counters.count(req.name());
        let ack = Reply::Ack;
        match *req {
            SetSwMii => {
                self.sw_mii = true;
                // asix repeats SET_SW_MII before every STATMNGSTS: only the first begins an access.
                if !self.host_check_pending {
                    self.host_check_pending = true;
                    if self.timeouts_armed > 0 && self.timeout_reads_left == 0 {
                        self.timeouts_armed -= 1;
                        self.timeout_reads_left = HOST_EN_RETRIES;
                    }
                }
                ack
            }
            SetHwMii => {
                self.sw_mii = false;
                ack
            }
            StatMngSts => {
                let mut v = CHIPCODE_AX88772A;
                if self.timeout_reads_left > 0 {
                    self.timeout_reads_left -= 1;
                    if self.timeout_reads_left == 0 {
                        self.counters.mdio_timeouts += 1;
                        self.host_check_pending = false;
                    }
                } else if self.sw_mii {
                    v |= HOST_EN;
                    self.host_check_pending = false;
                }
                Reply::Data(vec![v])
            }
            ReadMiiReg { addr, reg } => {
                self.counters.mdio.entry((addr, reg)).or_default().reads += 1;
                let v = if addr == phy::PHY_ADDR {
                    self.phy.read(reg, now)
                } else {
                    0xffff
                };
                Reply::Data(v.to_le_bytes().to_vec())
            }
            WriteMiiReg { addr, reg } => {
                self.counters.mdio.entry((addr, reg)).or_default().writes += 1;
                if addr == phy::PHY_ADDR && data.len() == 2 {
                    self.phy
                        .write(reg, u16::from_le_bytes([data[0], data[1]]), now);
                }
                ack
            }
            ReadEeprom(word) => {
                let v = self.eeprom.get(word as usize).copied().unwrap_or(0xffff);
                Reply::Data(v.to_le_bytes().to_vec())
            }
            WriteEeprom(word, v) => {
                if self.eeprom_write_enabled
                    && let Some(w) = self.eeprom.get_mut(word as usize)
                {
                    *w = v;
                }
                ack
            }
            WriteEnable => {
                self.eeprom_write_enabled = true;
                ack
            }
            WriteDisable => {
                self.eeprom_write_enabled = false;
                ack
            }
            ReadRxCtl => Reply::Data(self.rx_ctl.to_le_bytes().to_vec()),
            WriteRxCtl(v) => {
                self.rx_ctl = v;
                ack
            }
            ReadIpg012 => Reply::Data(self.ipg.to_vec()),
            WriteIpg0(v, i) => {
                self.ipg = [v as u8, (v >> 8) as u8, i as u8];
                ack
            }
            ReadNodeId => Reply::Data(self.node_id.to_vec()),
            WriteNodeId => {
                if let Ok(id) = data.try_into() {
                    self.node_id_written = id;
                }
                ack
            }
            WriteMultiFilter => {
                if let Ok(f) = data.try_into() {
                    self.multi_filter = f;
                }
                ack
            }
            // Byte 0: external PHY address (none: the internal one), byte 1: internal.
            ReadPhyId => Reply::Data(vec![phy::PHY_ADDR, phy::PHY_ADDR]),
            ReadMediumStatus => Reply::Data(self.medium.to_le_bytes().to_vec()),
            WriteMediumMode(v) => {
                self.medium = v;
                ack
            }
            ReadMonitorMode => Reply::Data(vec![self.monitor]),
            WriteMonitorMode(v) => {
                self.monitor = v;
                ack
            }
            ReadGpios => Reply::Data(vec![self.gpio]),
            WriteGpios(v) => {
                self.gpio = v;
                ack
            }
            SwReset(flags) => {
                self.sw_reset = flags;
                let hold = flags & SWRESET_IPRL == 0 || flags & SWRESET_IPPD != 0;
                self.phy.set_hw_hold(hold, now);
                ack
            }
            SwPhySelect(v) => {
                self.phy_select = v;
                ack
            }
        }
    }

    /// The MAC passes received frames to the host (RX_CTL start operation, medium RE).
    pub fn receiving(&self) -> bool {
        self.rx_ctl & RX_CTL_SO != 0 && self.medium & MEDIUM_RE != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(request_type: u8, request: u8, value: u16, index: u16, length: u16) -> Setup {
        Setup {
            request_type,
            request,
            value,
            index,
            length,
        }
    }

    fn mac() -> Mac {
        Mac::new(
            [0, 0x0e, 0xc6, 0x87, 0x72, 0x01],
            Phy::new(Duration::ZERO, Duration::from_millis(100)),
        )
    }

    /// One MDIO read as `__asix_mdio_read` does it.
    fn mdio_read(m: &mut Mac, addr: u8, reg: u8) -> Result<u16, &'static str> {
        let now = Duration::from_secs(1);
        for _ in 0..HOST_EN_RETRIES {
            m.handle(&Request::SetSwMii, &[], now);
            let Reply::Data(s) = m.handle(&Request::StatMngSts, &[], now) else {
                unreachable!()
            };
            if s[0] & HOST_EN != 0 {
                let req = Request::ReadMiiReg { addr, reg };
                if m.take_fault(&req) {
                    return Err("stall");
                }
                let Reply::Data(v) = m.handle(&req, &[], now) else {
                    unreachable!()
                };
                m.handle(&Request::SetHwMii, &[], now);
                return Ok(u16::from_le_bytes([v[0], v[1]]));
            }
        }
        Err("timeout")
    }

    #[test]
    fn setup_packets_decode() {
        let raw = [0xc0, 0x07, 0x10, 0x00, 0x01, 0x00, 0x02, 0x00];
        let s = Setup::parse(&raw);
        assert_eq!(s, setup(0xc0, 7, 0x10, 1, 2));
        assert!(s.is_in());
        assert_eq!(
            Request::decode(&s),
            Some(Request::ReadMiiReg { addr: 0x10, reg: 1 })
        );
        assert_eq!(
            Request::decode(&setup(0x40, 0x08, 0x10, 0, 2)),
            Some(Request::WriteMiiReg { addr: 0x10, reg: 0 })
        );
        // 0x13 and 0x14 are two requests each, told apart by direction and length.
        assert_eq!(
            Request::decode(&setup(0xc0, 0x13, 0, 0, 6)),
            Some(Request::ReadNodeId)
        );
        assert_eq!(
            Request::decode(&setup(0x40, 0x14, 0, 0, 6)),
            Some(Request::WriteNodeId)
        );
        assert_eq!(
            Request::decode(&setup(0x40, 0x13, 0, 0, 0)),
            None,
            "WRITE_IPG1: AX88172 only"
        );
        assert_eq!(
            Request::decode(&setup(0x40, 0x20, 0x60, 0, 0)),
            Some(Request::SwReset(0x60))
        );
        // Wrong direction or length, unknown codes: not answered.
        assert_eq!(Request::decode(&setup(0x40, 0x07, 0x10, 1, 2)), None);
        assert_eq!(Request::decode(&setup(0xc0, 0x07, 0x10, 1, 4)), None);
        assert_eq!(Request::decode(&setup(0xc0, 0x2a, 0, 0, 0)), None);
        assert_eq!(Request::decode(&setup(0xc1, 0x09, 0, 0, 1)), None);
    }

    #[test]
    fn probe_answers() {
        let mut m = mac();
        let now = Duration::ZERO;
        assert_eq!(
            m.handle(&Request::ReadNodeId, &[], now),
            Reply::Data(vec![0, 0x0e, 0xc6, 0x87, 0x72, 0x01])
        );
        assert_eq!(
            m.handle(&Request::ReadPhyId, &[], now),
            Reply::Data(vec![0x10, 0x10])
        );
        // Chip code read before SET_SW_MII: no HOST_EN, code 0x10.
        assert_eq!(
            m.handle(&Request::StatMngSts, &[], now),
            Reply::Data(vec![0x10])
        );
        m.handle(&Request::SetSwMii, &[], now);
        assert_eq!(
            m.handle(&Request::StatMngSts, &[], now),
            Reply::Data(vec![0x11])
        );
        m.handle(&Request::WriteRxCtl(0x88), &[], now);
        assert_eq!(
            m.handle(&Request::ReadRxCtl, &[], now),
            Reply::Data(vec![0x88, 0])
        );
        m.handle(&Request::WriteNodeId, &[2, 0, 0, 0, 0, 9], now);
        assert_eq!(m.node_id_written, [2, 0, 0, 0, 0, 9]);
        assert_eq!(m.counters.requests["STATMNGSTS_REG"], 2);
    }

    #[test]
    fn mdio_reads_reach_the_phy_at_0x10_only() {
        let mut m = mac();
        assert_eq!(mdio_read(&mut m, 0x10, 2), Ok(0x003b));
        assert_eq!(mdio_read(&mut m, 0x10, 3), Ok(0x1861));
        assert_eq!(mdio_read(&mut m, 0x00, 2), Ok(0xffff));
        assert_eq!(m.counters.mdio[&(0x10, 2)].reads, 1);
        assert_eq!(m.counters.mdio[&(0, 2)].reads, 1);
        assert!(!m.sw_mii);
    }

    #[test]
    fn injected_errors_and_timeouts() {
        let mut m = mac();
        m.inject_error(MdioOp::Read, 1, 2);
        assert_eq!(mdio_read(&mut m, 0x10, 1), Err("stall"));
        assert_eq!(
            mdio_read(&mut m, 0x10, 0),
            Ok(0x3100),
            "other registers unaffected"
        );
        assert_eq!(mdio_read(&mut m, 0x10, 1), Err("stall"));
        assert!(mdio_read(&mut m, 0x10, 1).is_ok());
        assert_eq!(m.counters.mdio[&(0x10, 1)].rd_err, 2);
        assert_eq!(m.counters.stalled["READ_MII_REG"], 2);

        m.inject_timeout(1);
        assert_eq!(mdio_read(&mut m, 0x10, 1), Err("timeout"));
        assert_eq!(m.counters.mdio_timeouts, 1);
        assert!(mdio_read(&mut m, 0x10, 1).is_ok());

        // Armed in the middle of an access (after its SET_SW_MII): that one completes, the
        // next one times out.
        let now = Duration::from_secs(1);
        m.handle(&Request::SetSwMii, &[], now);
        m.inject_timeout(1);
        assert_eq!(
            m.handle(&Request::StatMngSts, &[], now),
            Reply::Data(vec![0x11])
        );
        m.handle(&Request::ReadMiiReg { addr: 0x10, reg: 1 }, &[], now);
        m.handle(&Request::SetHwMii, &[], now);
        assert_eq!(mdio_read(&mut m, 0x10, 1), Err("timeout"));
        assert_eq!(m.counters.mdio_timeouts, 2);
    }

    #[test]
    fn sw_reset_holds_and_releases_the_phy() {
        let mut m = mac();
        let t = Duration::from_secs(1);
        m.handle(&Request::SwReset(SWRESET_IPPD | SWRESET_IPRL), &[], t);
        assert_eq!(m.phy.link_mode(t + Duration::from_secs(1)), None);
        m.handle(
            &Request::SwReset(SWRESET_IPRL),
            &[],
            t + Duration::from_secs(1),
        );
        assert!(m.phy.link_mode(t + Duration::from_secs(2)).is_some());
    }

    #[test]
    fn eeprom_writes_need_enable() {
        let mut m = mac();
        let now = Duration::ZERO;
        assert_eq!(
            m.handle(&Request::ReadEeprom(4), &[], now),
            Reply::Data(vec![0, 0x0e])
        );
        m.handle(&Request::WriteEeprom(0x20, 0x1234), &[], now);
        assert_eq!(
            m.handle(&Request::ReadEeprom(0x20), &[], now),
            Reply::Data(vec![0xff, 0xff])
        );
        m.handle(&Request::WriteEnable, &[], now);
        m.handle(&Request::WriteEeprom(0x20, 0x1234), &[], now);
        assert_eq!(
            m.handle(&Request::ReadEeprom(0x20), &[], now),
            Reply::Data(vec![0x34, 0x12])
        );
    }
}
