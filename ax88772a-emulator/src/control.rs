//! The control socket: one text command a connection (`cable out\n`), one JSON reply line
//! (`{"ok":true,"result":…}` or `{"ok":false,"error":"…"}`). The same parser checks the
//! command in `ctl` before it is sent and in the emulator when it arrives.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::emulator::Emulator;
use crate::error::Error;
use crate::phy::{self, Partner};
use crate::vendor::MdioOp;

/// The default socket path.
pub const DEFAULT_SOCKET: &str = "/run/ax88772a-emulator.sock";
/// The longest command line accepted.
const MAX_LINE: u64 = 1024;
/// How long a client may take to send its command, and `ctl` waits for the reply.
const IO_TIMEOUT: Duration = Duration::from_secs(15);

/// A control command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Plug the dongle in (USB attach).
    Plug,
    /// Unplug the dongle (USB detach).
    Unplug,
    /// The Ethernet cable in (`true`) or out.
    Cable(bool),
    /// The link partner's abilities.
    Partner(Partner),
    /// The LPA-reads-0 quirk.
    LpaQuirk(bool),
    /// Stall the next `count` MII `op` requests for `reg`.
    MdioError {
        /// Read or write.
        op: MdioOp,
        /// Register.
        reg: u8,
        /// How many (0: clear).
        count: u32,
    },
    /// The next `n` MDIO accesses time out.
    MdioTimeout(u32),
    /// Delay of each MII register request.
    MdioDelayUs(u64),
    /// Autonegotiation time (applies to the next training).
    AnDelayMs(u64),
    /// All state and counters.
    Status,
    /// Zero the counters.
    ResetCounters,
}

/// What `ctl help` and a bad command print.
pub const USAGE: &str = "commands: plug | unplug | cable in|out | partner MODE | lpa-quirk on|off | \
mdio-error read|write REG N | mdio-timeout N | mdio-delay-us N | an-delay-ms N | status | reset-counters \
(MODE: words 100full 100half 10full 10half pause asym all none, comma separated, or 0xBITS; REG: 0..31 or a name like BMSR)";

fn number<T>(s: Option<&str>, what: &str, max: T) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display,
{
    let s = s.ok_or_else(|| format!("missing {what}"))?;
    let n: T = s
        .parse()
        .map_err(|_| format!("bad {what} {s:?}: expected a number"))?;
    if n > max {
        return Err(format!("{what} {n} too large (at most {max})"));
    }
    Ok(n)
}

fn on_off(s: Option<&str>, on: &str, off: &str) -> Result<bool, String> {
    match s {
        Some(w) if w == on => Ok(true),
        Some(w) if w == off => Ok(false),
        Some(w) => Err(format!("expected {on} or {off}, got {w:?}")),
        None => Err(format!("missing {on}|{off}")),
    }
}

impl Command {
    /// Parses one command line.
    pub fn parse(line: &str) -> Result<Command, String> {
        let mut w = line.split_whitespace();
        let verb = w.next().ok_or("empty command")?;
        let cmd = match verb {
            "plug" => Command::Plug,
            "unplug" => Command::Unplug,
            "cable" => Command::Cable(on_off(w.next(), "in", "out")?),
            "partner" => {
                let rest: Vec<&str> = w.by_ref().collect();
                Command::Partner(rest.join(" ").parse()?)
            }
            "lpa-quirk" => Command::LpaQuirk(on_off(w.next(), "on", "off")?),
            "mdio-error" => {
                let op = match w.next() {
                    Some("read") => MdioOp::Read,
                    Some("write") => MdioOp::Write,
                    other => {
                        return Err(format!("mdio-error: expected read or write, got {other:?}"));
                    }
                };
                let r = w.next().ok_or("mdio-error: missing REG")?;
                let reg =
                    phy::parse_reg(r).ok_or_else(|| format!("mdio-error: bad register {r:?}"))?;
                let count = number(w.next(), "count", 1_000_000u32)?;
                Command::MdioError { op, reg, count }
            }
            "mdio-timeout" => Command::MdioTimeout(number(w.next(), "count", 1_000_000u32)?),
            "mdio-delay-us" => Command::MdioDelayUs(number(w.next(), "delay", 1_000_000u64)?),
            "an-delay-ms" => Command::AnDelayMs(number(w.next(), "delay", 60_000u64)?),
            "status" => Command::Status,
            "reset-counters" => Command::ResetCounters,
            other => return Err(format!("unknown command {other:?}; {USAGE}")),
        };
        if let Some(extra) = w.next() {
            return Err(format!("unexpected {extra:?} after {verb}"));
        }
        Ok(cmd)
    }
}

/// Binds the socket; a stale socket file (nobody answers) is replaced.
pub fn bind(path: &Path) -> Result<UnixListener, Error> {
    let shown = path.display().to_string();
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(Error::SocketInUse(shown));
        }
        std::fs::remove_file(path).map_err(|e| Error::Socket(shown.clone(), e))?;
    }
    UnixListener::bind(path).map_err(|e| Error::Socket(shown, e))
}

/// Serves commands until the process ends, one connection at a time.
pub fn serve(listener: UnixListener, emu: Arc<Emulator>) {
    for stream in listener.incoming() {
        match stream {
            Ok(s) => {
                if let Err(e) = serve_one(s, &emu) {
                    eprintln!("ax88772a-emulator: control connection: {e}");
                }
            }
            Err(e) => eprintln!("ax88772a-emulator: control socket accept: {e}"),
        }
    }
}

fn serve_one(stream: UnixStream, emu: &Emulator) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    let mut line = String::new();
    BufReader::new((&stream).take(MAX_LINE)).read_line(&mut line)?;
    let reply = match Command::parse(line.trim()) {
        Ok(cmd) => match emu.apply(&cmd) {
            Ok(result) => json!({"ok": true, "result": result}),
            Err(e) => json!({"ok": false, "error": e}),
        },
        Err(e) => json!({"ok": false, "error": e}),
    };
    let mut w = &stream;
    writeln!(w, "{reply}")
}

/// `ctl`: sends `line` (checked first) and returns the result.
pub fn request(path: &Path, line: &str) -> Result<Value, Error> {
    Command::parse(line).map_err(Error::BadCommand)?;
    let shown = path.display().to_string();
    let stream = UnixStream::connect(path).map_err(|e| Error::NotRunning(shown.clone(), e))?;
    let io = |e| Error::Io(format!("control socket {shown}"), e);
    stream.set_read_timeout(Some(IO_TIMEOUT)).map_err(io)?;
    let mut w = &stream;
    writeln!(w, "{line}").map_err(io)?;
    let mut reply = String::new();
    BufReader::new(&stream).read_line(&mut reply).map_err(io)?;
    let v: Value = serde_json::from_str(&reply).map_err(|e| {
        Error::Io(
            format!("control socket {shown}: bad reply {reply:?}"),
            std::io::Error::other(e),
        )
    })?;
    if v["ok"] == true {
        Ok(v["result"].clone())
    } else {
        Err(Error::Rejected(
            v["error"].as_str().unwrap_or("no reason given").to_string(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands() {
        assert_eq!(Command::parse("plug"), Ok(Command::Plug));
        assert_eq!(Command::parse("cable out"), Ok(Command::Cable(false)));
        assert_eq!(Command::parse("  cable   in "), Ok(Command::Cable(true)));
        assert_eq!(
            Command::parse("partner 10half"),
            Ok(Command::Partner(Partner(0x0020)))
        );
        assert_eq!(
            Command::parse("partner 100full 10full"),
            Ok(Command::Partner(Partner(0x0140)))
        );
        assert_eq!(Command::parse("lpa-quirk on"), Ok(Command::LpaQuirk(true)));
        assert_eq!(
            Command::parse("mdio-error read BMSR 3"),
            Ok(Command::MdioError {
                op: MdioOp::Read,
                reg: 1,
                count: 3
            })
        );
        assert_eq!(
            Command::parse("mdio-error write 0x00 1"),
            Ok(Command::MdioError {
                op: MdioOp::Write,
                reg: 0,
                count: 1
            })
        );
        assert_eq!(
            Command::parse("mdio-timeout 2"),
            Ok(Command::MdioTimeout(2))
        );
        assert_eq!(
            Command::parse("mdio-delay-us 500"),
            Ok(Command::MdioDelayUs(500))
        );
        assert_eq!(Command::parse("status"), Ok(Command::Status));
    }

    #[test]
    fn socket_round_trip() {
        use std::net::Ipv4Addr;

        use crate::frames::Peer;

        let path = std::env::temp_dir().join(format!(
            "ax88772a-emulator-test-{}.sock",
            std::process::id()
        ));
        let peer = Peer {
            mac: [0, 0x0e, 0xc6, 0x87, 0x72, 0x02],
            ip: Ipv4Addr::new(192, 168, 77, 2),
        };
        let emu = Arc::new(Emulator::new(
            [0, 0x0e, 0xc6, 0x87, 0x72, 1],
            peer,
            Duration::ZERO,
            false,
            |_| {},
        ));
        let listener = bind(&path).unwrap();
        assert!(matches!(bind(&path), Err(Error::SocketInUse(_))));
        let served = Arc::clone(&emu);
        std::thread::spawn(move || serve(listener, served));
        assert_eq!(request(&path, "cable out").unwrap(), json!({"done": true}));
        let status = request(&path, "status").unwrap();
        assert_eq!(status["phy"]["cable"], false);
        assert_eq!(status["usb"], "unplugged");
        assert!(matches!(
            request(&path, "cable sideways"),
            Err(Error::BadCommand(_))
        ));
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(
            request(&path, "status"),
            Err(Error::NotRunning(..))
        ));
    }

    #[test]
    fn rejects_bad_commands() {
        for bad in [
            "",
            "fly",
            "cable sideways",
            "cable",
            "cable in now",
            "partner gigabit",
            "partner",
            "mdio-error read BMSR",
            "mdio-error erase BMSR 1",
            "mdio-error read 40 1",
            "mdio-timeout -1",
            "mdio-timeout 99999999999",
            "mdio-delay-us lots",
            "an-delay-ms 600000",
        ] {
            assert!(Command::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
