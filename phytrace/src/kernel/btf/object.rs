//! The kernel's own BTF copied out of its BTF object (`BPF_BTF_GET_FD_BY_ID`, then
//! `BPF_OBJ_GET_INFO_BY_FD`): one system call for the blob that sysfs hands out 4 KiB per
//! `read` (about 500 calls for 2 MiB, some 10 ms of start-up under emulation).
//! The kernel allows it with CAP_SYS_ADMIN only; without, the caller reads the sysfs file.

use std::{
    io,
    os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd},
};

const BPF_OBJ_GET_INFO_BY_FD: libc::c_int = 15;
const BPF_BTF_GET_FD_BY_ID: libc::c_int = 19;
const BPF_BTF_GET_NEXT_ID: libc::c_int = 23;

/// The id of vmlinux's BTF object: the kernel registers it before any module's.
const VMLINUX_BTF_ID: u32 = 1;

/// `struct bpf_btf_info` (uapi `linux/bpf.h`).
#[repr(C)]
#[derive(Default)]
struct BtfInfo {
    btf: u64,
    btf_size: u32,
    id: u32,
    name: u64,
    name_len: u32,
    kernel_btf: u32,
}

/// The `info` member of `union bpf_attr` for `BPF_OBJ_GET_INFO_BY_FD`.
#[repr(C)]
struct InfoAttr {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

/// vmlinux's BTF, as the kernel holds it; `Err` if the kernel refuses (no CAP_SYS_ADMIN) or the
/// object with the expected id is not vmlinux's.
pub fn vmlinux() -> io::Result<Vec<u8>> {
    let fd = btf_fd(VMLINUX_BTF_ID)?;
    // First the size, then the blob into a buffer of that size.
    let (info, name) = named_info(&fd)?;
    if info.kernel_btf == 0 || name != b"vmlinux" {
        return Err(io::Error::other(format!(
            "BTF object {VMLINUX_BTF_ID} is not vmlinux's"
        )));
    }
    let mut data = vec![0u8; info.btf_size as usize];
    let mut info = BtfInfo {
        btf: data.as_mut_ptr() as u64,
        btf_size: data.len() as u32,
        ..BtfInfo::default()
    };
    btf_info(&fd, &mut info)?;
    if info.btf_size as usize != data.len() {
        return Err(io::Error::other("the kernel's BTF changed size while read"));
    }
    Ok(data)
}

/// The BTF object of the live module `module`, which a trampoline on one of its functions
/// names beside the function's id (CAP_SYS_ADMIN, as every BTF object descriptor).
pub fn module(module: &str) -> io::Result<OwnedFd> {
    let mut id = 0;
    while let Some(next) = next_btf_id(id)? {
        id = next;
        let fd = match btf_fd(id) {
            Ok(fd) => fd,
            // Gone since it was listed (its module unloaded).
            Err(err) if err.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(err) => return Err(err),
        };
        let (info, name) = named_info(&fd)?;
        if info.kernel_btf != 0 && name == module.as_bytes() {
            return Ok(fd);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!("the kernel holds no BTF of the module {module} (not loaded?)"),
    ))
}

/// What the kernel says of the BTF object `fd` (its size, whether it is the kernel's), and its
/// name (`vmlinux`, or a module's).
fn named_info(fd: &OwnedFd) -> io::Result<(BtfInfo, Vec<u8>)> {
    // A module's name is at most MODULE_NAME_LEN (56) bytes with its NUL.
    let mut name = [0u8; 64];
    let mut info = BtfInfo {
        name: name.as_mut_ptr() as u64,
        name_len: name.len() as u32,
        ..BtfInfo::default()
    };
    btf_info(fd, &mut info)?;
    let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Ok((info, name[..len].to_vec()))
}

/// The id of the BTF object after `id`, if any.
fn next_btf_id(id: u32) -> io::Result<Option<u32>> {
    // `start_id`, then `next_id` written by the kernel; the rest zero.
    let mut attr = [id, 0, 0, 0];
    // SAFETY: `attr` is that prefix of `union bpf_attr`, of the size passed; the kernel writes
    // only `next_id`, inside it.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_BTF_GET_NEXT_ID,
            attr.as_mut_ptr(),
            size_of_val(&attr) as u32,
        )
    };
    match ret {
        0 => Ok(Some(attr[1])),
        _ if io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT) => Ok(None),
        _ => Err(io::Error::last_os_error()),
    }
}

/// A descriptor of the BTF object `id`.
fn btf_fd(id: u32) -> io::Result<OwnedFd> {
    // `btf_id`, the first member of the `*_GET_FD_BY_ID` attributes; the rest zero.
    let attr = [id, 0, 0, 0];
    // SAFETY: `attr` is that prefix of `union bpf_attr`, of the size passed; the returned
    // descriptor is checked, then owned.
    unsafe {
        let fd = libc::syscall(
            libc::SYS_bpf,
            BPF_BTF_GET_FD_BY_ID,
            attr.as_ptr(),
            size_of_val(&attr) as u32,
        );
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(fd as i32))
    }
}

/// Fills `info` about the BTF object `fd`: the kernel copies at most `info.btf_size` bytes of
/// the blob to `info.btf` and `info.name_len` of the name to `info.name`.
fn btf_info(fd: &OwnedFd, info: &mut BtfInfo) -> io::Result<()> {
    let attr = InfoAttr {
        bpf_fd: fd.as_raw_fd() as u32,
        info_len: size_of::<BtfInfo>() as u32,
        info: info as *mut BtfInfo as u64,
    };
    // SAFETY: `attr` is the `info` member of `union bpf_attr`, of the size passed; the kernel
    // writes `info` (of the length given) and, through it, at most the lengths given to the
    // buffers it points to, which are live and that long.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_OBJ_GET_INFO_BY_FD,
            &attr as *const InfoAttr,
            size_of::<InfoAttr>() as u32,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
