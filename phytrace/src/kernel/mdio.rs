//! phylib's MDIO bus accessors, which every register access goes through (`phy_modify`
//! included), and the bus ops they call.

/// The accessors, with the stem of their programs' names and whether tracing cannot do
/// without them (the Clause-45 ones are optional: older kernels have none).
pub const ACCESSORS: &[(&str, &str, bool)] = &[
    ("__mdiobus_read", "mdio_read", true),
    ("__mdiobus_write", "mdio_write", true),
    ("__mdiobus_c45_read", "mdio_c45_read", false),
    ("__mdiobus_c45_write", "mdio_c45_write", false),
];

/// The `struct mii_bus` ops the accessors of [`ACCESSORS`] call, in the same order.
pub const BUS_OPS: [&str; 4] = ["read", "write", "read_c45", "write_c45"];
