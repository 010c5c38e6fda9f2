//! The values and names of the traced kernel's `enum phy_state`, which records carry as
//! numbers: read from its BTF by a live session, from the header by a capture reader.

use crate::event::{PhyState, Text};

/// The values and names of `enum phy_state`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhyStates {
    /// (value, name without `PHY_`), in declaration order.
    pub names: Vec<(u32, Text)>,
}

impl PhyStates {
    /// The states of a list (a capture header's).
    pub fn from_list(states: &[PhyState]) -> Self {
        Self {
            names: states.iter().map(|s| (s.value, s.name.clone())).collect(),
        }
    }

    /// The states as a list (for capture headers).
    pub fn to_list(&self) -> Vec<PhyState> {
        self.names
            .iter()
            .map(|(value, name)| PhyState {
                value: *value,
                name: name.clone(),
            })
            .collect()
    }

    /// The state `value`, named (`UNKNOWN_7` for a value the enum does not have).
    pub fn state(&self, value: u32) -> PhyState {
        let name = self.names.iter().find(|(v, _)| *v == value).map_or_else(
            || format!("UNKNOWN_{value}").into(),
            |(_, name)| name.clone(),
        );
        PhyState { value, name }
    }
}
