//! The AX88772A's internal PHY (MDIO address 0x10): a Clause 22 register model with the
//! semantics of the kernel-side simulator `driver/phy_sim/` (see docs/simulator.md): BMCR reset
//! only on a toggle of the written bit, autonegotiation completing `aneg_delay` after training
//! (re)starts, BMSR link status latched low, LPA from a configurable link partner, power-down,
//! and the AX88772A "LPA reads 0" quirk as a switch.
//!
//! Time is passed in (`now`, since the emulator started), so the model is deterministic.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The internal PHY's MDIO address (`AX_EMBD_PHY_ADDR`).
pub const PHY_ADDR: u8 = 0x10;
/// PHYSID1/PHYSID2 of the AX88772A's PHY.
pub const PHY_ID: u32 = 0x003b_1861;

/// Register numbers.
pub const BMCR: u8 = 0x00;
/// Basic mode status.
pub const BMSR: u8 = 0x01;
const PHYSID1: u8 = 0x02;
const PHYSID2: u8 = 0x03;
const ADVERTISE: u8 = 0x04;
const LPA: u8 = 0x05;
const EXPANSION: u8 = 0x06;
const MMD_CTRL: u8 = 0x0d;
const MMD_DATA: u8 = 0x0e;

const BMCR_RESET: u16 = 0x8000;
const BMCR_LOOPBACK: u16 = 0x4000;
const BMCR_SPEED100: u16 = 0x2000;
const BMCR_ANENABLE: u16 = 0x1000;
const BMCR_PDOWN: u16 = 0x0800;
const BMCR_ISOLATE: u16 = 0x0400;
const BMCR_ANRESTART: u16 = 0x0200;
const BMCR_FULLDPLX: u16 = 0x0100;
/// BMCR bits stored as written (RESET and ANRESTART are actions).
const BMCR_RW: u16 =
    BMCR_LOOPBACK | BMCR_SPEED100 | BMCR_ANENABLE | BMCR_PDOWN | BMCR_ISOLATE | BMCR_FULLDPLX;
const BMCR_DEFAULT: u16 = BMCR_ANENABLE | BMCR_SPEED100 | BMCR_FULLDPLX;

const BMSR_LSTATUS: u16 = 0x0004;
const BMSR_ANEGCOMPLETE: u16 = 0x0020;
/// 100/10 full/half, autoneg able, preamble suppression, extended registers.
const BMSR_BASE: u16 = 0x7849;

const ADVERTISE_CSMA: u16 = 0x0001;
const ADVERTISE_10HALF: u16 = 0x0020;
const ADVERTISE_10FULL: u16 = 0x0040;
const ADVERTISE_100HALF: u16 = 0x0080;
const ADVERTISE_100FULL: u16 = 0x0100;
const ADVERTISE_PAUSE_CAP: u16 = 0x0400;
const ADVERTISE_PAUSE_ASYM: u16 = 0x0800;
const ADVERTISE_RFAULT: u16 = 0x2000;
const ADVERTISE_ALL: u16 =
    ADVERTISE_10HALF | ADVERTISE_10FULL | ADVERTISE_100HALF | ADVERTISE_100FULL;
const ADV_RW: u16 = ADVERTISE_ALL | ADVERTISE_PAUSE_CAP | ADVERTISE_PAUSE_ASYM | ADVERTISE_RFAULT;
const ADV_DEFAULT: u16 = ADVERTISE_ALL | ADVERTISE_CSMA;
const LPA_LPACK: u16 = 0x4000;
const EXPANSION_NWAY: u16 = 0x0001;

/// The AX88772A's vendor registers 0x14–0x16 and the defaults `ax88772a_hw_reset` checks.
const VENDOR_DEFAULTS: [(u8, u16); 3] = [(0x14, 0x442c), (0x15, 0x03c8), (0x16, 0x4044)];

/// Number of Clause 22 registers.
pub const NREGS: usize = 32;

/// The name of a register, as in phy_sim (`BMCR`, `BMSR`, …), or `""`.
pub fn reg_name(reg: u8) -> &'static str {
    const NAMES: [&str; 16] = [
        "BMCR",
        "BMSR",
        "PHYSID1",
        "PHYSID2",
        "ADVERTISE",
        "LPA",
        "EXPANSION",
        "NPAGE",
        "LPNPAGE",
        "CTRL1000",
        "STAT1000",
        "",
        "",
        "MMD_CTRL",
        "MMD_DATA",
        "ESTATUS",
    ];
    NAMES.get(reg as usize).copied().unwrap_or("")
}

/// Parses a register: a number (0..31, decimal or 0x hex) or a name such as `BMSR`.
pub fn parse_reg(s: &str) -> Option<u8> {
    let n = if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u8::from_str_radix(hex, 16).ok()
    } else if let Ok(n) = s.parse::<u8>() {
        Some(n)
    } else {
        (0..16u8).find(|&r| !reg_name(r).is_empty() && reg_name(r).eq_ignore_ascii_case(s))
    };
    n.filter(|&r| (r as usize) < NREGS)
}

/// A link partner's abilities, as ADVERTISE bits (10/100 half/full, pause, asymmetric pause).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partner(pub u16);

impl Partner {
    const MASK: u16 = ADVERTISE_ALL | ADVERTISE_PAUSE_CAP | ADVERTISE_PAUSE_ASYM;
    /// Everything (10/100 half/full), no pause: phy_sim's default.
    pub const ALL: Partner = Partner(ADVERTISE_ALL);
}

impl FromStr for Partner {
    type Err = String;

    /// Words `100full 100half 10full 10half pause asym all none` (space or comma separated),
    /// or ADVERTISE bits (`0x1e0`), as phy_sim's `partner` file.
    fn from_str(s: &str) -> Result<Partner, String> {
        if let Some(hex) = s.strip_prefix("0x") {
            let v = u16::from_str_radix(hex, 16).map_err(|_| format!("bad partner bits {s:?}"))?;
            if v & !Self::MASK != 0 {
                return Err(format!("partner bits {s} outside {:#06x}", Self::MASK));
            }
            return Ok(Partner(v));
        }
        let mut v = 0;
        let mut any = false;
        for w in s.split([' ', ',']).filter(|w| !w.is_empty()) {
            any = true;
            v |= match w {
                "100full" => ADVERTISE_100FULL,
                "100half" => ADVERTISE_100HALF,
                "10full" => ADVERTISE_10FULL,
                "10half" => ADVERTISE_10HALF,
                "pause" => ADVERTISE_PAUSE_CAP,
                "asym" => ADVERTISE_PAUSE_ASYM,
                "all" => ADVERTISE_ALL,
                "none" => 0,
                _ => {
                    return Err(format!(
                        "unknown partner mode {w:?}: expected 100full 100half 10full 10half pause asym all none, or 0xBITS"
                    ));
                }
            };
        }
        if !any {
            return Err("empty partner mode".into());
        }
        Ok(Partner(v))
    }
}

impl fmt::Display for Partner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<&str> = [
            (ADVERTISE_100FULL, "100full"),
            (ADVERTISE_100HALF, "100half"),
            (ADVERTISE_10FULL, "10full"),
            (ADVERTISE_10HALF, "10half"),
            (ADVERTISE_PAUSE_CAP, "pause"),
            (ADVERTISE_PAUSE_ASYM, "asym"),
        ]
        .iter()
        .filter(|(bit, _)| self.0 & bit != 0)
        .map(|&(_, w)| w)
        .collect();
        if words.is_empty() {
            write!(f, "none")
        } else {
            write!(f, "{}", words.join(" "))
        }
    }
}

/// A resolved link mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mode {
    /// 10 or 100 Mb/s.
    pub speed: u32,
    /// Full duplex.
    pub full: bool,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}",
            self.speed,
            if self.full { "full" } else { "half" }
        )
    }
}

/// The best mode of a set of ADVERTISE bits (100 full > 100 half > 10 full > 10 half).
fn best_mode(common: u16) -> Option<u16> {
    [
        ADVERTISE_100FULL,
        ADVERTISE_100HALF,
        ADVERTISE_10FULL,
        ADVERTISE_10HALF,
    ]
    .into_iter()
    .find(|&m| common & m != 0)
}

/// The mode of one ADVERTISE bit.
fn mode_of(m: u16) -> Mode {
    Mode {
        speed: if m & (ADVERTISE_100FULL | ADVERTISE_100HALF) != 0 {
            100
        } else {
            10
        },
        full: m & (ADVERTISE_100FULL | ADVERTISE_10FULL) != 0,
    }
}

/// Counters of what the PHY did, as phy_sim's `counters` totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PhyCounters {
    /// Resets performed (BMCR.RESET toggles, hardware reset releases).
    pub resets: u64,
    /// BMCR.RESET writes ignored because the written bit was still latched.
    pub resets_ignored: u64,
    /// Autonegotiation restarts (BMCR.ANRESTART).
    pub aneg_restarts: u64,
}

/// The PHY's registers and its environment (cable, partner).
#[derive(Debug, Clone)]
pub struct Phy {
    bmcr: u16,
    adv: u16,
    regs: [u16; NREGS],
    reset_wr: bool,
    in_reset: bool,
    reset_end: Duration,
    /// Held in reset or powered down by the MAC (`SW_RESET` IPRL clear or IPPD set).
    hw_hold: bool,
    train_start: Duration,
    lfail: bool,
    was_up: bool,
    cable: bool,
    partner: Partner,
    /// Autonegotiation / link training time.
    pub aneg_delay: Duration,
    /// How long BMCR.RESET stays set.
    pub reset_delay: Duration,
    /// LPA reads 0 although autonegotiation completes (the AX88772A quirk with old switches).
    pub lpa_zero: bool,
    /// A RESET write resets only if the previously written RESET bit was clear.
    pub reset_needs_toggle: bool,
    /// What happened so far.
    pub counters: PhyCounters,
}

impl Phy {
    /// A PHY just powered on at `now`, cable in, partner [`Partner::ALL`].
    pub fn new(now: Duration, aneg_delay: Duration) -> Phy {
        let mut phy = Phy {
            bmcr: 0,
            adv: 0,
            regs: [0; NREGS],
            reset_wr: false,
            in_reset: false,
            reset_end: now,
            hw_hold: false,
            train_start: now,
            lfail: true,
            was_up: false,
            cable: true,
            partner: Partner::ALL,
            aneg_delay,
            reset_delay: Duration::from_millis(10),
            lpa_zero: false,
            reset_needs_toggle: true,
            counters: PhyCounters::default(),
        };
        phy.defaults();
        phy
    }

    fn defaults(&mut self) {
        self.bmcr = BMCR_DEFAULT;
        self.adv = ADV_DEFAULT;
        self.regs = [0; NREGS];
        for (reg, v) in VENDOR_DEFAULTS {
            self.regs[reg as usize] = v;
        }
    }

    /// The resolved mode if the link is up (without catching up with time first).
    fn link(&self, now: Duration) -> Option<(u16, Mode)> {
        if self.in_reset || self.hw_hold || self.bmcr & (BMCR_PDOWN | BMCR_ISOLATE) != 0 {
            return None;
        }
        if self.loopback() {
            // Looped back inside the PHY: up at the forced mode, cable and partner do not matter.
            let m = match (
                self.bmcr & BMCR_SPEED100 != 0,
                self.bmcr & BMCR_FULLDPLX != 0,
            ) {
                (true, true) => ADVERTISE_100FULL,
                (true, false) => ADVERTISE_100HALF,
                (false, true) => ADVERTISE_10FULL,
                (false, false) => ADVERTISE_10HALF,
            };
            return Some((m, mode_of(m)));
        }
        if !self.cable {
            return None;
        }
        if now < self.train_start + self.aneg_delay {
            return None;
        }
        let p = self.partner.0;
        let common = if self.bmcr & BMCR_ANENABLE != 0 {
            self.adv & p & ADVERTISE_ALL
        } else {
            // Forced: the partner detects the speed by parallel detection.
            let (full, half) = if self.bmcr & BMCR_SPEED100 != 0 {
                (ADVERTISE_100FULL, ADVERTISE_100HALF)
            } else {
                (ADVERTISE_10FULL, ADVERTISE_10HALF)
            };
            if p & (full | half) == 0 {
                0
            } else if self.bmcr & BMCR_FULLDPLX != 0 {
                full
            } else {
                half
            }
        };
        best_mode(common).map(|m| (m, mode_of(m)))
    }

    /// BMCR.LOOPBACK: frames from the MAC come back to it.
    pub fn loopback(&self) -> bool {
        self.bmcr & BMCR_LOOPBACK != 0
    }

    /// Catches up with time: ends a reset, notices a lost link (latched).
    fn sync(&mut self, now: Duration) -> Option<(u16, Mode)> {
        if self.in_reset && now >= self.reset_end {
            self.in_reset = false;
            self.defaults();
            self.train_start = self.reset_end;
        }
        let up = self.link(now);
        if self.was_up && up.is_none() {
            self.lfail = true;
        }
        self.was_up = up.is_some();
        up
    }

    /// The link goes down now (latched) and training restarts at `start`.
    fn retrain_at(&mut self, start: Duration) {
        self.lfail = true;
        self.was_up = false;
        self.train_start = start;
    }

    /// The link mode now, if up.
    pub fn link_mode(&mut self, now: Duration) -> Option<Mode> {
        self.sync(now).map(|(_, m)| m)
    }

    /// Whether the cable is in.
    pub fn cable(&self) -> bool {
        self.cable
    }

    /// Plugs the cable in (training starts) or pulls it (link down, latched).
    pub fn set_cable(&mut self, plugged: bool, now: Duration) {
        self.sync(now);
        if plugged != self.cable {
            self.cable = plugged;
            self.retrain_at(now);
        }
    }

    /// The link partner.
    pub fn partner(&self) -> Partner {
        self.partner
    }

    /// A new link partner: the link drops and renegotiates.
    pub fn set_partner(&mut self, partner: Partner, now: Duration) {
        self.sync(now);
        self.partner = partner;
        self.retrain_at(now);
    }

    /// The MAC's `SW_RESET` lines: `hold` while IPRL is clear or IPPD set. Releasing the hold
    /// is a hardware reset: registers to defaults, training restarts.
    pub fn set_hw_hold(&mut self, hold: bool, now: Duration) {
        self.sync(now);
        if hold && !self.hw_hold {
            self.retrain_at(now);
        } else if !hold && self.hw_hold {
            self.defaults();
            self.reset_wr = false;
            self.counters.resets += 1;
            self.retrain_at(now);
        }
        self.hw_hold = hold;
    }

    /// A register read over MDIO (clears the BMSR latch).
    pub fn read(&mut self, reg: u8, now: Duration) -> u16 {
        self.value(reg, now, false)
    }

    /// A register's value without side effects (status output).
    pub fn peek(&mut self, reg: u8, now: Duration) -> u16 {
        self.value(reg, now, true)
    }

    fn value(&mut self, reg: u8, now: Duration, peek: bool) -> u16 {
        let up = self.sync(now);
        let an = self.bmcr & BMCR_ANENABLE != 0;
        match reg {
            BMCR => {
                let mut v = self.bmcr;
                if self.in_reset {
                    v |= BMCR_RESET;
                }
                if let (true, Some((m, _))) = (an, up) {
                    v &= !(BMCR_SPEED100 | BMCR_FULLDPLX);
                    if m & (ADVERTISE_100FULL | ADVERTISE_100HALF) != 0 {
                        v |= BMCR_SPEED100;
                    }
                    if m & (ADVERTISE_100FULL | ADVERTISE_10FULL) != 0 {
                        v |= BMCR_FULLDPLX;
                    }
                }
                v
            }
            BMSR => {
                let mut v = BMSR_BASE;
                if up.is_some() && !self.lfail {
                    v |= BMSR_LSTATUS;
                }
                if up.is_some() && an {
                    v |= BMSR_ANEGCOMPLETE;
                }
                if !peek {
                    self.lfail = false;
                }
                v
            }
            PHYSID1 => (PHY_ID >> 16) as u16,
            PHYSID2 => PHY_ID as u16,
            ADVERTISE => self.adv,
            LPA => {
                if up.is_none() || !an || self.lpa_zero {
                    0
                } else {
                    self.partner.0 | LPA_LPACK | ADVERTISE_CSMA
                }
            }
            EXPANSION => {
                if up.is_some() && an {
                    EXPANSION_NWAY
                } else {
                    0
                }
            }
            MMD_DATA if self.regs[MMD_CTRL as usize] & 0xc000 != 0 => 0,
            r if (r as usize) < NREGS => self.regs[r as usize],
            _ => 0xffff,
        }
    }

    /// A register write over MDIO.
    pub fn write(&mut self, reg: u8, val: u16, now: Duration) {
        self.sync(now);
        match reg {
            BMCR => {
                let rst = val & BMCR_RESET != 0;
                let edge = rst && !self.reset_wr;
                self.reset_wr = self.reset_needs_toggle && rst;
                if self.in_reset {
                    return; // busy: only the RESET latch follows
                }
                if rst {
                    if !edge {
                        self.counters.resets_ignored += 1;
                        return;
                    }
                    self.in_reset = true;
                    self.reset_end = now + self.reset_delay;
                    self.counters.resets += 1;
                    self.retrain_at(self.reset_end);
                    return;
                }
                let old = self.bmcr;
                self.bmcr = val & BMCR_RW;
                let changed = old ^ self.bmcr;
                if changed & (BMCR_ANENABLE | BMCR_PDOWN | BMCR_ISOLATE) != 0
                    || (self.bmcr & BMCR_ANENABLE == 0
                        && changed & (BMCR_SPEED100 | BMCR_FULLDPLX) != 0)
                {
                    self.retrain_at(now);
                }
                if val & BMCR_ANRESTART != 0 && self.bmcr & BMCR_ANENABLE != 0 {
                    self.counters.aneg_restarts += 1;
                    self.retrain_at(now);
                }
            }
            BMSR | PHYSID1 | PHYSID2 | LPA | EXPANSION => {} // read-only
            ADVERTISE => self.adv = (val & ADV_RW) | ADVERTISE_CSMA,
            r if (r as usize) < NREGS => self.regs[r as usize] = val,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AN: Duration = Duration::from_millis(100);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A PHY whose link is up at 1 s, with the latch read once.
    fn up_phy() -> Phy {
        let mut p = Phy::new(ms(0), AN);
        p.read(BMSR, ms(1000));
        p
    }

    #[test]
    fn ids_and_other_defaults() {
        let mut p = Phy::new(ms(0), AN);
        assert_eq!(p.read(PHYSID1, ms(0)), 0x003b);
        assert_eq!(p.read(PHYSID2, ms(0)), 0x1861);
        assert_eq!(p.read(BMCR, ms(0)), 0x3100);
        assert_eq!(p.read(ADVERTISE, ms(0)), 0x01e1);
        assert_eq!(p.read(0x14, ms(0)), 0x442c);
        assert_eq!(p.read(0x16, ms(0)), 0x4044);
    }

    #[test]
    fn autoneg_completes_after_the_delay() {
        let mut p = Phy::new(ms(0), AN);
        assert_eq!(p.read(BMSR, ms(99)) & (BMSR_LSTATUS | BMSR_ANEGCOMPLETE), 0);
        assert_eq!(p.read(LPA, ms(99)), 0);
        let bmsr = p.read(BMSR, ms(100));
        assert_eq!(bmsr & BMSR_ANEGCOMPLETE, BMSR_ANEGCOMPLETE);
        assert_eq!(p.read(LPA, ms(100)), 0x41e1);
        assert_eq!(
            p.link_mode(ms(100)),
            Some(Mode {
                speed: 100,
                full: true
            })
        );
    }

    #[test]
    fn link_status_is_latched_low() {
        let mut p = up_phy();
        assert_ne!(p.read(BMSR, ms(1001)) & BMSR_LSTATUS, 0);
        p.set_cable(false, ms(1002));
        p.set_cable(true, ms(1003));
        // Up again after the training delay, but the first read still shows the drop.
        assert_eq!(p.read(BMSR, ms(2000)) & BMSR_LSTATUS, 0);
        assert_ne!(p.read(BMSR, ms(2001)) & BMSR_LSTATUS, 0);
        // peek does not clear the latch.
        p.set_cable(false, ms(2002));
        p.set_cable(true, ms(2003));
        assert_eq!(p.peek(BMSR, ms(3000)) & BMSR_LSTATUS, 0);
        assert_eq!(p.read(BMSR, ms(3000)) & BMSR_LSTATUS, 0);
        assert_ne!(p.read(BMSR, ms(3001)) & BMSR_LSTATUS, 0);
    }

    #[test]
    fn reset_needs_a_toggle_of_the_written_bit() {
        let mut p = up_phy();
        p.write(BMCR, BMCR_RESET | BMCR_ANENABLE, ms(1000));
        assert_eq!(p.counters.resets, 1);
        assert_ne!(p.read(BMCR, ms(1005)) & BMCR_RESET, 0);
        assert_eq!(
            p.read(BMCR, ms(1010)) & BMCR_RESET,
            0,
            "self-clears after reset_delay"
        );
        // Written again without clearing first: ignored.
        p.write(BMCR, BMCR_RESET | BMCR_ANENABLE, ms(1020));
        assert_eq!(p.counters.resets, 1);
        assert_eq!(p.counters.resets_ignored, 1);
        assert_eq!(p.read(BMCR, ms(1021)) & BMCR_RESET, 0);
        // BMCR=0 then RESET (asix_soft_reset): a reset.
        p.write(BMCR, 0, ms(1030));
        p.write(BMCR, BMCR_RESET | BMCR_ANRESTART, ms(1031));
        assert_eq!(p.counters.resets, 2);
        // Without the quirk every RESET write resets.
        p.reset_needs_toggle = false;
        p.write(BMCR, 0, ms(1999));
        p.write(BMCR, BMCR_RESET, ms(2000));
        p.write(BMCR, BMCR_RESET, ms(2100));
        assert_eq!(p.counters.resets, 4);
    }

    #[test]
    fn reset_restores_defaults_and_retrains() {
        let mut p = up_phy();
        p.write(ADVERTISE, 0x0021, ms(1000));
        p.write(BMCR, 0, ms(1001));
        p.write(BMCR, BMCR_RESET, ms(1002));
        assert_eq!(p.read(ADVERTISE, ms(1012)), 0x01e1);
        assert_eq!(
            p.link_mode(ms(1111)),
            None,
            "training restarts at the end of the reset"
        );
        assert!(p.link_mode(ms(1112)).is_some());
    }

    #[test]
    fn lpa_quirk_reads_zero_with_the_link_up() {
        let mut p = up_phy();
        p.lpa_zero = true;
        assert_eq!(p.read(LPA, ms(1000)), 0);
        assert_ne!(p.read(BMSR, ms(1000)) & BMSR_ANEGCOMPLETE, 0);
        // The negotiated mode shows in BMCR, which the AX88772A workaround reads.
        assert_eq!(
            p.read(BMCR, ms(1000)) & (BMCR_SPEED100 | BMCR_FULLDPLX),
            0x2100
        );
    }

    #[test]
    fn partner_decides_the_mode() {
        let mut p = up_phy();
        p.set_partner("10half".parse().unwrap(), ms(1000));
        assert_eq!(p.link_mode(ms(1050)), None);
        assert_eq!(
            p.link_mode(ms(1100)),
            Some(Mode {
                speed: 10,
                full: false
            })
        );
        assert_eq!(p.read(BMCR, ms(1100)) & (BMCR_SPEED100 | BMCR_FULLDPLX), 0);
        p.set_partner("none".parse().unwrap(), ms(1200));
        assert_eq!(p.link_mode(ms(5000)), None);
        // Forced 100 full against a 100-capable partner: parallel detection.
        p.set_partner(Partner::ALL, ms(6000));
        p.write(BMCR, BMCR_SPEED100 | BMCR_FULLDPLX, ms(6000));
        assert_eq!(
            p.link_mode(ms(6100)),
            Some(Mode {
                speed: 100,
                full: true
            })
        );
        assert_eq!(p.read(LPA, ms(6100)), 0, "no LPA without autoneg");
    }

    #[test]
    fn power_down_drops_the_link() {
        let mut p = up_phy();
        p.write(BMCR, BMCR_DEFAULT | BMCR_PDOWN, ms(1000));
        assert_eq!(p.link_mode(ms(5000)), None);
        p.write(BMCR, BMCR_DEFAULT, ms(5000));
        assert!(p.link_mode(ms(5100)).is_some());
    }

    #[test]
    fn loopback_is_up_at_the_forced_mode_without_cable() {
        let mut p = up_phy();
        p.set_cable(false, ms(1000));
        p.write(
            BMCR,
            BMCR_LOOPBACK | BMCR_SPEED100 | BMCR_FULLDPLX,
            ms(1001),
        );
        assert!(p.loopback());
        assert_eq!(
            p.link_mode(ms(1001)),
            Some(Mode {
                speed: 100,
                full: true
            })
        );
        p.write(BMCR, BMCR_DEFAULT, ms(1002));
        assert_eq!(p.link_mode(ms(2000)), None, "cable still out");
    }

    #[test]
    fn hw_hold_release_is_a_reset() {
        let mut p = up_phy();
        p.write(ADVERTISE, 0x0021, ms(1000));
        p.set_hw_hold(true, ms(1000));
        assert_eq!(p.link_mode(ms(2000)), None);
        p.set_hw_hold(false, ms(2000));
        assert_eq!(p.read(ADVERTISE, ms(2000)), 0x01e1);
        assert_eq!(p.counters.resets, 1);
        assert!(p.link_mode(ms(2100)).is_some());
    }

    #[test]
    fn partner_and_register_parsing() {
        assert_eq!("100full,10half".parse::<Partner>().unwrap().0, 0x0120);
        assert_eq!("0x1e0".parse::<Partner>().unwrap().0, 0x01e0);
        assert!("gigabit".parse::<Partner>().is_err());
        assert!("".parse::<Partner>().is_err());
        assert!("0x8000".parse::<Partner>().is_err());
        assert_eq!(Partner(0x01e0).to_string(), "100full 100half 10full 10half");
        assert_eq!(parse_reg("BMSR"), Some(1));
        assert_eq!(parse_reg("lpa"), Some(5));
        assert_eq!(parse_reg("0x14"), Some(0x14));
        assert_eq!(parse_reg("31"), Some(31));
        assert_eq!(parse_reg("32"), None);
        assert_eq!(parse_reg("nope"), None);
    }
}
