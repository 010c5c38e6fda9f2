//! The ranges an event's fields can take on a Linux kernel: a value outside them is damage,
//! whatever its type in the file allows (a JSON number, a ring-buffer word).

use crate::event::{Event, EventKind};

/// `CONFIG_NR_CPUS` is at most 8192: CPU numbers are below it.
const MAX_CPUS: u32 = 8192;
/// `PID_MAX_LIMIT` on 64-bit kernels: thread ids are at most this.
const MAX_TID: u32 = 4 * 1024 * 1024;
/// `PHY_MAX_ADDR`: MDIO addresses, Clause-22 register numbers and MMDs are below it.
const MDIO_FIELD_LIMIT: u32 = 32;
/// `MAX_ERRNO`: a failed access returns `-MAX_ERRNO..=-1`.
const MAX_ERRNO: i32 = 4095;
/// Deepest callback nesting the tracer records (`MAX_CALLBACK_DEPTH`), with room to spare.
pub const MAX_DEPTH: u8 = 16;

/// Why `event` cannot have happened, if it cannot.
pub fn check(event: &Event) -> Result<(), String> {
    if event.cpu >= MAX_CPUS {
        return Err(format!("cpu {} (at most {})", event.cpu, MAX_CPUS - 1));
    }
    if event.tid > MAX_TID {
        return Err(format!("tid {} (at most {MAX_TID})", event.tid));
    }
    if let Some(phy) = &event.phy
        && u32::from(phy.addr) >= MDIO_FIELD_LIMIT
    {
        return Err(format!("MDIO address {} (below 32)", phy.addr));
    }
    match &event.kind {
        EventKind::CallbackEnter { depth, .. } => check_depth(*depth),
        EventKind::CallbackExit { depth, ret, .. } => {
            check_depth(*depth)?;
            if i32::try_from(*ret).is_err() {
                return Err(format!("return value {ret} (a C int)"));
            }
            Ok(())
        }
        EventKind::Mdio {
            reg, devad, error, ..
        } => {
            if devad.is_none() && u32::from(*reg) >= MDIO_FIELD_LIMIT {
                return Err(format!("Clause-22 register {reg} (below 32)"));
            }
            if let Some(devad) = devad
                && u32::from(*devad) >= MDIO_FIELD_LIMIT
            {
                return Err(format!("MMD {devad} (below 32)"));
            }
            if let Some(err) = error
                && !(-MAX_ERRNO..0).contains(err)
            {
                return Err(format!("errno {err} (-{MAX_ERRNO} to -1)"));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn check_depth(depth: u8) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("callback depth {depth} (at most {MAX_DEPTH})"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_events::{Mdio, event, phy};

    fn mdio(reg: u16, devad: Option<u8>, error: Option<i32>) -> Event {
        let access = Mdio {
            devad,
            error,
            latency_ns: 1_000,
            ..Mdio::read(reg, 0)
        };
        Event {
            cpu: 1,
            tid: 7,
            phy: Some(phy("sim", 3, 0, "")),
            ..event(1_000, access)
        }
    }

    #[test]
    fn kernel_ranges_hold() {
        assert_eq!(check(&mdio(31, None, Some(-4095))), Ok(()));
        assert_eq!(check(&mdio(0x8000, Some(31), Some(-1))), Ok(()));
        for (event, why) in [
            (mdio(32, None, None), "Clause-22 register 32 (below 32)"),
            (mdio(0, Some(32), None), "MMD 32 (below 32)"),
            (mdio(0, None, Some(-4096)), "errno -4096 (-4095 to -1)"),
            (mdio(0, None, Some(5)), "errno 5 (-4095 to -1)"),
        ] {
            assert_eq!(check(&event), Err(why.to_owned()));
        }
        let mut far = mdio(0, None, None);
        far.cpu = MAX_CPUS;
        assert_eq!(check(&far), Err("cpu 8192 (at most 8191)".to_owned()));
        far.cpu = 0;
        far.tid = u32::MAX;
        assert!(check(&far).is_err());
        far.tid = 0;
        far.phy.as_mut().unwrap().addr = 32;
        assert!(check(&far).is_err());
    }
}
