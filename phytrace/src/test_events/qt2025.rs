//! The QT2025's probe as `drivers/net/phy/qt2025.rs` (Linux 6.12) makes it, access by access:
//! the hardware revision read, the writes that hold the on-chip CPU, set it up and start it
//! from its boot ROM, the firmware one byte a write (the first 16 KiB to `3.0x8000…0xBFFF`, the
//! rest to `4.0x8000…0x9FFF`), and the write that starts the CPU from SRAM.

use crate::event::{Event, EventKind, LinkState, MdioOp, PhyRef};
use crate::synth::phy_state;

use super::{Mdio, callback, phy as phy_ref};

/// The QT2025's PHY ID (`PHY_DEVICE_ID` of the driver).
pub const PHY_ID: u32 = 0x0043_a400;

/// The driver's name (`NAME`).
pub const DRIVER: &str = "QT2025 10Gpbs SFP+";

/// The revision the driver accepts, as `1.0xD001` reads it (high byte 0xb3).
pub const REVISION_OK: u16 = 0xb3ff;

/// The writes between the revision check and the firmware: (MMD, register, value).
pub const SETUP: [(u8, u16, u16); 11] = [
    (1, 0xc300, 0x0000),
    (1, 0xc302, 0x0004),
    (1, 0xc319, 0x0038),
    (1, 0xc31a, 0x0098),
    (3, 0x0026, 0x0e00),
    (3, 0x0027, 0x0893),
    (3, 0x0028, 0xa528),
    (3, 0x0029, 0x0003),
    (1, 0xa30a, 0x06e1),
    (1, 0xc300, 0x0002),
    (3, 0xe854, 0x00c0),
];

/// The write that starts the CPU from SRAM.
pub const CPU_START: (u8, u16, u16) = (3, 0xe854, 0x0040);

/// Bytes the PCS window (`3.0x8000…0xBFFF`) takes before the PHY XS one.
pub const PCS_WINDOW: usize = 16 * 1024;

/// The QT2025 at `addr` on `phy_sim-1`, bound to its driver.
pub fn phy(addr: u8) -> PhyRef {
    phy_ref("phy_sim-1", addr, PHY_ID, DRIVER)
}

/// A firmware image of `len` bytes in a fixed pattern.
pub fn firmware(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 256) as u8).collect()
}

/// Where byte `index` of the firmware goes: (MMD, register).
pub fn firmware_register(index: usize) -> (u8, u16) {
    let (devad, offset) = if index < PCS_WINDOW {
        (3, index)
    } else {
        (4, index - PCS_WINDOW)
    };
    (devad, 0x8000 + offset as u16)
}

/// Builds the events of one PHY's probe on one thread, 1 µs apart.
pub struct Probe {
    phy: PhyRef,
    ts_ns: u64,
    events: Vec<Event>,
}

impl Probe {
    /// A probe of `phy` starting at `ts_ns`: its entry.
    pub fn start(phy: PhyRef, ts_ns: u64) -> Self {
        let mut probe = Self {
            phy,
            ts_ns,
            events: Vec::new(),
        };
        probe.push(EventKind::CallbackEnter {
            callback: callback("probe", "qt2025::PhyQT2025"),
            depth: 1,
            state: phy_state(0),
        });
        probe
    }

    fn push(&mut self, kind: EventKind) {
        self.ts_ns += 1_000;
        self.events.push(Event {
            ts_ns: self.ts_ns,
            cpu: 0,
            tid: 42,
            phy: Some(self.phy.clone()),
            kind,
        });
    }

    /// A Clause 45 access of `value` to `devad.reg` inside the probe.
    pub fn access(&mut self, op: MdioOp, devad: u8, reg: u16, value: u16) -> &mut Self {
        self.push(
            Mdio {
                op,
                devad: Some(devad),
                caller: Some(callback("probe", "qt2025::PhyQT2025")),
                latency_ns: 500,
                ..Mdio::read(reg, value)
            }
            .into(),
        );
        self
    }

    /// The writes of [`SETUP`].
    pub fn setup(&mut self) -> &mut Self {
        for (devad, reg, value) in SETUP {
            self.access(MdioOp::Write, devad, reg, value);
        }
        self
    }

    /// The firmware's bytes, one write each.
    pub fn load(&mut self, firmware: &[u8]) -> &mut Self {
        for (index, byte) in firmware.iter().enumerate() {
            let (devad, reg) = firmware_register(index);
            self.access(MdioOp::Write, devad, reg, u16::from(*byte));
        }
        self
    }

    /// The return of the probe with `ret`; the events.
    pub fn exit(mut self, ret: i64) -> Vec<Event> {
        let enter_ns = self.events.first().map_or(0, |e| e.ts_ns);
        let latency_ns = self.ts_ns + 1_000 - enter_ns;
        self.push(EventKind::CallbackExit {
            callback: callback("probe", "qt2025::PhyQT2025"),
            depth: 1,
            latency_ns,
            ret,
            state_before: phy_state(0),
            state_after: phy_state(0),
            link: LinkState {
                up: false,
                speed: -1,
                duplex: crate::event::Duplex::Unknown,
            },
        });
        self.events
    }
}

/// The probe as the driver makes it with a PHY of revision `revision` and `firmware`: a
/// revision other than 0xb3 is refused with -ENODEV after the read.
pub fn probe(phy: PhyRef, ts_ns: u64, revision: u16, firmware: &[u8]) -> Vec<Event> {
    let mut probe = Probe::start(phy, ts_ns);
    probe.access(MdioOp::Read, 1, 0xd001, revision);
    if revision >> 8 != 0xb3 {
        return probe.exit(-19);
    }
    probe.setup().load(firmware);
    let (devad, reg, value) = CPU_START;
    probe.access(MdioOp::Write, devad, reg, value);
    probe.exit(0)
}
