//! What a live session was, as its capture's header tells it: when it began, what it
//! probed and how, and the kernel's `phy_state` names its records need.

use serde::{Deserialize, Serialize};

use super::clock::ClockRef;
use crate::event::{Guarantee, PhyState};

/// A live tracing session described: what the tracer produces and a capture header holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// The clocks read as it began.
    pub clock: ClockRef,
    /// The callbacks probed at its start.
    pub probes: Vec<ProbeEntry>,
    /// `enum phy_state` of the traced kernel.
    pub phy_states: Vec<PhyState>,
    /// How each followed driver module was armed.
    pub arming: Vec<ArmingEntry>,
    /// How the MDIO accessors were probed.
    pub mdio_probes: MdioProbes,
    /// How driver callbacks were probed (`callsite` or `symbol`); `None` if they could not be.
    pub callback_probes: Option<String>,
    /// The call sites probed, when callbacks are probed there.
    pub call_sites: Vec<CallSiteEntry>,
    /// The bus-op calls of inlined MDIO accessors probed.
    pub mdio_sites: Vec<MdioSiteEntry>,
    /// What it takes of the kernel's log.
    pub kmsg: KmsgHeader,
}

/// What a capture holds of the kernel's log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KmsgHeader {
    /// `related` (lines about the traced PHYs, buses, MAC devices and driver modules) or `all`.
    pub scope: String,
    /// Why no line could be taken, if so (no tracefs, no access).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// `kernel.dmesg_restrict` was set: the lines are hidden from unprivileged readers on the
    /// traced machine (`dmesg` needs `CAP_SYSLOG` there).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restricted: bool,
}

impl KmsgHeader {
    /// What a reader should know of the capture's kernel messages, if anything: none could be
    /// taken, or they are hidden from unprivileged readers where they were recorded.
    pub fn note(&self) -> Option<String> {
        match (&self.unavailable, self.restricted) {
            (Some(why), _) => Some(format!("kernel messages: none recorded ({why})")),
            (None, true) => Some(
                "kernel messages: restricted on the traced machine (kernel.dmesg_restrict=1: \
                 unprivileged users may not read them there)"
                    .to_owned(),
            ),
            (None, false) => None,
        }
    }
}

/// A call site of a driver op probed by the session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSiteEntry {
    /// The call instruction, `function+0xOFF`.
    pub call: String,
    /// The `phy_driver` op called there.
    pub op: String,
    /// Where its return is seen, `function+0xOFF`; absent for a tail call (at the function's
    /// return).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ret: Option<String>,
}

/// A bus-op call of an MDIO accessor's inlined copy, probed as the accessor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MdioSiteEntry {
    /// The call instruction, `function+0xOFF`.
    pub call: String,
    /// The instruction it returns to, `function+0xOFF`.
    pub ret: String,
    /// The accessor copied (`__mdiobus_read`).
    pub accessor: String,
}

/// The attach type of the MDIO accessor probes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MdioProbes {
    /// fentry/fexit programs on BPF trampolines.
    Fentry,
    /// kprobe/kretprobe programs.
    Kprobe,
}

impl MdioProbes {
    /// The name `probes`, `doctor`, `--mdio-probes` and the header use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fentry => "fentry",
            Self::Kprobe => "kprobe",
        }
    }
}

/// How one followed module's callbacks were armed at the start of the session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArmingEntry {
    pub module: String,
    /// `first_callback` or `after_load` (see [`Guarantee`]).
    pub guarantee: Guarantee,
    /// Where the callbacks were read (module file or `/proc/kallsyms`), or why they could not
    /// be read before the module loads.
    pub source: String,
}

/// One probed callback.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeEntry {
    /// Kernel module, e.g. `ax88796b_rust`.
    pub module: String,
    /// Rust type implementing the driver, e.g. `ax88796b_rust::PhyAX88772A`.
    pub driver_type: String,
    /// `phy_driver` operation, e.g. `read_status`.
    pub callback: String,
    /// Kernel address, written as a hex string (JSON numbers lose precision above 2^53).
    #[serde(with = "hex_u64")]
    pub address: u64,
    /// Demangled symbol.
    pub symbol: String,
}

/// Serializes a `u64` as a `0x…` hex string; reads it back (a plain number is accepted too).
mod hex_u64 {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(value: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{value:#x}"))
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum HexOrNumber {
        Hex(String),
        Number(u64),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        match HexOrNumber::deserialize(d)? {
            HexOrNumber::Number(n) => Ok(n),
            HexOrNumber::Hex(s) => {
                let digits = s
                    .strip_prefix("0x")
                    .or_else(|| s.strip_prefix("0X"))
                    .unwrap_or(&s);
                u64::from_str_radix(digits, 16)
                    .map_err(|e| D::Error::custom(format!("address {s:?}: {e}")))
            }
        }
    }
}
