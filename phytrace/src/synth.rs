//! Synthetic but realistic event streams, for tests and benchmarks (the `testkit` feature: not
//! in a build that ships).
//!
//! [`Synth`] plays phylib driving Asix PHYs: `soft_reset` → `config_aneg` → `read_status` polls
//! with BMCR/BMSR/LPA reads, link up and down (the AX88772A's `link_change_notify` re-inits the
//! PHY, nesting `soft_reset`), failed MDIO reads, lost events. It is deterministic for a seed.

use std::collections::VecDeque;

use crate::capture::Header;
use crate::event::{
    Callback, Duplex, Event, EventKind, Guarantee, LinkState, MdioOp, PhyRef, PhyState,
};
use crate::records::{clock::ClockRef, session::ProbeEntry};

/// `enum phy_state` of Linux 6.12.
const PHY_STATES_6_12: &[(u32, &str)] = &[
    (0, "DOWN"),
    (1, "READY"),
    (2, "HALTED"),
    (3, "ERROR"),
    (4, "UP"),
    (5, "RUNNING"),
    (6, "NOLINK"),
    (7, "CABLETEST"),
];

/// Boot-clock time of the synthetic capture's start.
const START_NS: u64 = 1_000_000_000;

const READY: u32 = 1;
const UP: u32 = 4;
const RUNNING: u32 = 5;
const NOLINK: u32 = 6;

/// Module the synthetic callbacks live in.
pub const MODULE: &str = "ax88796b_rust";

/// The simulated PHYs: bus, address, id, driver name, Rust type, callbacks.
const PHYS: &[(&str, u8, u32, &str, &str)] = &[
    (
        "phy_sim-0",
        0x10,
        0x003b_1861,
        "Asix Electronics AX88772A",
        "PhyAX88772A",
    ),
    (
        "phy_sim-1",
        0x10,
        0x003b_1881,
        "Asix Electronics AX88772C",
        "PhyAX88772C",
    ),
    (
        "phy_sim-2",
        0x00,
        0x003b_1841,
        "Asix Electronics AX88796B",
        "PhyAX88796B",
    ),
];

/// Callbacks generated for every PHY.
const CALLBACKS: &[&str] = &[
    "soft_reset",
    "config_aneg",
    "read_status",
    "link_change_notify",
];

const BMCR: u16 = 0x00;
const BMSR: u16 = 0x01;
const ADVERTISE: u16 = 0x04;
const LPA: u16 = 0x05;
const BMCR_AN_100_FULL: u16 = 0x3100;
const BMSR_NOLINK: u16 = 0x7849;
const BMSR_LINK: u16 = 0x786d;
const LPA_PARTNER: u16 = 0x45e1;
const ETIMEDOUT: i32 = -110;

/// The `phy_state` with value `value`, named as in Linux 6.12.
pub fn phy_state(value: u32) -> PhyState {
    let name = PHY_STATES_6_12
        .iter()
        .find(|(v, _)| *v == value)
        .map_or("UNKNOWN", |(_, n)| n);
    PhyState {
        value,
        name: name.into(),
    }
}

/// A capture header matching the synthetic stream (probe table, 6.12 states).
pub fn header() -> Header {
    let mut probes = Vec::new();
    let mut address = 0xffff_ffff_c080_0000_u64;
    for &(_, _, _, _, ty) in PHYS {
        for cb in CALLBACKS {
            probes.push(ProbeEntry {
                module: MODULE.to_owned(),
                driver_type: format!("{MODULE}::{ty}"),
                callback: (*cb).to_owned(),
                address,
                symbol: format!("<kernel::net::phy::Adapter<{MODULE}::{ty}>>::{cb}_callback"),
            });
            address += 0x40;
        }
    }
    Header::new(
        "6.12.0-phytrace".to_owned(),
        "synth".to_owned(),
        ClockRef {
            mono_ns: START_NS,
            unix_ns: 1_767_225_600_000_000_000,
        },
        probes,
        PHY_STATES_6_12.iter().map(|&(v, _)| phy_state(v)).collect(),
    )
}

/// Where a simulated PHY is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Not brought up yet.
    Fresh,
    /// Link down, this many polls before the partner answers.
    Down(u32),
    /// Link up for this many more polls.
    Up(u32),
}

/// One simulated PHY.
#[derive(Debug)]
struct SimPhy {
    phy: PhyRef,
    driver_type: String,
    tid: u32,
    phase: Phase,
    state: u32,
    /// Speed and duplex while the link is up.
    link: Option<(i32, Duplex)>,
}

/// Infinite deterministic stream of realistic events (an [`Iterator`]).
#[derive(Debug)]
pub struct Synth {
    rng: u64,
    ts_ns: u64,
    phys: Vec<SimPhy>,
    queue: VecDeque<Event>,
    attached: bool,
    stack: Vec<(Callback, u64, u32)>,
}

impl Synth {
    /// A stream for the AX88772A only.
    pub fn new(seed: u64) -> Self {
        Self::with_phys(seed, 1)
    }

    /// A stream for the first `count` (1 to 3) of AX88772A, AX88772C, AX88796B.
    pub fn with_phys(seed: u64, count: usize) -> Self {
        let phys = PHYS
            .iter()
            .take(count.clamp(1, PHYS.len()))
            .enumerate()
            .map(|(i, &(bus, addr, phy_id, driver, ty))| SimPhy {
                phy: PhyRef {
                    bus: bus.into(),
                    addr,
                    phy_id,
                    driver: driver.into(),
                },
                driver_type: format!("{MODULE}::{ty}"),
                tid: 120 + i as u32,
                phase: Phase::Fresh,
                state: READY,
                link: None,
            })
            .collect();
        Self {
            rng: seed ^ 0x9e37_79b9_7f4a_7c15,
            ts_ns: START_NS + 1_000,
            phys,
            queue: VecDeque::new(),
            attached: false,
            stack: Vec::new(),
        }
    }

    /// xorshift64*: enough randomness for test data.
    fn next_rand(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next_rand() % n.max(1)
    }

    fn event(&mut self, p: usize, phy: bool, kind: EventKind) {
        let cpu = self.below(2) as u32;
        let event = Event {
            ts_ns: self.ts_ns,
            cpu,
            tid: if phy { self.phys[p].tid } else { 0 },
            phy: phy.then(|| self.phys[p].phy.clone()),
            kind,
        };
        self.queue.push_back(event);
    }

    fn enter(&mut self, p: usize, name: &str) {
        self.ts_ns += 2_000 + self.below(3_000);
        let callback = Callback {
            name: name.into(),
            driver_type: self.phys[p].driver_type.as_str().into(),
        };
        let state = self.phys[p].state;
        self.stack.push((callback.clone(), self.ts_ns, state));
        let depth = self.stack.len() as u8;
        self.event(
            p,
            true,
            EventKind::CallbackEnter {
                callback,
                depth,
                state: phy_state(state),
            },
        );
    }

    fn exit(&mut self, p: usize, ret: i64) {
        self.ts_ns += 1_000 + self.below(2_000);
        let depth = self.stack.len() as u8;
        let Some((callback, enter_ns, before)) = self.stack.pop() else {
            return;
        };
        let (up, speed, duplex) = match self.phys[p].link {
            Some((speed, duplex)) => (true, speed, duplex),
            None => (false, -1, Duplex::Unknown),
        };
        let kind = EventKind::CallbackExit {
            callback,
            depth,
            latency_ns: self.ts_ns - enter_ns,
            ret,
            state_before: phy_state(before),
            state_after: phy_state(self.phys[p].state),
            link: LinkState { up, speed, duplex },
        };
        self.event(p, true, kind);
    }

    fn mdio(&mut self, p: usize, op: MdioOp, reg: u16, value: u16, error: Option<i32>) {
        let latency_ns = 15_000 + self.below(30_000);
        self.ts_ns += latency_ns;
        let caller = self.stack.last().map(|(c, _, _)| c.clone());
        let state = Some(phy_state(self.phys[p].state));
        let value = if error.is_some() && op == MdioOp::Read {
            0
        } else {
            value
        };
        let kind = EventKind::Mdio {
            op,
            reg,
            devad: None,
            value,
            error,
            latency_ns,
            caller,
            state,
            link: None,
        };
        self.event(p, true, kind);
    }

    fn read(&mut self, p: usize, reg: u16, value: u16) {
        self.mdio(p, MdioOp::Read, reg, value, None);
    }

    fn write(&mut self, p: usize, reg: u16, value: u16) {
        self.mdio(p, MdioOp::Write, reg, value, None);
    }

    /// `asix_soft_reset`: clear BMCR, then `genphy_soft_reset` sets RESET and polls it.
    fn soft_reset(&mut self, p: usize) {
        self.enter(p, "soft_reset");
        self.write(p, BMCR, 0);
        self.read(p, BMCR, 0);
        self.write(p, BMCR, 0x8000);
        for _ in 0..self.below(3) {
            self.read(p, BMCR, 0x8000);
        }
        self.read(p, BMCR, BMCR_AN_100_FULL);
        self.exit(p, 0);
    }

    /// `genphy_config_aneg`: advertise, then restart auto-negotiation.
    fn config_aneg(&mut self, p: usize) {
        self.enter(p, "config_aneg");
        self.read(p, ADVERTISE, 0x01e1);
        self.write(p, ADVERTISE, 0x05e1);
        self.read(p, BMCR, BMCR_AN_100_FULL);
        self.write(p, BMCR, BMCR_AN_100_FULL | 0x0200);
        self.exit(p, 0);
    }

    /// One `read_status` poll; `bmsr` decides the link. A failed BMSR read makes it fail.
    fn read_status(&mut self, p: usize, bmsr: u16, fail: bool) {
        self.enter(p, "read_status");
        self.read(p, BMCR, BMCR_AN_100_FULL);
        if fail {
            self.mdio(p, MdioOp::Read, BMSR, 0, Some(ETIMEDOUT));
            self.exit(p, i64::from(ETIMEDOUT));
            return;
        }
        if self.phys[p].state != RUNNING {
            self.read(p, BMSR, bmsr & !0x0004);
        }
        self.read(p, BMSR, bmsr);
        let up = bmsr & 0x0004 != 0;
        if up {
            self.read(p, LPA, LPA_PARTNER);
        }
        self.phys[p].link = up.then_some((100, Duplex::Full));
        self.exit(p, 0);
    }

    /// `link_change_notify`; on the AX88772A, at NOLINK it re-inits the PHY (nested calls).
    fn link_change_notify(&mut self, p: usize) {
        self.enter(p, "link_change_notify");
        if self.phys[p].state == NOLINK {
            self.soft_reset(p);
            self.config_aneg(p);
        }
        self.exit(p, 0);
    }

    fn poll_gap(&mut self) {
        self.ts_ns += 990_000_000 + self.below(20_000_000);
    }

    /// Generates the next step of a random PHY into the queue.
    fn step(&mut self) {
        if !self.attached {
            self.attached = true;
            let callbacks = self.phys.len() * CALLBACKS.len();
            let kind = EventKind::Attached {
                module: MODULE.to_owned(),
                callbacks,
                reattached: false,
                guarantee: Some(Guarantee::FirstCallback),
            };
            self.event(0, false, kind);
        }
        let p = self.below(self.phys.len() as u64) as usize;
        match self.phys[p].phase {
            Phase::Fresh => {
                self.soft_reset(p);
                self.phys[p].state = UP;
                self.config_aneg(p);
                self.phys[p].state = NOLINK;
                self.phys[p].phase = Phase::Down(1 + self.below(3) as u32);
            }
            Phase::Down(0) => {
                self.read_status(p, BMSR_LINK, false);
                self.phys[p].state = RUNNING;
                self.link_change_notify(p);
                self.phys[p].phase = Phase::Up(2 + self.below(6) as u32);
            }
            Phase::Down(n) => {
                self.read_status(p, BMSR_NOLINK, false);
                self.phys[p].phase = Phase::Down(n - 1);
            }
            Phase::Up(0) => {
                self.read_status(p, BMSR_NOLINK, false);
                self.phys[p].state = NOLINK;
                self.link_change_notify(p);
                self.phys[p].phase = Phase::Down(1 + self.below(3) as u32);
            }
            Phase::Up(n) => {
                let fail = self.below(10) == 0;
                self.read_status(p, BMSR_LINK, fail);
                self.phys[p].phase = Phase::Up(n - 1);
            }
        }
        if self.below(50) == 0 {
            let count = 1 + self.below(8);
            let cause = Some(crate::event::LossCause::RingFull);
            self.event(p, false, EventKind::Lost { count, cause });
        }
        self.poll_gap();
    }
}

impl Iterator for Synth {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        while self.queue.is_empty() {
            self.step();
        }
        self.queue.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_per_seed() {
        let a: Vec<_> = Synth::new(7).take(500).collect();
        let b: Vec<_> = Synth::new(7).take(500).collect();
        let c: Vec<_> = Synth::new(8).take(500).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn time_goes_forward_and_covers_every_kind() {
        let events: Vec<_> = Synth::with_phys(1, 3).take(5_000).collect();
        assert!(events.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
        let has = |f: fn(&EventKind) -> bool| events.iter().any(|e| f(&e.kind));
        assert!(has(|k| matches!(k, EventKind::Attached { .. })));
        assert!(has(|k| matches!(k, EventKind::Lost { .. })));
        assert!(has(|k| matches!(k, EventKind::Mdio { error: Some(_), .. })));
        assert!(has(|k| matches!(
            k,
            EventKind::CallbackEnter { depth: 2, .. }
        )));
        assert!(has(|k| matches!(
            k,
            EventKind::CallbackExit { ret: -110, .. }
        )));
        let keys: std::collections::BTreeSet<_> = events
            .iter()
            .filter_map(|e| e.phy.as_ref().map(|p| p.key()))
            .collect();
        assert_eq!(keys.len(), 3);
    }
}
