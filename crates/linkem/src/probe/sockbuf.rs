//! Large socket buffers: on a busy 2-vCPU host a descheduled probe must not lose packets in
//! its own socket, or the probe would report losses the link never made.

use std::os::fd::AsRawFd;

const BYTES: libc::c_int = 8 * 1024 * 1024;

/// SO_RCVBUFFORCE/SO_SNDBUFFORCE (root: past net.core.rmem_max), else the capped ones.
pub fn enlarge<S: AsRawFd>(sock: &S) {
    let fd = sock.as_raw_fd();
    for (force, plain) in [(libc::SO_RCVBUFFORCE, libc::SO_RCVBUF), (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF)] {
        if set(fd, force) != 0 {
            set(fd, plain);
        }
    }
}

fn set(fd: libc::c_int, opt: libc::c_int) -> libc::c_int {
    // SAFETY: a valid fd and a pointer to an int of the size passed.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            &BYTES as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    }
}
