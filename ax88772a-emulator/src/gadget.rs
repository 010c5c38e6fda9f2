//! The USB device: plug-in sessions on a gadget backend (raw-gadget or FunctionFS,
//! `backend.rs`), the ep0 thread (standard requests, configuration, vendor requests) and the
//! bulk IN/OUT threads.
//!
//! A session is one attached backend (an open `/dev/raw-gadget` after INIT + RUN, or a
//! FunctionFS gadget bound to the UDC); dropping it detaches the device, which the host handles
//! like a physical unplug (port disconnect, `usb_disconnect`, asix unbind).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use serde_json::json;

use crate::backend::{self, Kind, UsbBackend};
use crate::descriptors::{self, BULK_MAXPACKET, CONFIG_VALUE, EndpointAddrs, MAX_POWER};
use crate::emulator::{Emulator, UsbState, emit};
use crate::error::Error;
use crate::raw_gadget::{Event, IO_LENGTH_MAX};
use crate::vendor::{Reply, Request, Setup};
use crate::workers::{self, Workers};

/// Which UDC to bind to and how.
#[derive(Debug, Clone)]
pub struct UdcConfig {
    /// The backend (resolved: raw-gadget or FunctionFS).
    pub backend: Kind,
    /// Where the backends' kernel interfaces are.
    pub paths: backend::Paths,
    /// The UDC driver name (`dummy_udc`).
    pub driver: String,
    /// The UDC device name (`dummy_udc.0`).
    pub device: String,
}

/// How often idle loops look at their stop flag.
const POLL: Duration = Duration::from_millis(100);
/// Pause after a failed bulk transfer (the host went away; ep0 will see it).
const RETRY: Duration = Duration::from_millis(10);

const USB_TYPE_MASK: u8 = 0x60;
const USB_TYPE_STANDARD: u8 = 0x00;
const USB_TYPE_VENDOR: u8 = 0x40;
const GET_STATUS: u8 = 0x00;
const CLEAR_FEATURE: u8 = 0x01;
const SET_FEATURE: u8 = 0x03;
const GET_DESCRIPTOR: u8 = 0x06;
const GET_CONFIGURATION: u8 = 0x08;
const SET_CONFIGURATION: u8 = 0x09;
const GET_INTERFACE: u8 = 0x0a;
const SET_INTERFACE: u8 = 0x0b;

/// Runs the dongle: a session while plugged in, none while unplugged, until a fatal error.
pub fn serve(emu: Arc<Emulator>, udc: &UdcConfig) -> Result<(), Error> {
    loop {
        {
            let s = emu.lock();
            let _s = emu
                .changed
                .wait_while(s, |s| !s.plugged)
                .unwrap_or_else(|e| e.into_inner());
        }
        let ep0 = start_session(&emu, udc)?;
        {
            let mut s = emu.lock();
            s.sessions += 1;
        }
        emu.set_usb(UsbState::Attached);
        emit(json!({"event": "attached", "session": emu.lock().sessions}));
        // Until unplugged, or the ep0 thread ends on its own (a fatal error).
        loop {
            let s = emu.lock();
            let (s, _) = emu
                .changed
                .wait_timeout_while(s, POLL, |s| s.plugged)
                .unwrap_or_else(|e| e.into_inner());
            if !s.plugged || ep0.any_finished() {
                break;
            }
        }
        let failed = ep0.stop().into_iter().find_map(Result::err);
        emu.set_usb(UsbState::Unplugged);
        emit(json!({"event": "unplugged"}));
        if let Some(e) = failed {
            return Err(Error::GadgetFailed(e));
        }
    }
}

/// Attaches the device through the backend and starts the ep0 thread.
fn start_session(
    emu: &Arc<Emulator>,
    udc: &UdcConfig,
) -> Result<Workers<Result<(), String>>, Error> {
    let (g, addrs) = backend::attach(udc.backend, &udc.paths, &udc.driver, &udc.device)?;
    let mut w = Workers::new();
    let emu = Arc::clone(emu);
    w.spawn("ep0", move |stop| {
        Ep0 {
            g,
            emu,
            addrs,
            stop,
            bulk: None,
        }
        .run()
    })
    .map_err(|e| Error::Io("spawn ep0 thread".into(), e))?;
    Ok(w)
}

/// The running bulk endpoints.
struct Bulk {
    workers: Workers<()>,
    handles: Vec<u16>,
}

/// The ep0 thread's state.
struct Ep0 {
    g: Arc<dyn UsbBackend>,
    emu: Arc<Emulator>,
    addrs: EndpointAddrs,
    stop: Arc<AtomicBool>,
    bulk: Option<Bulk>,
}

impl Ep0 {
    /// Events until stopped; an error if raw-gadget fails.
    fn run(mut self) -> Result<(), String> {
        let result = loop {
            if self.stop.load(Ordering::SeqCst) {
                break Ok(());
            }
            let ev = match self.g.event_fetch() {
                Ok(ev) => ev,
                Err(e) if workers::interrupted(&e) => continue,
                Err(e) => break Err(format!("EVENT_FETCH: {e}")),
            };
            match ev {
                Event::Control(raw) => {
                    let s = Setup::parse(&raw);
                    if let Err(e) = self.control(&s)
                        && !workers::interrupted(&e)
                    {
                        eprintln!("ax88772a-emulator: ep0 {s:?}: {e}");
                    }
                }
                Event::Reset | Event::Disconnect => {
                    self.stop_bulk();
                    self.emu.lock().mac.counters.count(if ev == Event::Reset {
                        "bus:RESET"
                    } else {
                        "bus:DISCONNECT"
                    });
                    if self.emu.lock().usb == UsbState::Configured {
                        self.emu.set_usb(UsbState::Attached);
                    }
                }
                Event::Enable => {
                    // FunctionFS: the kernel answered SET_CONFIGURATION and enabled the
                    // endpoints.
                    self.count("SET_CONFIGURATION");
                    if let Err(e) = self.configured() {
                        eprintln!("ax88772a-emulator: starting the endpoints: {e}");
                    }
                }
                Event::Disable => {
                    self.stop_bulk();
                    if self.emu.lock().usb == UsbState::Configured {
                        self.emu.set_usb(UsbState::Attached);
                    }
                }
                Event::Connect => self.emu.lock().mac.counters.count("bus:CONNECT"),
                Event::Suspend => self.emu.lock().mac.counters.count("bus:SUSPEND"),
                Event::Resume => self.emu.lock().mac.counters.count("bus:RESUME"),
                Event::Other(t) => eprintln!("ax88772a-emulator: unknown raw-gadget event {t}"),
            }
        };
        self.stop_bulk();
        result
    }

    /// Answers a control request.
    fn control(&mut self, s: &Setup) -> std::io::Result<()> {
        match s.request_type & USB_TYPE_MASK {
            USB_TYPE_STANDARD => self.standard(s),
            USB_TYPE_VENDOR => self.vendor(s),
            _ => self.unknown(s),
        }
    }

    fn unknown(&mut self, s: &Setup) -> std::io::Result<()> {
        self.emu.lock().mac.counters.unknown(*s);
        eprintln!("ax88772a-emulator: unknown request {s:?}: stall");
        self.g.ep0_stall()
    }

    /// Sends IN data, at most wLength bytes.
    fn data_in(&self, s: &Setup, data: &[u8]) -> std::io::Result<()> {
        let n = data.len().min(usize::from(s.length));
        self.g.ep0_write(&data[..n]).map(drop)
    }

    /// Acknowledges an OUT request without data stage.
    fn ack(&self) -> std::io::Result<()> {
        self.g.ep0_read(0).map(drop)
    }

    fn count(&self, name: &'static str) {
        self.emu.lock().mac.counters.count(name);
    }

    fn standard(&mut self, s: &Setup) -> std::io::Result<()> {
        let configured = self.bulk.is_some();
        match (s.request_type, s.request) {
            (0x80, GET_DESCRIPTOR) => {
                self.count("GET_DESCRIPTOR");
                match descriptors::get(s.value, &self.addrs) {
                    Some(d) => self.data_in(s, &d),
                    None => self.g.ep0_stall(), // e.g. BOS, other-speed configuration
                }
            }
            (0x00, SET_CONFIGURATION) => {
                self.count("SET_CONFIGURATION");
                match s.value as u8 {
                    0 => {
                        self.stop_bulk();
                        self.ack()
                    }
                    CONFIG_VALUE => {
                        if self.bulk.is_none() {
                            self.start_bulk()?;
                        }
                        self.ack()?;
                        self.configured_now();
                        Ok(())
                    }
                    _ => self.g.ep0_stall(),
                }
            }
            (0x80, GET_CONFIGURATION) => {
                self.count("GET_CONFIGURATION");
                self.data_in(s, &[if configured { CONFIG_VALUE } else { 0 }])
            }
            (0x80..=0x82, GET_STATUS) => {
                self.count("GET_STATUS");
                self.data_in(s, &[0, 0])
            }
            (0x81, GET_INTERFACE) => {
                self.count("GET_INTERFACE");
                self.data_in(s, &[0])
            }
            (0x01, SET_INTERFACE) if s.value == 0 && s.index == 0 => {
                self.count("SET_INTERFACE");
                self.ack()
            }
            (0x00..=0x02, CLEAR_FEATURE | SET_FEATURE) => {
                self.count(if s.request == CLEAR_FEATURE {
                    "CLEAR_FEATURE"
                } else {
                    "SET_FEATURE"
                });
                self.ack()
            }
            _ => self.unknown(s),
        }
    }

    fn vendor(&mut self, s: &Setup) -> std::io::Result<()> {
        let Some(req) = Request::decode(s) else {
            return self.unknown(s);
        };
        let (fault, delay) = {
            let mut st = self.emu.lock();
            let delay = if req.is_mii_access() {
                st.mdio_delay
            } else {
                Duration::ZERO
            };
            (st.mac.take_fault(&req), delay)
        };
        if !delay.is_zero() {
            thread::sleep(delay);
        }
        if fault {
            return self.g.ep0_stall();
        }
        let data = if !s.is_in() && s.length > 0 {
            self.g.ep0_read(usize::from(s.length))?
        } else {
            Vec::new()
        };
        let reply = {
            let now = self.emu.now();
            self.emu.lock().mac.handle(&req, &data, now)
        };
        match reply {
            Reply::Data(d) => self.data_in(s, &d),
            Reply::Ack if s.length == 0 => self.ack(),
            Reply::Ack => Ok(()), // the data stage completed the request
        }
    }

    /// The endpoints the kernel enabled (FunctionFS) start carrying data.
    fn configured(&mut self) -> std::io::Result<()> {
        if self.bulk.is_none() {
            self.start_bulk()?;
        }
        self.configured_now();
        Ok(())
    }

    /// Reports the configuration: state and event.
    fn configured_now(&self) {
        self.emu.set_usb(UsbState::Configured);
        emit(json!({"event": "configured", "vid": "0b95", "pid": "772a",
                    "configurations": self.emu.lock().configurations}));
    }

    /// Enables the endpoints (interrupt IN, bulk IN, bulk OUT), reports the configuration to
    /// the UDC and starts the bulk threads.
    fn start_bulk(&mut self) -> std::io::Result<()> {
        let mut handles = Vec::new();
        for d in self.addrs.descriptors() {
            match self.g.ep_enable(&d) {
                Ok(h) => handles.push(h),
                Err(e) => {
                    for h in handles {
                        let _ = self.g.ep_disable(h);
                    }
                    return Err(e);
                }
            }
        }
        self.g.configure(u32::from(MAX_POWER))?;
        let mut workers = Workers::new();
        let (g, emu, h_in) = (Arc::clone(&self.g), Arc::clone(&self.emu), handles[1]);
        workers.spawn("bulk-in", move |stop| bulk_in(&*g, &emu, h_in, &stop))?;
        let (g, emu, h_out) = (Arc::clone(&self.g), Arc::clone(&self.emu), handles[2]);
        workers.spawn("bulk-out", move |stop| bulk_out(&*g, &emu, h_out, &stop))?;
        self.bulk = Some(Bulk { workers, handles });
        Ok(())
    }

    /// Stops the bulk threads and disables the endpoints.
    fn stop_bulk(&mut self) {
        if let Some(b) = self.bulk.take() {
            b.workers.stop();
            for h in b.handles {
                let _ = self.g.ep_disable(h);
            }
        }
    }
}

/// Bulk IN: queued frames to the host, one transfer each (a zero-length packet ends a transfer
/// that fills whole packets, so the host's 2048-byte URB completes).
fn bulk_in(g: &dyn UsbBackend, emu: &Emulator, handle: u16, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        let Some(t) = emu.next_to_host(POLL) else {
            continue;
        };
        let zero = t.len().is_multiple_of(usize::from(BULK_MAXPACKET));
        match g.ep_write(handle, zero, &t) {
            Ok(_) => emu.lock().frames.to_host += 1,
            Err(e) if workers::interrupted(&e) => {}
            Err(_) => thread::sleep(RETRY),
        }
    }
}

/// Bulk OUT: transfers from the host to the far end.
fn bulk_out(g: &dyn UsbBackend, emu: &Emulator, handle: u16, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        match g.ep_read(handle, IO_LENGTH_MAX) {
            Ok(buf) => emu.frames_from_host(&buf),
            Err(e) if workers::interrupted(&e) => {}
            Err(_) => thread::sleep(RETRY),
        }
    }
}
