//! Which followed driver modules are traced, and how: armed before they load (from kallsyms
//! when live, else from their module file) or attached when seen loading, at phylib's call
//! sites from their first callback; and the `Attached` and `Detached` events that say so in
//! the stream. The probes themselves are armed through [`ArmCallbacks`].

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;

use super::{Sink, current_cpu, own_event_at, prefetch::Prefetched};
use crate::event::{Event, EventKind, Guarantee};
use crate::kernel::{modules, symbols::CallbackSymbol};
use crate::probe::{attach::ArmCallbacks, phy_site_probes::CallbackProbes};
use crate::records::{clock::monotonic_ns, session::ArmingEntry};

/// The followed modules: which are live, and how each is armed.
#[derive(Debug, Default)]
pub struct Arming {
    /// The modules followed; empty: every module with `kernel::net::phy` callbacks.
    follow: Vec<String>,
    /// Which callback probes run (`None`: callbacks are not traced).
    probes: Option<CallbackProbes>,
    /// Followed modules that are live now.
    live: BTreeSet<String>,
    /// Modules that were live at some point of the session.
    ever_attached: BTreeSet<String>,
    /// How each followed module is armed.
    entries: BTreeMap<String, ArmingEntry>,
    /// Modules of the tree known not to be PHY drivers.
    not_phy_drivers: BTreeSet<String>,
}

impl Arming {
    /// Following `follow` (empty: every module with `kernel::net::phy` callbacks), where
    /// `not_phy_drivers` are known not to be PHY drivers; nothing armed yet.
    pub fn new(follow: Vec<String>, not_phy_drivers: BTreeSet<String>) -> Self {
        Self {
            follow,
            not_phy_drivers,
            ..Self::default()
        }
    }

    /// Which callback probes run (`None`: callbacks are not traced).
    pub fn probes(&self) -> Option<CallbackProbes> {
        self.probes
    }

    /// Callbacks are probed at phylib's call sites: every driver, loaded or not, is traced from
    /// its first callback; the Rust ones are named (as the symbol probes would follow them),
    /// and the live ones are reported attached now (to `held`).
    pub fn at_call_sites(&mut self, prefetched: &Prefetched, held: &mut impl Sink) {
        self.probes = Some(CallbackProbes::Callsite);
        let mut live: BTreeMap<&str, usize> = BTreeMap::new();
        for symbol in &prefetched.live_callbacks {
            *live.entry(&symbol.module).or_default() += 1;
        }
        let rust_files = prefetched
            .files
            .iter()
            .filter(|(_, file)| file.as_ref().is_ok_and(|(_, s)| !s.is_empty()))
            .map(|(module, _)| module.as_str());
        for module in live.keys().copied().chain(rust_files) {
            self.set(
                module,
                Guarantee::FirstCallback,
                "phylib's call sites".to_owned(),
            );
        }
        for (module, callbacks) in live {
            self.attached_live(module.to_owned(), callbacks, monotonic_ns(), held);
        }
    }

    /// Arms the symbol probes of the live followed modules from kallsyms (reporting them
    /// attached, to `held`) and of the others from their module files.
    pub fn arm_symbols(
        &mut self,
        armer: &mut impl ArmCallbacks,
        prefetched: Prefetched,
        held: &mut impl Sink,
    ) -> Result<()> {
        let mut by_module: BTreeMap<String, Vec<CallbackSymbol>> = BTreeMap::new();
        for symbol in prefetched.live_callbacks {
            by_module
                .entry(symbol.module.clone())
                .or_default()
                .push(symbol);
        }
        for (module, symbols) in by_module {
            let callbacks = symbols.len();
            // Stamped before the first probe is armed, so that its callbacks come after it.
            let arming = monotonic_ns();
            armer.arm(&module, symbols)?;
            self.set(
                &module,
                Guarantee::FirstCallback,
                "/proc/kallsyms".to_owned(),
            );
            self.attached_live(module, callbacks, arming, held);
        }
        for (module, file) in prefetched.files {
            match file {
                Ok((path, symbols)) if !symbols.is_empty() => {
                    armer.arm(&module, symbols)?;
                    self.set(
                        &module,
                        Guarantee::FirstCallback,
                        path.display().to_string(),
                    );
                }
                Ok((path, _)) => self.set(
                    &module,
                    Guarantee::AfterLoad,
                    format!("{} defines no kernel::net::phy callbacks", path.display()),
                ),
                Err(why) => self.set(&module, Guarantee::AfterLoad, why),
            }
        }
        Ok(())
    }

    /// The symbol probes run: a followed module armed from its file that went live while the
    /// symbols were read (`loaded`, name → state), before the module tracepoints were
    /// attached, left no `module_load` record: reports it (to `held`), and that it was late.
    pub fn symbols_armed(
        &mut self,
        armer: &impl ArmCallbacks,
        loaded: BTreeMap<String, String>,
        notes: &mut Vec<String>,
        held: &mut impl Sink,
    ) {
        self.probes = Some(CallbackProbes::Symbol);
        for (module, state) in loaded {
            if state != "Live" || self.live.contains(&module) {
                continue;
            }
            let Some(armed) = armer.armed(&module) else {
                continue;
            };
            let callbacks = armed.callbacks.len();
            self.late_attach(
                &module,
                "it loaded while phytrace was starting".to_owned(),
                notes,
            );
            self.attached_live(module, callbacks, monotonic_ns(), held);
        }
    }

    /// Reports `module`, live when the session began, traced from `at` on (to `held`): its
    /// callbacks until then are not recorded.
    fn attached_live(&mut self, module: String, callbacks: usize, at: u64, held: &mut impl Sink) {
        self.live.insert(module.clone());
        self.ever_attached.insert(module.clone());
        held.event(own_event_at(
            at,
            current_cpu(),
            EventKind::Attached {
                module,
                callbacks,
                reattached: false,
                guarantee: Some(Guarantee::AfterLoad),
            },
        ));
    }

    /// `module` went away at `at` (time, CPU): its `Detached` event, if it was live.
    pub fn freed(&mut self, module: String, at: (u64, u32)) -> Option<Event> {
        self.live
            .remove(&module)
            .then(|| own_event_at(at.0, at.1, EventKind::Detached { module }))
    }

    /// `module` went live at `at` (time, CPU): its `Attached` event if it is followed and has
    /// callbacks (`kallsyms` reads them: only then); with the symbol probes, arms the callbacks
    /// the kernel could not arm in advance. Call sites trace a driver from its first callback
    /// by construction.
    pub fn loaded(
        &mut self,
        module: String,
        at: (u64, u32),
        armer: &mut impl ArmCallbacks,
        kallsyms: impl FnOnce() -> Result<Vec<CallbackSymbol>>,
        notes: &mut Vec<String>,
    ) -> Result<Option<Event>> {
        if self.probes.is_none()
            || !modules::follows(&self.follow, &module)
            || self.live.contains(&module)
            || (self.follow.is_empty()
                && armer.armed(&module).is_none()
                && self.not_phy_drivers.contains(&module))
        {
            return Ok(None);
        }
        // The module is live: its callbacks as the kernel has them.
        let live: Vec<CallbackSymbol> = kallsyms()?
            .into_iter()
            .filter(|s| s.module == module)
            .collect();
        if live.is_empty() {
            return Ok(None);
        }
        let callbacks = live.len();
        let guarantee = match self.probes {
            Some(CallbackProbes::Symbol) => self.arm_loaded(&module, live, at.0, armer, notes)?,
            _ => Guarantee::FirstCallback,
        };
        let reattached = !self.ever_attached.insert(module.clone());
        self.live.insert(module.clone());
        Ok(Some(own_event_at(
            at.0,
            at.1,
            EventKind::Attached {
                module,
                callbacks,
                reattached,
                guarantee: Some(guarantee),
            },
        )))
    }

    /// The symbol probes of `module`, live since `loaded_ns` with the callbacks `live`: armed
    /// now unless they were in time. Returns what the capture holds of its callbacks.
    fn arm_loaded(
        &mut self,
        module: &str,
        live: Vec<CallbackSymbol>,
        loaded_ns: u64,
        armer: &mut impl ArmCallbacks,
        notes: &mut Vec<String>,
    ) -> Result<Guarantee> {
        let names = |symbols: &mut dyn Iterator<Item = &CallbackSymbol>| {
            symbols.map(|s| s.symbol.clone()).collect::<BTreeSet<_>>()
        };
        let armed = armer.armed(module);
        let matches = armed.as_ref().is_some_and(|armed| {
            names(&mut armed.callbacks.iter().copied()) == names(&mut live.iter())
        });
        // Defined after the module loaded (while phytrace was starting), they were registered
        // late: its first callbacks ran unprobed.
        let in_time = armed.is_some_and(|armed| armed.armed_ns <= loaded_ns);
        if matches && !in_time {
            self.late_attach(
                module,
                "it loaded while phytrace was arming it".to_owned(),
                notes,
            );
        } else if !matches {
            // Not armed in advance, or armed with symbols of another build of the module.
            armer.arm(module, live)?;
            let why = match self.entries.get(module) {
                Some(a) if a.guarantee == Guarantee::FirstCallback => format!(
                    "{} did not match the module that loaded: armed from /proc/kallsyms after it loaded",
                    a.source
                ),
                Some(a) => a.source.clone(),
                None => "not known before it loaded".to_owned(),
            };
            self.late_attach(module, why, notes);
        }
        Ok(if matches && in_time {
            Guarantee::FirstCallback
        } else {
            Guarantee::AfterLoad
        })
    }

    /// Says that `module`'s callbacks were attached after it loaded, and `why`.
    fn late_attach(&mut self, module: &str, why: String, notes: &mut Vec<String>) {
        notes.push(format!(
            "{module}: callbacks attached after the module loaded ({why}): its first callbacks may be missing"
        ));
        self.set(module, Guarantee::AfterLoad, why);
    }

    fn set(&mut self, module: &str, guarantee: Guarantee, source: String) {
        self.entries.insert(
            module.to_owned(),
            ArmingEntry {
                module: module.to_owned(),
                guarantee,
                source,
            },
        );
    }

    /// How each followed module is armed.
    pub fn entries(&self) -> Vec<ArmingEntry> {
        self.entries.values().cloned().collect()
    }

    /// Names of the followed modules not loaded now.
    pub fn waiting_for(&self) -> Vec<String> {
        self.entries
            .keys()
            .chain(self.follow.iter())
            .filter(|m| !self.live.contains(*m))
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use anyhow::bail;

    use super::*;
    use crate::probe::attach::Armed;
    use crate::session::testing::symbol;

    /// Arms nothing in any kernel: remembers what it was asked to arm, and when (`now`).
    #[derive(Default)]
    struct FakeArmer {
        armed: BTreeMap<String, (Vec<CallbackSymbol>, u64)>,
        /// `CLOCK_MONOTONIC` as the next arming reads it.
        now: u64,
        /// The modules armed, in order.
        arms: Vec<String>,
        /// A module the kernel refuses to arm.
        refuse: Option<&'static str>,
    }

    impl ArmCallbacks for FakeArmer {
        fn arm(&mut self, module: &str, symbols: Vec<CallbackSymbol>) -> Result<()> {
            if self.refuse == Some(module) {
                bail!("refused");
            }
            self.arms.push(module.to_owned());
            self.armed.insert(module.to_owned(), (symbols, self.now));
            Ok(())
        }

        fn armed(&self, module: &str) -> Option<Armed<'_>> {
            self.armed.get(module).map(|(symbols, armed_ns)| Armed {
                callbacks: symbols.iter().collect(),
                armed_ns: *armed_ns,
            })
        }
    }

    /// `live` is loaded (two callbacks in kallsyms); `rust` has a module file with one
    /// callback, `c` one with none, `gone` none at all.
    fn prefetched() -> Prefetched {
        Prefetched {
            live_callbacks: vec![
                symbol("live", "read_status", "a"),
                symbol("live", "suspend", "a"),
            ],
            live: BTreeSet::from(["live".to_owned()]),
            files: BTreeMap::from([
                (
                    "rust".to_owned(),
                    Ok((
                        PathBuf::from("/x/rust.ko"),
                        vec![symbol("rust", "read_status", "a")],
                    )),
                ),
                ("c".to_owned(), Ok((PathBuf::from("/x/c.ko"), Vec::new()))),
                ("gone".to_owned(), Err("not in the module tree".to_owned())),
            ]),
            not_phy_drivers: BTreeSet::new(),
            built_in: BTreeSet::new(),
        }
    }

    /// An `Arming` with the symbol probes armed from [`prefetched`] at `now`, none of the
    /// modules loaded meanwhile; and the events it held.
    fn armed_symbols(armer: &mut FakeArmer, now: u64) -> (Arming, Vec<Event>) {
        let mut arming = Arming::new(Vec::new(), BTreeSet::new());
        let mut held = Vec::new();
        armer.now = now;
        arming
            .arm_symbols(armer, prefetched(), &mut |e| held.push(e))
            .unwrap();
        arming.symbols_armed(&*armer, BTreeMap::new(), &mut Vec::new(), &mut |e| {
            held.push(e)
        });
        (arming, held)
    }

    fn attached(event: &Event) -> (&str, usize, bool, Option<Guarantee>) {
        match &event.kind {
            EventKind::Attached {
                module,
                callbacks,
                reattached,
                guarantee,
            } => (module, *callbacks, *reattached, *guarantee),
            other => panic!("not an attachment: {other:?}"),
        }
    }

    fn entry(arming: &Arming, module: &str) -> (Guarantee, String) {
        let entry = &arming.entries[module];
        (entry.guarantee, entry.source.clone())
    }

    /// `module` goes live at `ts_ns` on CPU 0, kallsyms holding `live`: its event, if any, and
    /// the notes said.
    fn load(
        arming: &mut Arming,
        armer: &mut FakeArmer,
        module: &str,
        ts_ns: u64,
        live: &[CallbackSymbol],
    ) -> (Option<Event>, Vec<String>) {
        let mut notes = Vec::new();
        let kallsyms = || Ok(live.to_vec());
        let event = arming
            .loaded(module.into(), (ts_ns, 0), armer, kallsyms, &mut notes)
            .unwrap();
        (event, notes)
    }

    /// The symbol probes armed from [`prefetched`] at `armed_ns`, then `rust` going live at 20
    /// with `live` in kallsyms: its event and the notes said.
    fn rust_loads_at_20(
        armed_ns: u64,
        live: &[CallbackSymbol],
    ) -> (Arming, FakeArmer, Event, Vec<String>) {
        let mut armer = FakeArmer::default();
        let (mut arming, _) = armed_symbols(&mut armer, armed_ns);
        let (event, notes) = load(&mut arming, &mut armer, "rust", 20, live);
        (arming, armer, event.unwrap(), notes)
    }

    #[test]
    fn symbol_probes_arm_live_modules_from_kallsyms_and_the_others_from_their_files() {
        let mut armer = FakeArmer::default();
        let (arming, held) = armed_symbols(&mut armer, 10);
        assert_eq!(armer.arms, ["live", "rust"]);
        assert_eq!(arming.probes(), Some(CallbackProbes::Symbol));
        assert_eq!(
            entry(&arming, "live"),
            (Guarantee::FirstCallback, "/proc/kallsyms".into())
        );
        assert_eq!(
            entry(&arming, "rust"),
            (Guarantee::FirstCallback, "/x/rust.ko".into())
        );
        assert_eq!(
            entry(&arming, "c"),
            (
                Guarantee::AfterLoad,
                "/x/c.ko defines no kernel::net::phy callbacks".into()
            )
        );
        assert_eq!(
            entry(&arming, "gone"),
            (Guarantee::AfterLoad, "not in the module tree".into())
        );
        // The live module is traced from when it was armed: not from its first callback.
        assert_eq!(held.len(), 1);
        assert_eq!(
            attached(&held[0]),
            ("live", 2, false, Some(Guarantee::AfterLoad))
        );
        assert_eq!(arming.waiting_for(), ["c", "gone", "rust"]);
    }

    #[test]
    fn a_module_armed_in_time_is_traced_from_its_first_callback_at_each_load() {
        let live = [symbol("rust", "read_status", "a")];
        let (mut arming, mut armer, event, notes) = rust_loads_at_20(10, &live);
        assert_eq!((event.ts_ns, event.cpu), (20, 0));
        assert_eq!(
            attached(&event),
            ("rust", 1, false, Some(Guarantee::FirstCallback))
        );
        assert!(notes.is_empty(), "{notes:?}");
        assert!(!arming.waiting_for().contains(&"rust".to_owned()));
        let detached = arming.freed("rust".into(), (30, 0)).unwrap();
        assert!(matches!(detached.kind, EventKind::Detached { ref module } if module == "rust"));
        assert!(arming.freed("rust".into(), (31, 0)).is_none());
        let (again, _) = load(&mut arming, &mut armer, "rust", 40, &live);
        assert_eq!(
            attached(&again.unwrap()),
            ("rust", 1, true, Some(Guarantee::FirstCallback))
        );
        // The kernel armed it at each load: phytrace armed it once.
        assert_eq!(armer.arms, ["live", "rust"]);
    }

    #[test]
    fn a_module_that_loaded_while_it_was_armed_is_attached_late() {
        let (arming, _, event, notes) = rust_loads_at_20(50, &[symbol("rust", "read_status", "a")]);
        assert_eq!(attached(&event).3, Some(Guarantee::AfterLoad));
        assert_eq!(
            entry(&arming, "rust"),
            (
                Guarantee::AfterLoad,
                "it loaded while phytrace was arming it".into()
            )
        );
        assert_eq!(notes.len(), 1);
        assert!(notes[0].starts_with("rust: callbacks attached after the module loaded"));
    }

    #[test]
    fn another_build_of_a_module_is_armed_anew_from_kallsyms() {
        let live = [symbol("rust", "read_status", "b")];
        let (mut arming, mut armer, event, _) = rust_loads_at_20(10, &live);
        assert_eq!(attached(&event).3, Some(Guarantee::AfterLoad));
        assert_eq!(armer.arms, ["live", "rust", "rust"]);
        assert_eq!(armer.armed["rust"].0, live);
        assert_eq!(
            entry(&arming, "rust").1,
            "/x/rust.ko did not match the module that loaded: armed from /proc/kallsyms after it loaded"
        );
        // A module not known before it loaded is armed when it does.
        let live = [symbol("new", "read_status", "a")];
        let (event, _) = load(&mut arming, &mut armer, "new", 30, &live);
        assert_eq!(
            attached(&event.unwrap()),
            ("new", 1, false, Some(Guarantee::AfterLoad))
        );
        assert_eq!(entry(&arming, "new").1, "not known before it loaded");
    }

    #[test]
    fn modules_not_followed_not_phy_drivers_or_without_callbacks_are_left_alone() {
        let unread = || -> Result<Vec<CallbackSymbol>> { panic!("kallsyms read") };
        let mut armer = FakeArmer::default();
        let mut notes = Vec::new();
        // Callbacks not traced at all.
        let mut arming = Arming::new(Vec::new(), BTreeSet::new());
        let event = arming.loaded("rust".into(), (1, 0), &mut armer, unread, &mut notes);
        assert!(event.unwrap().is_none());
        // Not followed, or not a PHY driver while following every driver.
        for (follow, not_phy_drivers) in [
            (vec!["rust".to_owned()], vec![]),
            (vec![], vec!["asix".to_owned()]),
        ] {
            let mut arming = Arming::new(follow, not_phy_drivers.into_iter().collect());
            arming.symbols_armed(&armer, BTreeMap::new(), &mut notes, &mut |_| {});
            let event = arming.loaded("asix".into(), (1, 0), &mut armer, unread, &mut notes);
            assert!(event.unwrap().is_none());
            // Followed, but no `kernel::net::phy` callbacks in it.
            let (event, _) = load(&mut arming, &mut armer, "rust", 1, &[]);
            assert!(event.is_none());
        }
        assert!(armer.arms.is_empty() && notes.is_empty());
    }

    #[test]
    fn a_module_that_went_live_while_phytrace_started_is_reported_late() {
        let mut armer = FakeArmer::default();
        let mut arming = Arming::new(Vec::new(), BTreeSet::new());
        let mut held = Vec::new();
        arming
            .arm_symbols(&mut armer, prefetched(), &mut |e| held.push(e))
            .unwrap();
        let loaded = BTreeMap::from([
            ("rust".to_owned(), "Live".to_owned()),
            ("live".to_owned(), "Live".to_owned()),
            ("c".to_owned(), "Loading".to_owned()),
        ]);
        let mut notes = Vec::new();
        arming.symbols_armed(&armer, loaded, &mut notes, &mut |e| held.push(e));
        let modules: Vec<_> = held.iter().map(|e| attached(e).0).collect();
        assert_eq!(modules, ["live", "rust"]);
        assert_eq!(
            entry(&arming, "rust"),
            (
                Guarantee::AfterLoad,
                "it loaded while phytrace was starting".into()
            )
        );
        assert_eq!(notes.len(), 1);
    }

    #[test]
    fn a_refused_arming_is_an_error() {
        let mut armer = FakeArmer {
            refuse: Some("rust"),
            ..FakeArmer::default()
        };
        let mut arming = Arming::new(Vec::new(), BTreeSet::new());
        let armed = arming.arm_symbols(&mut armer, prefetched(), &mut |_| {});
        assert!(armed.is_err());
        assert_eq!(arming.probes(), None);
    }

    #[test]
    fn call_sites_trace_every_rust_driver_from_its_first_callback() {
        let mut armer = FakeArmer::default();
        let mut arming = Arming::new(Vec::new(), BTreeSet::new());
        let mut held = Vec::new();
        arming.at_call_sites(&prefetched(), &mut |e| held.push(e));
        assert_eq!(arming.probes(), Some(CallbackProbes::Callsite));
        let sites = (Guarantee::FirstCallback, "phylib's call sites".to_owned());
        assert_eq!(entry(&arming, "live"), sites);
        assert_eq!(entry(&arming, "rust"), sites);
        assert_eq!(arming.entries().len(), 2);
        assert_eq!(
            held.iter().map(attached).collect::<Vec<_>>(),
            [("live", 2, false, Some(Guarantee::AfterLoad))]
        );
        let (event, _) = load(
            &mut arming,
            &mut armer,
            "rust",
            5,
            &[symbol("rust", "x", "b")],
        );
        assert_eq!(
            attached(&event.unwrap()),
            ("rust", 1, false, Some(Guarantee::FirstCallback))
        );
        assert!(armer.arms.is_empty());
    }
}
