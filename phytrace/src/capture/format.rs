//! The records of a capture file (see `docs/capture-format.md`).
//!
//! Line 1 is a [`Header`], then one event record per [`Event`], then a [`Trailer`]. Every record
//! is a JSON object whose `type` field says which it is, except the ring-buffer records of a
//! [`Encoding::Binary`] capture, which are kept as the kernel wrote them. Events use a flat, compact form
//! (`WireEvent`) rather than the serde form of [`Event`]: PHYs and callbacks are numbers
//! defined once by `phy` and `callback` records (see [`super::dictionary`]).

use std::borrow::Cow;

use phytrace_common::RawKind;
use serde::{Deserialize, Serialize};

use super::dictionary::{CallbackDef, Definition, Interner, PhyDef, Tables};
use crate::event::{
    Duplex, Event, EventKind, Guarantee, Kind, LinkState, LossCause, LossCounts, MacChange, MdioOp,
    PhyState,
};
use crate::records::{
    clock::ClockRef,
    session::{
        ArmingEntry, CallSiteEntry, KmsgHeader, MdioProbes, MdioSiteEntry, ProbeEntry, Session,
    },
};

/// Value of the header's `format` field.
pub const FORMAT_NAME: &str = "phytrace-capture";
/// Version of the format this code writes; readers accept this version and older ones.
/// Version 2: `attached`/`detached` are stamped by the kernel where the module loaded or was
/// freed, and the header says how each followed module was armed (`arming`).
/// Version 3: the clock is named for what it is (`mono_ns`), the header says how MDIO accesses
/// were probed (`mdio_probes`), MDIO records carry the PHY's link and a Clause-45 `devad`,
/// `lost` records their `cause`, and the trailer counts losses by cause and the records the
/// tracer could not read (`discarded`).
/// Version 4: the header's `encoding`; `binary` captures (framed records, driver events as the
/// kernel's ring buffer held them, `probe` records naming their keys).
/// Version 5: `kmsg` events (the kernel's log lines, in their place), the header's `kmsg`,
/// `callback_probes` and `call_sites`.
/// Version 6: the trailer counts MDIO writes and Clause 45 accesses apart (`mdio_write`,
/// `mdio_c45`).
pub const FORMAT_VERSION: u32 = 6;

/// First record: what was traced, where, and how to read the timestamps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// [`FORMAT_VERSION`] of the writer.
    pub format_version: u32,
    /// Version of the phytrace that wrote the file.
    pub phytrace_version: String,
    /// `uname -r` of the traced kernel.
    pub kernel_release: String,
    /// Host name of the traced machine.
    pub hostname: String,
    /// `CLOCK_MONOTONIC` paired with the wall clock at the start.
    pub clock: ClockRef,
    /// Callbacks probed at the start.
    pub probes: Vec<ProbeEntry>,
    /// `enum phy_state` of the traced kernel (from its BTF).
    pub phy_states: Vec<PhyState>,
    /// How each followed driver module was armed: which callbacks the capture can be trusted
    /// to hold (absent in version 1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arming: Vec<ArmingEntry>,
    /// How MDIO accesses were probed: `fentry` (BPF trampolines) or `kprobe` (absent before
    /// version 3, where it was `kprobe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mdio_probes: Option<MdioProbes>,
    /// How the records after this line are stored (absent before version 4: `jsonl`).
    #[serde(default, skip_serializing_if = "Encoding::is_jsonl")]
    pub encoding: Encoding,
    /// How driver callbacks were probed: `callsite` (at phylib's calls of each op) or
    /// `symbol` (on the Rust drivers' callbacks); absent: `symbol`, or none could be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_probes: Option<String>,
    /// The call sites probed (`callsite` only): `function+0xOFF` and the op it calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub call_sites: Vec<CallSiteEntry>,
    /// The bus-op calls of inlined MDIO accessors probed (absent where the kernel calls its
    /// accessors).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mdio_sites: Vec<MdioSiteEntry>,
    /// Which kernel messages the capture holds (absent before version 5: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kmsg: Option<KmsgHeader>,
}

/// How a capture stores its records after the header line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// One JSON object per line: events decoded, readable with `jq`.
    #[default]
    Jsonl,
    /// Length-prefixed frames: driver events as the kernel's ring buffer held them (decoded
    /// when read), everything else as JSON. Several times cheaper to write.
    Binary,
}

impl Encoding {
    fn is_jsonl(&self) -> bool {
        *self == Self::Jsonl
    }
}

impl Header {
    /// A header of the current format version, written by this phytrace.
    pub fn new(
        kernel_release: String,
        hostname: String,
        clock: ClockRef,
        probes: Vec<ProbeEntry>,
        phy_states: Vec<PhyState>,
    ) -> Self {
        Self {
            format: FORMAT_NAME.to_owned(),
            format_version: FORMAT_VERSION,
            phytrace_version: env!("CARGO_PKG_VERSION").to_owned(),
            kernel_release,
            hostname,
            clock,
            probes,
            phy_states,
            arming: Vec::new(),
            mdio_probes: None,
            encoding: Encoding::Jsonl,
            callback_probes: None,
            call_sites: Vec::new(),
            mdio_sites: Vec::new(),
            kmsg: None,
        }
    }

    /// The header of `session`, traced on the machine phytrace runs on: kernel release and
    /// host name come from `/proc/sys/kernel` (empty if unreadable).
    pub fn for_this_host(session: Session) -> Self {
        let read = |file: &str| {
            std::fs::read_to_string(format!("/proc/sys/kernel/{file}"))
                .map(|s| s.trim().to_owned())
                .unwrap_or_default()
        };
        Self {
            arming: session.arming,
            mdio_probes: Some(session.mdio_probes),
            callback_probes: session.callback_probes,
            call_sites: session.call_sites,
            mdio_sites: session.mdio_sites,
            kmsg: Some(session.kmsg),
            ..Self::new(
                read("osrelease"),
                read("hostname"),
                session.clock,
                session.probes,
                session.phy_states,
            )
        }
    }
}

/// Last record: what the file holds, for a check that nothing was cut.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trailer {
    /// `CLOCK_MONOTONIC` time when the capture was closed.
    pub end_ns: u64,
    /// Event records written.
    pub events: u64,
    /// Event records written, per kind.
    pub counts: KindCounts,
    /// Events the kernel side lost (sum of the `lost` events).
    pub lost: u64,
    /// The same, by cause (version 3).
    #[serde(default)]
    pub lost_by_cause: LossCounts,
    /// Ring-buffer records the tracer could not read (unknown kind or too short), discarded
    /// (`dropped` before version 3, always 0 there).
    #[serde(default, alias = "dropped")]
    pub discarded: u64,
}

/// Event records per kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindCounts {
    /// `callback_enter` records.
    pub callback_enter: u64,
    /// `callback_exit` records.
    pub callback_exit: u64,
    /// `mdio` records.
    pub mdio: u64,
    /// `attached` records.
    pub attached: u64,
    /// `detached` records.
    pub detached: u64,
    /// `lost` records.
    pub lost: u64,
    /// `mac` records (version 2).
    #[serde(default)]
    pub mac: u64,
    /// `kmsg` records (version 5).
    #[serde(default)]
    pub kmsg: u64,
    /// Of the `mdio` records, the writes (version 6).
    #[serde(default)]
    pub mdio_write: u64,
    /// Of the `mdio` records, the Clause 45 accesses (version 6).
    #[serde(default)]
    pub mdio_c45: u64,
}

impl KindCounts {
    /// Counts one event.
    pub fn count(&mut self, kind: &EventKind) {
        let slot = match kind {
            EventKind::CallbackEnter { .. } => &mut self.callback_enter,
            EventKind::CallbackExit { .. } => &mut self.callback_exit,
            EventKind::Mdio { op, devad, .. } => {
                self.count_mdio(*op == MdioOp::Write, devad.is_some());
                return;
            }
            EventKind::Attached { .. } => &mut self.attached,
            EventKind::Detached { .. } => &mut self.detached,
            EventKind::Lost { .. } => &mut self.lost,
            EventKind::Mac { .. } => &mut self.mac,
            EventKind::Kmsg { .. } => &mut self.kmsg,
        };
        *slot += 1;
    }

    /// Counts a ring-buffer record of `kind` as the event it decodes into; false for records
    /// that are not events (identities; the self-test; module loads, which the tracer turns
    /// into its own events).
    pub(crate) fn count_raw(&mut self, kind: RawKind) -> bool {
        let slot = match kind {
            RawKind::CallbackEnter => &mut self.callback_enter,
            RawKind::CallbackExit => &mut self.callback_exit,
            RawKind::MdioRead => return self.count_mdio(false, false),
            RawKind::MdioWrite => return self.count_mdio(true, false),
            RawKind::MdioC45Read => return self.count_mdio(false, true),
            RawKind::MdioC45Write => return self.count_mdio(true, true),
            RawKind::MacLinkUp
            | RawKind::MacLinkDown
            | RawKind::PhylinkResolve
            | RawKind::CarrierOn
            | RawKind::CarrierOff => &mut self.mac,
            RawKind::SelfTestEnter
            | RawKind::SelfTestExit
            | RawKind::ModuleLoad
            | RawKind::ModuleFree
            | RawKind::Identity => return false,
        };
        *slot += 1;
        true
    }

    /// Counts an MDIO access, a write or not, Clause 45 or not; true (an event).
    fn count_mdio(&mut self, write: bool, c45: bool) -> bool {
        self.mdio += 1;
        self.mdio_write += u64::from(write);
        self.mdio_c45 += u64::from(c45);
        true
    }
}

/// Records other than events, tagged by `type`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(crate) enum MetaRecord {
    /// The first line.
    Header(Header),
    /// Defines a PHY id.
    Phy(PhyDef),
    /// Defines a callback id.
    Callback(CallbackDef),
    /// Names a `phy_state` value missing from the header's table.
    State(PhyState),
    /// Names the callback a probe key of ring-buffer records stands for (binary captures).
    Probe(ProbeKey),
    /// The last line.
    Trailer(Trailer),
}

impl From<Definition> for MetaRecord {
    fn from(def: Definition) -> Self {
        match def {
            Definition::Phy(d) => Self::Phy(d),
            Definition::Callback(d) => Self::Callback(d),
            Definition::State(s) => Self::State(s),
        }
    }
}

/// `{"type":"probe","key":3,"name":"read_status","driver_type":"ax88796b_rust::PhyAX88772A"}`:
/// ring-buffer records carry `key` where they name a callback.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ProbeKey {
    /// The key (the probe's attach cookie).
    pub key: u64,
    /// The callback probed with it.
    #[serde(flatten)]
    pub callback: crate::event::Callback,
}

/// Value of `type` for event records.
pub(crate) const EVENT_TYPE: &str = "event";

/// The flat form of an [`Event`] in a capture file. Fields that do not apply to the event's
/// `kind` are absent; PHYs and callbacks are ids of definition records, states are values named
/// by the header (or a `state` record).
#[derive(Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireEvent<'a> {
    #[serde(rename = "type", borrow)]
    pub record: Cow<'a, str>,
    pub ts: u64,
    pub cpu: u32,
    pub tid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phy: Option<u32>,
    #[serde(borrow)]
    pub kind: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cb: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_after: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ret: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplex: Option<Duplex>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<MdioOp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reg: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devad: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub val: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub err: Option<i32>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub module: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callbacks: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reattached: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guarantee: Option<Guarantee>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<LossCause>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<Cow<'a, str>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub netdev: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_pause: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_pause: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u8>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub text: Option<Cow<'a, str>>,
}

/// The ids of the PHY and the callback `event` refers to; the definitions and states it needs
/// that `ids` did not know yet are pushed to `new`, in the order they are to be written.
pub(crate) fn intern(
    event: &Event,
    ids: &mut Interner,
    new: &mut Vec<Definition>,
) -> (Option<u32>, Option<u32>) {
    let phy = event.phy.as_ref().map(|p| ids.phy(p, new));
    let callback = match &event.kind {
        EventKind::CallbackEnter {
            callback, state, ..
        } => {
            ids.state(state, new);
            Some(callback)
        }
        EventKind::CallbackExit {
            callback,
            state_before,
            state_after,
            ..
        } => {
            ids.state(state_before, new);
            ids.state(state_after, new);
            Some(callback)
        }
        EventKind::Mdio { caller, state, .. } => {
            if let Some(state) = state {
                ids.state(state, new);
            }
            caller.as_ref()
        }
        EventKind::Attached { .. }
        | EventKind::Detached { .. }
        | EventKind::Lost { .. }
        | EventKind::Mac { .. }
        | EventKind::Kmsg { .. } => None,
    };
    (phy, callback.map(|c| ids.callback(c, new)))
}

impl<'a> WireEvent<'a> {
    /// The record of `event`, whose PHY and callback have the ids `phy` and `cb` (see
    /// [`intern`]). The writer writes the same bytes without this step (see `emit`); this is
    /// the reference it is tested against.
    #[cfg(test)]
    pub fn encode(event: &'a Event, phy: Option<u32>, cb: Option<u32>) -> Self {
        let mut w = WireEvent {
            record: Cow::Borrowed(EVENT_TYPE),
            ts: event.ts_ns,
            cpu: event.cpu,
            tid: event.tid,
            phy,
            cb,
            ..Self::default()
        };
        match &event.kind {
            EventKind::CallbackEnter { depth, state, .. } => {
                w.depth = Some(*depth);
                w.state = Some(state.value);
            }
            EventKind::CallbackExit {
                depth,
                latency_ns,
                ret,
                state_before,
                state_after,
                link,
                ..
            } => {
                w.depth = Some(*depth);
                w.lat = Some(*latency_ns);
                w.ret = Some(*ret);
                w.state = Some(state_before.value);
                w.state_after = Some(state_after.value);
                w.set_link(link);
            }
            EventKind::Mdio {
                op,
                reg,
                devad,
                value,
                error,
                latency_ns,
                state,
                link,
                ..
            } => {
                w.op = Some(*op);
                w.reg = Some(*reg);
                w.devad = *devad;
                w.val = Some(*value);
                w.err = *error;
                w.lat = Some(*latency_ns);
                w.state = state.as_ref().map(|s| s.value);
                if let Some(link) = link {
                    w.set_link(link);
                }
            }
            EventKind::Attached {
                module,
                callbacks,
                reattached,
                guarantee,
            } => {
                w.module = Some(Cow::Borrowed(module));
                w.callbacks = Some(*callbacks);
                w.reattached = Some(*reattached);
                w.guarantee = *guarantee;
            }
            EventKind::Detached { module } => {
                w.module = Some(Cow::Borrowed(module));
            }
            EventKind::Lost { count, cause } => {
                w.count = Some(*count);
                w.cause = *cause;
            }
            EventKind::Mac { change } => {
                w.mac = Some(Cow::Borrowed(change.name()));
                match change {
                    MacChange::Resolve { latency_ns } => w.lat = Some(*latency_ns),
                    MacChange::LinkUp {
                        speed,
                        duplex,
                        tx_pause,
                        rx_pause,
                    } => {
                        w.speed = Some(*speed);
                        w.duplex = Some(*duplex);
                        w.tx_pause = Some(*tx_pause);
                        w.rx_pause = Some(*rx_pause);
                    }
                    MacChange::LinkDown => {}
                    MacChange::Carrier { netdev, .. } => w.netdev = Some(Cow::Borrowed(netdev)),
                }
            }
            EventKind::Kmsg { level, text } => {
                w.level = *level;
                w.text = Some(Cow::Borrowed(text));
            }
        }
        w.kind = Cow::Borrowed(event.kind.kind().name());
        w
    }

    /// Sets `up`, `speed` and `duplex` from `link`.
    #[cfg(test)]
    fn set_link(&mut self, link: &LinkState) {
        self.up = Some(link.up);
        self.speed = Some(link.speed);
        self.duplex = Some(link.duplex);
    }

    /// The link of `up`, `speed` and `duplex`, if the record has all three.
    fn link(&self) -> Option<LinkState> {
        Some(LinkState {
            up: self.up?,
            speed: self.speed?,
            duplex: self.duplex?,
        })
    }

    /// The event this record describes, or what is missing or wrong.
    pub fn decode(self, tables: &Tables) -> Result<Event, String> {
        let phy = self.phy.map(|id| tables.phy(id).cloned()).transpose()?;
        let callback = || tables.callback(need(self.cb, "cb")?).cloned();
        let state = |v: Option<u32>, field: &str| need(v, field).map(|v| tables.state(v));
        let Some(kind) = Kind::named(&self.kind) else {
            return Err(format!("unknown event kind `{}`", self.kind));
        };
        let kind = match kind {
            Kind::CallbackEnter => EventKind::CallbackEnter {
                callback: callback()?,
                depth: need(self.depth, "depth")?,
                state: state(self.state, "state")?,
            },
            Kind::CallbackExit => EventKind::CallbackExit {
                callback: callback()?,
                depth: need(self.depth, "depth")?,
                latency_ns: need(self.lat, "lat")?,
                ret: need(self.ret, "ret")?,
                state_before: state(self.state, "state")?,
                state_after: state(self.state_after, "state_after")?,
                link: LinkState {
                    up: need(self.up, "up")?,
                    speed: need(self.speed, "speed")?,
                    duplex: need(self.duplex, "duplex")?,
                },
            },
            Kind::Mdio => EventKind::Mdio {
                op: need(self.op, "op")?,
                reg: need(self.reg, "reg")?,
                devad: self.devad,
                value: need(self.val, "val")?,
                error: self.err,
                latency_ns: need(self.lat, "lat")?,
                caller: self.cb.map(|_| callback()).transpose()?,
                state: self.state.map(|v| tables.state(v)),
                link: self.link(),
            },
            Kind::Attached => EventKind::Attached {
                module: need(self.module, "module")?.into_owned(),
                callbacks: need(self.callbacks, "callbacks")?,
                reattached: self.reattached.unwrap_or(false),
                guarantee: self.guarantee,
            },
            Kind::Detached => EventKind::Detached {
                module: need(self.module, "module")?.into_owned(),
            },
            Kind::Lost => EventKind::Lost {
                count: need(self.count, "count")?,
                cause: self.cause,
            },
            Kind::Mac => EventKind::Mac {
                change: match &*need(self.mac.clone(), "mac")? {
                    "phylink_resolve" => MacChange::Resolve {
                        latency_ns: need(self.lat, "lat")?,
                    },
                    "mac_link_up" => MacChange::LinkUp {
                        speed: need(self.speed, "speed")?,
                        duplex: need(self.duplex, "duplex")?,
                        tx_pause: need(self.tx_pause, "tx_pause")?,
                        rx_pause: need(self.rx_pause, "rx_pause")?,
                    },
                    "mac_link_down" => MacChange::LinkDown,
                    op @ ("carrier_on" | "carrier_off") => MacChange::Carrier {
                        netdev: need(self.netdev.clone(), "netdev")?.as_ref().into(),
                        up: op == "carrier_on",
                    },
                    other => return Err(format!("unknown MAC change `{other}`")),
                },
            },
            Kind::Kmsg => EventKind::Kmsg {
                level: self.level,
                text: need(self.text.clone(), "text")?.as_ref().into(),
            },
        };
        Ok(Event {
            ts_ns: self.ts,
            cpu: self.cpu,
            tid: self.tid,
            phy,
            kind,
        })
    }
}

fn need<T>(value: Option<T>, field: &str) -> Result<T, String> {
    value.ok_or_else(|| format!("missing field `{field}`"))
}
