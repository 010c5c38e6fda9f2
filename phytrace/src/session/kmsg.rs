//! The kernel's log lines as events, each in its place among the driver's.
//!
//! Two views of the same `printk`s are joined. The `printk:console` tracepoint, read from a
//! tracefs instance of our own whose clock is `mono` (`ktime_get_mono_fast_ns`, the clock the
//! eBPF programs stamp records with), gives each line's time, CPU and thread: it fires in the
//! caller, as the line is stored. `/dev/kmsg` gives the same line's level and the device the
//! kernel says it is about; a line is paired with its record by its text, in order. Lines wait
//! per CPU until a ring-buffer record of that CPU stamped later is handed out (or the ring is
//! empty), so each CPU's events stay in time order (see [`Kmsg::release`]).

use std::collections::{BTreeMap, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use phytrace_common::RawIdentity;

use super::Sink;
use crate::event::{Event, EventKind, MacChange, PhyRef};
use crate::kernel::tracefs::tracefs;
use crate::records::{decode::c_string, session::KmsgHeader};

/// The kernel's log, one record per read.
const DEV_KMSG: &str = "/dev/kmsg";
/// Prefix of our tracefs instances' names (then the process id).
const INSTANCE_PREFIX: &str = "phytrace-kmsg-";
/// Per-CPU buffer of our tracefs instance, in KiB: lines are few and read often.
const BUFFER_KB: &str = "256";
/// Most lines or records waiting for their pair; older ones are passed on unpaired.
const MAX_WAITING: usize = 4096;
/// Modules whose lines are about the traced links even when they name no device phytrace
/// knows: phylib and the MAC side it follows.
const LINK_MODULES: &[&str] = &["asix", "phylink", "usbnet", "libphy", "phy_sim"];

/// Which kernel messages a session takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum KmsgScope {
    /// Lines about the traced PHYs, their buses, MAC devices and driver modules.
    #[default]
    Related,
    /// Every line of the kernel's log.
    All,
    /// None.
    Off,
}

impl KmsgScope {
    /// The name the capture header uses.
    pub fn name(self) -> &'static str {
        match self {
            Self::Related => "related",
            Self::All => "all",
            Self::Off => "off",
        }
    }
}

/// A line as the tracepoint saw it, and what `/dev/kmsg` says of it once paired.
#[derive(Debug)]
struct Line {
    ts_ns: u64,
    cpu: u32,
    tid: u32,
    text: String,
    /// From its `/dev/kmsg` record, once paired.
    level: Option<u8>,
    device: Option<String>,
    paired: bool,
}

/// A `/dev/kmsg` record.
#[derive(Debug, PartialEq, Eq)]
struct Record {
    level: u8,
    text: String,
    /// Its `DEVICE=` (`+usb:1-1:1.0`, `+mdio_bus:usb-001:002:10`), if any.
    device: Option<String>,
}

/// Our tracefs instance, removed when dropped.
struct Instance {
    dir: PathBuf,
    pipe: Option<File>,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = fs::write(self.dir.join("events/printk/console/enable"), "0");
        // The instance cannot go while its pipe is open.
        self.pipe = None;
        let _ = fs::remove_dir(&self.dir);
    }
}

/// The session's kernel messages: the tracefs instance, `/dev/kmsg`, and the lines waiting.
pub struct Kmsg {
    scope: KmsgScope,
    instance: Option<Instance>,
    log: Option<File>,
    /// Lines read, in the order they were printed.
    lines: VecDeque<Line>,
    /// Records read from `/dev/kmsg` whose line has not been read yet.
    records: VecDeque<Record>,
    /// Bytes of the tracepoint's pipe not yet ended by a newline.
    partial: Vec<u8>,
    /// Time of the last event handed out, by CPU.
    last_out: Vec<u64>,
    /// PHYs seen, by `bus:addr`.
    phys: BTreeMap<String, PhyRef>,
    /// Network devices seen with their PHY.
    netdevs: BTreeMap<String, PhyRef>,
    /// Devices of `/dev/kmsg` (`+usb:1-1:1.0`) seen in a line naming a PHY, with that PHY.
    devices: BTreeMap<String, PhyRef>,
    /// Driver modules the session follows (empty: every PHY driver).
    modules: Vec<String>,
    header: KmsgHeader,
}

impl Kmsg {
    /// Starts taking the lines `scope` asks for; `modules` are the driver modules followed.
    /// What cannot be read is said in the header, never an error.
    pub fn start(scope: KmsgScope, modules: &[String]) -> Self {
        let restricted =
            fs::read_to_string("/proc/sys/kernel/dmesg_restrict").is_ok_and(|v| v.trim() == "1");
        let mut kmsg = Self::idle(scope, modules, restricted);
        if scope == KmsgScope::Off {
            return kmsg;
        }
        // The tracepoint first: a line printed between the two openings has its time, and its
        // record is read as soon as it is stored.
        let instance = tracefs().map_err(|err| err.to_string()).and_then(|root| {
            Instance::create(root).map_err(|err| format!("{}: {err}", root.display()))
        });
        match instance {
            Ok(instance) => kmsg.instance = Some(instance),
            Err(err) => {
                kmsg.header.unavailable = Some(format!("cannot trace printk:console: {err}"));
                return kmsg;
            }
        }
        match open_log() {
            Ok(log) => kmsg.log = Some(log),
            // The lines are still taken, their level unknown.
            Err(err) if err.kind() == io::ErrorKind::PermissionDenied => {
                kmsg.header.restricted = true
            }
            Err(_) => {}
        }
        kmsg
    }

    /// A session of `scope` that has opened nothing yet (`restricted`: `dmesg_restrict` is set).
    fn idle(scope: KmsgScope, modules: &[String], restricted: bool) -> Self {
        Self {
            scope,
            instance: None,
            log: None,
            lines: VecDeque::new(),
            records: VecDeque::new(),
            partial: Vec::new(),
            last_out: Vec::new(),
            phys: BTreeMap::new(),
            netdevs: BTreeMap::new(),
            devices: BTreeMap::new(),
            modules: modules.to_vec(),
            header: KmsgHeader {
                scope: scope.name().to_owned(),
                unavailable: None,
                restricted,
            },
        }
    }

    /// What the capture header says of the session's kernel messages.
    pub fn header(&self) -> KmsgHeader {
        self.header.clone()
    }

    /// Learns which PHY a network device is attached to, from the events that say so.
    pub fn learn(&mut self, event: &Event) {
        if let (
            EventKind::Mac {
                change: MacChange::Carrier { netdev, .. },
            },
            Some(phy),
        ) = (&event.kind, &event.phy)
        {
            self.netdevs.insert(netdev.to_string(), phy.clone());
            self.phys.insert(phy.key(), phy.clone());
        }
    }

    /// Learns a PHY from the record that names it, before any event of it.
    pub fn learn_phy(&mut self, identity: &RawIdentity) {
        if identity.phydev == 0 || self.phys.len() >= MAX_WAITING {
            return;
        }
        let phy = PhyRef {
            bus: c_string(&identity.bus_id).into(),
            addr: identity.addr,
            phy_id: identity.phy_id,
            driver: c_string(&identity.driver).into(),
        };
        self.phys.insert(phy.key(), phy);
    }

    /// Reads the lines printed so far and their records. Call it before reading the ring
    /// buffer: every line stamped before that read is then in hand.
    pub fn poll(&mut self) {
        let Some(pipe) = self.instance.as_mut().and_then(|i| i.pipe.as_mut()) else {
            return;
        };
        let mut buf = [0u8; 16384];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.partial.extend_from_slice(&buf[..n]),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                // EAGAIN: nothing more.
                Err(_) => break,
            }
        }
        self.take_lines();
        self.read_log();
    }

    /// Parses the whole entries of the pipe's text (a message's own newlines continue it).
    fn take_lines(&mut self) {
        // The pipe hands out whole entries: the last one ends the text read.
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return;
        };
        let text = String::from_utf8_lossy(&self.partial[..end]).into_owned();
        for raw in text.split('\n') {
            match parse_console(raw) {
                Some(line) => {
                    self.lines.push_back(line);
                    if self.lines.len() > MAX_WAITING {
                        self.lines.pop_front();
                    }
                }
                None => {
                    if let Some(last) = self.lines.back_mut() {
                        last.text.push('\n');
                        last.text.push_str(raw);
                    }
                }
            }
        }
        self.partial.drain(..=end);
    }

    /// Reads `/dev/kmsg`'s new records and pairs them with their lines.
    fn read_log(&mut self) {
        let Some(log) = self.log.as_mut() else { return };
        let mut buf = vec![0u8; 8192];
        loop {
            match log.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if let Some(record) = parse_record(&String::from_utf8_lossy(&buf[..n])) {
                        self.records.push_back(record);
                        if self.records.len() > MAX_WAITING {
                            self.records.pop_front();
                        }
                    }
                }
                // EPIPE: records were overwritten before we read them; go on with the next.
                Err(err) if err.raw_os_error() == Some(libc::EPIPE) => {}
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        self.pair();
    }

    /// Gives each record the first unpaired line of the same text; a record whose line is
    /// not in hand yet waits for it.
    fn pair(&mut self) {
        let mut waiting = VecDeque::new();
        while let Some(record) = self.records.pop_front() {
            match self
                .lines
                .iter_mut()
                .find(|l| !l.paired && l.text == record.text)
            {
                Some(line) => {
                    line.paired = true;
                    line.level = Some(record.level);
                    line.device = record.device;
                }
                None => waiting.push_back(record),
            }
        }
        self.records = waiting;
    }

    /// Hands `out` the lines of `cpu` printed up to `ts_ns`: a ring-buffer record of that CPU
    /// stamped `ts_ns` is handed out next.
    pub fn release(&mut self, ts_ns: u64, cpu: u32, out: &mut impl Sink) {
        if self.lines.is_empty() {
            self.handed_out(cpu, ts_ns);
            return;
        }
        let due = |l: &Line| l.cpu == cpu && l.ts_ns <= ts_ns;
        if self.lines.iter().any(|l| due(l) && !l.paired) {
            // Its record is stored right after the line: read it now.
            self.read_log();
        }
        let mut kept = VecDeque::with_capacity(self.lines.len());
        while let Some(line) = self.lines.pop_front() {
            if due(&line) {
                self.hand_out(line, out);
            } else {
                kept.push_back(line);
            }
        }
        self.lines = kept;
        self.handed_out(cpu, ts_ns);
    }

    /// Notes that an event of `cpu` stamped `ts_ns` was handed out; returns the time a line of
    /// that CPU stamped `ts_ns` takes: never before it.
    fn handed_out(&mut self, cpu: u32, ts_ns: u64) -> u64 {
        let cpu = cpu as usize;
        if self.last_out.len() <= cpu {
            self.last_out.resize(cpu + 1, 0);
        }
        let last = &mut self.last_out[cpu];
        *last = (*last).max(ts_ns);
        *last
    }

    /// Hands `out` every line read: every record stamped before now has been handed out.
    pub fn release_all(&mut self, out: &mut impl Sink) {
        if self.lines.iter().any(|l| !l.paired) {
            self.read_log();
        }
        while let Some(line) = self.lines.pop_front() {
            self.hand_out(line, out);
        }
    }

    /// The event of `line`, if the scope takes it: never before an event already handed out
    /// on its CPU (a line read after such an event raced with the read, and follows it).
    fn hand_out(&mut self, line: Line, out: &mut impl Sink) {
        let phy = self.phy_of(&line);
        if self.scope != KmsgScope::All && phy.is_none() && !self.related(&line) {
            return;
        }
        let ts_ns = self.handed_out(line.cpu, line.ts_ns);
        out.event(Event {
            ts_ns,
            cpu: line.cpu,
            tid: line.tid,
            phy,
            kind: EventKind::Kmsg {
                level: line.level,
                text: line.text.into(),
            },
        });
    }

    /// The PHY `line` is about: the one it names by `bus:addr` or by bus, else the one last
    /// named by a line of the same device (a USB interface keeps its name when the dongle is
    /// plugged in again, with a new PHY), else the one of the network device it names.
    fn phy_of(&mut self, line: &Line) -> Option<PhyRef> {
        let text = line.text.as_str();
        let named = self
            .phys
            .values()
            .find(|phy| text.contains(&phy.key()))
            .or_else(|| {
                self.phys
                    .values()
                    .find(|phy| text.contains(phy.bus.as_ref()))
            })
            .cloned();
        if let (Some(phy), Some(device)) = (&named, &line.device)
            && self.devices.len() < MAX_WAITING
        {
            self.devices.insert(device.clone(), phy.clone());
        }
        named
            .or_else(|| self.devices.get(line.device.as_ref()?).cloned())
            .or_else(|| words(text).find_map(|word| self.netdevs.get(word).cloned()))
    }

    /// Whether `line` is about a PHY, an MDIO bus or a module the session follows.
    fn related(&self, line: &Line) -> bool {
        let first = words(&line.text).next().unwrap_or_default();
        line.device
            .as_deref()
            .is_some_and(|d| d.starts_with("+mdio_bus:"))
            || LINK_MODULES.contains(&first)
            || self.modules.iter().any(|m| m == first)
            || words(&line.text).any(|w| {
                let w = w.to_ascii_lowercase();
                w == "phy" || w.starts_with("mdio") || w.contains("phylink")
            })
    }
}

/// The words of `text`: runs of characters that can make a device or module name.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || "_-.".contains(c)))
        .filter(|w| !w.is_empty())
}

impl Instance {
    /// Creates an instance of tracefs at `root` with the `mono` clock and `printk:console`
    /// enabled, and opens its pipe. Instances left by phytrace processes that are gone are
    /// removed first.
    fn create(root: &Path) -> io::Result<Self> {
        let instances = root.join("instances");
        for entry in fs::read_dir(&instances)?.flatten() {
            let name = entry.file_name();
            if let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(INSTANCE_PREFIX))
                && !Path::new("/proc").join(pid).exists()
            {
                let _ = fs::remove_dir(entry.path());
            }
        }
        let dir = instances.join(format!("{INSTANCE_PREFIX}{}", std::process::id()));
        fs::create_dir(&dir)?;
        // From here on, dropping it removes the instance.
        let mut instance = Self { dir, pipe: None };
        fs::write(instance.dir.join("trace_clock"), "mono")?;
        fs::write(instance.dir.join("buffer_size_kb"), BUFFER_KB)?;
        fs::write(instance.dir.join("events/printk/console/enable"), "1")?;
        instance.pipe = Some(
            OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(instance.dir.join("trace_pipe"))?,
        );
        Ok(instance)
    }
}

/// `/dev/kmsg`, read without blocking from its end on.
fn open_log() -> io::Result<File> {
    let mut log = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(DEV_KMSG)?;
    log.seek(SeekFrom::End(0))?;
    Ok(log)
}

/// One entry of the pipe: `comm-PID [CPU] FLAGS SECS.USECS: console: TEXT`.
fn parse_console(raw: &str) -> Option<Line> {
    let (head, text) = raw.split_once(": console: ")?;
    let mut tokens = head.split_whitespace().rev();
    let (secs, usecs) = tokens.next()?.split_once('.')?;
    let ts_ns = secs.parse::<u64>().ok()? * 1_000_000_000 + usecs.parse::<u64>().ok()? * 1_000;
    let cpu = tokens.find_map(|t| t.strip_prefix('[')?.strip_suffix(']')?.parse().ok())?;
    let task = head.split(" [").next()?.trim();
    let tid = task.rsplit_once('-')?.1.parse().ok()?;
    Some(Line {
        ts_ns,
        cpu,
        tid,
        text: text.to_owned(),
        level: None,
        device: None,
        paired: false,
    })
}

/// One `/dev/kmsg` record: `PRI,SEQ,USECS,FLAGS[,…];TEXT` then ` KEY=VALUE` lines; the text's
/// unprintable bytes come as `\xNN`.
fn parse_record(raw: &str) -> Option<Record> {
    let (prefix, rest) = raw.split_once(';')?;
    let priority: u32 = prefix.split(',').next()?.parse().ok()?;
    let mut lines = rest.split('\n');
    let text = unescape(lines.next()?);
    let device = lines
        .filter_map(|l| l.strip_prefix(" DEVICE="))
        .map(str::to_owned)
        .next();
    Some(Record {
        level: (priority & 7) as u8,
        text,
        device,
    })
}

/// `text` with its `\xNN` escapes undone.
fn unescape(text: &str) -> String {
    let mut bytes = Vec::with_capacity(text.len());
    let raw = text.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\'
            && raw.get(i + 1) == Some(&b'x')
            && let Some(byte) = raw
                .get(i + 2..i + 4)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            bytes.push(byte);
            i += 4;
            continue;
        }
        bytes.push(raw[i]);
        i += 1;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_entries_give_time_cpu_and_thread() {
        let line = parse_console(
            "     kworker/0:2-41      [001] d..1.    32.406020: console: asix 1-1:1.0 eth0: Failed to enable software MII access",
        )
        .unwrap();
        assert_eq!((line.ts_ns, line.cpu, line.tid), (32_406_020_000, 1, 41));
        assert_eq!(
            line.text,
            "asix 1-1:1.0 eth0: Failed to enable software MII access"
        );
        assert!(parse_console("no entry").is_none());
    }

    #[test]
    fn records_give_level_text_and_device() {
        let record = parse_record(
            "3,812,32406020,-;asix 1-1:1.0 eth0: Failed to write \\x5c ok\n SUBSYSTEM=usb\n DEVICE=+usb:1-1:1.0\n",
        )
        .unwrap();
        assert_eq!(
            record,
            Record {
                level: 3,
                text: "asix 1-1:1.0 eth0: Failed to write \\ ok".to_owned(),
                device: Some("+usb:1-1:1.0".to_owned()),
            }
        );
    }

    fn session() -> Kmsg {
        Kmsg::idle(KmsgScope::Related, &["ax88796b_rust".to_owned()], false)
    }

    #[test]
    fn lines_wait_for_their_place_and_name_their_phy() {
        let mut kmsg = session();
        let phy = PhyRef {
            bus: "usb-001:002".into(),
            addr: 16,
            phy_id: 0x003b_1861,
            driver: "Asix Electronics AX88772A".into(),
        };
        kmsg.learn(&Event {
            ts_ns: 1,
            cpu: 0,
            tid: 1,
            phy: Some(phy.clone()),
            kind: EventKind::Mac {
                change: MacChange::Carrier {
                    netdev: "eth0".into(),
                    up: true,
                },
            },
        });
        kmsg.partial.extend_from_slice(
            b" kworker/1:1-50 [001] ..... 2.000001: console: asix 1-1:1.0 eth0: Failed to enable software MII access\n\
              sh-90 [000] ..... 2.000002: console: random: crng init done\n",
        );
        kmsg.take_lines();
        kmsg.records.push_back(Record {
            level: 3,
            text: "asix 1-1:1.0 eth0: Failed to enable software MII access".to_owned(),
            device: None,
        });
        kmsg.pair();
        let mut out = Vec::new();
        kmsg.release(1_500_000_000, 1, &mut |e| out.push(e));
        kmsg.release(2_500_000_000, 0, &mut |e| out.push(e));
        assert!(out.is_empty(), "neither line is due on its CPU yet");
        kmsg.release(2_500_000_000, 1, &mut |e| out.push(e));
        kmsg.release_all(&mut |e| out.push(e));
        // The unrelated line is not taken.
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].phy, Some(phy));
        assert_eq!(out[0].ts_ns, 2_000_001_000);
        assert!(matches!(
            out[0].kind,
            EventKind::Kmsg { level: Some(3), .. }
        ));
    }

    #[test]
    fn a_line_read_late_follows_its_cpus_events() {
        let mut kmsg = session();
        kmsg.scope = KmsgScope::All;
        let mut out = Vec::new();
        kmsg.release(5_000, 0, &mut |e| out.push(e));
        kmsg.partial
            .extend_from_slice(b" sh-9 [000] ..... 0.000004: console: late\n");
        kmsg.take_lines();
        kmsg.release_all(&mut |e| out.push(e));
        assert_eq!(out[0].ts_ns, 5_000);
        assert!(matches!(out[0].kind, EventKind::Kmsg { level: None, .. }));
    }

    #[test]
    fn a_replugged_dongle_s_lines_name_its_new_phy() {
        let mut kmsg = session();
        let phy = |bus: &str| {
            let mut identity = RawIdentity::ZERO;
            identity.phydev = 0xffff_8880_0000_1000;
            identity.addr = 16;
            identity.phy_id = 0x003b_1861;
            identity.bus_id[..bus.len()].copy_from_slice(bus.as_bytes());
            identity
        };
        kmsg.learn_phy(&phy("usb-001:002"));
        let old = kmsg.phys["usb-001:002:10"].clone();
        kmsg.netdevs.insert("eth0".to_owned(), old.clone());
        kmsg.learn_phy(&phy("usb-001:003"));
        let line = |text: &str| Line {
            ts_ns: 1,
            cpu: 0,
            tid: 1,
            text: text.to_owned(),
            level: Some(6),
            device: Some("+usb:1-1:1.0".to_owned()),
            paired: true,
        };
        let unplug = line("asix 1-1:1.0 eth0: Failed to enable software MII access");
        assert_eq!(kmsg.phy_of(&unplug), Some(old));
        let attach = line(
            "asix 1-1:1.0 (unnamed net_device) (uninitialized): PHY [usb-001:003:10] driver [Asix Electronics AX88772A]",
        );
        let new = kmsg.phy_of(&attach).unwrap();
        assert_eq!(new.bus.as_ref(), "usb-001:003");
        // The same network device name, on the new PHY now.
        let register = line("asix 1-1:1.0 eth0: register 'asix' at usb-dummy_hcd.0-1");
        assert_eq!(kmsg.phy_of(&register), Some(new));
    }
}
