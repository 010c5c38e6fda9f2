//! Task-local storage, the map type aya-ebpf lacks.

/// A BPF task-local storage map (`BPF_MAP_TYPE_TASK_STORAGE`), described in BTF as the kernel
/// requires: a value of `T` per task, created on first use, freed with the task. aya-ebpf 0.2
/// has no such map; the layout is the one its `btf_map_def!` produces for the others.
#[repr(C)]
pub(super) struct TaskStorage<T> {
    r#type: *const [i32; aya_ebpf::bindings::bpf_map_type::BPF_MAP_TYPE_TASK_STORAGE as usize],
    key: *const i32,
    value: *const T,
    max_entries: *const [i32; 0],
    map_flags: *const [i32; aya_ebpf::bindings::BPF_F_NO_PREALLOC as usize],
}

// SAFETY: the fields are placeholders the loader reads from BTF; they are never dereferenced.
unsafe impl<T> Sync for TaskStorage<T> {}

impl<T> TaskStorage<T> {
    pub(super) const fn new() -> Self {
        Self {
            r#type: core::ptr::null(),
            key: core::ptr::null(),
            value: core::ptr::null(),
            max_entries: core::ptr::null(),
            map_flags: core::ptr::null(),
        }
    }

    /// The current task's value, created (zeroed) if it has none; `None` if the kernel could
    /// not allocate it (or the storage is busy on this CPU, in a nested program).
    pub(super) fn current(&self) -> Option<*mut T> {
        // SAFETY: `bpf_get_current_task_btf` returns the running task, trusted by the
        // verifier; the helper returns this task's value or null.
        let value = unsafe {
            aya_ebpf::helpers::generated::bpf_task_storage_get(
                core::ptr::from_ref(self).cast_mut().cast(),
                aya_ebpf::helpers::generated::bpf_get_current_task_btf(),
                core::ptr::null_mut(),
                aya_ebpf::bindings::BPF_LOCAL_STORAGE_GET_F_CREATE.into(),
            )
        };
        let value = value.cast::<T>();
        (!value.is_null()).then_some(value)
    }
}
