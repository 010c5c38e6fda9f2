//! Decoded events: what the model, the capture files, the TUI and the checker work on.
//!
//! A [`RawEvent`](phytrace_common::RawEvent) from the kernel becomes an [`Event`] once its
//! addresses are resolved to callbacks and its strings decoded (see `records::decode`). A capture
//! file stores `Event`s, so a replay feeds the same type to the same code.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Immutable shared text (bus ids, driver, callback and state names): copying an event copies
/// a reference count, not the text, which keeps `record`'s per-event cost down.
pub type Text = Arc<str>;

fn is_empty(text: &Text) -> bool {
    text.is_empty()
}

/// One thing that happened, with when and where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Time in nanoseconds on the traced machine's `CLOCK_MONOTONIC`.
    pub ts_ns: u64,
    /// CPU the event was recorded on.
    pub cpu: u32,
    /// Kernel thread id that caused it (0 for events phytrace itself emits).
    pub tid: u32,
    /// The PHY concerned, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phy: Option<PhyRef>,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Identity of a PHY as read from its `struct phy_device` when the event happened.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PhyRef {
    /// `mii_bus.id`, e.g. `phy_sim-0` or `usb-001:004`.
    pub bus: Text,
    /// MDIO address on that bus.
    pub addr: u8,
    /// `phy_device.phy_id` (0 when unknown, e.g. an access to an address without a PHY).
    pub phy_id: u32,
    /// Name of the bound `phy_driver`, empty when none is bound.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub driver: Text,
}

impl PhyRef {
    /// The `bus:addr` key phylib itself prints (`phy_sim-0:01`).
    pub fn key(&self) -> String {
        format!("{}:{:02x}", self.bus, self.addr)
    }
}

/// The PHYs a `--phy FILTER` names: those whose `bus:addr` key, bus id or driver name contains
/// the filter's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhyFilter(String);

impl From<String> for PhyFilter {
    /// The PHYs named by `text` (as `--phy` parses it).
    fn from(text: String) -> Self {
        Self(text)
    }
}

impl PhyFilter {
    /// Whether `phy` is one of them.
    pub fn matches(&self, phy: &PhyRef) -> bool {
        let text = self.0.as_str();
        phy.bus.contains(text) || phy.driver.contains(text) || phy.key().contains(text)
    }

    /// Whether a session filtered by PHY keeps `event`: it concerns one of them, or no PHY.
    pub fn keeps(&self, event: &Event) -> bool {
        event.phy.as_ref().is_none_or(|phy| self.matches(phy))
    }
}

/// A driver callback, resolved from the probed address.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Callback {
    /// The `phy_driver` operation, e.g. `read_status` (the `_callback` suffix removed).
    pub name: Text,
    /// The Rust type implementing it, e.g. `ax88796b_rust::PhyAX88772A`. Several drivers may
    /// share it: identical code is merged, so the PHY is told by [`Event::phy`].
    pub driver_type: Text,
}

/// A `phy_state` value with its name as the traced kernel's BTF spells it (e.g. `NOLINK`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PhyState {
    /// Numeric value of `enum phy_state`.
    pub value: u32,
    /// Enumerator name without the `PHY_` prefix.
    pub name: Text,
}

/// Direction of an MDIO access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MdioOp {
    /// `__mdiobus_read`.
    Read,
    /// `__mdiobus_write`.
    Write,
}

impl MdioOp {
    /// `read` or `write`, as captures spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
        }
    }
}

/// Link state read from `phy_device` after a callback.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkState {
    /// `phy_device.link`.
    pub up: bool,
    /// `phy_device.speed` in Mb/s (`-1` for unknown, as `SPEED_UNKNOWN`).
    pub speed: i32,
    /// `phy_device.duplex`: `half`, `full` or `unknown`.
    pub duplex: Duplex,
}

/// `DUPLEX_*` from `include/uapi/linux/ethtool.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Duplex {
    /// `DUPLEX_HALF`.
    Half,
    /// `DUPLEX_FULL`.
    Full,
    /// `DUPLEX_UNKNOWN` or anything else.
    Unknown,
}

impl Duplex {
    /// Decodes the kernel's `DUPLEX_*` value.
    pub fn from_kernel(value: u8) -> Self {
        match value {
            0 => Self::Half,
            1 => Self::Full,
            _ => Self::Unknown,
        }
    }
}

/// The kinds of [`EventKind`], the one list of them: named as records and `dump --format json`
/// spell them ([`Kind::name`], serde's `kind` tag), and as `dump --kind` takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// Callback entries.
    #[value(name = "enter", alias = "callback_enter")]
    CallbackEnter,
    /// Callback returns.
    #[value(name = "exit", alias = "callback_exit")]
    CallbackExit,
    /// MDIO register accesses.
    Mdio,
    /// Probes attached to a module.
    Attached,
    /// Module unloaded.
    Detached,
    /// Events lost by the kernel side.
    Lost,
    /// The MAC side: phylink_resolve, mac_link_up/down, carrier.
    Mac,
    /// Kernel messages (the kernel's log lines).
    Kmsg,
}

impl Kind {
    pub const ALL: [Self; 8] = [
        Self::CallbackEnter,
        Self::CallbackExit,
        Self::Mdio,
        Self::Attached,
        Self::Detached,
        Self::Lost,
        Self::Mac,
        Self::Kmsg,
    ];

    /// The name records spell (`callback_enter`).
    pub fn name(self) -> &'static str {
        match self {
            Self::CallbackEnter => "callback_enter",
            Self::CallbackExit => "callback_exit",
            Self::Mdio => "mdio",
            Self::Attached => "attached",
            Self::Detached => "detached",
            Self::Lost => "lost",
            Self::Mac => "mac",
            Self::Kmsg => "kmsg",
        }
    }

    /// The kind records name `name`.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// What an [`Event`] records.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// phylib called a driver callback.
    CallbackEnter {
        /// The callback.
        callback: Callback,
        /// Nesting depth on this thread (1 = called by phylib directly).
        depth: u8,
        /// `phy_device.state` at entry.
        state: PhyState,
    },
    /// A driver callback returned.
    CallbackExit {
        /// The callback.
        callback: Callback,
        /// Nesting depth on this thread.
        depth: u8,
        /// Time spent inside, in nanoseconds.
        latency_ns: u64,
        /// Return value (`0` or a negative errno for most callbacks).
        ret: i64,
        /// `phy_device.state` at entry.
        state_before: PhyState,
        /// `phy_device.state` at return.
        state_after: PhyState,
        /// Link, speed and duplex at return.
        link: LinkState,
    },
    /// A register access on the MDIO bus (`__mdiobus_read` / `__mdiobus_write`).
    Mdio {
        /// Read or write.
        op: MdioOp,
        /// Register number.
        reg: u16,
        /// The MMD of a Clause-45 access (`__mdiobus_c45_read`/`_write`); none for Clause 22.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        devad: Option<u8>,
        /// Value read or written (meaningless when `error` is set on a read).
        value: u16,
        /// Negative errno returned by the bus, if the access failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<i32>,
        /// Time the access took, in nanoseconds.
        latency_ns: u64,
        /// The driver callback running on this thread when the access happened.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        caller: Option<Callback>,
        /// `phy_device.state` when the access returned (absent if the address has no PHY).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<PhyState>,
        /// `phy_device` link, speed and duplex when the access returned (absent if the
        /// address has no PHY, and in captures before version 3).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        link: Option<LinkState>,
    },
    /// phytrace attached its probes to a driver module (at start, or after it was loaded).
    Attached {
        /// Module name, e.g. `ax88796b_rust`.
        module: String,
        /// Number of callbacks probed in it.
        callbacks: usize,
        /// True when this follows an unload of the same module.
        reattached: bool,
        /// What the capture holds of this module instance's callbacks (absent before
        /// version 3).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        guarantee: Option<Guarantee>,
    },
    /// A traced driver module went away; its callbacks are no longer probed.
    Detached {
        /// Module name.
        module: String,
    },
    /// The kernel side lost events; counted by cause, never silent.
    Lost {
        /// Events lost since the previous `Lost` event of this cause.
        count: u64,
        /// Why (absent in captures before version 3, where it was mostly a full ring).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cause: Option<LossCause>,
    },
    /// The MAC side of the link: what phylink and the MAC driver did with what the PHY
    /// reported (the PHY is the one the MAC is attached to, when known).
    Mac {
        /// What happened.
        change: MacChange,
    },
    /// A line of the kernel's log (`printk`), where it was printed (version 5). The PHY is the
    /// one whose PHY, bus or MAC device the line names, when known.
    Kmsg {
        /// Syslog level, 0 (`emerg`) to 7 (`debug`); absent when the kernel's log could not be
        /// read for it (see [`KmsgLevel`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        level: Option<u8>,
        /// The line, without its level and time.
        text: Text,
    },
}

impl EventKind {
    /// Which kind this is.
    pub fn kind(&self) -> Kind {
        match self {
            Self::CallbackEnter { .. } => Kind::CallbackEnter,
            Self::CallbackExit { .. } => Kind::CallbackExit,
            Self::Mdio { .. } => Kind::Mdio,
            Self::Attached { .. } => Kind::Attached,
            Self::Detached { .. } => Kind::Detached,
            Self::Lost { .. } => Kind::Lost,
            Self::Mac { .. } => Kind::Mac,
            Self::Kmsg { .. } => Kind::Kmsg,
        }
    }
}

/// The syslog levels of kernel messages (`KERN_EMERG` … `KERN_DEBUG`).
pub struct KmsgLevel;

impl KmsgLevel {
    /// Names by level, as `dmesg` and reports spell them.
    pub const NAMES: [&'static str; 8] = [
        "emerg", "alert", "crit", "err", "warn", "notice", "info", "debug",
    ];

    /// The name of `level` (`unknown` when absent or out of range).
    pub fn name(level: Option<u8>) -> &'static str {
        level
            .and_then(|l| Self::NAMES.get(usize::from(l)))
            .copied()
            .unwrap_or("unknown")
    }
}

/// Why the kernel side lost records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossCause {
    /// The ring buffer was full: records lost.
    RingFull,
    /// Callbacks entered with their thread's callback stack full: neither their entry nor
    /// their return was recorded (their MDIO accesses were, attributed to the outer one).
    TooDeep,
    /// Callback returns whose thread's state the kernel could not allocate at their entry.
    MapFull,
    /// Callback returns the kernel did not report (kretprobe instances exhausted, counted by
    /// the kernel in `kprobe_profile`).
    MissedReturn,
}

impl LossCause {
    /// Every cause, in the order reports list them.
    pub const ALL: [Self; 4] = [
        Self::RingFull,
        Self::TooDeep,
        Self::MapFull,
        Self::MissedReturn,
    ];

    /// The name captures, `dump` and reports use.
    pub fn name(self) -> &'static str {
        match self {
            Self::RingFull => "ring_full",
            Self::TooDeep => "too_deep",
            Self::MapFull => "map_full",
            Self::MissedReturn => "missed_return",
        }
    }
}

/// Events lost, by [`LossCause`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LossCounts {
    #[serde(default)]
    pub ring_full: u64,
    #[serde(default)]
    pub too_deep: u64,
    #[serde(default)]
    pub map_full: u64,
    #[serde(default)]
    pub missed_return: u64,
    /// `lost` records without a cause (captures before version 3).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unknown: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl LossCounts {
    /// Adds `count` lost for `cause`.
    pub fn add(&mut self, cause: Option<LossCause>, count: u64) {
        let slot = match cause {
            Some(LossCause::RingFull) => &mut self.ring_full,
            Some(LossCause::TooDeep) => &mut self.too_deep,
            Some(LossCause::MapFull) => &mut self.map_full,
            Some(LossCause::MissedReturn) => &mut self.missed_return,
            None => &mut self.unknown,
        };
        *slot = slot.saturating_add(count);
    }

    /// The counts that are not zero, with their cause's name.
    pub fn nonzero(&self) -> Vec<(&'static str, u64)> {
        [
            (LossCause::RingFull.name(), self.ring_full),
            (LossCause::TooDeep.name(), self.too_deep),
            (LossCause::MapFull.name(), self.map_full),
            (LossCause::MissedReturn.name(), self.missed_return),
            ("unknown", self.unknown),
        ]
        .into_iter()
        .filter(|(_, count)| *count > 0)
        .collect()
    }
}

/// A change on the MAC side of a link.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum MacChange {
    /// `phylink_resolve` ran: it resolves the link from the PHY's state and calls the MAC.
    Resolve {
        /// Time it took, in nanoseconds.
        latency_ns: u64,
    },
    /// The MAC was configured for a link that came up (`mac_link_up`).
    LinkUp {
        /// Mb/s.
        speed: i32,
        duplex: Duplex,
        tx_pause: bool,
        rx_pause: bool,
    },
    /// The MAC was told the link went down (`mac_link_down`).
    LinkDown,
    /// The network device's carrier changed (`netif_carrier_on`/`_off`).
    Carrier {
        /// `net_device.name`.
        netdev: Text,
        up: bool,
    },
}

impl MacChange {
    /// The name used in captures, `dump` and check patterns.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Resolve { .. } => "phylink_resolve",
            Self::LinkUp { .. } => "mac_link_up",
            Self::LinkDown => "mac_link_down",
            Self::Carrier { up: true, .. } => "carrier_on",
            Self::Carrier { up: false, .. } => "carrier_off",
        }
    }
}

/// What a capture of a module's callbacks can be trusted to hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Guarantee {
    /// Armed by the kernel as the module loads: every callback from the first one on.
    FirstCallback,
    /// Attached after the module was seen loaded: callbacks before that are missed.
    AfterLoad,
}

impl Guarantee {
    /// The name a capture writes.
    pub fn name(self) -> &'static str {
        match self {
            Self::FirstCallback => "first_callback",
            Self::AfterLoad => "after_load",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_events;

    fn event(phy: Option<PhyRef>) -> Event {
        let lost = EventKind::Lost {
            count: 1,
            cause: None,
        };
        Event {
            phy,
            ..test_events::event(0, lost)
        }
    }

    #[test]
    fn phy_filter_matches_key_bus_and_driver() {
        let phy = test_events::phy("phy_sim-0", 1, 0x003b1861, "Asix Electronics AX88772A");
        let e = event(Some(phy));
        let keeps = |filter: Option<&str>, e: &Event| {
            filter.is_none_or(|f| PhyFilter::from(f.to_owned()).keeps(e))
        };
        assert!(keeps(Some("phy_sim-0:01"), &e));
        assert!(keeps(Some("AX88772A"), &e));
        assert!(!keeps(Some("phy_sim-0:02"), &e));
        assert!(keeps(None, &e));
        assert!(keeps(Some("anything"), &event(None)));
    }
}
