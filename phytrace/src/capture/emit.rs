//! Event records as JSON, written field by field straight from the [`Event`]: byte for byte
//! what `serde_json` makes of its `WireEvent` (the tests hold it to that), at a fraction of
//! the cost. This is the hot path of `phytrace record`, whose speed bounds the event rate it
//! can keep up with. The helpers are always inlined so that each key is copied with its length
//! known at compile time.

use crate::event::{Duplex, Event, EventKind, LinkState, MacChange, MdioOp};

/// Appends fields to one JSON object.
struct Object<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Object<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        Self { out, first: true }
    }

    /// `key` is the quoted key and its colon, `"ts":`, to be copied in one go.
    #[inline(always)]
    fn key(&mut self, key: &str) {
        self.out.push(if self.first { b'{' } else { b',' });
        self.first = false;
        self.out.extend_from_slice(key.as_bytes());
    }

    #[inline(always)]
    fn int(&mut self, key: &str, value: impl itoa::Integer) {
        self.key(key);
        self.out
            .extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
    }

    #[inline(always)]
    fn opt_int(&mut self, key: &str, value: Option<impl itoa::Integer>) {
        if let Some(value) = value {
            self.int(key, value);
        }
    }

    /// The event's kind (a [`crate::event::Kind::name`]: nothing to escape).
    #[inline(always)]
    fn kind(&mut self, name: &str) {
        self.key(r#""kind":"#);
        self.out.push(b'"');
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(b'"');
    }

    #[inline(always)]
    fn raw(&mut self, key: &str, json: &str) {
        self.key(key);
        self.out.extend_from_slice(json.as_bytes());
    }

    #[inline(always)]
    fn string(&mut self, key: &str, value: &str) -> serde_json::Result<()> {
        self.key(key);
        // Module names are identifiers: nothing to escape.
        if value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            self.out.push(b'"');
            self.out.extend_from_slice(value.as_bytes());
            self.out.push(b'"');
            Ok(())
        } else {
            serde_json::to_writer(&mut *self.out, value)
        }
    }

    #[inline(always)]
    /// `up`, `speed` and `duplex` of a link.
    fn link(&mut self, link: &LinkState) {
        self.bool(r#""up":"#, link.up);
        self.int(r#""speed":"#, link.speed);
        self.raw(r#""duplex":"#, duplex(link.duplex));
    }

    fn bool(&mut self, key: &str, value: bool) {
        self.raw(key, if value { "true" } else { "false" });
    }

    #[inline(always)]
    fn end(self) {
        self.out.push(b'}');
    }
}

fn duplex(duplex: Duplex) -> &'static str {
    match duplex {
        Duplex::Half => "\"half\"",
        Duplex::Full => "\"full\"",
        Duplex::Unknown => "\"unknown\"",
    }
}

fn mdio_op(op: MdioOp) -> &'static str {
    match op {
        MdioOp::Read => "\"read\"",
        MdioOp::Write => "\"write\"",
    }
}

/// Appends the record of `event` to `out` as one JSON object (no newline): the bytes
/// `serde_json` makes of `WireEvent::encode(event, phy, cb)`, written straight from the event.
pub(crate) fn write_event(
    event: &Event,
    phy: Option<u32>,
    cb: Option<u32>,
    out: &mut Vec<u8>,
) -> serde_json::Result<()> {
    let mut o = Object::new(out);
    o.raw(r#""type":"#, r#""event""#);
    o.int(r#""ts":"#, event.ts_ns);
    o.int(r#""cpu":"#, event.cpu);
    o.int(r#""tid":"#, event.tid);
    o.opt_int(r#""phy":"#, phy);
    o.kind(event.kind.kind().name());
    match &event.kind {
        EventKind::CallbackEnter { depth, state, .. } => {
            o.opt_int(r#""cb":"#, cb);
            o.int(r#""depth":"#, *depth);
            o.int(r#""state":"#, state.value);
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
            o.opt_int(r#""cb":"#, cb);
            o.int(r#""depth":"#, *depth);
            o.int(r#""state":"#, state_before.value);
            o.int(r#""state_after":"#, state_after.value);
            o.int(r#""lat":"#, *latency_ns);
            o.int(r#""ret":"#, *ret);
            o.link(link);
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
            o.opt_int(r#""cb":"#, cb);
            o.opt_int(r#""state":"#, state.as_ref().map(|s| s.value));
            o.int(r#""lat":"#, *latency_ns);
            if let Some(link) = link {
                o.link(link);
            }
            o.raw(r#""op":"#, mdio_op(*op));
            o.int(r#""reg":"#, *reg);
            o.opt_int(r#""devad":"#, *devad);
            o.int(r#""val":"#, *value);
            o.opt_int(r#""err":"#, *error);
        }
        EventKind::Attached {
            module,
            callbacks,
            reattached,
            guarantee,
        } => {
            o.string(r#""module":"#, module)?;
            o.int(r#""callbacks":"#, *callbacks);
            o.bool(r#""reattached":"#, *reattached);
            if let Some(guarantee) = guarantee {
                o.string(r#""guarantee":"#, guarantee.name())?;
            }
        }
        EventKind::Detached { module } => {
            o.string(r#""module":"#, module)?;
        }
        EventKind::Lost { count, cause } => {
            o.int(r#""count":"#, *count);
            if let Some(cause) = cause {
                o.string(r#""cause":"#, cause.name())?;
            }
        }
        EventKind::Mac { change } => match change {
            MacChange::Resolve { latency_ns } => {
                o.int(r#""lat":"#, *latency_ns);
                o.string(r#""mac":"#, change.name())?;
            }
            MacChange::LinkUp {
                speed,
                duplex: d,
                tx_pause,
                rx_pause,
            } => {
                o.int(r#""speed":"#, *speed);
                o.raw(r#""duplex":"#, duplex(*d));
                o.string(r#""mac":"#, change.name())?;
                o.bool(r#""tx_pause":"#, *tx_pause);
                o.bool(r#""rx_pause":"#, *rx_pause);
            }
            MacChange::LinkDown => o.string(r#""mac":"#, change.name())?,
            MacChange::Carrier { netdev, .. } => {
                o.string(r#""mac":"#, change.name())?;
                o.string(r#""netdev":"#, netdev)?;
            }
        },
        EventKind::Kmsg { level, text } => {
            o.opt_int(r#""level":"#, *level);
            o.string(r#""text":"#, text)?;
        }
    }
    o.end();
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::capture::dictionary::Interner;
    use crate::capture::format::{WireEvent, intern};
    use crate::event::{Callback, Guarantee, LossCause, PhyRef, PhyState, Text};

    fn texts() -> impl Strategy<Value = Text> {
        "[ -~\u{7f}\n\té\"\\\\]{0,12}".prop_map(Text::from)
    }

    fn states() -> impl Strategy<Value = PhyState> {
        (0u32..12, texts()).prop_map(|(value, name)| PhyState { value, name })
    }

    fn callbacks() -> impl Strategy<Value = Callback> {
        (texts(), texts()).prop_map(|(name, driver_type)| Callback { name, driver_type })
    }

    fn phys() -> impl Strategy<Value = PhyRef> {
        (texts(), any::<u8>(), any::<u32>(), texts()).prop_map(|(bus, addr, phy_id, driver)| {
            PhyRef {
                bus,
                addr,
                phy_id,
                driver,
            }
        })
    }

    fn duplexes() -> impl Strategy<Value = Duplex> {
        prop_oneof![
            Just(Duplex::Half),
            Just(Duplex::Full),
            Just(Duplex::Unknown)
        ]
    }

    fn kinds() -> impl Strategy<Value = EventKind> {
        prop_oneof![
            (callbacks(), any::<u8>(), states()).prop_map(|(callback, depth, state)| {
                EventKind::CallbackEnter {
                    callback,
                    depth,
                    state,
                }
            }),
            (
                callbacks(),
                any::<u8>(),
                any::<u64>(),
                any::<i64>(),
                states(),
                states(),
                (any::<bool>(), any::<i32>(), duplexes())
            )
                .prop_map(
                    |(callback, depth, latency_ns, ret, state_before, state_after, link)| {
                        EventKind::CallbackExit {
                            callback,
                            depth,
                            latency_ns,
                            ret,
                            state_before,
                            state_after,
                            link: LinkState {
                                up: link.0,
                                speed: link.1,
                                duplex: link.2,
                            },
                        }
                    }
                ),
            (
                prop_oneof![Just(MdioOp::Read), Just(MdioOp::Write)],
                any::<u16>(),
                any::<u16>(),
                any::<Option<i32>>(),
                any::<u64>(),
                proptest::option::of(callbacks()),
                proptest::option::of(states()),
                any::<Option<u8>>(),
                proptest::option::of((any::<bool>(), any::<i32>(), duplexes()))
            )
                .prop_map(
                    |(op, reg, value, error, latency_ns, caller, state, devad, link)| {
                        EventKind::Mdio {
                            op,
                            reg,
                            devad,
                            value,
                            error,
                            latency_ns,
                            caller,
                            state,
                            link: link.map(|(up, speed, duplex)| LinkState { up, speed, duplex }),
                        }
                    }
                ),
            (
                texts(),
                any::<usize>(),
                any::<bool>(),
                prop_oneof![
                    Just(None),
                    Just(Some(Guarantee::FirstCallback)),
                    Just(Some(Guarantee::AfterLoad)),
                ],
            )
                .prop_map(|(module, callbacks, reattached, guarantee)| {
                    EventKind::Attached {
                        module: module.to_string(),
                        callbacks,
                        reattached,
                        guarantee,
                    }
                }),
            texts().prop_map(|module| EventKind::Detached {
                module: module.to_string()
            }),
            (
                any::<u64>(),
                proptest::option::of(proptest::sample::select(LossCause::ALL.to_vec()))
            )
                .prop_map(|(count, cause)| EventKind::Lost { count, cause }),
            prop_oneof![
                any::<u64>().prop_map(|latency_ns| MacChange::Resolve { latency_ns }),
                (any::<i32>(), duplexes(), any::<bool>(), any::<bool>()).prop_map(
                    |(speed, duplex, tx_pause, rx_pause)| MacChange::LinkUp {
                        speed,
                        duplex,
                        tx_pause,
                        rx_pause,
                    }
                ),
                Just(MacChange::LinkDown),
                (texts(), any::<bool>()).prop_map(|(netdev, up)| MacChange::Carrier { netdev, up }),
            ]
            .prop_map(|change| EventKind::Mac { change }),
            (any::<Option<u8>>(), texts())
                .prop_map(|(level, text)| EventKind::Kmsg { level, text }),
        ]
    }

    fn events() -> impl Strategy<Value = Event> {
        (
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            proptest::option::of(phys()),
            kinds(),
        )
            .prop_map(|(ts_ns, cpu, tid, phy, kind)| Event {
                ts_ns,
                cpu,
                tid,
                phy,
                kind,
            })
    }

    proptest! {
        #[test]
        fn writes_what_serde_json_writes(events in proptest::collection::vec(events(), 1..8)) {
            let mut ids = Interner::new(&[]);
            for event in &events {
                let (phy, cb) = intern(event, &mut ids, &mut Vec::new());
                let mut ours = Vec::new();
                write_event(event, phy, cb, &mut ours).unwrap();
                prop_assert_eq!(
                    String::from_utf8(ours).unwrap(),
                    serde_json::to_string(&WireEvent::encode(event, phy, cb)).unwrap()
                );
            }
        }
    }
}
