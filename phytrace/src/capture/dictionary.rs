//! Definitions that event records refer to by number: PHYs, callbacks, `phy_state` names.
//!
//! The writer gives each PHY identity and each callback an id the first time it appears and
//! writes a definition record before the first event that uses it; state names come from the
//! header's table, and a `state` record declares any other. Event lines thus carry numbers
//! instead of repeated strings, which halves their size and their parsing time.

use std::collections::HashMap;

use foldhash::HashMap as FastMap;
use serde::{Deserialize, Serialize};

use crate::event::{Callback, PhyRef, PhyState, Text};

/// Most ids of one table a reader accepts (bounds its memory on a corrupt file).
pub const MAX_IDS: u32 = 1 << 16;

/// `{"type":"phy","id":0,"bus":"phy_sim-0","addr":16,"phy_id":3872865,"driver":"…"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhyDef {
    /// Number events use in their `phy` field.
    pub id: u32,
    /// The identity.
    #[serde(flatten)]
    pub phy: PhyRef,
}

/// `{"type":"callback","id":0,"name":"read_status","driver_type":"ax88796b_rust::PhyAX88772A"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackDef {
    /// Number events use in their `cb` field.
    pub id: u32,
    /// The callback.
    #[serde(flatten)]
    pub callback: Callback,
}

/// Writer side: ids given so far, and the state names the reader will know.
#[derive(Debug, Default)]
pub(crate) struct Interner {
    phys: Ids<PhyRef>,
    callbacks: Ids<Callback>,
    states: FastMap<u32, Text>,
}

/// Ids given to one kind of definition, in order of first use.
#[derive(Debug)]
struct Ids<K> {
    ids: FastMap<K, u32>,
    /// The last key looked up: events come in runs from the same PHY and callback, and
    /// comparing shared names is cheaper than hashing them.
    last: Option<(K, u32)>,
}

impl<K> Default for Ids<K> {
    fn default() -> Self {
        Self {
            ids: FastMap::default(),
            last: None,
        }
    }
}

impl<K: Clone + Eq + std::hash::Hash> Ids<K> {
    /// The id of `key`, and whether it was given just now.
    fn get(&mut self, key: &K) -> (u32, bool) {
        if let Some((last, id)) = &self.last
            && last == key
        {
            return (*id, false);
        }
        let (id, fresh) = match self.ids.get(key) {
            Some(&id) => (id, false),
            None => {
                let id = self.ids.len() as u32;
                self.ids.insert(key.clone(), id);
                (id, true)
            }
        };
        self.last = Some((key.clone(), id));
        (id, fresh)
    }
}

/// A definition the writer must emit before the event that needs it.
#[derive(Debug)]
pub(crate) enum Definition {
    Phy(PhyDef),
    Callback(CallbackDef),
    State(PhyState),
}

impl Interner {
    /// Knows the states of the header's table.
    pub fn new(states: &[PhyState]) -> Self {
        let states = states.iter().map(|s| (s.value, s.name.clone())).collect();
        Self {
            states,
            ..Self::default()
        }
    }

    /// The id of `phy`, pushing its definition to `new` the first time.
    pub fn phy(&mut self, phy: &PhyRef, new: &mut Vec<Definition>) -> u32 {
        let (id, fresh) = self.phys.get(phy);
        if fresh {
            new.push(Definition::Phy(PhyDef {
                id,
                phy: phy.clone(),
            }));
        }
        id
    }

    /// The id of `callback`, pushing its definition to `new` the first time.
    pub fn callback(&mut self, callback: &Callback, new: &mut Vec<Definition>) -> u32 {
        let (id, fresh) = self.callbacks.get(callback);
        if fresh {
            new.push(Definition::Callback(CallbackDef {
                id,
                callback: callback.clone(),
            }));
        }
        id
    }

    /// Makes sure the reader will name `state` as it is named here.
    pub fn state(&mut self, state: &PhyState, new: &mut Vec<Definition>) {
        if self.states.get(&state.value) != Some(&state.name) {
            self.states.insert(state.value, state.name.clone());
            new.push(Definition::State(state.clone()));
        }
    }
}

/// Reader side: the definitions read so far.
#[derive(Debug, Default)]
pub(crate) struct Tables {
    phys: Vec<Option<PhyRef>>,
    callbacks: Vec<Option<Callback>>,
    states: HashMap<u32, Text>,
}

impl Tables {
    /// Knows the states of the header's table.
    pub fn new(states: &[PhyState]) -> Self {
        let states = states.iter().map(|s| (s.value, s.name.clone())).collect();
        Self {
            states,
            ..Self::default()
        }
    }

    /// Records a PHY definition.
    pub fn define_phy(&mut self, def: PhyDef) -> Result<(), String> {
        define(&mut self.phys, def.id, def.phy)
    }

    /// Records a callback definition.
    pub fn define_callback(&mut self, def: CallbackDef) -> Result<(), String> {
        define(&mut self.callbacks, def.id, def.callback)
    }

    /// Records a state name.
    pub fn define_state(&mut self, state: PhyState) -> Result<(), String> {
        if self.states.len() >= MAX_IDS as usize && !self.states.contains_key(&state.value) {
            return Err(format!("more than {MAX_IDS} state definitions"));
        }
        self.states.insert(state.value, state.name);
        Ok(())
    }

    /// The PHY with id `id`.
    pub fn phy(&self, id: u32) -> Result<&PhyRef, String> {
        lookup(&self.phys, id, "phy")
    }

    /// The callback with id `id`.
    pub fn callback(&self, id: u32) -> Result<&Callback, String> {
        lookup(&self.callbacks, id, "callback")
    }

    /// The state with value `value`, named if a name is known (empty otherwise).
    pub fn state(&self, value: u32) -> PhyState {
        PhyState {
            value,
            name: self.states.get(&value).cloned().unwrap_or_default(),
        }
    }
}

fn define<T>(table: &mut Vec<Option<T>>, id: u32, value: T) -> Result<(), String> {
    if id >= MAX_IDS {
        return Err(format!("id {id} is beyond the limit of {MAX_IDS}"));
    }
    let id = id as usize;
    if table.len() <= id {
        table.resize_with(id + 1, || None);
    }
    table[id] = Some(value);
    Ok(())
}

fn lookup<'a, T>(table: &'a [Option<T>], id: u32, what: &str) -> Result<&'a T, String> {
    table
        .get(id as usize)
        .and_then(Option::as_ref)
        .ok_or_else(|| format!("{what} {id} is not defined (its definition is missing or damaged)"))
}
