//! The emulator's shared state: the MAC and PHY model, the far end of the cable, the frame
//! queue to the host, the USB plug state and the counters; what control commands do to it and
//! the `status` JSON.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::control::Command;
use crate::frames::{self, Answer, Peer};
use crate::phy::{self, PHY_ADDR, Phy};
use crate::vendor::{Counters, Mac, RegCounters};

/// Frames kept for the host while it is not reading (the oldest are dropped).
const QUEUE_MAX: usize = 64;
/// How long `ctl plug`/`unplug` wait for the USB side to follow.
const PLUG_WAIT: Duration = Duration::from_secs(10);

/// Where the dongle is on the USB bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UsbState {
    /// No gadget registered: the host sees nothing.
    Unplugged,
    /// Registered with the UDC, not (or no longer) configured by the host.
    Attached,
    /// The host set configuration 1: the bulk endpoints run.
    Configured,
}

/// Frame counters.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct FrameCounters {
    /// Ethernet frames received from the host (bulk OUT).
    pub from_host: u64,
    /// Frames sent to the host (bulk IN transfers completed).
    pub to_host: u64,
    /// Frames from the host dropped because the link was down.
    pub dropped_link_down: u64,
    /// Replies not queued because the MAC was not receiving (RX_CTL.SO or medium RE clear).
    pub dropped_rx_off: u64,
    /// Replies dropped because the queue to the host was full.
    pub dropped_queue_full: u64,
    /// Bulk OUT transfers with a bad header or a truncated frame.
    pub bad_transfers: u64,
    /// ARP replies queued.
    pub arp_replies: u64,
    /// ICMP echo replies queued.
    pub icmp_replies: u64,
    /// Frames returned to the host by the PHY in loopback (BMCR.LOOPBACK, `ethtool -t`).
    pub looped_back: u64,
}

/// Everything behind the one lock.
#[derive(Debug)]
pub struct State {
    /// The MAC (vendor requests), with the PHY and the ep0 counters.
    pub mac: Mac,
    /// The far end of the cable.
    pub peer: Peer,
    /// Frame counters.
    pub frames: FrameCounters,
    /// Framed transfers waiting for the bulk IN endpoint.
    pub to_host: VecDeque<Vec<u8>>,
    /// The user wants the dongle plugged in.
    pub plugged: bool,
    /// The USB side.
    pub usb: UsbState,
    /// Gadget sessions started (plug-ins).
    pub sessions: u64,
    /// Times the host configured the device.
    pub configurations: u64,
    /// Delay of every READ/WRITE_MII_REG answer.
    pub mdio_delay: Duration,
}

/// The shared emulator.
#[derive(Debug)]
pub struct Emulator {
    t0: Instant,
    state: Mutex<State>,
    /// Signalled on plug state and USB state changes.
    pub changed: Condvar,
    /// Signalled when a frame is queued for the host.
    pub queued: Condvar,
}

/// Prints one JSON event line on standard output (the machine-readable progress of `run`).
pub fn emit(event: Value) {
    let mut out = std::io::stdout().lock();
    // A closed stdout must not stop the emulator.
    let _ = writeln!(out, "{event}").and_then(|()| out.flush());
}

impl Emulator {
    /// An emulator whose PHY has `phy`'s settings, with this node id and far end.
    pub fn new(
        node_id: [u8; 6],
        peer: Peer,
        mdio_delay: Duration,
        plugged: bool,
        configure: impl FnOnce(&mut Phy),
    ) -> Emulator {
        let t0 = Instant::now();
        let mut phy = Phy::new(Duration::ZERO, Duration::from_millis(100));
        configure(&mut phy);
        Emulator {
            t0,
            state: Mutex::new(State {
                mac: Mac::new(node_id, phy),
                peer,
                frames: FrameCounters::default(),
                to_host: VecDeque::new(),
                plugged,
                usb: UsbState::Unplugged,
                sessions: 0,
                configurations: 0,
                mdio_delay,
            }),
            changed: Condvar::new(),
            queued: Condvar::new(),
        }
    }

    /// Time since the emulator started: the PHY model's clock.
    pub fn now(&self) -> Duration {
        self.t0.elapsed()
    }

    /// The state (a panicked holder cannot leave it inconsistent enough to matter: counters).
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the USB state and wakes waiters.
    pub fn set_usb(&self, usb: UsbState) {
        let mut s = self.lock();
        s.usb = usb;
        if usb == UsbState::Configured {
            s.configurations += 1;
        }
        drop(s);
        self.changed.notify_all();
    }

    /// A bulk OUT transfer from the host: frames to the far end, answers queued.
    pub fn frames_from_host(&self, buf: &[u8]) {
        let d = frames::deframe(buf);
        let now = self.now();
        let mut s = self.lock();
        if d.bad {
            s.frames.bad_transfers += 1;
        }
        let up = s.mac.phy.link_mode(now).is_some();
        let loopback = s.mac.phy.loopback();
        let mut queued = false;
        for f in d.frames {
            s.frames.from_host += 1;
            if !up {
                s.frames.dropped_link_down += 1;
                continue;
            }
            let answer = if loopback {
                Answer::Looped(f.to_vec())
            } else {
                s.peer.answer(f)
            };
            let reply = match answer {
                Answer::Looped(r) => {
                    s.frames.looped_back += 1;
                    r
                }
                Answer::Arp(r) => {
                    s.frames.arp_replies += 1;
                    r
                }
                Answer::Icmp(r) => {
                    s.frames.icmp_replies += 1;
                    r
                }
                Answer::None => continue,
            };
            if !s.mac.receiving() {
                s.frames.dropped_rx_off += 1;
                continue;
            }
            if s.to_host.len() == QUEUE_MAX {
                s.to_host.pop_front();
                s.frames.dropped_queue_full += 1;
            }
            s.to_host.push_back(frames::frame(&reply));
            queued = true;
        }
        drop(s);
        if queued {
            self.queued.notify_all();
        }
    }

    /// The next transfer for the host, waiting at most `wait`.
    pub fn next_to_host(&self, wait: Duration) -> Option<Vec<u8>> {
        let s = self.lock();
        let (mut s, _) = self
            .queued
            .wait_timeout_while(s, wait, |s| s.to_host.is_empty())
            .unwrap_or_else(|e| e.into_inner());
        s.to_host.pop_front()
    }

    /// Waits until `done` holds or `PLUG_WAIT` passed; whether it holds.
    fn wait_until(&self, done: impl Fn(&State) -> bool) -> bool {
        let s = self.lock();
        let (s, _) = self
            .changed
            .wait_timeout_while(s, PLUG_WAIT, |s| !done(s))
            .unwrap_or_else(|e| e.into_inner());
        done(&s)
    }

    /// Carries out a control command; the JSON result or why not.
    pub fn apply(&self, cmd: &Command) -> Result<Value, String> {
        let now = self.now();
        match *cmd {
            Command::Plug | Command::Unplug => {
                let plug = *cmd == Command::Plug;
                self.lock().plugged = plug;
                self.changed.notify_all();
                let ok = self.wait_until(|s| (s.usb != UsbState::Unplugged) == plug);
                if !ok {
                    return Err(format!(
                        "USB side did not follow within {} s",
                        PLUG_WAIT.as_secs()
                    ));
                }
                return Ok(json!({"usb": self.lock().usb}));
            }
            Command::Status => return Ok(self.status()),
            _ => {}
        }
        let mut s = self.lock();
        match *cmd {
            Command::Cable(c) => s.mac.phy.set_cable(c, now),
            Command::Partner(p) => s.mac.phy.set_partner(p, now),
            Command::LpaQuirk(on) => s.mac.phy.lpa_zero = on,
            Command::MdioError { op, reg, count } => s.mac.inject_error(op, reg, count),
            Command::MdioTimeout(n) => s.mac.inject_timeout(n),
            Command::MdioDelayUs(us) => s.mdio_delay = Duration::from_micros(us),
            Command::AnDelayMs(ms) => s.mac.phy.aneg_delay = Duration::from_millis(ms),
            Command::ResetCounters => {
                s.mac.counters = Counters::default();
                s.mac.phy.counters = Default::default();
                s.frames = FrameCounters::default();
            }
            Command::Plug | Command::Unplug | Command::Status => {}
        }
        Ok(json!({"done": true}))
    }

    /// The `status` JSON.
    pub fn status(&self) -> Value {
        let now = self.now();
        let mut s = self.lock();
        let mode = s.mac.phy.link_mode(now);
        let regs: serde_json::Map<String, Value> = (0..phy::NREGS as u8)
            .filter_map(|r| {
                let v = s.mac.phy.peek(r, now);
                let name = phy::reg_name(r);
                (r < 8 || v != 0).then(|| {
                    let key = if name.is_empty() {
                        format!("0x{r:02x}")
                    } else {
                        name.to_string()
                    };
                    (key, json!(format!("0x{v:04x}")))
                })
            })
            .collect();
        let c = &s.mac.counters;
        let mdio: Vec<Value> = c
            .mdio
            .iter()
            .map(|(&(addr, reg), rc)| mdio_entry(addr, reg, rc))
            .collect();
        let total = |f: fn(&RegCounters) -> u64| c.mdio.values().map(f).sum::<u64>();
        let phy_total = |f: fn(&RegCounters) -> u64| {
            c.mdio
                .iter()
                .filter(|((a, _), _)| *a == PHY_ADDR)
                .map(|(_, rc)| f(rc))
                .sum::<u64>()
        };
        let unknown_last: Vec<Value> = c
            .unknown_last
            .iter()
            .map(|u| {
                json!({"bmRequestType": format!("0x{:02x}", u.request_type), "bRequest": format!("0x{:02x}", u.request),
                       "wValue": u.value, "wIndex": u.index, "wLength": u.length})
            })
            .collect();
        let faults: Vec<Value> = s
            .mac
            .mdio_errors
            .iter()
            .map(|(&(op, reg), &left)| json!({"op": op, "reg": reg, "name": phy::reg_name(reg), "left": left}))
            .collect();
        let mac = &s.mac;
        json!({
            "usb": s.usb,
            "plugged": s.plugged,
            "sessions": s.sessions,
            "configurations": s.configurations,
            "uptime_ms": now.as_millis() as u64,
            "phy": {
                "addr": PHY_ADDR,
                "phy_id": format!("0x{:08x}", phy::PHY_ID),
                "cable": mac.phy.cable(),
                "link": mode.is_some(),
                "mode": mode.map(|m| m.to_string()),
                "partner": mac.phy.partner().to_string(),
                "lpa_quirk": mac.phy.lpa_zero,
                "an_delay_ms": mac.phy.aneg_delay.as_millis() as u64,
                "regs": regs,
                "counters": mac.phy.counters,
            },
            "mac": {
                "node_id": mac_str(&mac.node_id),
                "node_id_written": mac_str(&mac.node_id_written),
                "rx_ctl": format!("0x{:04x}", mac.rx_ctl),
                "medium": format!("0x{:04x}", mac.medium),
                "receiving": mac.receiving(),
                "sw_mii": mac.sw_mii,
                "sw_reset": format!("0x{:02x}", mac.sw_reset),
                "phy_select": format!("0x{:02x}", mac.phy_select),
                "gpio": format!("0x{:02x}", mac.gpio),
                "ipg": mac.ipg,
                "monitor": mac.monitor,
                "multi_filter": mac.multi_filter.iter().map(|b| format!("{b:02x}")).collect::<String>(),
            },
            "mdio": {
                "reads": total(|r| r.reads),
                "writes": total(|r| r.writes),
                "rd_err": total(|r| r.rd_err),
                "wr_err": total(|r| r.wr_err),
                "phy_reads": phy_total(|r| r.reads),
                "phy_writes": phy_total(|r| r.writes),
                "timeouts": c.mdio_timeouts,
                "timeouts_armed": mac.timeouts_armed,
                "timeout_reads_left": mac.timeout_reads_left,
                "delay_us": s.mdio_delay.as_micros() as u64,
                "faults": faults,
                "regs": mdio,
            },
            "requests": c.requests,
            "stalled": c.stalled,
            "unknown": c.unknown,
            "unknown_last": unknown_last,
            "frames": s.frames,
            "peer": {"mac": mac_str(&s.peer.mac), "ip": s.peer.ip.to_string()},
            "queued_to_host": s.to_host.len(),
        })
    }
}

fn mdio_entry(addr: u8, reg: u8, rc: &RegCounters) -> Value {
    json!({"addr": addr, "reg": reg, "name": phy::reg_name(reg),
           "reads": rc.reads, "writes": rc.writes, "rd_err": rc.rd_err, "wr_err": rc.wr_err})
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn mac_str(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let parts: Vec<&str> = s.split(':').collect();
    let mut m = [0u8; 6];
    if parts.len() != 6 {
        return Err(format!("bad MAC address {s:?}: expected aa:bb:cc:dd:ee:ff"));
    }
    for (b, p) in m.iter_mut().zip(parts) {
        *b = u8::from_str_radix(p, 16).map_err(|_| format!("bad MAC address {s:?}"))?;
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    fn emu() -> Emulator {
        let peer = Peer {
            mac: [0, 0x0e, 0xc6, 0x87, 0x72, 0x02],
            ip: Ipv4Addr::new(192, 168, 77, 2),
        };
        Emulator::new(
            [0, 0x0e, 0xc6, 0x87, 0x72, 0x01],
            peer,
            Duration::ZERO,
            true,
            |p| {
                p.aneg_delay = Duration::ZERO;
            },
        )
    }

    fn arp_for_peer() -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&[
            2, 0, 0, 0, 0, 1, 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 1,
        ]);
        f.extend_from_slice(&[192, 168, 77, 1, 0, 0, 0, 0, 0, 0, 192, 168, 77, 2]);
        frames::frame(&f)
    }

    #[test]
    fn frames_answered_only_with_link_and_receiver_on() {
        let e = emu();
        e.frames_from_host(&arp_for_peer());
        assert_eq!(
            e.lock().frames.dropped_rx_off,
            1,
            "RX_CTL.SO clear at power-on"
        );
        e.lock().mac.rx_ctl = crate::vendor::RX_CTL_SO;
        e.frames_from_host(&arp_for_peer());
        assert!(e.next_to_host(Duration::ZERO).is_some());
        e.apply(&Command::Cable(false)).unwrap();
        e.frames_from_host(&arp_for_peer());
        let s = e.lock();
        assert_eq!(s.frames.from_host, 3);
        assert_eq!(s.frames.dropped_link_down, 1);
        assert_eq!(s.frames.arp_replies, 2);
    }

    #[test]
    fn status_is_json_with_counters() {
        let e = emu();
        e.apply(&Command::MdioTimeout(2)).unwrap();
        let v = e.status();
        assert_eq!(v["usb"], "unplugged");
        assert_eq!(v["phy"]["phy_id"], "0x003b1861");
        assert_eq!(v["phy"]["regs"]["BMCR"], "0x3100");
        assert_eq!(v["mdio"]["timeouts_armed"], 2);
        assert_eq!(v["unknown"], 0);
    }

    #[test]
    fn mac_addresses_parse() {
        assert_eq!(
            parse_mac("00:0e:c6:87:72:01"),
            Ok([0, 0x0e, 0xc6, 0x87, 0x72, 1])
        );
        assert!(parse_mac("00:0e:c6").is_err());
        assert!(parse_mac("zz:0e:c6:87:72:01").is_err());
        assert_eq!(
            mac_str(&[0, 0x0e, 0xc6, 0x87, 0x72, 1]),
            "00:0e:c6:87:72:01"
        );
    }
}
