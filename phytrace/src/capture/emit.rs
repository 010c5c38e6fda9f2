//! Event records as JSON, written field by field: byte for byte what `serde_json` makes of a
//! [`WireEvent`] (the tests hold it to that), at a fraction of the cost. This is the hot path
//! of `phytrace record`, whose speed bounds the event rate it can keep up with. The helpers
//! are always inlined so that each key is copied with its length known at compile time.

use super::format::WireEvent;
use crate::event::{Duplex, MdioOp};

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

    #[inline(always)]
    fn raw(&mut self, key: &str, json: &str) {
        self.key(key);
        self.out.extend_from_slice(json.as_bytes());
    }

    #[inline(always)]
    fn string(&mut self, key: &str, value: &str) -> serde_json::Result<()> {
        self.key(key);
        // Kinds and module names are identifiers: nothing to escape.
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
    fn bool(&mut self, key: &str, value: Option<bool>) {
        if let Some(value) = value {
            self.raw(key, if value { "true" } else { "false" });
        }
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

fn op(op: MdioOp) -> &'static str {
    match op {
        MdioOp::Read => "\"read\"",
        MdioOp::Write => "\"write\"",
    }
}

impl WireEvent<'_> {
    /// Appends this record to `out` as one JSON object (no newline).
    pub fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let mut o = Object::new(out);
        o.string(r#""type":"#, &self.record)?;
        o.int(r#""ts":"#, self.ts);
        o.int(r#""cpu":"#, self.cpu);
        o.int(r#""tid":"#, self.tid);
        o.opt_int(r#""phy":"#, self.phy);
        o.string(r#""kind":"#, &self.kind)?;
        o.opt_int(r#""cb":"#, self.cb);
        o.opt_int(r#""depth":"#, self.depth);
        o.opt_int(r#""state":"#, self.state);
        o.opt_int(r#""state_after":"#, self.state_after);
        o.opt_int(r#""lat":"#, self.lat);
        o.opt_int(r#""ret":"#, self.ret);
        o.bool(r#""up":"#, self.up);
        o.opt_int(r#""speed":"#, self.speed);
        if let Some(d) = self.duplex {
            o.raw(r#""duplex":"#, duplex(d));
        }
        if let Some(m) = self.op {
            o.raw(r#""op":"#, op(m));
        }
        o.opt_int(r#""reg":"#, self.reg);
        o.opt_int(r#""val":"#, self.val);
        o.opt_int(r#""err":"#, self.err);
        if let Some(module) = &self.module {
            o.string(r#""module":"#, module)?;
        }
        o.opt_int(r#""callbacks":"#, self.callbacks);
        o.bool(r#""reattached":"#, self.reattached);
        o.opt_int(r#""count":"#, self.count);
        o.end();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use proptest::prelude::*;

    use super::*;

    fn duplexes() -> impl Strategy<Value = Duplex> {
        prop_oneof![
            Just(Duplex::Half),
            Just(Duplex::Full),
            Just(Duplex::Unknown)
        ]
    }

    fn wire_events() -> impl Strategy<Value = WireEvent<'static>> {
        (
            (
                any::<u64>(),
                any::<u32>(),
                any::<u32>(),
                any::<Option<u32>>(),
                "[a-z_\"\\\\\u{1}é]{0,12}",
                any::<Option<u32>>(),
                any::<Option<u8>>(),
                any::<Option<u32>>(),
                any::<Option<u32>>(),
                any::<Option<u64>>(),
                any::<Option<i64>>(),
            ),
            (
                any::<Option<bool>>(),
                any::<Option<i32>>(),
                proptest::option::of(duplexes()),
                proptest::option::of(prop_oneof![Just(MdioOp::Read), Just(MdioOp::Write)]),
                any::<Option<u16>>(),
                any::<Option<u16>>(),
                any::<Option<i32>>(),
                proptest::option::of("[ -~\u{7f}\n\té]{0,12}"),
                any::<Option<usize>>(),
                any::<Option<bool>>(),
                any::<Option<u64>>(),
            ),
        )
            .prop_map(
                |(
                    (ts, cpu, tid, phy, kind, cb, depth, state, state_after, lat, ret),
                    (up, speed, duplex, op, reg, val, err, module, callbacks, reattached, count),
                )| WireEvent {
                    record: Cow::Borrowed("event"),
                    ts,
                    cpu,
                    tid,
                    phy,
                    kind: Cow::Owned(kind),
                    cb,
                    depth,
                    state,
                    state_after,
                    lat,
                    ret,
                    up,
                    speed,
                    duplex,
                    op,
                    reg,
                    val,
                    err,
                    module: module.map(Cow::Owned),
                    callbacks,
                    reattached,
                    count,
                },
            )
    }

    proptest! {
        #[test]
        fn writes_what_serde_json_writes(wire in wire_events()) {
            let mut ours = Vec::new();
            wire.write_json(&mut ours).unwrap();
            prop_assert_eq!(
                String::from_utf8(ours).unwrap(),
                serde_json::to_string(&wire).unwrap()
            );
        }
    }
}
