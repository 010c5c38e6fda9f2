//! The MDIO accessors of a phylib not loaded as the session started: probed with the kprobes
//! the kernel places as it loads the module, then moved to fentry/fexit (half the cost) once
//! it is live with its BTF, which trampolines need.

use anyhow::anyhow;

use super::Tracer;
use crate::kernel::modules;
use crate::probe::mdio_probes;
use crate::records::session::MdioProbes;

impl Tracer {
    /// `module` went live: if the MDIO accessors wait for it, moves them to its trampolines
    /// (see [`mdio_probes::move_to_trampolines`]); a failure leaves them on kprobes, said in a
    /// note.
    pub(super) fn mdio_module_loaded(&mut self, module: &str) {
        if module != modules::PHYLIB {
            return;
        }
        let Some(vmlinux) = self.mdio_awaiting.take() else {
            return;
        };
        let moved = vmlinux
            .phylib()
            .and_then(|btf| btf.ok_or_else(|| anyhow!("the kernel has no BTF of {module}")))
            .and_then(|btf| {
                mdio_probes::move_to_trampolines(
                    &mut self.ebpf,
                    &btf,
                    &mut self.probes,
                    &mut self.notes,
                )
            });
        match moved {
            Ok(()) => {
                self.mdio = MdioProbes::Fentry;
                self.mdio_moved = true;
            }
            Err(err) => self.notes.push(format!(
                "MDIO accesses stay on kprobes: fentry/fexit could not attach as {module} \
                 loaded ({err:#})"
            )),
        }
    }

    /// Whether the MDIO accessors moved to fentry/fexit since the last call.
    pub fn take_mdio_moved(&mut self) -> bool {
        std::mem::take(&mut self.mdio_moved)
    }
}
