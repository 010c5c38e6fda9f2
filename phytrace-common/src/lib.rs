//! Types shared by phytrace's eBPF programs and its userspace loader.
//!
//! Everything here is `#[repr(C)]` and plain old data: the eBPF side writes these bytes into a
//! ring buffer and userspace reads them back as-is.
#![no_std]

/// Bytes kept of `mii_bus.id` (the kernel allows 61; longer ids are truncated).
pub const BUS_ID_LEN: usize = 32;
/// Bytes kept of the bound `phy_driver.name`.
pub const DRIVER_NAME_LEN: usize = 32;
/// Bytes of `net_device.name` (`IFNAMSIZ`).
pub const NETDEV_NAME_LEN: usize = 16;
/// How many callbacks may be open at once on one thread (callbacks can nest: the AX88772A's
/// `link_change_notify` re-inits the PHY, which runs `soft_reset`).
pub const MAX_CALLBACK_DEPTH: usize = 4;
const _: () = assert!(MAX_CALLBACK_DEPTH.is_power_of_two());
/// Index of the ring-buffer-full counter in the `DROPS` per-CPU array.
pub const DROP_RING_FULL: u32 = 0;
/// Index of the "callback stack overflowed" counter in the `DROPS` per-CPU array.
pub const DROP_STACK_OVERFLOW: u32 = 1;
/// Number of drop counters.
pub const DROP_COUNTERS: u32 = 2;

/// What a [`RawEvent`] records.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawKind {
    /// A driver callback was entered.
    CallbackEnter = 1,
    /// A driver callback returned.
    CallbackExit = 2,
    /// `__mdiobus_read` returned (value or negative errno in `ret`).
    MdioRead = 3,
    /// `__mdiobus_write` returned (0 or negative errno in `ret`).
    MdioWrite = 4,
    /// The self-test probe fired on entry (used by `phytrace doctor`).
    SelfTestEnter = 5,
    /// The self-test probe fired on return.
    SelfTestExit = 6,
    /// A module finished loading: its `MODULE:SYMBOL` probes are armed, its init is about to
    /// run (`module_load` tracepoint; the name is in `driver`).
    ModuleLoad = 7,
    /// A module was freed after unloading (`module_free` tracepoint; the name is in `driver`).
    ModuleFree = 8,
    /// The MAC was told the link is up (`mac_link_up`: speed, duplex, pause in `value`).
    MacLinkUp = 9,
    /// The MAC was told the link is down (`mac_link_down`).
    MacLinkDown = 10,
    /// `netif_carrier_on` (netdev in `netdev`).
    CarrierOn = 11,
    /// `netif_carrier_off`.
    CarrierOff = 12,
    /// `phylink_resolve` returned (latency; the PHY of the MAC calls it made, if any).
    PhylinkResolve = 13,
}

/// Bit of [`RawEvent::value`] set when a [`RawKind::MacLinkUp`] enables transmit pause.
pub const MAC_TX_PAUSE: u16 = 1;
/// Bit of [`RawEvent::value`] set when a [`RawKind::MacLinkUp`] enables receive pause.
pub const MAC_RX_PAUSE: u16 = 2;

impl RawKind {
    /// Decodes the kind byte of a [`RawEvent`].
    pub const fn from_u8(value: u8) -> Option<Self> {
        Some(match value {
            1 => Self::CallbackEnter,
            2 => Self::CallbackExit,
            3 => Self::MdioRead,
            4 => Self::MdioWrite,
            5 => Self::SelfTestEnter,
            6 => Self::SelfTestExit,
            7 => Self::ModuleLoad,
            8 => Self::ModuleFree,
            9 => Self::MacLinkUp,
            10 => Self::MacLinkDown,
            11 => Self::CarrierOn,
            12 => Self::CarrierOff,
            13 => Self::PhylinkResolve,
            _ => return None,
        })
    }
}

/// One event as the eBPF programs emit it.
///
/// Fields that do not apply to a kind are zero. The PHY is identified by `phydev` plus the
/// decoded identity (`bus_id`, `mdio_addr`, `phy_id`, `driver`), which is read from the
/// `phy_device` at the time of the event because identical Rust callbacks are shared by several
/// driver types.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RawEvent {
    /// `bpf_ktime_get_ns()` (`CLOCK_MONOTONIC`) when the event was emitted.
    pub ts_ns: u64,
    /// Time spent in the callback or MDIO access (exit events only).
    pub latency_ns: u64,
    /// The callback's probe key (callback events: the attach cookie userspace gave the probe),
    /// or the address of `__mdiobus_read`/`_write`.
    pub func_ip: u64,
    /// Probe key of the callback running on this thread when an MDIO access happened, or 0.
    pub caller_ip: u64,
    /// The `struct phy_device *`, or 0 when an MDIO address has no PHY attached.
    pub phydev: u64,
    /// Return value: callback result, MDIO value read, or negative errno.
    pub ret: i64,
    /// Thread id (kernel pid) that ran the probe.
    pub tid: u32,
    /// CPU the probe ran on.
    pub cpu: u32,
    /// `phy_device.phy_id`.
    pub phy_id: u32,
    /// `phy_device.speed` after the callback (exit events).
    pub speed: i32,
    /// `phy_device.state` at callback entry (enter and exit events).
    pub state_before: u32,
    /// `phy_device.state` at callback exit.
    pub state_after: u32,
    /// MDIO register number.
    pub regnum: u16,
    /// MDIO value written (writes) or read (successful reads).
    pub value: u16,
    /// [`RawKind`] as a byte.
    pub kind: u8,
    /// MDIO address of the PHY on its bus.
    pub mdio_addr: u8,
    /// `phy_device.link` after the callback (exit events).
    pub link: u8,
    /// `phy_device.duplex` after the callback (exit events).
    pub duplex: u8,
    /// Callback nesting depth on this thread (1 = outermost).
    pub depth: u8,
    /// Explicit padding, always zero.
    pub _pad: [u8; 7],
    /// `mii_bus.id`, NUL-padded.
    pub bus_id: [u8; BUS_ID_LEN],
    /// `phy_device.drv->name`, NUL-padded.
    pub driver: [u8; DRIVER_NAME_LEN],
    /// `net_device.name` of MAC-side events, NUL-padded.
    pub netdev: [u8; NETDEV_NAME_LEN],
}

impl RawEvent {
    /// An all-zero event, the starting point the eBPF side fills in.
    pub const ZERO: Self = Self {
        ts_ns: 0,
        latency_ns: 0,
        func_ip: 0,
        caller_ip: 0,
        phydev: 0,
        ret: 0,
        tid: 0,
        cpu: 0,
        phy_id: 0,
        speed: 0,
        state_before: 0,
        state_after: 0,
        regnum: 0,
        value: 0,
        kind: 0,
        mdio_addr: 0,
        link: 0,
        duplex: 0,
        depth: 0,
        _pad: [0; 7],
        bus_id: [0; BUS_ID_LEN],
        driver: [0; DRIVER_NAME_LEN],
        netdev: [0; NETDEV_NAME_LEN],
    };
}

/// Byte offsets into kernel structures, read from vmlinux BTF at load time and passed to the
/// eBPF programs as a global (Rust eBPF has no CO-RE).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelOffsets {
    /// `phy_device.mdio` + `mdio_device.bus`.
    pub phy_bus: u32,
    /// `phy_device.mdio` + `mdio_device.addr`.
    pub phy_addr: u32,
    /// `phy_device.phy_id`.
    pub phy_id: u32,
    /// `phy_device.drv`.
    pub phy_drv: u32,
    /// `phy_device.state`.
    pub phy_state: u32,
    /// `phy_device.speed`.
    pub phy_speed: u32,
    /// `phy_device.duplex`.
    pub phy_duplex: u32,
    /// Byte holding the `phy_device.link` bitfield.
    pub phy_link_byte: u32,
    /// Bit of `phy_device.link` inside that byte.
    pub phy_link_bit: u32,
    /// `phy_driver.name`.
    pub drv_name: u32,
    /// `mii_bus.id`.
    pub bus_id: u32,
    /// `mii_bus.mdio_map`.
    pub bus_mdio_map: u32,
    /// `mdio_device.flags` (`MDIO_DEVICE_FLAG_PHY` tells a PHY from another MDIO device).
    pub mdio_flags: u32,
    /// `module.name`.
    pub module_name: u32,
    /// `net_device.name`.
    pub netdev_name: u32,
    /// `net_device.phydev`.
    pub netdev_phydev: u32,
}

// SAFETY: `KernelOffsets` is `#[repr(C)]`, made of `u32`s only, with no padding; any bit pattern
// is valid.
#[cfg(feature = "user")]
unsafe impl aya::Pod for KernelOffsets {}

// SAFETY: `RawEvent` is `#[repr(C)]` plain old data with explicit padding; any bit pattern is
// valid.
#[cfg(feature = "user")]
unsafe impl aya::Pod for RawEvent {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_event_has_no_implicit_padding() {
        let fields = 6 * 8 + 6 * 4 + 2 * 2 + 5 + 7 + BUS_ID_LEN + DRIVER_NAME_LEN + NETDEV_NAME_LEN;
        assert_eq!(core::mem::size_of::<RawEvent>(), fields);
        assert_eq!(core::mem::size_of::<RawEvent>() % 8, 0);
    }

    #[test]
    fn kinds_round_trip() {
        for kind in [
            RawKind::CallbackEnter,
            RawKind::CallbackExit,
            RawKind::MdioRead,
            RawKind::MdioWrite,
            RawKind::SelfTestEnter,
            RawKind::SelfTestExit,
            RawKind::ModuleLoad,
            RawKind::ModuleFree,
            RawKind::MacLinkUp,
            RawKind::MacLinkDown,
            RawKind::CarrierOn,
            RawKind::CarrierOff,
            RawKind::PhylinkResolve,
        ] {
            assert_eq!(RawKind::from_u8(kind as u8), Some(kind));
        }
        assert_eq!(RawKind::from_u8(0), None);
    }
}
