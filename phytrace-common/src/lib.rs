//! Types shared by phytrace's eBPF programs and its userspace loader.
//!
//! Everything here is `#[repr(C)]` and plain old data: the eBPF side writes these bytes into a
//! ring buffer and userspace reads them back as-is. Every record starts with its [`RawKind`]
//! byte, which says which struct it is: [`RawEvent`] (most records), [`RawIdentity`] (a PHY or
//! bus named once, before the first event that refers to it) and [`RawNamed`] (a module or
//! network device event with its name).
#![no_std]

/// Bytes kept of `mii_bus.id` (the kernel allows 61; longer ids are truncated).
pub const BUS_ID_LEN: usize = 32;
/// Bytes kept of the bound `phy_driver.name`.
pub const DRIVER_NAME_LEN: usize = 32;
/// Bytes of a module name (`MODULE_NAME_LEN`) or network device name (`IFNAMSIZ` fits).
pub const NAME_LEN: usize = 56;
/// How many callbacks may be open at once on one thread (callbacks can nest: the AX88772A's
/// `link_change_notify` re-inits the PHY, which runs `soft_reset`). The loader may set a
/// smaller limit.
pub const MAX_CALLBACK_DEPTH: usize = 4;
const _: () = assert!(MAX_CALLBACK_DEPTH.is_power_of_two());

/// The kfunc call the eBPF programs make to `bpf_rdonly_cast`, as they are built: a BPF call
/// instruction (`BPF_JMP | BPF_CALL`, source register `BPF_PSEUDO_KFUNC_CALL`) whose immediate,
/// the kfunc's BTF id, is this kernel's and so set by the loader. In the byte order of a
/// little-endian BPF target; the placeholder id (`"phyt"`) is no kernel's.
pub const KFUNC_CALL_PLACEHOLDER: u64 = 0x7479_6870_0000_2085;

/// Why the kernel side lost records: indices of the `DROPS` per-CPU array.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// The ring buffer was full.
    RingFull = 0,
    /// A callback was entered with the thread's callback stack full: its entry and return
    /// are not recorded (the return consumes the count, not an outer frame).
    TooDeep = 1,
    /// A thread's open callbacks were lost: the kernel could not allocate the thread's state
    /// (task-local storage) at entry; the returns that found no frame are counted.
    MapFull = 2,
}

/// Number of drop counters.
pub const DROP_COUNTERS: u32 = 3;

/// What a record is.
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
    /// run (`module_load` tracepoint; a [`RawNamed`]).
    ModuleLoad = 7,
    /// A module was freed after unloading (`module_free` tracepoint; a [`RawNamed`]).
    ModuleFree = 8,
    /// The MAC was told the link is up (`mac_link_up`: speed, duplex, pause in `value`).
    MacLinkUp = 9,
    /// The MAC was told the link is down (`mac_link_down`).
    MacLinkDown = 10,
    /// `netif_carrier_on` (a [`RawNamed`]: the network device).
    CarrierOn = 11,
    /// `netif_carrier_off` (a [`RawNamed`]).
    CarrierOff = 12,
    /// `phylink_resolve` returned (latency; the PHY of the MAC calls it made, if any).
    PhylinkResolve = 13,
    /// `__mdiobus_c45_read` returned (devad in `devad`).
    MdioC45Read = 14,
    /// `__mdiobus_c45_write` returned.
    MdioC45Write = 15,
    /// A PHY or bus is named (a [`RawIdentity`]).
    Identity = 16,
}

/// Bit of [`RawEvent::value`] set when a [`RawKind::MacLinkUp`] enables transmit pause.
pub const MAC_TX_PAUSE: u16 = 1;
/// Bit of [`RawEvent::value`] set when a [`RawKind::MacLinkUp`] enables receive pause.
pub const MAC_RX_PAUSE: u16 = 2;

impl RawKind {
    /// Decodes the kind byte of a record.
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
            14 => Self::MdioC45Read,
            15 => Self::MdioC45Write,
            16 => Self::Identity,
            _ => return None,
        })
    }
}

/// One event as the eBPF programs emit it (72 bytes).
///
/// Fields that do not apply to a kind are zero. The PHY is `phydev` (or, for an MDIO access to
/// an address without a PHY, `bus` and `addr`), named by a [`RawIdentity`] earlier in the ring.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RawEvent {
    /// [`RawKind`] as a byte.
    pub kind: u8,
    /// Callback nesting depth on this thread (1 = outermost; MDIO: of the calling callback).
    pub depth: u8,
    /// `phy_device.state` at callback entry, or when an MDIO access returned.
    pub state_before: u8,
    /// `phy_device.state` after the callback.
    pub state_after: u8,
    /// `phy_device.link` when the event was taken.
    pub link: u8,
    /// `phy_device.duplex` when the event was taken.
    pub duplex: u8,
    /// MDIO address of the access.
    pub addr: u8,
    /// Clause-45 MMD of the access.
    pub devad: u8,
    /// `bpf_ktime_get_ns()` (`CLOCK_MONOTONIC`) when the event was emitted.
    pub ts_ns: u64,
    /// Time spent in the callback or MDIO access (exit events only).
    pub latency_ns: u64,
    /// The `struct phy_device *`, or 0.
    pub phydev: u64,
    /// The `struct mii_bus *` of an MDIO access, or 0.
    pub bus: u64,
    /// The callback's probe key (callback events), or the key of the callback running on this
    /// thread when an MDIO access happened (0: none).
    pub key: u64,
    /// Return value: callback result, MDIO value read, or negative errno.
    pub ret: i32,
    /// Thread id (kernel pid) that ran the probe.
    pub tid: u32,
    /// `phy_device.speed` when the event was taken.
    pub speed: i32,
    /// CPU the probe ran on.
    pub cpu: u16,
    /// MDIO register number.
    pub regnum: u16,
    /// MDIO value written (writes) or read (successful reads); MAC pause bits.
    pub value: u16,
    /// Explicit padding, always zero.
    pub _pad: [u8; 6],
}

impl RawEvent {
    /// An all-zero event, the starting point the eBPF side fills in.
    pub const ZERO: Self = Self {
        kind: 0,
        depth: 0,
        state_before: 0,
        state_after: 0,
        link: 0,
        duplex: 0,
        addr: 0,
        devad: 0,
        ts_ns: 0,
        latency_ns: 0,
        phydev: 0,
        bus: 0,
        key: 0,
        ret: 0,
        tid: 0,
        speed: 0,
        cpu: 0,
        regnum: 0,
        value: 0,
        _pad: [0; 6],
    };
}

/// Names a PHY (`phydev` ≠ 0) or an MDIO bus (`phydev` = 0): sent before the first event that
/// refers to it, and again when what it names changes (driver bound, device re-created).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RawIdentity {
    /// Always [`RawKind::Identity`].
    pub kind: u8,
    /// MDIO address of the PHY.
    pub addr: u8,
    /// Explicit padding, always zero.
    pub _pad: [u8; 2],
    /// `phy_device.phy_id`.
    pub phy_id: u32,
    /// The `struct phy_device *` named, or 0 for a bus.
    pub phydev: u64,
    /// Its `struct mii_bus *`.
    pub bus: u64,
    /// `mii_bus.id`, NUL-padded.
    pub bus_id: [u8; BUS_ID_LEN],
    /// `phy_device.drv->name`, NUL-padded (empty: no driver bound).
    pub driver: [u8; DRIVER_NAME_LEN],
}

impl RawIdentity {
    /// An all-zero identity record.
    pub const ZERO: Self = Self {
        kind: RawKind::Identity as u8,
        addr: 0,
        _pad: [0; 2],
        phy_id: 0,
        phydev: 0,
        bus: 0,
        bus_id: [0; BUS_ID_LEN],
        driver: [0; DRIVER_NAME_LEN],
    };
}

/// An event that carries a name: a module loaded or freed, a network device's carrier.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RawNamed {
    /// The event (its kind first).
    pub event: RawEvent,
    /// The module or network device name, NUL-padded.
    pub name: [u8; NAME_LEN],
}

/// Most call sites of `phy_driver` operations the programs can watch (slots of `CALL_SITES`).
pub const MAX_CALL_SITES: u32 = 256;

/// [`CallSite::flags`]: the site calls `phydev->drv->OP`; the check reads the op from the
/// driver bound to the PHY in the first argument. Otherwise the op is read from the
/// `struct phy_driver` in register [`CallSite::base_reg`].
pub const SITE_CHECK_BOUND_DRIVER: u16 = 1;
/// [`CallSite::flags`]: the call reads its target from memory (`call *OFF(%base)`), not from
/// [`CallSite::target_reg`].
pub const SITE_TARGET_IN_MEMORY: u16 = 2;
/// [`CallSite::flags`]: set by the programs when a hit failed the check; the site reports
/// nothing from then on.
pub const SITE_DISABLED: u16 = 4;
/// [`CallSite::flags`]: a phylink call of a MAC op (`pl->mac_ops->OP`): the check reads the
/// ops from the holder in register [`CallSite::base_reg`] (at
/// [`CallSite::holder_displacement`]), and the holder's `config` (at
/// [`CallSite::arg0_displacement`]) must be the call's first argument.
pub const SITE_CHECK_HOLDER: u16 = 8;
/// [`CallSite::flags`]: the call is a tail call (a jump): the stack holds the caller's return
/// address above the arguments passed on it.
pub const SITE_TAIL_CALL: u16 = 16;

/// Most call sites of `phylink_mac_ops` operations the programs can watch (slots of
/// `MAC_SITES`).
pub const MAX_MAC_SITES: u32 = 32;

/// Bit 63 of a callback key: the key was made at a call site (op and target address) rather
/// than handed out for a probed symbol (small integers).
pub const CALL_SITE_KEY: u64 = 1 << 63;
/// Bits of the target address a call-site key keeps: kernel addresses are sign-extended from
/// below bit 57 (x86_64 with 5-level paging; arm64 at most from bit 52).
pub const CALL_SITE_ADDRESS_BITS: u32 = 58;
/// Ops a call-site key can name (the bits between the address and [`CALL_SITE_KEY`]).
pub const CALL_SITE_OPS: u16 = 32;

/// The callback key of a call to `target` as operation `op` (an index into the loader's op
/// table).
pub const fn call_site_key(op: u16, target: u64) -> u64 {
    CALL_SITE_KEY
        | ((op as u64 & (CALL_SITE_OPS as u64 - 1)) << CALL_SITE_ADDRESS_BITS)
        | (target & ((1 << CALL_SITE_ADDRESS_BITS) - 1))
}

/// The op index and target address a call-site key was made of.
pub const fn split_call_site_key(key: u64) -> Option<(u16, u64)> {
    if key & CALL_SITE_KEY == 0 {
        return None;
    }
    let op = ((key >> CALL_SITE_ADDRESS_BITS) & (CALL_SITE_OPS as u64 - 1)) as u16;
    let low = key & ((1 << CALL_SITE_ADDRESS_BITS) - 1);
    // Sign-extend from the top kept bit: kernel addresses have all high bits set.
    let shift = 64 - CALL_SITE_ADDRESS_BITS;
    Some((op, (((low << shift) as i64) >> shift) as u64))
}

/// One instruction where phylib calls a `phy_driver` operation, as the programs check it.
/// Registers are byte offsets into the architecture's `struct pt_regs`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallSite {
    /// The operation's index in the loader's op table (part of the callback key).
    pub op: u16,
    /// `SITE_*` bits.
    pub flags: u16,
    /// The operation's offset in `struct phy_driver`.
    pub op_offset: u32,
    /// Register holding the call target (unless `SITE_TARGET_IN_MEMORY`; with
    /// `SITE_CHECK_HOLDER` and it, the register the target is read through).
    pub target_reg: u32,
    /// Register holding the `struct phy_driver *` the target was loaded from; with
    /// `SITE_CHECK_HOLDER`, the register holding the ops struct's holder.
    pub base_reg: u32,
    /// Hits that failed the check (the site is disabled at the first).
    pub mismatches: u32,
    /// `SITE_CHECK_HOLDER`: where the ops pointer is from the holder's register.
    pub holder_displacement: i32,
    /// `SITE_CHECK_HOLDER`: where the first argument is from the holder's register.
    pub arg0_displacement: i32,
    /// Explicit padding, always zero.
    pub _pad: u32,
    /// MAC sites: the calls reported at this site (checked hits).
    pub hits: u64,
}

// SAFETY: `CallSite` is `#[repr(C)]` plain integers with no implicit padding; any bit pattern
// is valid.
#[cfg(feature = "user")]
unsafe impl aya::Pod for CallSite {}

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

/// The most bytes the kernel reader (`kernel_read`) copies per request: the size of
/// [`KernelReadAnswer::bytes`], which bounds the copy for the verifier.
pub const KERNEL_READ_CHUNK: usize = 1 << 20;

/// What the kernel reader is asked: `len` bytes of kernel memory at `address`. It answers the
/// `getppid` call whose (ignored) first argument is `token`, which the requesting thread makes
/// next: a value no other caller passes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelReadRequest {
    /// Numbers the requests (from 1); the answer carries the one it answers.
    pub seq: u64,
    pub address: u64,
    /// Never 0.
    pub token: u64,
    /// At most [`KERNEL_READ_CHUNK`].
    pub len: u32,
    /// Explicit padding, always zero.
    pub _pad: u32,
}

// SAFETY: `KernelReadRequest` is `#[repr(C)]` plain integers with no implicit padding; any bit
// pattern is valid.
#[cfg(feature = "user")]
unsafe impl aya::Pod for KernelReadRequest {}

/// What the kernel reader answers, in its map's one value: the request's `seq` once it ran for
/// it, the helper's result (0, or a negative error number) and the bytes read.
#[repr(C)]
pub struct KernelReadAnswer {
    pub seq: u64,
    pub error: i64,
    pub bytes: [u8; KERNEL_READ_CHUNK],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_have_no_implicit_padding() {
        assert_eq!(size_of::<RawEvent>(), 8 + 5 * 8 + 3 * 4 + 3 * 2 + 6);
        assert_eq!(size_of::<RawEvent>(), 72);
        assert_eq!(
            size_of::<RawIdentity>(),
            8 + 2 * 8 + BUS_ID_LEN + DRIVER_NAME_LEN
        );
        assert_eq!(size_of::<RawNamed>(), size_of::<RawEvent>() + NAME_LEN);
        for size in [
            size_of::<RawEvent>(),
            size_of::<RawIdentity>(),
            size_of::<RawNamed>(),
        ] {
            assert_eq!(size % 8, 0);
        }
    }

    #[test]
    fn every_record_starts_with_its_kind() {
        assert_eq!(core::mem::offset_of!(RawEvent, kind), 0);
        assert_eq!(core::mem::offset_of!(RawIdentity, kind), 0);
        assert_eq!(core::mem::offset_of!(RawNamed, event), 0);
    }

    #[test]
    fn call_site_keys_round_trip() {
        for target in [
            0xffff_ffff_8123_4560_u64,
            0xffff_8000_0810_0000,
            0xfff0_0000_0000_1000,
        ] {
            let key = call_site_key(7, target);
            assert_eq!(split_call_site_key(key), Some((7, target)));
            assert_ne!(key & CALL_SITE_KEY, 0);
        }
        assert_eq!(split_call_site_key(3), None);
        assert_eq!(size_of::<CallSite>(), 40);
    }

    #[test]
    fn the_kernel_reader_types_have_no_implicit_padding() {
        assert_eq!(size_of::<KernelReadRequest>(), 3 * 8 + 2 * 4);
        assert_eq!(core::mem::offset_of!(KernelReadAnswer, bytes), 16);
        assert_eq!(size_of::<KernelReadAnswer>(), 16 + KERNEL_READ_CHUNK);
    }

    #[test]
    fn kinds_round_trip() {
        for value in 1..=16 {
            assert_eq!(RawKind::from_u8(value).map(|k| k as u8), Some(value));
        }
        assert_eq!(RawKind::from_u8(0), None);
        assert_eq!(RawKind::from_u8(17), None);
    }
}
